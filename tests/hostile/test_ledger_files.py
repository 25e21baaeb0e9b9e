"""Hostile files under the transcript roots: FIFOs, symlinks swapped in, unreadable folders."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CLI, run_ledger_once, token_totals
from tests.hostile.ledger_support import (
    live_log,
    log_lines,
    spool_text,
    start_live,
    value,
    wait_for,
)
from tests.transcripts import append, assistant, encode, transcript

READ_ERRORS = "agentwatch_ledger_read_errors_total"


def test_a_fifo_named_jsonl_is_skipped_by_once(workdirs: dict[str, Path]) -> None:
    path = transcript(workdirs["claude"])
    path.write_bytes(encode(assistant(input_tokens=4)))
    os.mkfifo(path.parent / "pipe.jsonl")  # opening it for reading would wait for a writer
    result = run_ledger_once(workdirs)
    text = spool_text(workdirs)
    assert token_totals(text)["input"] == 4
    assert value(text, READ_ERRORS, reason="not_regular") == 1
    assert len(log_lines(result.stderr, "not a regular file")) == 1


def test_a_fifo_does_not_hang_the_live_ledger(workdirs: dict[str, Path], processes: list) -> None:
    path = transcript(workdirs["claude"])
    path.write_bytes(encode(assistant(input_tokens=4)))
    sentinel = start_live(workdirs, processes)
    wait_for(workdirs, lambda text: token_totals(text)["input"] == 4)
    for number in range(3):  # each one created while the ledger follows the folder
        os.mkfifo(path.parent / f"pipe{number}.jsonl")
    append(path, encode(assistant(input_tokens=6)))
    wait_for(
        workdirs,
        lambda text: (
            token_totals(text)["input"] == 10
            and value(text, READ_ERRORS, reason="not_regular") == 3
        ),
    )
    assert sentinel.poll() is None
    sentinel.send_signal(signal.SIGTERM)
    assert sentinel.wait(timeout=20) == 0
    assert len(log_lines(live_log(workdirs), "not a regular file")) == 1


def test_a_symlink_swapped_in_is_not_followed(
    workdirs: dict[str, Path], processes: list, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(encode(*(assistant(input_tokens=1000) for _ in range(3))))
    path = transcript(workdirs["claude"])
    path.write_bytes(encode(assistant(input_tokens=4)))
    other = transcript(workdirs["claude"], session="s2")
    other.write_bytes(encode(assistant(input_tokens=1)))
    sentinel = start_live(workdirs, processes)
    wait_for(workdirs, lambda text: token_totals(text)["input"] == 5)

    swapped = path.with_name("new.tmp")
    swapped.symlink_to(outside)
    swapped.rename(path)  # the tracked transcript is now a symlink out of projects/
    append(outside, encode(assistant(input_tokens=1000)))
    text = wait_for(workdirs, lambda text: value(text, READ_ERRORS, reason="symlink") == 1)
    append(other, encode(assistant(input_tokens=2)))
    text = wait_for(workdirs, lambda text: token_totals(text)["input"] == 7)
    assert value(text, READ_ERRORS, reason="symlink") == 1
    assert sentinel.poll() is None
    sentinel.send_signal(signal.SIGTERM)
    assert sentinel.wait(timeout=20) == 0
    assert len(log_lines(live_log(workdirs), "a symlink now")) == 1
    # --once agrees: the symlink is not a transcript.
    run_ledger_once(workdirs)
    assert token_totals(spool_text(workdirs))["input"] == 7


NOBODY = 65534


@pytest.fixture
def nobody_dirs() -> Iterator[dict[str, Path]]:
    """Folders the `nobody` user owns, under a base it can reach (pytest's tmp is 0700)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs these tests as root with setpriv")
        pytest.skip("needs root and setpriv to run the ledger as another user")
    base = Path(tempfile.mkdtemp(prefix="aw-nobody-"))
    base.chmod(0o755)
    dirs = {name: base / name for name in ("claude", "spool", "state")}
    for folder in dirs.values():
        folder.mkdir()
        os.chown(folder, NOBODY, NOBODY)
    try:
        yield dirs
    finally:
        for folder, _, _ in os.walk(base):
            os.chmod(folder, 0o755)
        shutil.rmtree(base)


def _as_nobody(dirs: dict[str, Path]) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [
            "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            *CLI, "sentinel", "token-ledger", "--once",
            "--spool-dir", str(dirs["spool"]), "--state-dir", str(dirs["state"]),
        ],
        env=dict(os.environ, CLAUDE_CONFIG_DIR=str(dirs["claude"]), HOME=str(dirs["state"])),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result


def test_an_unreadable_folder_is_a_metric_and_one_line(nobody_dirs: dict[str, Path]) -> None:
    readable = transcript(nobody_dirs["claude"], slug="-open")
    readable.write_bytes(encode(assistant(input_tokens=3)))
    closed = transcript(nobody_dirs["claude"], slug="-closed")
    closed.write_bytes(encode(assistant(input_tokens=500)))
    for item in (readable, closed):
        for owned in (item, item.parent, item.parent.parent):
            os.chown(owned, NOBODY, NOBODY)
    closed.parent.chmod(0)
    result = _as_nobody(nobody_dirs)
    text = spool_text(nobody_dirs)
    assert token_totals(text)["input"] == 3
    assert value(text, "agentwatch_ledger_unreadable_dirs") == 1
    assert len(log_lines(result.stderr, "cannot list")) == 1
    assert "-closed" in log_lines(result.stderr, "cannot list")[0]

    closed.parent.chmod(0o755)  # readable again: counted, and the gauge goes back to 0
    _as_nobody(nobody_dirs)
    text = spool_text(nobody_dirs)
    assert token_totals(text)["input"] == 503
    assert value(text, "agentwatch_ledger_unreadable_dirs") == 0
