"""Repeated tool calls (a retry loop's sign): the pure rule on the session table with a fake
clock, the spool's hash field checked like every other, and the count through the real
`agentwatch sentinel claude-sessions --once` across a restart, where it must neither lose the
window nor count a call twice."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from agentwatch.core import claude_events
from agentwatch.sentinels.claude_sessions.records import Rejected, parse
from agentwatch.sentinels.claude_sessions.sessions import REPEAT_WINDOW, Table
from tests.claude_spool import append, event
from tests.conftest import run_cli, samples

INPUT = claude_events.INPUT_HASH
NAME = "agentwatch_claude_session_tool_repeats_total"
NOW = 1_800_000_000.0


def call(session: str, tool: str, given: object, when: float = NOW) -> dict[str, Any]:
    """A PreToolUse as the hook writes it: the tool name and only the hash of its input."""
    return event(session, "PreToolUse", when, p="web", tool=tool, **{
        INPUT: claude_events.input_hash(given)})  # fmt: skip


def table() -> Table:
    return Table(max_sessions=10, session_ttl=3600, max_tools=10, max_projects=10)


def feed(work: Table, *events: dict[str, Any]) -> None:
    for number, item in enumerate(events):
        work.apply(parse(json.dumps(item).encode()), NOW + number)


def test_a_call_repeats_only_within_the_previous_five_of_its_session() -> None:
    work = table()
    same = {"command": "npm test"}
    feed(work, call("a", "Bash", same), call("a", "Bash", same))  # the second repeats
    assert work.sessions["a"].repeats == 1
    feed(work, call("b", "Bash", same))  # another session's history is its own
    assert work.sessions["b"].repeats == 0
    feed(work, call("a", "Read", same))  # same input, other tool: a different call
    feed(work, call("a", "Bash", {"command": "npm test", "x": 1}))  # other input
    assert work.sessions["a"].repeats == 1
    # five other calls push the first out of the window: it no longer repeats
    feed(work, *(call("a", "Bash", {"n": n}) for n in range(REPEAT_WINDOW)))
    feed(work, call("a", "Bash", same))
    assert work.sessions["a"].repeats == 1
    feed(work, call("a", "Bash", {"n": 1}))  # the fifth-previous call: still inside
    assert work.sessions["a"].repeats == 2
    assert len(work.sessions["a"].recent) == REPEAT_WINDOW  # bounded, whatever the session's length


def test_a_call_without_a_hash_fills_a_slot_and_matches_nothing() -> None:
    work = table()
    bare = event("a", "PreToolUse", NOW, p="web", tool="Bash")  # an older writer: no hash
    feed(work, bare, bare, call("a", "Bash", 1))
    assert work.sessions["a"].repeats == 0
    feed(work, *([bare] * (REPEAT_WINDOW - 1)), call("a", "Bash", 1))
    assert work.sessions["a"].repeats == 1, "four hashless calls keep it within the five"
    feed(work, *([bare] * REPEAT_WINDOW), call("a", "Bash", 1))
    assert work.sessions["a"].repeats == 1, "five push it out"


def test_the_state_keeps_digests_only_and_a_bad_hash_is_rejected() -> None:
    work = table()
    planted = {"command": "echo PLANTED-SECRET"}
    feed(work, call("a", "Bash", planted))
    dumped = json.dumps(work.dump())
    assert "PLANTED" not in dumped and claude_events.input_hash(planted) not in dumped
    restored = table()
    restored.load(json.loads(dumped))
    feed(restored, call("a", "Bash", planted))
    assert restored.sessions["a"].repeats == 1
    for forged in ({"recent": "abc"}, {"repeats": -1}):  # a hand-edited state: set aside
        raw = json.loads(dumped)
        raw["sessions"]["a"].update(forged)
        with pytest.raises((TypeError, ValueError)):
            table().load(raw)
    for bad in ("ABC", "x" * 64, 7, "0" * 63):
        line = event("a", "PreToolUse", NOW, tool="Bash", **{INPUT: bad})
        try:
            parse(json.dumps(line).encode())
        except Rejected as err:
            assert err.reason == "bad_field"
        else:
            raise AssertionError(f"{bad!r} was accepted")


def test_repeats_through_the_real_sentinel_survive_a_restart_exactly(tmp_path: Path) -> None:
    dirs = ["--spool-dir", str(tmp_path / "spool"), "--state-dir", str(tmp_path)]

    def once() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        ran = run_cli("sentinel", "claude-sessions", "--once", *dirs)
        assert ran.returncode == 0, ran.stderr
        return samples((tmp_path / "spool" / "claude-sessions.prom").read_text())

    labels = (("project", "web"), ("session", "s"))
    now = time.time()
    append(tmp_path, event("quiet", "PreToolUse", now, p="web", tool="Bash"))
    append(tmp_path, call("s", "Bash", {"command": "make"}, now), call("s", "Edit", {"f": 1}, now))
    found = once()
    assert found[(NAME, labels)] == 0  # the series exists before the first repeat
    assert found[(NAME, (("project", "web"), ("session", "quiet")))] == 0
    # after the restart: the window holds the calls before it, and nothing is read twice
    append(tmp_path, call("s", "Bash", {"command": "make"}, now + 1))
    assert once()[(NAME, labels)] == 1
    assert once()[(NAME, labels)] == 1
    append(tmp_path, call("s", "Edit", {"f": 1}, now + 2))
    assert once()[(NAME, labels)] == 2
