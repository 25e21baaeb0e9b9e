"""The agent ledger's durable state in SQLite: file stamps, counted responses, counters.

One transaction per batch holds the stamps of the files read together with every row and
counter change their entries caused, so a crash at any moment keeps a batch whole or drops it
whole: a dropped batch's files still carry their old stamps and are read again, and what a
kept batch counted is in the rows its re-read is decided against. Nothing counts twice.

Response keys are stored as a 64-bit hash (never a reader's text), in a column with a
unique index (two of a million keys share one with a chance of 3e-8). The table itself is a
plain rowid table: a backfill into an empty one appends its rows (Store.defer_indexes) and
builds both indexes once at its end, where inserting hashed keys into a keyed table wrote
pages all over it (Gemini 256 MiB: 0.7 s more CPU). Tokens and costs are REAL (the ledger
counts no record past base.MAX_TOKENS = 2^53, where a REAL is still exact). Schema 1 kept
16-byte blob keys, schema 2 the 64-bit key as the rowid; an open migrates either in one
transaction to 3 (a schema 1 key becomes its first 8 bytes, what key_hash makes of the same
text now), so that nothing counted is counted again; an older binary refuses schema 3.
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
SCHEMA_VERSION = "3"
# A new database's pages: a backfill appends hundreds of thousands of rows and then indexes
# them, and 16 KiB pages took about a tenth less CPU for that than SQLite's 4 KiB.
PAGE_SIZE = 16384

# Dropped during a backfill into an empty table and built whole when it ends
# (Store.defer_indexes); an open creates one that is missing (a kill mid-backfill). Rows are
# found by key; `cost_since` reads by time (the agent and cost from the row either way: an
# index on (ts, agent) answered no faster and took 20% longer to build).
_KEY_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS {name} ON {table} (key)"
_TIME_INDEX = "CREATE INDEX IF NOT EXISTS responses_by_time ON responses (ts)"
_INDEXES = (_KEY_INDEX.format(name="responses_by_key", table="responses"), _TIME_INDEX)
_RESPONSES = """CREATE TABLE IF NOT EXISTS {table} (
    key INTEGER NOT NULL, agent TEXT NOT NULL, session TEXT NOT NULL, project TEXT NOT NULL,
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
{_INDEXES[0]};
{_INDEXES[1]};
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


def _key_hashes_py(keys: list[str]) -> list[int]:
    """`key_hash` of each key, its look-ups bound once; _keyhash.key_hashes is the same in
    C (a backfill hashes every key), this runs without it."""
    blake2b, from_bytes = hashlib.blake2b, int.from_bytes
    return [
        from_bytes(
            blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()[:8],
            "big",
            signed=True,
        )
        for key in keys
    ]


try:  # built from _keyhash.c with the package; without a compiler, hashlib
    from agentwatch.sentinels.agent_ledger._keyhash import key_hashes
except ImportError:  # pragma: no cover - tests/agents/test_agent_ledger_store.py requires it
    key_hashes = _key_hashes_py


def _key_of_schema_1(key: bytes) -> int:
    return int.from_bytes(key[:8], "big", signed=True)


def _migrate(path: Path) -> None:
    """Schema 1 or 2 to 3 (the module doc), in one transaction: a crash keeps the old one
    whole."""
    if not path.exists():
        return
    db = sqlite3.connect(str(path), isolation_level=None)
    try:
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.OperationalError:  # no meta table: not a ledger yet
            return
        if row is None or row[0] not in ("1", "2"):
            return
        key = "key_of_schema_1(key)" if row[0] == "1" else "key"
        db.create_function("key_of_schema_1", 1, _key_of_schema_1, deterministic=True)
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(_RESPONSES.format(table="responses_3"))
            db.execute(_KEY_INDEX.format(name="responses_by_key", table="responses_3"))
            db.execute(  # a clash of two schema 1 keys' first 8 bytes keeps the first (3e-8)
                f"INSERT OR IGNORE INTO responses_3 SELECT {key}, agent, session, project,"
                " model, ts, t_in, t_out, t_cr, t_cc, cost FROM responses ORDER BY key"
            )
            db.execute("DROP TABLE responses")  # and its time index (the schema makes it)
            db.execute("ALTER TABLE responses_3 RENAME TO responses")
            db.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")
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
# A backfill into an empty table (Store.defer_indexes) knows every key in it: it wrote them.
# While they are few it keeps each with its rowid (about 100 bytes each), so `rows_for` asks
# SQLite only about keys it wrote, by rowid (the table has no key index then, and a backfill's
# keys are all new: Gemini 256 MiB, 0.6 s of look-ups for nothing); past _WRITTEN_MAX, or
# once the backfill is done (`backfilled`), it builds the indexes, forgets the keys and asks
# about every key, as a ledger opened on rows does.
_WRITTEN_MAX = 1_000_000
_AMOUNTS = operator.itemgetter(T_IN, T_OUT, T_CR, T_CC, USD)


@dataclass(slots=True)
class FileState:
    """A file as the store last committed it: its stamp and its rejects by reason."""

    stamp: Stamp
    rejects: dict[str, int]


class Store:
    """Batch-oriented access to the agent ledger's database (one writer per state folder)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = single.hold_writer(path, "agent-ledger")
        # key -> rowid of every row while the indexes are deferred (a backfill), else None
        self._written: dict[int, int] | None = None
        try:
            _migrate(path)
            self.db = ledger_db.open_versioned(
                path, _SCHEMA, SCHEMA_VERSION, "agent ledger", "the session files", PAGE_SIZE
            )
            # Keys are hashes: a batch's rows land all over the table. 32 MiB of page cache
            # (not 2) spares re-reading its pages: 15-25% of a 256 MiB backfill's commit CPU.
            self.db.execute("PRAGMA cache_size=-32768")
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
        if written is None:
            unique, column = list(set(keys)), "key"
        else:
            unique, column = [written[key] for key in written.keys() & keys], "rowid"
        for start in range(0, len(unique), 30000):
            part = unique[start : start + 30000]
            marks = ",".join("?" * len(part))
            query = f"SELECT * FROM responses WHERE {column} IN ({marks})"
            for row in self.db.execute(query, part):
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

    # ---- the indexes during a backfill
    def defer_indexes(self) -> None:
        """While the responses table is empty, drop its indexes until `backfilled`: a
        backfill's keys are hashes and its times come in no order, so each row's index
        entries are writes all over the indexes (Gemini 256 MiB: 1-2 s of CPU), where
        building them once over the finished table is a sort each (0.3 s). Meanwhile the
        rows are appended, and found by the rowids kept in `_written`; `cost_since` answers
        the same without its index. A kill before they are built leaves the table without
        them: the schema at the next open builds them (the keys are unique: a row of a key
        already written is updated in place, never appended again)."""
        if self._written is not None:
            return
        if self.db.execute("SELECT 1 FROM responses LIMIT 1").fetchone() is None:
            self.db.execute("DROP INDEX IF EXISTS responses_by_key")
            self.db.execute("DROP INDEX IF EXISTS responses_by_time")
            self._written = {}

    def backfilled(self) -> None:
        """The queue is done: the indexes back (if `defer_indexes` dropped them), and the
        written keys forgotten: a live sentinel's later look-ups are few, and it should not
        hold a backfill's keys (tens of MB) for good."""
        if self._written is not None:
            for index in _INDEXES:
                self.db.execute(index)
            self._written = None

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
        if self._written is not None and len(self._written) + len(rows) > _WRITTEN_MAX:
            self.backfilled()  # too many keys to keep: found by the index from now on
        written = self._written
        added: list[int] = []
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
            if written is None:
                db.executemany(
                    "INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    sorted(rows.values(), key=_by_key),  # in key order: each page written once
                )
            else:
                self._append(rows, written, added)
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
            if written is not None:
                for key in added:  # their rowids are free again
                    del written[key]
            raise

    def _append(self, rows: dict[int, Row], written: dict[int, int], added: list[int]) -> None:
        """A backfill's rows: a key written before is updated in place (its labels and time
        stay those of its first count), a new one appended. A rowid table without deletes
        gives each appended row the largest rowid plus one, so the new keys' rowids are
        known (and noted in `added` before they are written, to be forgotten on a rollback)."""
        before = written.keys() & rows.keys()  # usually none: a backfill's keys are new
        if before:
            self.db.executemany(
                "UPDATE responses SET t_in = ?, t_out = ?, t_cr = ?, t_cc = ?, cost = ?"
                " WHERE rowid = ?",
                ((*_AMOUNTS(rows[key]), written[key]) for key in before),
            )
            fresh = [row for key, row in rows.items() if key not in before]
        else:
            fresh = list(rows.values())
        last = self.db.execute("SELECT max(rowid) FROM responses").fetchone()[0] or 0
        added.extend(map(_by_key, fresh))
        written.update(zip(added, range(last + 1, last + 1 + len(added)), strict=True))
        self.db.executemany("INSERT INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?)", fresh)
