"""A full disk under the token ledger is a state, not a crash: a real full file system (a small
tmpfs), the sentinel alive, `agentwatch_ledger_store_full` set, one log line per episode, and
exact totals once space returns."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli, run_ledger_once, token_totals
from tests.hostile.ledger_support import (
    live_log,
    log_lines,
    spool_text,
    start_live,
    value,
    wait_for,
)
from tests.transcripts import append, assistant, encode, transcript

FULL_LOG = "database or disk is full; keeping the last committed position"
RECOVERED_LOG = "recovered after"


def _mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"cannot mount a tmpfs in CI: {result.stderr}")
        pytest.skip(f"mounting a tmpfs is not permitted here: {result.stderr.strip()}")


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB file system of its own, unmounted at the end."""
    mount = tmp_path / "small"
    _mount_tmpfs(mount, "1m")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path) -> Path:
    """Take every free byte of the file system holding `folder`."""
    filler = folder / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while True:
            os.write(descriptor, b"\0" * 4096)
    except OSError as err:
        assert err.errno == errno.ENOSPC
    finally:
        os.close(descriptor)
    return filler


def _lines(count: int, tokens: int = 3) -> bytes:
    return encode(*(assistant(input_tokens=tokens, cwd=f"/home/a/p{n % 7}") for n in range(count)))


def test_live_ledger_waits_out_a_full_state_disk(
    workdirs: dict[str, Path], small_fs: Path, processes: list
) -> None:
    dirs = dict(workdirs, state=small_fs / "state")
    dirs["state"].mkdir()
    path = transcript(dirs["claude"])
    path.write_bytes(_lines(10))
    sentinel = start_live(dirs, processes)
    wait_for(dirs, lambda text: token_totals(text)["input"] == 30)

    filler = _fill(small_fs)
    append(path, _lines(3000))  # far more than the WAL file can take in place
    text = wait_for(dirs, lambda text: value(text, "agentwatch_ledger_store_full") == 1)
    assert token_totals(text)["input"] == 30  # nothing of the dropped batches shows
    append(path, _lines(5))
    assert sentinel.poll() is None

    filler.unlink()
    text = wait_for(
        dirs,
        lambda text: (
            value(text, "agentwatch_ledger_store_full") == 0
            and token_totals(text)["input"] == 30 + 3 * 3005
        ),
        timeout=90,  # the backoff is at most 60 s
    )
    append(path, _lines(1, tokens=1000))
    wait_for(dirs, lambda text: token_totals(text)["input"] == 30 + 3 * 3005 + 1000)
    sentinel.send_signal(signal.SIGTERM)
    assert sentinel.wait(timeout=20) == 0
    log = live_log(dirs)
    assert len(log_lines(log, FULL_LOG)) == 1, log
    assert len(log_lines(log, RECOVERED_LOG)) == 1, log
    assert "Traceback" not in log
    # A restart counts nothing twice.
    run_ledger_once(dirs)
    assert token_totals(spool_text(dirs))["input"] == 30 + 3 * 3005 + 1000


def test_once_on_a_full_state_disk_exits_0_and_says_so(
    workdirs: dict[str, Path], small_fs: Path
) -> None:
    """Even the database cannot be created: --once still writes its file, exit 0."""
    dirs = dict(workdirs, state=small_fs / "state")
    dirs["state"].mkdir()
    transcript(dirs["claude"]).write_bytes(_lines(20))
    filler = _fill(small_fs)
    result = run_ledger_once(dirs)
    text = spool_text(dirs)
    assert value(text, "agentwatch_ledger_store_full") == 1
    assert len(log_lines(result.stderr, FULL_LOG)) == 1
    assert "Traceback" not in result.stderr
    filler.unlink()
    result = run_ledger_once(dirs)
    text = spool_text(dirs)
    assert value(text, "agentwatch_ledger_store_full") == 0
    assert token_totals(text)["input"] == 60


def test_once_on_a_full_spool_disk_exits_0_with_one_line(
    workdirs: dict[str, Path], small_fs: Path
) -> None:
    dirs = dict(workdirs, spool=small_fs / "spool")
    dirs["spool"].mkdir()
    transcript(dirs["claude"]).write_bytes(_lines(20))
    filler = _fill(small_fs)
    result = run_cli(
        "sentinel", "token-ledger", "--once", "--spool-dir", str(dirs["spool"]),
        "--state-dir", str(dirs["state"]), env={"CLAUDE_CONFIG_DIR": str(dirs["claude"])},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(log_lines(result.stderr, "No space left on device")) == 1
    assert "Traceback" not in result.stderr
    filler.unlink()
    run_ledger_once(dirs)  # counted when it ran before: nothing twice now
    assert token_totals(spool_text(dirs))["input"] == 60
