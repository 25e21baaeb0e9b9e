"""The tokens the ledgers counted, as rows for `agentwatch report`: read-only from their own
SQLite databases (no transcript is read again, and a running sentinel is not disturbed).

Claude Code's come from the token ledger's minute buckets (per minute and label set, with the
time of the minute's earliest entry: a day, month or 5-hour block never splits a minute but at
an entry exactly on a midnight, which is counted with the minute it closes); the other agents'
from the agent ledger's responses, one row each, with its own time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agentwatch.core import claude
from agentwatch.sentinels.agent_ledger.store import DATABASE_FILE as AGENT_DATABASE
from agentwatch.sentinels.token_ledger.store import DATABASE_FILE as TOKEN_DATABASE

_TOKEN_ROWS = """
SELECT b.first_ms, l.project, l.model, l.session, b.t_in, b.t_out, b.t_cr, b.t_cc, b.cost,
       b.responses
FROM buckets b JOIN labelsets l ON l.id = b.labels
"""
_AGENT_ROWS = """
SELECT ts, agent, project, model, session, t_in, t_out, t_cr, t_cc, cost FROM responses
"""
_SESSIONS = "SELECT session, first_ts, last_ts FROM sessions"


@dataclass(frozen=True, slots=True)
class Row:
    """What was counted at one time for one agent, project, model and session."""

    ms: int  # milliseconds since the epoch (a bucket's earliest entry)
    agent: str
    project: str
    model: str
    session: str
    input: int
    output: int
    cache_read: int
    cache_creation: int
    cost: float
    entries: int  # responses counted

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_creation


@dataclass
class Ledgers:
    """The rows of both ledgers, and the Claude sessions' first and last activity (seconds)."""

    rows: list[Row]
    activity: dict[tuple[str, str], tuple[float, float]]
    databases: list[Path]


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _token_rows(path: Path) -> Iterator[Row]:
    connection = _connect(path)
    try:
        found = connection.execute(_TOKEN_ROWS)
        for ms, project, model, session, t_in, t_out, t_cr, t_cc, cost, n in found:
            yield Row(int(ms), claude.AGENT, project, model, session, int(t_in), int(t_out),
                      int(t_cr), int(t_cc), float(cost), int(n))  # fmt: skip
    finally:
        connection.close()


def _agent_rows(path: Path) -> Iterator[Row]:
    connection = _connect(path)
    try:
        found = connection.execute(_AGENT_ROWS)
        for ts, agent, project, model, session, t_in, t_out, t_cr, t_cc, cost in found:
            yield Row(round(ts * 1000), agent, project, model, session, int(t_in), int(t_out),
                      int(t_cr), int(t_cc), float(cost), 1)  # fmt: skip
    finally:
        connection.close()


def _activity(path: Path) -> dict[tuple[str, str], tuple[float, float]]:
    connection = _connect(path)
    try:
        return {(claude.AGENT, session): (float(first), float(last))
                for session, first, last in connection.execute(_SESSIONS)
                if first is not None and last is not None}  # fmt: skip
    finally:
        connection.close()


def read(folder: Path) -> Ledgers:
    """Every row of the ledgers whose databases are in `folder` (a missing one adds none).
    Raises sqlite3.Error for a database that cannot be read."""
    rows: list[Row] = []
    activity: dict[tuple[str, str], tuple[float, float]] = {}
    found = []
    token, agent = folder / TOKEN_DATABASE, folder / AGENT_DATABASE
    if token.is_file():
        found.append(token)
        rows.extend(_token_rows(token))
        activity = _activity(token)
    if agent.is_file():
        found.append(agent)
        rows.extend(_agent_rows(agent))
    rows.sort(key=lambda row: row.ms)
    return Ledgers(rows, activity, found)
