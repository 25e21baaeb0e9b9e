"""`agentwatch mcp` over its stdio pipe: initialize, tools/list, and every tool answering from
what the real sentinels, controller and Alertmanager left behind (transcripts read by the
token ledger, the recorded 2.1.328 statusline payload through `agentwatch statusline` and the
claude-sessions sentinel, `controller --once` against a real Alertmanager); then every way a
question can fail — no ledger, no decision, a garbage spool file, the stack down, unknown tools,
wrong arguments — comes back as an MCP tool error and the server goes on answering."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentwatch.cli import mcp_alerts, mcp_server, mcp_spool
from agentwatch.cli.mcp_alerts import AlertCache
from agentwatch.controller.alerts import AlertReader
from agentwatch.demo import transcripts as corpus
from tests.conftest import CLI, free_port, midday_zone, samples
from tests.mcp_stdio import McpProcess, text_of
from tests.test_controller_alertmanager import post_alerts, start_alertmanager

SESSION, OTHER = "5b7c8f1e-0d4e-4c59-9b3a-2f1d7a6e9c01", "0c2d6f3a-4b5e-4f67-8a9b-1c2d3e4f5a6b"
STATUSLINE = Path(__file__).parent / "fixtures" / "hooks" / "statusline-subscription.json"
LIMIT = 1_000_000
BUDGET = 50.0


@dataclass
class World:
    config: Path
    project: Path
    spool: Path
    state: Path
    alertmanager: str


def _run(*args: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        [*CLI, *args], env={**os.environ, **(env or {})},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _transcripts(root: Path, now_ms: int) -> None:
    """Two sessions of project `shop` in the last minutes, the way Claude Code writes them."""
    for session, started, tokens in ((SESSION, 20, 30_000), (OTHER, 40, 5_000)):
        path = root / "projects" / "-home-alice-shop" / f"{session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [
            corpus.assistant(
                f"msg_{session[:8]}_{n}", f"req_{session[:8]}_{n}", input_tokens=tokens,
                output_tokens=500, cwd="/home/alice/shop", session=session,
                timestamp=corpus.iso_ms(now_ms - (started - 10 * n) * 60_000),
            )
            for n in range(2)
        ]  # fmt: skip
        path.write_bytes(corpus.encode_lines(lines))


@pytest.fixture
def world(tmp_path: Path, processes: list[subprocess.Popen]) -> Iterator[World]:
    with midday_zone():  # the sessions of the last 40 minutes are today's even at 00:10
        yield _world(tmp_path, processes)


def _world(tmp_path: Path, processes: list[subprocess.Popen]) -> World:
    spool, state, project = tmp_path / "spool", tmp_path / "state", tmp_path / "work" / "shop"
    project.mkdir(parents=True)
    am = start_alertmanager(tmp_path, "am", processes)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "state_dir": str(state), "spool_dir": str(spool),
        "controller": {"alertmanagers": [am.url], "budget_usd": BUDGET, "budget_period": "day"},
        "sentinels": {"token-ledger": {"block_token_limit": LIMIT,
                                         "project_timebox_minutes": {"shop": 90}}},
    }))  # fmt: skip
    claude = tmp_path / "claude"
    _transcripts(claude, time.time_ns() // 1_000_000)
    _run("--config", str(config), "sentinel", "token-ledger", "--once",
         env={"CLAUDE_CONFIG_DIR": str(claude)})  # fmt: skip
    payload = json.loads(STATUSLINE.read_text())
    subprocess.run([*CLI, "statusline", "--state-dir", str(state)],
                   input=json.dumps(payload).encode(), capture_output=True, timeout=60,
                   check=True)  # fmt: skip
    _run("--config", str(config), "sentinel", "claude-sessions", "--once")
    post_alerts(
        am.url,
        {"alertname": "AgentwatchQuotaElevated", "severity": "info", "window": "five_hour",
         "agentwatch_action": "defer_tier", "agentwatch_tier": "opus"},
        {"alertname": "AgentwatchSessionTokenBurn", "severity": "warning",
         "project": "shop", "session": SESSION},
        {"alertname": "AgentwatchSessionTokenBurn", "severity": "warning",
         "project": "shop", "session": OTHER},
        {"alertname": "AgentwatchProjectTokenBurn", "severity": "warning", "project": "blog"},
    )  # fmt: skip
    _run("--config", str(config), "controller", "--once")
    return World(config, project, spool, state, am.url)


def answer(server: McpProcess, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    result = server.call(tool, arguments)
    assert not result.get("isError"), text_of(result)
    return json.loads(text_of(result))


def spool_values(
    spool: Path, sentinel: str
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return samples((spool / f"{sentinel}.prom").read_text())


@pytest.mark.slow
def test_every_tool_answers_from_what_agentwatch_knows(world: World) -> None:
    ledger = spool_values(world.spool, "token-ledger")
    with McpProcess(world.config, world.project) as server:
        init = server.initialize()
        assert init["result"]["serverInfo"]["name"] == "agentwatch"
        listed = server.request("tools/list")["result"]["tools"]
        assert [tool["name"] for tool in listed] == list(mcp_server.TOOLS)
        assert all(tool["annotations"]["readOnlyHint"] for tool in listed)

        quota = answer(server, "quota")
        official = {w["window"]: w for w in quota["windows"] if w["source"] == "official"}
        assert official["five_hour"]["used_ratio"] == 0.42
        assert official["five_hour"]["resets_at"] == 1796140800
        assert official["seven_day"]["used_ratio"] == 0.184
        block = next(w for w in quota["windows"] if w["source"] == "estimated")
        assert block["tokens"] == ledger[("agentwatch_block_tokens", ())] == 72_000
        assert block["limit_tokens"] == LIMIT and block["used_ratio"] == 0.072

        budget = answer(server, "budget")
        spent = sum(v for (n, labels), v in ledger.items()
                    if n == "agentwatch_spend_usd" and dict(labels)["period"] == "day")  # fmt: skip
        assert budget["limit_usd"] == BUDGET and budget["period"] == "day"
        assert budget["spent_usd"] == round(spent, 6) > 0
        assert budget["left_usd"] == round(BUDGET - spent, 6)

        clock = answer(server, "session_clock")  # the newest session of project `shop`
        assert clock["session"] == SESSION and clock["project"] == "shop"
        labels = (("agent", "claude-code"), ("project", "shop"), ("session", SESSION))
        cost = ledger[("agentwatch_session_cost_usd_total", labels)]
        assert clock["spent_usd"] == round(cost, 6) and clock["tokens"] == 61_000
        assert 19 * 60 < clock["elapsed_seconds"] < 60 * 60
        # the project's 90-minute time-box from the session's first message
        first = ledger[("agentwatch_session_first_activity_timestamp_seconds", labels)]
        assert clock["started_at"] == first and clock["deadline_source"] == "timebox"
        assert clock["deadline_at"] == first + 90 * 60
        assert ledger[("agentwatch_session_deadline_timestamp_seconds", labels)] == first + 5400
        assert 0 < clock["remaining_seconds"] <= 90 * 60 - clock["elapsed_seconds"] + 1
        assert "no deadline for task T-7" in _error(server, "session_clock", {"task": "T-7"})
        assert answer(server, "session_clock", {"session": OTHER})["tokens"] == 11_000

        decision = answer(server, "decision")
        assert decision["opus_deferred"] is True and decision["deferred_tiers"] == ["opus"]
        assert decision["may_spawn"] is True and decision["paused"] is False
        assert answer(server, "decision", {"tier": "sonnet"})["tier_deferred"] is False

        alerts = answer(server, "alerts")
        names = [(a["alertname"], a["labels"].get("session")) for a in alerts["alerts"]]
        assert names == [("AgentwatchQuotaElevated", None),
                         ("AgentwatchSessionTokenBurn", SESSION)]  # fmt: skip
        assert alerts["session"] == SESSION and alerts["project"] == "shop"

        # the ledger writes again (atomically: a new file): the next answer reads it
        path = world.spool / "token-ledger.prom"
        text = path.read_text().replace("\nagentwatch_block_tokens 72000.0\n",
                                        "\nagentwatch_block_tokens 90000.0\n")  # fmt: skip
        assert "agentwatch_block_tokens 90000.0" in text
        fresh = path.with_name("token-ledger.prom.new")
        fresh.write_text(text)
        os.replace(fresh, path)
        again = answer(server, "quota")
        assert [w["tokens"] for w in again["windows"] if w["source"] == "estimated"] == [90_000]


def test_the_quick_reader_agrees_with_the_exposition_parser(world: World) -> None:
    """mcp_spool reads only the lines it needs; on the real files it must read them exactly
    as prometheus_client does (escapes, histograms, every family)."""
    for path in sorted(world.spool.glob("*.prom")):
        text = path.read_text()
        quick = {
            (name, tuple(sorted(labels.items()))): value
            for name, labels, value in mcp_spool.parse(text, ("agentwatch_",))
        }
        parsed = samples(text)
        assert quick == {k: v for k, v in parsed.items() if k[0].startswith("agentwatch_")}
        assert len(quick) > 10, path.name
    with pytest.raises(mcp_spool.BadLine, match="line 2: not a sample line"):
        mcp_spool.parse('# HELP x\nagentwatch_x{a="1"}  1 2\n', ("agentwatch_",))
    with pytest.raises(mcp_spool.BadLine, match="labels are not"):
        mcp_spool.parse("agentwatch_x{a=1} 1\n", ("agentwatch_",))
    with pytest.raises(mcp_spool.BadLine, match="is not a number"):
        mcp_spool.parse("agentwatch_x one\n", ("agentwatch_",))
    labels = mcp_spool.parse('agentwatch_x{p="a\\\\b\\"c\\nd"} 1\n', ("agentwatch_",))
    assert labels == [("agentwatch_x", {"p": 'a\\b"c\nd'}, 1.0)]


def _error(server: McpProcess, tool: str, arguments: dict[str, Any] | None = None) -> str:
    result = server.call(tool, arguments)
    assert result.get("isError") is True, result
    return text_of(result)


def test_what_cannot_be_answered_is_an_mcp_error_and_the_server_goes_on(tmp_path: Path) -> None:
    spool, state = tmp_path / "spool", tmp_path / "state"
    down = f"http://127.0.0.1:{free_port()}"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"state_dir": str(state), "spool_dir": str(spool),
                                      "controller": {"alertmanagers": [down]}}))  # fmt: skip
    with McpProcess(config, tmp_path) as server:
        server.initialize()
        assert "is the token ledger running?" in _error(server, "budget")
        assert "is the token ledger running?" in _error(server, "session_clock")
        assert "no quota reading" in _error(server, "quota")
        assert "is `agentwatch controller` running?" in _error(server, "decision")
        assert f"no Alertmanager answered ({down})" in _error(server, "alerts")
        assert "Unknown tool: shutdown" in _error(server, "shutdown")
        assert "tier must be one of opus, sonnet, haiku" in _error(
            server, "decision", {"tier": "gpt-5"}
        )
        assert "valid string" in _error(server, "decision", {"tier": 5})
        assert "session must be a Claude Code session id" in _error(
            server, "session_clock", {"session": "../../etc"}
        )
        spool.mkdir()
        (spool / "token-ledger.prom").write_bytes(b"\xff\xfe not exposition\n")
        assert "spool file" in _error(server, "budget") and "unusable" in _error(server, "quota")
        (state / "controller.json").parent.mkdir(parents=True)
        (state / "controller.json").write_text("{not json")
        assert "no controller decision" in _error(server, "decision")
        server.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": "garbage"})
        assert server.request("tools/list")["result"]["tools"]  # still serving
        assert server.proc.poll() is None
    assert server.proc.returncode == 0, server.stderr()


def test_the_alert_list_is_kept_briefly_and_ages_out(
    tmp_path: Path, processes: list[subprocess.Popen]
) -> None:
    """Answers come from the last list while it is young (Alertmanager is not waited for),
    a list older than FRESH is read again in the background, and with Alertmanager down
    the list ages out after MAX_AGE: then the question fails."""
    am = start_alertmanager(tmp_path, "am", processes)
    post_alerts(am.url, {"alertname": "AgentwatchQuotaElevated", "severity": "info"})
    now = [1000.0]
    cache = AlertCache(AlertReader([am.url], 2.0), clock=lambda: now[0])
    snapshot, age = cache.get()
    assert [a.name for a in snapshot.alerts or []] == ["AgentwatchQuotaElevated"] and age == 0
    am.process.kill()
    am.process.wait()
    now[0] += mcp_alerts.FRESH + 1
    again, age = cache.get()
    assert again is snapshot and age == mcp_alerts.FRESH + 1
    deadline = time.monotonic() + 30
    while cache.refreshing:  # the background read, which fails: the list is kept
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert cache.get()[0] is snapshot
    now[0] += mcp_alerts.MAX_AGE
    assert cache.get()[0].alerts is None
