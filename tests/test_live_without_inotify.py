"""Without inotify the token ledger stays live: it polls the roots it cannot watch, says so once
in the log and in `agentwatch_ledger_roots_polled`, and goes back to inotify when it can.

The condition is provoked, not hoped for: the test itself holds every inotify instance this
user may open (`fs.inotify.max_user_instances`, 128 on Debian) while the sentinel starts, as an
IDE and a few file watchers do on a real workstation."""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import CLI, samples, token_totals
from tests.transcripts import append, assistant, encode, transcript

LIMIT_FILE = Path("/proc/sys/fs/inotify/max_user_instances")
_libc = ctypes.CDLL(None, use_errno=True)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@contextmanager
def all_inotify_instances() -> Iterator[int]:
    """Open inotify instances until the kernel refuses one for this user; yields how many
    were opened here, and closes them all at the end."""
    limit = int(LIMIT_FILE.read_text())
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = _open_fds() + limit + 64
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    held: list[int] = []
    try:
        while True:
            fd = _libc.inotify_init1(os.O_CLOEXEC)
            if fd >= 0:
                held.append(fd)
                continue
            error = ctypes.get_errno()
            # EMFILE is also the per-process descriptor limit: rule that out.
            below_rlimit = _open_fds() < resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 16
            assert error == errno.EMFILE and below_rlimit, (
                f"could not exhaust inotify instances (limit {limit}, errno {error}, "
                f"{_open_fds()} descriptors open): raise RLIMIT_NOFILE for this test"
            )
            break
        assert _libc.inotify_init1(os.O_CLOEXEC) < 0  # still refused: nothing else freed one
        yield len(held)
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _spool_value(spool_file: Path, name: str) -> float | None:
    try:
        text = spool_file.read_text()
    except FileNotFoundError:
        return None
    return samples(text).get((name, ()))


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout} s"
        time.sleep(0.1)


@pytest.mark.slow
def test_ledger_polls_without_inotify_and_returns_to_it(tmp_path: Path) -> None:
    claude = tmp_path / "claude"  # created later, like Claude Code's first run
    config = tmp_path / "config.yaml"
    config.write_text("sentinels:\n  token-ledger: {interval: 1, reconcile_interval: 1h}\n")
    spool_file = tmp_path / "spool" / "token-ledger.prom"
    inputs = lambda: token_totals(spool_file.read_text())["input"]  # noqa: E731
    polled = lambda: _spool_value(spool_file, "agentwatch_ledger_roots_polled")  # noqa: E731
    command = [*CLI, "--config", str(config), "sentinel", "token-ledger", "--spool-dir",
               str(spool_file.parent), "--state-dir", str(tmp_path / "state")]  # fmt: skip
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude))
    with all_inotify_instances() as held:
        assert held > 0
        sentinel = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        try:
            _wait(spool_file.exists, 20, "the first spool write")
            path = transcript(claude)  # the root appears while inotify is unavailable
            path.write_bytes(encode(assistant(input_tokens=77)))
            _wait(lambda: inputs() == 77, 10, "a transcript in a new root counted by polling")
            assert polled() == 1
            append(path, encode(assistant(input_tokens=23)))
            _wait(lambda: inputs() == 100, 10, "an appended line counted by polling")
            time.sleep(2.5)  # a few more heartbeats: still one log line, not one per attempt
        except BaseException:
            sentinel.kill()
            raise
    try:
        _wait(lambda: polled() == 0, 10, "back to inotify once instances are free")
        append(path, encode(assistant(input_tokens=900)))
        _wait(lambda: inputs() == 1000, 10, "an appended line counted with inotify")
    finally:
        sentinel.terminate()
        _, stderr = sentinel.communicate(timeout=15)
    assert sentinel.returncode == 0, stderr
    root = claude / "projects"
    assert stderr.count(f"cannot watch {root} with inotify") == 1, stderr
    assert stderr.count(f"watching {root} with inotify again") == 1, stderr
    assert f"transcript root {root} does not exist" in stderr  # said at the start


def test_a_missing_root_is_a_warning_and_a_metric(workdirs: dict[str, Path]) -> None:
    missing = workdirs["claude"] / "typo"
    ran = subprocess.run(
        [*CLI, "sentinel", "token-ledger", "--once", "--spool-dir", str(workdirs["spool"]),
         "--state-dir", str(workdirs["state"])],
        env=dict(os.environ, CLAUDE_CONFIG_DIR=str(missing)),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert f"transcript root {missing / 'projects'} does not exist" in ran.stderr
    spool_file = workdirs["spool"] / "token-ledger.prom"
    assert _spool_value(spool_file, "agentwatch_ledger_roots_missing") == 1
    assert _spool_value(spool_file, "agentwatch_ledger_roots") == 0
