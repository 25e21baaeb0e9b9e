"""The real `agentwatch hook` and `agentwatch statusline` against spool files something else
replaced (a FIFO, a symlink), payloads nested past the parser and statusline numbers past
their bounds: each returns within 5 s, exits 0, writes nothing through a link, and counts
the refusal in counters.json, which the real claude-sessions sentinel exports
(agentwatch_claude_writer_failures_total{reason}) with one warning line naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentwatch.core import claude_events
from tests.hostile.sentinel_support import once, series, warnings

AGENTWATCH = str(Path(sys.executable).parent / "agentwatch")
FIXTURES = Path(__file__).parent.parent / "fixtures" / "hooks"
STOP = (FIXTURES / "Stop.json").read_bytes()
STATUSLINE = json.loads((FIXTURES / "statusline-subscription.json").read_text())


def run(command: str, state: Path, data: bytes) -> subprocess.CompletedProcess[bytes]:
    """One call as Claude Code makes it; it must end within 5 s with exit 0."""
    started = time.monotonic()
    done = subprocess.run(
        [AGENTWATCH, command, "--state-dir", str(state)],
        input=data,
        capture_output=True,
        timeout=5,
        check=False,
    )
    assert time.monotonic() - started < 5
    assert done.returncode == 0 and done.stderr == b""
    return done


def hook(state: Path, data: bytes = STOP) -> None:
    assert run("hook", state, data).stdout == b""


def exported(tmp_path: Path, reason: str) -> tuple[float | None, list[str]]:
    """The sentinel's export of one writer reason, and its warning lines about it."""
    dirs = {"state": tmp_path / "state", "spool": tmp_path / "spool"}
    dirs["spool"].mkdir(exist_ok=True)
    result, values = once("claude-sessions", dirs)
    found = [
        value
        for labels, value in series(values, "agentwatch_claude_writer_failures_total")
        if labels == {"reason": reason}
    ]
    said = [line for line in warnings(result.stderr) if f" x {reason} " in line]
    return (found[0] if found else None), said


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = claude_events.events_dir(tmp_path / "state")
    path.mkdir(parents=True)
    return path


def test_a_fifo_in_place_of_the_spool_is_refused_at_once(tmp_path: Path, folder: Path) -> None:
    os.mkfifo(folder / claude_events.EVENTS)  # before: the hook's open waited for a reader
    hook(tmp_path / "state")
    assert claude_events.read_counters(tmp_path / "state") == {claude_events.SPOOL_REFUSED: 1}
    value, said = exported(tmp_path, claude_events.SPOOL_REFUSED)
    assert value == 1 and len(said) == 1 and "is not a regular file" in said[0]


def test_a_symlinked_spool_is_not_written_through(tmp_path: Path, folder: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_bytes(b"precious\n")
    (folder / claude_events.EVENTS).symlink_to(target)  # before: the line went into victim
    hook(tmp_path / "state")
    assert target.read_bytes() == b"precious\n"
    value, said = exported(tmp_path, claude_events.SPOOL_REFUSED)
    assert value == 1 and len(said) == 1


def test_a_fifo_counters_lock_with_a_bad_payload(tmp_path: Path, folder: Path) -> None:
    os.mkfifo(folder / ".counters.lock")  # before: the bad payload's count waited forever
    hook(tmp_path / "state", b"{not json")
    assert claude_events.read_counters(tmp_path / "state") == {
        claude_events.BAD_JSON: 1,
        claude_events.LOCK_REFUSED: 1,
    }
    value, said = exported(tmp_path, claude_events.LOCK_REFUSED)
    assert value == 1 and len(said) == 1 and ".counters.lock" in said[0]


def test_a_fifo_rotate_lock_keeps_the_line_and_is_counted(tmp_path: Path, folder: Path) -> None:
    os.mkfifo(folder / ".rotate.lock")
    spool = folder / claude_events.EVENTS
    spool.write_bytes(b"\n" * claude_events.ROTATE_BYTES)  # full: this call must rotate
    hook(tmp_path / "state")
    assert spool.stat().st_size > claude_events.ROTATE_BYTES  # the line went in, unrotated
    assert json.loads(spool.read_bytes().splitlines()[-1])["e"] == "Stop"
    assert claude_events.read_counters(tmp_path / "state") == {claude_events.LOCK_REFUSED: 1}
    value, said = exported(tmp_path, claude_events.LOCK_REFUSED)
    assert value == 1 and len(said) == 1


DEEP = {
    "nested-100k": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "1MiB-of-[": b"[" * claude_events.STDIN_LIMIT,
}


@pytest.mark.parametrize("command", ["hook", "statusline"])
@pytest.mark.parametrize("payload", list(DEEP), ids=list(DEEP))
def test_a_payload_past_the_parsers_depth_is_counted(
    tmp_path: Path, command: str, payload: str
) -> None:
    """Before: RecursionError, caught by the catch-all only: dropped without a count."""
    run(command, tmp_path / "state", DEEP[payload])
    assert claude_events.read_counters(tmp_path / "state") == {claude_events.TOO_DEEP: 1}
    value, said = exported(tmp_path, claude_events.TOO_DEEP)
    assert value == 1 and len(said) == 1


POISON = {
    "1e308": 1e308,
    "inf": float("inf"),
    "nan": float("nan"),
    "negative": -3.2,
    "past-the-bound": claude_events.MAX_COST_USD * 2,
}


@pytest.mark.parametrize("cost", list(POISON), ids=list(POISON))
def test_a_poison_cost_is_not_exported(tmp_path: Path, cost: str) -> None:
    """Before: `cost.total_cost_usd: 1e308` was a session cost of 1e308 USD."""
    payload = dict(STATUSLINE, cost={**STATUSLINE["cost"], "total_cost_usd": POISON[cost]})
    out = run("statusline", tmp_path / "state", json.dumps(payload).encode()).stdout
    assert b"$" not in out and b"5h " in out  # the rest of the line stays
    assert claude_events.read_counters(tmp_path / "state") == {claude_events.OUT_OF_RANGE: 1}
    dirs = {"state": tmp_path / "state", "spool": tmp_path / "spool"}
    dirs["spool"].mkdir()
    result, values = once("claude-sessions", dirs)
    assert series(values, "agentwatch_claude_session_cost_usd") == []
    assert series(values, "agentwatch_quota_used_ratio")  # the windows still are
    reasons = dict(
        (labels["reason"], value)
        for labels, value in series(values, "agentwatch_claude_writer_failures_total")
    )
    assert reasons == {claude_events.OUT_OF_RANGE: 1}
    assert len([line for line in warnings(result.stderr) if "out_of_range" in line]) == 1


def test_a_cost_inside_the_bound_is_exported(tmp_path: Path) -> None:
    payload = dict(STATUSLINE, cost={**STATUSLINE["cost"], "total_cost_usd": 4321.5})
    run("statusline", tmp_path / "state", json.dumps(payload).encode())
    dirs = {"state": tmp_path / "state", "spool": tmp_path / "spool"}
    dirs["spool"].mkdir()
    _, values = once("claude-sessions", dirs)
    assert [value for _, value in series(values, "agentwatch_claude_session_cost_usd")] == [4321.5]
    assert claude_events.read_counters(tmp_path / "state") == {}


def test_a_settings_file_nested_400k_deep_is_refused_in_one_line(tmp_path: Path) -> None:
    """Before: a RecursionError traceback and exit 1."""
    settings = tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(b"[" * 400_000 + b"]" * 400_000)
    env = dict(
        os.environ,
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "xdg-config"),
        XDG_DATA_HOME=str(tmp_path / "xdg-data"),
        XDG_STATE_HOME=str(tmp_path / "xdg-state"),
        CLAUDE_CONFIG_DIR=str(settings.parent),
    )
    done = subprocess.run(
        [AGENTWATCH, "install", "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"agentwatch install: {settings} is nested too deep to be Claude Code settings"
    ]


def test_deep_spool_lines_and_snapshots_are_rejected_not_a_crash(
    tmp_path: Path, folder: Path
) -> None:
    """What the sentinel reads back can be nested past the parser too (a line of 2 KiB of
    `[`, a 60 KiB snapshot of them): rejected and counted, the good event beside it read."""
    hook(tmp_path / "state")
    with (folder / claude_events.EVENTS).open("ab") as spool:
        spool.write(b"[" * 2000 + b"\n")
    (folder / claude_events.STATUS).mkdir()
    (folder / claude_events.STATUS / "deep.json").write_bytes(b"[" * 60_000)
    dirs = {"state": tmp_path / "state", "spool": tmp_path / "spool"}
    dirs["spool"].mkdir()
    result, values = once("claude-sessions", dirs)
    assert "Traceback" not in result.stderr and "RecursionError" not in result.stderr
    assert [v for _, v in series(values, "agentwatch_claude_events_read_total")] == [1]
    rejected = {
        labels["reason"]: value
        for labels, value in series(values, "agentwatch_claude_events_rejected_total")
    }
    assert rejected["bad_json"] == 1
