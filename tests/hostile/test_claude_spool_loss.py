"""The hook-event spool never loses silently. The real claude-sessions sentinel, offline
while the real `agentwatch hook` rotates the spool past what it keeps, or SIGKILLed again and
again while 100,000 events are written, ends with every event either read once or counted
lost (agentwatch_claude_events_lost_total{reason="rotated"}), exactly: read + lost ==
written. Before: killed continuously it read 15,895 of 100,000 and reported no loss; offline
through 4 rotations it read 18,891 of 30,100 and said "lost" once, not how many."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agentwatch.core import claude_events
from tests.conftest import CLI
from tests.hostile.sentinel_support import once, series, warnings

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

AGENTWATCH = str(Path(sys.executable).parent / "agentwatch")
SESSIONS = [f"7c1f0d52-3a4b-4c8e-9d1f-0000000000{n:02d}" for n in range(10)]


def line(number: int) -> dict[str, object]:
    """A PreToolUse line of the size the real hook writes (with the input's sha256)."""
    return {
        "v": 1,
        "t": 1796130000.0 + number / 1000,
        "s": SESSIONS[number % len(SESSIONS)],
        "e": "PreToolUse",
        "p": "busy-project",
        "tool": "Bash",
        "pane": "%3",
        claude_events.INPUT_HASH: f"{number:064x}",
    }


def totals(tmp_path: Path) -> tuple[int, int, list[str]]:
    """(events read, events lost) once `--once` runs stop finding more, and the warnings."""
    dirs = {"state": tmp_path / "state", "spool": tmp_path / "spool"}
    dirs["spool"].mkdir(exist_ok=True)
    said: list[str] = []
    before = (-1, -1)
    while True:
        result, values = once("claude-sessions", dirs, {"sentinels": {"claude-sessions": {}}})
        said += warnings(result.stderr)
        read = int(series(values, "agentwatch_claude_events_read_total")[0][1])
        lost = sum(
            int(value)
            for labels, value in series(values, "agentwatch_claude_events_lost_total")
            if labels == {"reason": "rotated"}
        )
        rejected = sum(v for _, v in series(values, "agentwatch_claude_events_rejected_total"))
        assert rejected == 0
        if (read, lost) == before:
            return read, lost, said
        before = (read, lost)


def fill(spool: Path, number: int) -> int:
    """events.jsonl filled to ROTATE_BYTES with the writer's own lines (the next real hook
    rotates it); the next line number."""
    size = spool.stat().st_size if spool.exists() else 0
    with spool.open("ab") as handle:
        while size < claude_events.ROTATE_BYTES:
            data = claude_events.encode(line(number))
            handle.write(data)
            size += len(data)
            number += 1
    return number


def hook(state: Path, number: int) -> None:
    """One real `agentwatch hook` call (the one that finds the spool full rotates it)."""
    stop = {"session_id": SESSIONS[0], "hook_event_name": "Stop", "cwd": "/w/p", "n": number}
    payload = json.dumps(stop)
    done = subprocess.run(
        [AGENTWATCH, "hook", "--state-dir", str(state)],
        input=payload.encode(),
        capture_output=True,
        timeout=5,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == b""


def test_offline_through_more_rotations_than_kept_counts_the_loss_exactly(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    folder = claude_events.events_dir(state)
    hook(state, 0)
    read, lost, _ = totals(tmp_path)
    assert (read, lost) == (1, 0)
    number = 1
    for _ in range(claude_events.KEEP_ROTATED + 2):  # offline: two files are deleted
        number = fill(folder / claude_events.EVENTS, number)
        hook(state, number)
    written = 1 + (number - 1) + claude_events.KEEP_ROTATED + 2  # Stops and the fills' lines
    dropped = claude_events.read_dropped(folder)
    assert dropped["files"] == 2
    read, lost, said = totals(tmp_path)
    assert lost == dropped["lines"] - 1  # the first line of the first file had been read
    assert read + lost == written
    assert len([w for w in said if "rotated out of" in w and f"{lost} hook events" in w]) == 1


def test_a_sentinel_killed_again_and_again_neither_loses_nor_double_counts(
    tmp_path: Path,
) -> None:
    state, spool = tmp_path / "state", tmp_path / "spool"
    spool.mkdir()
    config = tmp_path / "config.yaml"
    config.write_text("sentinels:\n  claude-sessions: {}\n")
    total = 100_000
    done = threading.Event()

    def write() -> None:  # the writers' own code, as fast as busy hooks would go and more
        for number in range(total):
            claude_events.append_event(state, line(number))
            if number % 2000 == 1999:
                time.sleep(0.05)
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    chance = random.Random(25)
    kills = 0
    command = [*CLI, "--config", str(config), "sentinel", "claude-sessions"]
    command += ["--spool-dir", str(spool), "--state-dir", str(state)]
    while not done.is_set() or kills < 5:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(chance.uniform(0.1, 1.5))  # often before its first save
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        kills += 1
    writer.join()
    read, lost, _ = totals(tmp_path)
    dropped = claude_events.read_dropped(claude_events.events_dir(state))
    assert dropped["files"] > 0  # 100,000 real-size lines pass what the spool keeps
    assert read + lost == total  # each event read once or counted lost, whenever it died
    assert lost <= dropped["lines"]
