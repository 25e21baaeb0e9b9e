"""The agent ledger's durable state in SQLite: file stamps, counted responses, counters.

One transaction per batch holds the stamps of the files read together with every row and
counter change their entries caused, so a crash at any moment keeps a batch whole or drops it
whole: a dropped batch's files still carry their old stamps and are read again, and what a
kept batch counted is in the rows its re-read is decided against. Nothing counts twice.

Response keys are stored as a 64-bit hash (never a reader's text), the table's integer
primary key: rows are found and written by it without a second B-tree (the token ledger's
keys are 8 bytes too; two of a million keys share one with a chance of 3e-8). Tokens and
costs are REAL (the ledger counts no record past base.MAX_TOKENS = 2^53, where a REAL is still
exact). Schema 1 kept 16-byte blob keys; an open migrates it in one transaction to 2 (each
key becomes its first 8 bytes, what key_hash makes of the same text now), so that nothing
counted is counted again; a binary of schema 1 refuses a database of schema 2.
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agentwatch.core import ledger_db, single

DATABASE_FILE = "agent-ledger.sqlite"
SCHEMA_VERSION = "2"

# What `cost_since` reads by: dropped during a backfill into an empty table and built
# whole when it ends (Store.defer_time_index); an open creates it when missing.
_TIME_INDEX = "CREATE INDEX IF NOT EXISTS responses_by_time ON responses (ts, agent)"
_RESPONSES = """CREATE TABLE IF NOT EXISTS {table} (
    key INTEGER PRIMARY KEY, agent TEXT NOT NULL, session TEXT NOT NULL, project TEXT NOT NULL,
    model TEXT NOT NULL, ts REAL NOT NULL, t_in REAL NOT NULL, t_out REAL NOT NULL,
    t_cr REAL NOT NULL, t_cc REAL NOT NULL, cost REAL NOT NULL
)"""
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- The stamp (dev, ino, size, mtime_ns and the companions') each file was last read at, and
-- the most rejects of each reason one read of it found (counted once, see Ledger).
CREATE TABLE IF NOT EXISTS files (
    agent TEXT NOT NULL, path BLOB NOT NULL, stamp TEXT NOT NULL, rejects TEXT NOT NULL,
    PRIMARY KEY (agent, path)
) WITHOUT ROWID;
-- One row per response key: what was counted for it, and the labels it was counted under.
{_RESPONSES.format(table="responses")};
{_TIME_INDEX};
CREATE TABLE IF NOT EXISTS counters (
    name TEXT NOT NULL, labels TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (name, labels)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions (
    agent TEXT NOT NULL, session TEXT NOT NULL, project TEXT NOT NULL, first_ts REAL NOT NULL,
    last_ts REAL NOT NULL, t_in REAL NOT NULL, t_out REAL NOT NULL, t_cr REAL NOT NULL,
    t_cc REAL NOT NULL, cost REAL NOT NULL, PRIMARY KEY (agent, session)
) WITHOUT ROWID;
-- Project and model names shown as themselves, per agent, in the order they got their slot.
CREATE TABLE IF NOT EXISTS kept (
    agent TEXT NOT NULL, dimension TEXT NOT NULL, name TEXT NOT NULL,
    UNIQUE (agent, dimension, name)
);
"""

CounterKey = tuple[str, tuple[str, ...]]  # (metric name, label values in declared order)
Stamp = tuple[int, ...]


def key_hash(key: str) -> int:
    """The stored form of a reader's key: 64 bits, and no text of the reader's (the first 8
    bytes of the 16-byte digest schema 1 stored, so that a migrated key is the same)."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def key_hashes(keys: Iterable[str]) -> list[int]:
    """`key_hash` of each key, its look-ups bound once (a backfill hashes every key)."""
    blake2b, from_bytes = hashlib.blake2b, int.from_bytes
    return [
        from_bytes(
            blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()[:8],
            "big",
            signed=True,
        )
        for key in keys
    ]


def _key_of_schema_1(key: bytes) -> int:
    return int.from_bytes(key[:8], "big", signed=True)


def _migrate(path: Path) -> None:
    """Schema 1 to 2 (the module doc), in one transaction: a crash keeps schema 1 whole."""
    if not path.exists():
        return
    db = sqlite3.connect(str(path), isolation_level=None)
    try:
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.OperationalError:  # no meta table: not a ledger yet
            return
        if row is None or row[0] != "1":
            return
        db.create_function("key_of_schema_1", 1, _key_of_schema_1, deterministic=True)
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(_RESPONSES.format(table="responses_2"))
            db.execute(  # a clash of two old keys' first 8 bytes keeps the first (3e-8)
                "INSERT OR IGNORE INTO responses_2 SELECT key_of_schema_1(key), agent, session,"
                " project, model, ts, t_in, t_out, t_cr, t_cc, cost FROM responses ORDER BY key"
            )
            db.execute("DROP TABLE responses")  # and its index (the schema makes it again)
            db.execute("ALTER TABLE responses_2 RENAME TO responses")
            db.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    finally:
        db.close()


# What was counted for one response key, as stored: [key, agent, session, project, model, ts,
# input, output, cache_read, cache_creation, cost] (the labels of its first count; amounts as
# floats). A list, not an object: 400k of them are made, updated and written per 256 MiB.
Row = list
KEY, AGENT, SESSION, PROJECT, MODEL, TS, T_IN, T_OUT, T_CR, T_CC, USD = range(11)
_by_key = operator.itemgetter(KEY)
# A ledger that opened an empty table knows every key in it: it wrote them. While they are
# few it keeps them (about 60 bytes each), so `rows_for` asks SQLite only about keys it wrote
# (a backfill's keys are all new: Gemini 256 MiB, 0.6 s of look-ups for nothing); past
# _WRITTEN_MAX, or once the backfill is done (`backfilled`), it forgets them and asks about
# every key, as a ledger opened on rows does.
_WRITTEN_MAX = 1_000_000


@dataclass(slots=True)
class FileState:
    stamp: Stamp
    rejects: dict[str, int]


class Store:
    """Batch-oriented access to the agent ledger's database (one writer per state folder)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = single.hold_writer(path, "agent-ledger")
        self._time_index_deferred = False
        try:
            _migrate(path)
            self.db = ledger_db.open_versioned(
                path, _SCHEMA, SCHEMA_VERSION, "agent ledger", "the session files"
            )
            # Keys are hashes: a batch's rows land all over the table. 32 MiB of page cache
            # (not 2) spares re-reading its pages: 15-25% of a 256 MiB backfill's commit CPU.
            self.db.execute("PRAGMA cache_size=-32768")
            empty = self.db.execute("SELECT 1 FROM responses LIMIT 1").fetchone() is None
            self._written: set[int] | None = set() if empty else None
        except BaseException:
            single.release(self._lock)
            self._lock = -1
            raise

    def close(self) -> None:
        if self._lock < 0:
            return
        self.db.close()
        single.release(self._lock)
        self._lock = -1

    # ---- reading
    def files(self, agent: str) -> dict[str, FileState]:
        rows = self.db.execute("SELECT path, stamp, rejects FROM files WHERE agent = ?", (agent,))
        return {
            os.fsdecode(path): FileState(tuple(json.loads(stamp)), json.loads(rejects))
            for path, stamp, rejects in rows
        }

    def counters(self) -> dict[CounterKey, float]:
        return {
            (name, tuple(json.loads(labels))): value
            for name, labels, value in self.db.execute("SELECT name, labels, value FROM counters")
        }

    def rows_for(self, keys: Iterable[int]) -> dict[int, Row]:
        found: dict[int, Row] = {}
        written = self._written
        unique = list(set(keys) if written is None else written.intersection(keys))
        for start in range(0, len(unique), 30000):
            part = unique[start : start + 30000]
            marks = ",".join("?" * len(part))
            for row in self.db.execute(f"SELECT * FROM responses WHERE key IN ({marks})", part):
                found[row[KEY]] = list(row)
        return found

    def recent_sessions(self, since: float) -> dict[tuple[str, str], list]:
        """(agent, session) -> [project, first_ts, last_ts, in, out, cr, cc, cost]."""
        rows = self.db.execute("SELECT * FROM sessions WHERE last_ts >= ?", (since,))
        return {(agent, session): rest for agent, session, *rest in rows}

    def kept(self) -> dict[str, dict[str, list[str]]]:
        kept: dict[str, dict[str, list[str]]] = {}
        for agent, dimension, name in self.db.execute(
            "SELECT agent, dimension, name FROM kept ORDER BY rowid"
        ):
            kept.setdefault(agent, {}).setdefault(dimension, []).append(name)
        return kept

    def cost_since(self, after: float) -> dict[str, float]:
        """USD per agent of the responses first counted after this time."""
        rows = self.db.execute(
            "SELECT agent, total(cost) FROM responses WHERE ts > ? GROUP BY agent", (after,)
        )
        return {agent: float(cost) for agent, cost in rows}

    # ---- the time index during a backfill
    def defer_time_index(self) -> None:
        """While the responses table is empty, drop its time index until `backfilled`:
        a backfill's rows come in key order, not time order, so each row's index entry is a
        write somewhere in the index (Gemini 256 MiB: 1-2 s of CPU), where building it once
        over the finished table is one sort (0.4 s). Only `cost_since` reads by it, and
        answers the same without it. A crash before it is built leaves the table without
        it: the schema at the next open creates it."""
        if self._time_index_deferred:
            return
        if self.db.execute("SELECT 1 FROM responses LIMIT 1").fetchone() is None:
            self.db.execute("DROP INDEX IF EXISTS responses_by_time")
            self._time_index_deferred = True

    def backfilled(self) -> None:
        """The queue is done: the time index back (if `defer_time_index` dropped it), and
        the written keys forgotten: a live sentinel's later look-ups are few, and it should
        not hold a backfill's keys (tens of MB) for good."""
        self._written = None
        if self._time_index_deferred:
            self.db.execute(_TIME_INDEX)
            self._time_index_deferred = False

    def size_bytes(self) -> int:
        return ledger_db.size_bytes(self.path)

    # ---- writing: one batch in one transaction
    def commit_batch(
        self,
        agent: str,
        files: dict[str, FileState],
        gone: Iterable[str],
        rows: dict[int, Row],
        counters: dict[CounterKey, float],
        sessions: dict[tuple[str, str], list],
        kept: dict[str, list[str]],
    ) -> None:
        """Everything a batch decided, or nothing of it."""
        db = self.db
        written = self._written
        if written is not None:  # before the commit: a key in the table is always in it
            written.update(rows)
            if len(written) > _WRITTEN_MAX:
                self._written = None
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)",
                (
                    (agent, os.fsencode(path), json.dumps(state.stamp), json.dumps(state.rejects))
                    for path, state in files.items()
                ),
            )
            db.executemany(
                "DELETE FROM files WHERE agent = ? AND path = ?",
                ((agent, os.fsencode(path)) for path in gone),
            )
            db.executemany(
                "INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                sorted(rows.values(), key=_by_key),  # in key order: each page written once
            )
            db.executemany(
                "INSERT INTO counters VALUES (?, ?, ?) ON CONFLICT (name, labels) "
                "DO UPDATE SET value = value + excluded.value",
                ((name, json.dumps(labels), value) for (name, labels), value in counters.items()),
            )
            db.executemany(
                "INSERT INTO sessions VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT (agent, session) "
                "DO UPDATE SET first_ts = min(first_ts, excluded.first_ts),"
                " last_ts = max(last_ts, excluded.last_ts), t_in = t_in + excluded.t_in,"
                " t_out = t_out + excluded.t_out, t_cr = t_cr + excluded.t_cr,"
                " t_cc = t_cc + excluded.t_cc, cost = cost + excluded.cost",
                (
                    (a, s, project, first, last, *map(float, sums))
                    for (a, s), (project, first, last, *sums) in sessions.items()
                ),
            )
            db.executemany(
                "INSERT OR IGNORE INTO kept VALUES (?, ?, ?)",
                ((agent, dim, name) for dim, names in kept.items() for name in names),
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
