"""Poison counts never reach spend (issue 25): the agent ledger's bounds, per reader.

Each case copies files a real CLI wrote (tests/fixtures/agents: Gemini CLI 0.61, OpenCode
1.18.33, Codex CLI 0.171.0), adds ONE record shaped like the CLI's own, whose count or cost
is poison, and runs the real `agentwatch sentinel agent-ledger --once` on the clean copy and
on the poisoned one. Tokens, cost, responses, session totals and spend must be the clean
run's (which are the reader's totals of the good records); the record is counted in
`agentwatch_agent_ledger_records_rejected_total{agent,reason}` and named in one log line; a
restart that reads the file again neither counts nor logs it again. ccusage counts these
values (docs/agents/README.md: why we differ).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentwatch.core import run_budget
from agentwatch.sentinels.agent_ledger import codex, gemini, opencode
from agentwatch.sentinels.agent_ledger.base import TOKEN_TYPES, AgentUsage
from tests.hostile.sentinel_support import once

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
REJECTED = "agentwatch_agent_ledger_records_rejected_total"
# What a poisoned record must leave untouched: the spend families and their sources.
SPEND = (
    "agentwatch_tokens_total",
    "agentwatch_cost_usd_total",
    "agentwatch_api_responses_total",
    "agentwatch_session_tokens_total",
    "agentwatch_session_cost_usd_total",
    "agentwatch_spend_usd",
)
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


# ----------------------------------------------------------------------------- the agents' files


def gemini_files(base: Path) -> tuple[dict[str, str], Path]:
    """The real CLI's session file; returns the env that points the reader at it."""
    shutil.copytree(FIXTURES / "gemini" / "tmp", base / "tmp")
    (path,) = (base / "tmp").rglob("session-*.jsonl")
    return {gemini.DATA_DIR_ENV: str(base / "tmp")}, path


def poison_gemini(path: Path, tokens: dict[str, object]) -> None:
    """Append a copy of the file's last response, under a new id, with these token fields."""
    lines = path.read_text().splitlines()
    last = json.loads(next(line for line in reversed(lines) if '"type":"gemini"' in line))
    last["id"] = "0b5e55ed-0000-4000-8000-000000000001"
    last["tokens"] = {**last["tokens"], **tokens}
    with path.open("a") as out:
        out.write(json.dumps(last, separators=(",", ":")) + "\n")


def opencode_files(base: Path) -> tuple[dict[str, str], Path]:
    shutil.copytree(FIXTURES / "opencode" / "two-sessions", base / "data")
    return {"OPENCODE_DATA_DIR": str(base / "data")}, base / "data" / "opencode.db"


def poison_opencode(db: Path, change: Callable[[dict], None]) -> None:
    """Insert a copy of the database's first assistant row, under a new id, changed."""
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT session_id, time_created, time_updated, data FROM message ORDER BY id"
        ).fetchall()
        session, created, updated, data = next(row for row in rows if '"assistant"' in row[3])
        message = json.loads(data)
        change(message)
        connection.execute(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) "
            "VALUES (?, ?, ?, ?, ?)",
            ("msg_0b5e55ed0001PoisonedRow00", session, created + 1, updated + 1,
             json.dumps(message, separators=(",", ":"))),
        )  # fmt: skip
    connection.close()


def codex_files(base: Path) -> tuple[dict[str, str], Path]:
    shutil.copytree(FIXTURES / "codex" / "codex-home", base / "codex-home")
    (path,) = (base / "codex-home").rglob("rollout-*d34f-*.jsonl")
    return {"CODEX_HOME": str(base / "codex-home")}, path


def poison_codex(path: Path, input_tokens: int) -> None:
    """Append a token_count event after the rollout's last one, one second later: its last
    usage has `input_tokens`, its running total moves by as much."""
    lines = path.read_text().splitlines()
    last = json.loads(next(line for line in reversed(lines) if '"type":"token_count"' in line))
    info = last["payload"]["info"]
    later = dt.datetime.fromisoformat(last["timestamp"]) + dt.timedelta(seconds=1)
    last["timestamp"] = later.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    grown = input_tokens - info["last_token_usage"]["input_tokens"]
    info["last_token_usage"]["input_tokens"] = input_tokens
    info["total_token_usage"]["input_tokens"] += input_tokens
    info["last_token_usage"]["total_tokens"] += grown
    info["total_token_usage"]["total_tokens"] += input_tokens
    with path.open("a") as out:
        out.write(json.dumps(last, separators=(",", ":")) + "\n")


# ----------------------------------------------------------------------------- running it


def run(base: Path, agent: str, env: dict[str, str]) -> tuple[str, Samples]:
    """One real `--once` run reading only this agent; its stderr and samples."""
    dirs = {"state": base / "state", "spool": base / "spool"}
    for folder in (*dirs.values(), base / "home"):
        folder.mkdir(parents=True, exist_ok=True)
    if not run_budget.path(dirs["state"]).exists():
        run_budget.start(dirs["state"], 1_000_000_000.0)  # the run's spend: every record
    config = {"sentinels": {"agent-ledger": {"agents": [agent], "session_ttl": 10 * 365 * 86400}}}
    environment = {"HOME": str(base / "home"), **env}
    result, found = once("agent-ledger", dirs, config, environment)
    assert "Traceback" not in result.stderr, result.stderr
    return result.stderr, found


def spend(found: Samples) -> Samples:
    return {key: value for key, value in found.items() if key[0] in SPEND}


def total(found: Samples, name: str, **labels: str) -> float:
    return sum(
        value
        for (sample, series), value in found.items()
        if sample == name and labels.items() <= dict(series).items()
    )


def rejections(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "was rejected" in line]


def check(
    tmp_path: Path,
    agent: str,
    files: Callable[[Path], tuple[dict[str, str], Path]],
    poison: Callable[[Path], None],
    reason: str,
    good: list[AgentUsage],
    price: Callable[[AgentUsage], float | None],
) -> None:
    """The poisoned copy counts what the clean copy counts, which is the good records; the
    poison is one rejection and one log line, and a restart adds neither."""
    env, _ = files(tmp_path / "clean")
    _, clean = run(tmp_path / "clean", agent, env)
    env, path = files(tmp_path / "poisoned")
    poison(path)
    stderr, found = run(tmp_path / "poisoned", agent, env)

    assert good, "the fixture has good records"
    for kind in TOKEN_TYPES:
        expected = sum(getattr(entry, kind) for entry in good)
        assert total(clean, "agentwatch_tokens_total", agent=agent, type=kind) == expected
    cost = sum(e.cost_usd if e.cost_usd is not None else price(e) or 0.0 for e in good)
    assert total(clean, "agentwatch_cost_usd_total", agent=agent) == pytest.approx(cost)
    assert total(clean, "agentwatch_spend_usd", agent=agent, period="run") == pytest.approx(cost)
    assert spend(found) == pytest.approx(spend(clean))
    assert spend(found).keys() == spend(clean).keys()
    assert total(found, REJECTED, agent=agent, reason=reason) == 1
    assert total(found, REJECTED) == 1
    (line,) = rejections(stderr)
    assert f"a {agent} record in " in line and f"was rejected ({reason})" in line
    assert REJECTED.removesuffix("_total") in line

    later = time.time() + 5  # read again, by a new process: nothing counts twice
    os.utime(path, (later, later))
    stderr, again = run(tmp_path / "poisoned", agent, env)
    assert spend(again) == pytest.approx(spend(clean))
    assert total(again, REJECTED, agent=agent, reason=reason) == 1
    assert rejections(stderr) == []


def read_gemini() -> list[AgentUsage]:
    root = FIXTURES / "gemini" / "tmp"
    return gemini.read_files(gemini.files(root)).entries


def read_opencode() -> list[AgentUsage]:
    return opencode.read_files(opencode.files(FIXTURES / "opencode" / "two-sessions")).entries


def read_codex() -> list[AgentUsage]:
    roots = codex.roots({"CODEX_HOME": str(FIXTURES / "codex" / "codex-home")}, Path("/x"))
    return codex.read_files([path for root in roots for path in codex.files(root)]).entries


# ----------------------------------------------------------------------------- the cases


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tokens", "reason"),
    [
        ({"input": 2**63}, "bad_token_count"),
        ({"input": 1e308}, "bad_token_count"),
        ({"total": 2**63}, "bad_token_count"),
        ({"thoughts": 2**60}, "bad_token_count"),
        ({"cached": 2**53 + 1}, "bad_cost"),
        ({"input": 2**40}, "bad_cost"),
    ],
    ids=["input_2^63", "input_1e308", "total_2^63", "thoughts_2^60", "cached_2^53+1",
         "input_2^40"],
)  # fmt: skip
def test_gemini_poison_count_is_rejected(
    tmp_path: Path, tokens: dict[str, object], reason: str
) -> None:
    """Gemini CLI's message tokens. ccusage reads every number through an f64 (a float
    saturates at u64): 1e308 would be 1.8e19 tokens, a total past the parts output, and
    2**53 + 1 reads as 2**53 (within the count bound; priced, far past the cost bound, as
    2**40 input tokens are)."""
    check(tmp_path, "gemini", gemini_files, lambda path: poison_gemini(path, tokens),
          reason, read_gemini(), gemini.price)  # fmt: skip


def _set(path: tuple[str, ...], value: object) -> Callable[[dict], None]:
    def change(message: dict) -> None:
        target = message
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_set(("tokens", "input"), 2**62), "bad_token_count"),
        (_set(("tokens", "reasoning"), 2**62), "bad_token_count"),  # priced as output
        (_set(("tokens", "cache", "read"), 2**64 - 1), "bad_token_count"),
        (_set(("cost",), 1e308), "bad_cost"),
        (_set(("cost",), 4.6e18), "bad_cost"),
    ],
    ids=["input_2^62", "reasoning_2^62", "cache_read_u64_max", "cost_1e308", "cost_4.6e18"],
)
def test_opencode_poison_row_is_rejected(
    tmp_path: Path, change: Callable[[dict], None], reason: str
) -> None:
    """An OpenCode database row: its tokens, and the cost it states (used as is, unpriced)."""
    check(tmp_path, "opencode", opencode_files, lambda db: poison_opencode(db, change),
          reason, read_opencode(), opencode.price)  # fmt: skip


@pytest.mark.parametrize(
    ("input_tokens", "reason"),
    [(2**63, "bad_token_count"), (2**64 - 1, "bad_token_count"), (2**40, "bad_cost")],
    ids=["input_2^63", "input_u64_max", "input_2^40_priced_over_the_bound"],
)
def test_codex_poison_token_count_is_rejected(
    tmp_path: Path, input_tokens: int, reason: str
) -> None:
    """A Codex rollout's token_count event; 2**40 tokens keep the count bound but priced as
    gpt-5 they cost over a million dollars: past the cost bound."""
    check(tmp_path, "codex", codex_files, lambda path: poison_codex(path, input_tokens),
          reason, read_codex(), codex.price)  # fmt: skip
