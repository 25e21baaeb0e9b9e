"""`agentwatch report`: every agent from the ledgers' databases (written by the real sentinels),
filtered by agent and date, found under the demo's state, and its errors. The tokens against
ccusage on the conformance corpora: tests/conformance/test_report_conformance.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agentwatch.demo.other_agents import OtherAgents, env_for
from agentwatch.sentinels.agent_ledger import codex, gemini, opencode
from tests.conformance.test_ccusage_conformance import ccusage_command
from tests.conftest import run_cli
from tests.transcripts import assistant, encode, transcript

START = 1_796_148_700.0  # 2026-12-01T18:11:40Z: the other agents' sessions
OTHERS = (codex.AGENT, gemini.AGENT, opencode.AGENT)


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`up --demo`'s layout: both ledgers ran on <state>/demo, over Claude Code transcripts
    of two days and the demo's Codex, Gemini and OpenCode sessions."""
    root = tmp_path_factory.mktemp("report")
    claude, agents, state = root / "claude", root / "agents", root / "state"
    transcript(claude, session="day-one").write_bytes(encode(
        assistant(input_tokens=1000, output_tokens=10, timestamp="2026-11-28T10:00:05.000Z"),
        assistant(input_tokens=2000, output_tokens=20, timestamp="2026-11-28T23:59:00.000Z"),
    ))  # fmt: skip
    transcript(claude, session="day-two").write_bytes(encode(
        assistant(input_tokens=400, cache_read=5000, timestamp="2026-11-29T08:00:00.000Z"),
    ))  # fmt: skip
    others = OtherAgents(agents, seed=3, now=START)
    for step in range(3):
        others.step(START + 60 * step)
    env = {"CLAUDE_CONFIG_DIR": str(claude), "HOME": str(root / "home"), "TZ": "UTC",
           "XDG_CONFIG_HOME": str(root / "xdg"), **env_for(agents)}  # fmt: skip
    dirs = ["--spool-dir", str(root / "spool"), "--state-dir", str(state / "demo")]
    for name in ("token-ledger", "agent-ledger"):
        ran = run_cli("sentinel", name, "--once", *dirs, env=env)
        assert ran.returncode == 0, ran.stderr
    return {"state": state, "agents": agents, "root": root}


def report(ledgers: dict[str, Path], *args: str) -> subprocess.CompletedProcess:
    env = {"TZ": "UTC", "XDG_CONFIG_HOME": str(ledgers["root"] / "xdg")}
    return run_cli("report", *args, "--state-dir", str(ledgers["state"]), env=env)


def as_json(ledgers: dict[str, Path], *args: str) -> dict:
    done = report(ledgers, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_daily_holds_every_agent_by_local_day(ledgers: dict[str, Path]) -> None:
    found = as_json(ledgers, "daily")
    days = {day["date"]: day for day in found["daily"]}
    assert days["2026-11-28"]["inputTokens"] == 3000 and days["2026-11-28"]["outputTokens"] == 30
    assert days["2026-11-29"]["cacheReadTokens"] == 5000
    assert set(days["2026-12-01"]["agents"]) == set(OTHERS)
    assert found["totals"]["totalTokens"] == sum(day["totalTokens"] for day in found["daily"])
    assert "Anthropic's pricing page" in found["costNote"]
    assert found["databases"] == [
        str(ledgers["state"] / "demo" / name)
        for name in ("token-ledger.sqlite", "agent-ledger.sqlite")
    ]


@pytest.mark.parametrize("agent", OTHERS)
def test_an_agents_daily_tokens_equal_ccusages(ledgers: dict[str, Path], agent: str) -> None:
    """The same session files through the real ccusage's own reader of that agent."""
    env = {**os.environ, **env_for(ledgers["agents"]), "TZ": "UTC"}
    theirs = json.loads(subprocess.run(
        [ccusage_command(), agent, "daily", "--json", "--offline"],
        env=env, capture_output=True, text=True, check=True, timeout=120,
    ).stdout)["daily"]  # fmt: skip
    ours = as_json(ledgers, "daily", "--agent", agent)["daily"]
    assert [day["agents"] for day in ours] == [[agent]]
    for field in ("inputTokens", "cacheReadTokens"):
        assert [day[field] for day in ours] == [day[field] for day in theirs], field


def test_agent_and_date_filters(ledgers: dict[str, Path]) -> None:
    claude = as_json(ledgers, "monthly", "--agent", "claude-code")
    assert [(m["month"], m["totalTokens"]) for m in claude["monthly"]] == [("2026-11", 8440)]
    one_day = as_json(ledgers, "daily", "--since", "20261129", "--until", "2026-11-30")
    assert [day["date"] for day in one_day["daily"]] == ["2026-11-29"]
    sessions = as_json(ledgers, "session", "--agent", "claude-code")["sessions"]
    assert [(s["sessionId"], s["totalTokens"]) for s in sessions] == [
        ("day-one", 3030), ("day-two", 5410)]  # fmt: skip
    assert sessions[0]["firstActivity"] == "2026-11-28T10:00:05.000Z"
    assert sessions[0]["lastActivity"] == "2026-11-28T23:59:00.000Z"


def test_blocks_and_weeks(ledgers: dict[str, Path]) -> None:
    blocks = as_json(ledgers, "blocks", "--agent", "claude-code")["blocks"]
    assert [(b["startTime"], b["endTime"], b["totalTokens"]) for b in blocks] == [
        ("2026-11-28T10:00:00.000Z", "2026-11-28T15:00:00.000Z", 1010),
        ("2026-11-28T23:00:00.000Z", "2026-11-29T04:00:00.000Z", 2020),
        ("2026-11-29T08:00:00.000Z", "2026-11-29T13:00:00.000Z", 5410),
    ]  # fmt: skip
    assert not any(b["isActive"] for b in blocks)
    weeks = as_json(ledgers, "weekly")["weekly"]
    assert [w["week"] for w in weeks] == ["2026-11-22", "2026-11-29"]  # Sundays


def test_the_table_says_how_cost_is_counted(ledgers: dict[str, Path]) -> None:
    shown = report(ledgers, "daily")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].split()[:2] == ["DATE", "AGENTS"] and lines[-2].startswith("TOTAL")
    assert lines[-1].startswith("note: cost as the ledgers count it")


def test_errors_are_said(tmp_path: Path) -> None:
    missing = run_cli("report", "daily", "--state-dir", str(tmp_path))
    assert missing.returncode == 1 and "no ledger database" in missing.stderr
    bad = run_cli("report", "daily", "--since", "yesterday", "--state-dir", str(tmp_path))
    assert bad.returncode == 2 and "is not a date" in bad.stderr
    (tmp_path / "token-ledger.sqlite").write_bytes(b"not a database" * 100)
    broken = run_cli("report", "daily", "--state-dir", str(tmp_path))
    assert broken.returncode == 1 and "cannot read the ledgers" in broken.stderr
