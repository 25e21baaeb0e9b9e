"""Fair reading: a huge transcript (a sparse file: no disk used) cannot hold up the others, is
scanned once, and the progress line stays sane."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from agentwatch.sentinels.token_ledger.ledger import Ledger
from agentwatch.sentinels.token_ledger.pricing import PriceBook
from agentwatch.sentinels.token_ledger.store import Store
from tests.conftest import run_cli, token_totals
from tests.hostile.ledger_support import live_log, spool_text, start_live, value, wait_for
from tests.transcripts import append, assistant, encode, transcript


def _sparse(path: Path, size: str) -> None:
    subprocess.run(["truncate", "-s", size, str(path)], check=True)


def _appended_shows(dirs: dict[str, Path], path: Path, total: int) -> float:
    """Seconds from an append to its tokens in the spool file."""
    append(path, encode(assistant(input_tokens=1)))
    started = time.monotonic()
    wait_for(dirs, lambda text: token_totals(text)["input"] == total, timeout=60)
    return time.monotonic() - started


def test_an_append_shows_while_a_10_gb_file_is_read_live(
    workdirs: dict[str, Path], processes: list
) -> None:
    path = transcript(workdirs["claude"])
    path.write_bytes(encode(assistant(input_tokens=1)))
    sentinel = start_live(workdirs, processes)
    wait_for(workdirs, lambda text: token_totals(text)["input"] == 1)
    _sparse(path.parent / "huge.jsonl", "10G")  # one line of 10 GB that never ends
    wait_for(workdirs, lambda text: value(text, "agentwatch_ledger_files_tracked") == 2)
    delays = [_appended_shows(workdirs, path, total) for total in range(2, 6)]
    text = spool_text(workdirs)
    # Still reading the huge file, yet every append showed: a generous bound, only as a check
    # that it did not wait for the whole file (that took 24 s).
    assert value(text, "agentwatch_ledger_unread_bytes") > 0
    assert max(delays) < 5.0, delays
    sentinel.send_signal(signal.SIGTERM)
    assert sentinel.wait(timeout=20) == 0
    assert "Traceback" not in live_log(workdirs)


@pytest.mark.slow
def test_an_append_shows_while_a_10_gb_file_is_backfilled(
    workdirs: dict[str, Path], processes: list
) -> None:
    path = transcript(workdirs["claude"])
    path.write_bytes(encode(assistant(input_tokens=1)))
    _sparse(path.parent / "huge.jsonl", "10G")
    sentinel = start_live(workdirs, processes)
    wait_for(workdirs, lambda text: token_totals(text)["input"] == 1)
    delays = [_appended_shows(workdirs, path, total) for total in range(2, 5)]
    assert value(spool_text(workdirs), "agentwatch_ledger_unread_bytes") > 0  # still backfilling
    assert max(delays) < 5.0, delays
    sentinel.send_signal(signal.SIGTERM)
    assert sentinel.wait(timeout=20) == 0


def _bytes_read() -> int:
    """What this process read through system calls so far (rchar)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


@pytest.mark.slow
def test_a_long_unterminated_line_is_scanned_once(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    path = transcript(root)
    path.write_bytes(encode(assistant(input_tokens=3)))
    huge = path.parent / "huge.jsonl"
    _sparse(huge, "300M")
    ledger = Ledger(Store(tmp_path / "l.sqlite"), PriceBook.load(), [root / "projects"])
    ledger.catch_up()
    assert ledger.unread_bytes() == 0  # the scanned part of the line counts as read
    before = _bytes_read()
    for _ in range(5):  # later passes (events, reconcile scans) over the same file
        assert ledger.step(str(huge)) == 0
    assert _bytes_read() - before < 1024 * 1024
    with huge.open("ab") as handle:  # the line ends: consumed, nothing counted from it
        handle.write(b"\n")
    ledger.scan()
    for _ in ledger.read_all():
        pass
    ledger.flush()
    assert not ledger.has_unread(str(huge))
    ledger.store.close()


@pytest.mark.slow
def test_the_progress_estimate_is_sane_for_a_file_without_lines(workdirs: dict[str, Path]) -> None:
    transcript(workdirs["claude"]).write_bytes(encode(assistant(input_tokens=1)))
    _sparse(workdirs["claude"] / "projects" / "-home-alice-proj" / "huge.jsonl", "2G")
    config = workdirs["state"].parent / "config.yaml"
    config.write_text("sentinels:\n  token-ledger: {progress_interval: 0.2}\n")
    result = run_cli(
        "--config", str(config), "sentinel", "token-ledger", "--once",
        "--spool-dir", str(workdirs["spool"]), "--state-dir", str(workdirs["state"]),
        env={"CLAUDE_CONFIG_DIR": str(workdirs["claude"])},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "backfill:" in line]
    etas = [int(found) for found in re.findall(r"about (\d+) s left", result.stderr)]
    assert lines and lines[-1].endswith("done"), lines
    assert all(eta < 600 for eta in etas), lines  # 2 GB of zeros take seconds, not years
    assert token_totals(spool_text(workdirs))["input"] == 1
