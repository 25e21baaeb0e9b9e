"""The agents whose readers are held to ccusage's own test fixtures, one `Spec` each.

Every agent added after Codex, Gemini and OpenCode has no CLI that installs and runs offline
here, so its files are the ones ccusage's Rust tests write (tests/fixtures/agents/ccusage/<agent>,
README per agent names the source file and commit). One spec says where the reader and
`ccusage <agent> daily` look for them, and how to poison one record the way a broken or
hostile file would (a copy of a fixture record with one count changed: no invented shape).
The tests in test_ccusage_agents.py are parametrised over SPECS.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentwatch.sentinels.agent_ledger import (
    amp,
    codebuff,
    copilot,
    droid,
    goose,
    hermes,
    kilo,
    kimi,
    openclaw,
    pi,
    qwen,
)
from agentwatch.sentinels.agent_ledger.base import AgentUsage, daily_totals

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "ccusage"
POISON = 2**62
Rows = dict[str, dict[str, float]]


@dataclass(frozen=True)
class Spec:
    """One agent: its reader, the env variable both tools read, and how its data is laid
    out from a fixture folder (one per ccusage test)."""

    module: ModuleType
    env: str
    # the env value for these copied test folders (a comma-separated list by default)
    roots: Callable[[list[Path]], str] = lambda dirs: ",".join(map(str, dirs))
    # the fixture file to poison (given the copied data folder), and the poisoning: a copy of
    # one of its records with one count set to POISON
    poison_file: Callable[[Path], Path] = lambda base: base
    poison: Callable[[Path], None] = lambda path: None
    # days whose cost differs from ccusage, and why (docs/agents/<agent>.md says the same)
    cost_differs: dict[str, str] = field(default_factory=dict)
    extra_env: dict[str, str] = field(default_factory=dict)
    # the folder a test's files go into under its copy, when ccusage's test handed them to
    # a parser directly (Amp: `threads/`, where the loader finds them)
    layout: str = ""
    # a folder under HOME the agent reads (no variable names one): the tests go there
    home_dir: str = ""
    # turns copied fixture files into what the agent writes (rows into a database)
    build: Callable[[Path], None] = lambda base: None

    @property
    def agent(self) -> str:
        return str(self.module.AGENT)

    def copy(self, base: Path, copies: int = 1) -> list[Path]:
        """The agent's fixture folders copied under base, one per ccusage test (`copies`
        times each: more files, for a crash test that must land between batches)."""
        source = FIXTURES / self.agent
        dirs = []
        for test in sorted(path for path in source.iterdir() if path.is_dir()):
            for number in range(copies):
                name = test.name if number == 0 else f"{test.name}-copy{number}"
                target = base / self.home_dir / name
                shutil.copytree(test, target / self.layout, dirs_exist_ok=True)
                dirs.append(target)
        self.build(base)
        return dirs

    def environment(self, dirs: list[Path]) -> dict[str, str]:
        if self.home_dir:  # dirs are <HOME>/<home_dir>/<test>
            return {"HOME": str(dirs[0].parents[len(Path(self.home_dir).parts)]), **self.extra_env}
        return {self.env: self.roots(dirs), **self.extra_env}

    def paths(self, env: dict[str, str]) -> list[Path]:
        """The files the reader finds with this environment."""
        roots = self.module.roots(env, Path(env.get("HOME", "/nonexistent")))
        return [path for root in roots for path in self.module.files(root)]

    def entries(self, env: dict[str, str]) -> list[AgentUsage]:
        return list(self.module.read_files(self.paths(env)).entries)


def ccusage_command() -> str:
    command = os.environ.get("AGENTWATCH_CCUSAGE") or shutil.which("ccusage")
    if not command:
        pytest.fail("ccusage 20.0.24 is required (scripts/setup --test installs it)")
    return command


def ccusage_rows(agent: str, env: dict[str, str], home: Path, timezone: str = "UTC") -> Rows:
    """`ccusage <agent> daily --json --offline` in the ledger's four classes: output is
    totalTokens less the other three (ccusage's extra total tokens are output here)."""
    done = subprocess.run(
        [ccusage_command(), agent, "daily", "--json", "--offline", "--timezone", timezone],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
             "TZ": timezone, **env},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not done.stdout.strip():
        pytest.fail(f"ccusage failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    rows: Rows = {}
    for row in report["daily"]:
        known = row["inputTokens"] + row["cacheReadTokens"] + row["cacheCreationTokens"]
        rows[row["date"]] = {
            "input": row["inputTokens"], "output": row["totalTokens"] - known,
            "cache_read": row["cacheReadTokens"], "cache_creation": row["cacheCreationTokens"],
            "cost_usd": row["totalCost"],
        }  # fmt: skip
    return rows


def reader_rows(spec: Spec, env: dict[str, str], timezone: str = "UTC") -> Rows:
    return daily_totals(spec.entries(env), timezone, spec.module.price)


# ----------------------------------------------------------------------------- poisons


def _append_poisoned_line(path: Path, match: str, change: Callable[[dict], None]) -> None:
    """Append a copy of the file's last line holding `match`, changed."""
    lines = path.read_text().splitlines()
    record = json.loads(next(line for line in reversed(lines) if match in line))
    change(record)
    with path.open("a") as out:
        out.write("\n" + json.dumps(record, separators=(",", ":")) + "\n")


def _one(base: Path, test: str, pattern: str) -> Path:
    (path,) = (base / test).rglob(pattern)
    return path


def _pi_poison(path: Path) -> None:
    def change(record: dict) -> None:
        record["timestamp"] = "2026-01-02T00:00:01.000Z"
        record["message"]["usage"] = {"input": POISON, "output": 1}

    _append_poisoned_line(path, '"usage"', change)


def _openclaw_poison(path: Path) -> None:
    def change(record: dict) -> None:
        record["message"]["timestamp"] += 1000
        record["message"]["usage"]["input"] = POISON

    _append_poisoned_line(path, '"usage"', change)


def _amp_poison(path: Path) -> None:
    """A copy of the thread's ledger event, a second later, with POISON input tokens."""
    thread = json.loads(path.read_text())
    event = dict(thread["usageLedger"]["events"][0])
    event["id"] = "event-poisoned"
    event["timestamp"] = "2026-01-02T00:00:01.000Z"
    event["tokens"] = {**event["tokens"], "input": POISON}
    thread["usageLedger"]["events"].append(event)
    path.write_text(json.dumps(thread))


def _qwen_poison(path: Path) -> None:
    def change(record: dict) -> None:
        record["timestamp"] = "2026-02-23T14:24:57.857Z"
        record["usageMetadata"]["promptTokenCount"] = POISON

    _append_poisoned_line(path, '"usageMetadata"', change)


def _kimi_poison(path: Path) -> None:
    def change(record: dict) -> None:
        record["timestamp"] += 1
        record["message"]["payload"]["message_id"] = "msg-poisoned"
        record["message"]["payload"]["token_usage"]["output"] = POISON

    _append_poisoned_line(path, '"StatusUpdate"', change)


def _droid_poison(path: Path) -> None:
    """A new session: a copy of its folder's session-a snapshot with POISON input tokens (a
    settings file holds one session's running totals, so a poisoned copy is another file)."""
    settings = json.loads(path.with_name("session-a.settings.json").read_text())
    settings["tokenUsage"]["inputTokens"] = POISON
    path.write_text(json.dumps(settings))


def _codebuff_poison(path: Path) -> None:
    """A copy of the chat's assistant message under a new id, with POISON input tokens."""
    messages = json.loads(path.read_text())
    poisoned = json.loads(json.dumps(messages[-1]))
    poisoned["id"] = "assistant-message-poisoned"
    poisoned["metadata"]["usage"]["inputTokens"] = POISON
    path.write_text(json.dumps([*messages, poisoned]))


def sqlite_from_rows(base: Path, rows_file: str, database: str, schema: str, insert: str) -> None:
    """Every `rows_file` (rows copied from a ccusage test) below base becomes the database
    that test built, with the test's own schema and insert, in the same folder."""
    for rows in sorted(base.rglob(rows_file)):
        connection = sqlite3.connect(rows.with_name(database))
        with connection:
            connection.execute(schema)
            connection.executemany(insert, json.loads(rows.read_text()))
        connection.close()


def _kilo_build(base: Path) -> None:
    schema = "CREATE TABLE message (id TEXT, session_id TEXT, data TEXT)"
    insert = "INSERT INTO message (id, session_id, data) VALUES (?1, ?2, ?3)"
    sqlite_from_rows(base, "message.json", "kilo.db", schema, insert)  # as the ccusage test


def _kilo_poison(path: Path) -> None:
    """A copy of the database's message under a new id, with POISON input tokens."""
    connection = sqlite3.connect(path)
    with connection:
        row_id, session, data = connection.execute(
            "SELECT id, session_id, data FROM message"
        ).fetchone()
        message = json.loads(data)
        message["id"] = "msg-poisoned"
        message["tokens"]["input"] = POISON
        connection.execute("INSERT INTO message VALUES (?, ?, ?)",
                           (row_id + "-poisoned", session, json.dumps(message)))  # fmt: skip
    connection.close()


GOOSE_SCHEMA = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    model_config_json TEXT,
    provider_name TEXT,
    created_at TEXT,
    total_tokens INTEGER,
    input_tokens INTEGER,
    output_tokens INTEGER,
    accumulated_total_tokens INTEGER,
    accumulated_input_tokens INTEGER,
    accumulated_output_tokens INTEGER
)
"""
GOOSE_INSERT = """
INSERT INTO sessions (
    id,
    model_config_json,
    provider_name,
    created_at,
    accumulated_total_tokens,
    accumulated_input_tokens,
    accumulated_output_tokens
) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
"""  # both as the ccusage test writes them (goose/loader.rs create_goose_db, insert_session)


def _goose_build(base: Path) -> None:
    sqlite_from_rows(base, "sessions.json", "sessions.db", GOOSE_SCHEMA, GOOSE_INSERT)


def _goose_poison(path: Path) -> None:
    """A second session: a copy of the first's row with POISON input tokens."""
    connection = sqlite3.connect(path)
    with connection:
        row = connection.execute(
            "SELECT id, model_config_json, provider_name, created_at, accumulated_total_tokens,"
            " accumulated_input_tokens, accumulated_output_tokens FROM sessions"
        ).fetchone()
        poisoned = (row[0] + "-poisoned", row[1], row[2], row[3], row[4], POISON, row[6])
        connection.execute(GOOSE_INSERT, poisoned)
    connection.close()


HERMES_SCHEMA = """
                CREATE TABLE sessions (
                    id TEXT PRIMARY KEY,
                    source TEXT NOT NULL,
                    model TEXT,
                    started_at REAL NOT NULL,
                    message_count INTEGER DEFAULT 0,
                    input_tokens INTEGER DEFAULT 0,
                    output_tokens INTEGER DEFAULT 0,
                    cache_read_tokens INTEGER DEFAULT 0,
                    cache_write_tokens INTEGER DEFAULT 0,
                    reasoning_tokens INTEGER DEFAULT 0,
                    billing_provider TEXT,
                    estimated_cost_usd REAL,
                    actual_cost_usd REAL
                );
"""
HERMES_INSERT = """
                    INSERT INTO sessions (
                        id, source, model, started_at, message_count,
                        input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
                        reasoning_tokens, billing_provider, estimated_cost_usd, actual_cost_usd
                    ) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
"""  # both as the ccusage test writes them (hermes/loader.rs)


def _hermes_build(base: Path) -> None:
    sqlite_from_rows(base, "sessions.json", "state.db", HERMES_SCHEMA, HERMES_INSERT)


def _hermes_poison(path: Path) -> None:
    """A second session: a copy of the first's row with POISON input tokens."""
    connection = sqlite3.connect(path)
    with connection:
        row = list(connection.execute("SELECT * FROM sessions").fetchone())
        row[0], row[5] = row[0] + "-poisoned", POISON
        connection.execute(HERMES_INSERT, row)
    connection.close()


def _copilot_poison(path: Path) -> None:
    """A copy of the file's chat span under a new span id, with POISON input tokens."""

    def change(record: dict) -> None:
        record["spanId"] = "span-poisoned"
        record["attributes"]["gen_ai.usage.input_tokens"] = POISON

    _append_poisoned_line(path, '"chat"', change)


def _databases(name: str) -> Callable[[list[Path]], str]:
    return lambda dirs: ",".join(str(path.parent) for d in dirs for path in sorted(d.rglob(name)))


SPECS: tuple[Spec, ...] = (
    Spec(
        pi,
        pi.DATA_DIR_ENV,
        poison=_pi_poison,
        poison_file=lambda base: _one(
            base, "falls_back_to_total_tokens_when_pi_parts_are_missing", "*.jsonl"
        ),
    ),
    Spec(
        openclaw,
        openclaw.DATA_DIR_ENV,
        poison=_openclaw_poison,
        poison_file=lambda base: _one(
            base, "loads_assistant_usage_and_uses_model_change_events", "*.jsonl"
        ),
    ),
    Spec(
        amp,
        amp.DATA_DIR_ENV,
        layout="threads",
        poison=_amp_poison,
        poison_file=lambda base: _one(
            base, "ledger_events_take_precedence_over_messages_usage", "*.json"
        ),
    ),
    Spec(
        qwen,
        qwen.DATA_DIR_ENV,
        poison=_qwen_poison,
        poison_file=lambda base: _one(base, "has_data", "*.jsonl"),
    ),
    Spec(
        kimi,
        kimi.DATA_DIR_ENV,
        poison=_kimi_poison,
        poison_file=lambda base: _one(
            base, "loads_status_update_token_usage_from_wire_files", "wire.jsonl"
        ),
    ),
    Spec(
        droid,
        droid.DATA_DIR_ENV,
        poison=_droid_poison,
        poison_file=lambda base: (
            base / "loads_usage_from_droid_settings_files" / "poisoned.settings.json"
        ),
    ),
    Spec(
        codebuff,
        codebuff.DATA_DIR_ENV,
        poison=_codebuff_poison,
        poison_file=lambda base: _one(
            base, "loads_assistant_usage_from_chat_messages", "chat-messages.json"
        ),
    ),
    Spec(
        kilo,
        kilo.DATA_DIR_ENV,
        build=_kilo_build,
        roots=_databases("kilo.db"),
        poison=_kilo_poison,
        poison_file=lambda base: base / "loads_kilo_messages_from_sqlite" / "kilo.db",
    ),
    Spec(
        goose,
        goose.DATA_DIR_ENV,
        build=_goose_build,
        layout="data/sessions",
        roots=lambda dirs: str(dirs[0]),
        poison=_goose_poison,
        poison_file=lambda base: _one(
            base, "loads_accumulated_tokens_from_goose_sqlite", "sessions.db"
        ),
    ),
    Spec(
        hermes,
        hermes.DATA_DIR_ENV,
        build=_hermes_build,
        poison=_hermes_poison,
        poison_file=lambda base: _one(
            base, "loads_billable_hermes_sessions_from_state_db", "state.db"
        ),
    ),
    Spec(
        copilot,
        copilot.DATA_DIR_ENV,
        home_dir=".copilot/otel",
        poison=_copilot_poison,
        poison_file=lambda base: _one(
            base / ".copilot/otel", "parses_copilot_chat_spans", "*.jsonl"
        ),
    ),
)
