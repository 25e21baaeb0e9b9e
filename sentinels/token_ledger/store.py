"""The ledger's durable state in SQLite: file positions, counted responses, counters.

One transaction per ingest step holds the new file position together with every counter
change it caused, so a crash at any moment either keeps a step whole or drops it whole:
nothing is counted twice and nothing is lost (the dropped step is simply read again).
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import sqlite3
import threading
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path

from agentwatch.core import ledger_db, single
from agentwatch.sentinels.token_ledger.tailer import Position

DATABASE_FILE = "token-ledger.sqlite"  # under the state dir; `agentwatch prices` reads it too

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, dev INTEGER, ino INTEGER, offset INTEGER,
    head_len INTEGER, head BLOB, tail BLOB
);
-- One row per counted API response (dedup key hashed to 64 bits). `total`, `speed`, `cost`
-- describe the copy that currently wins; c_* is what was added to the counters.
CREATE TABLE IF NOT EXISTS responses (
    msg INTEGER NOT NULL, req INTEGER NOT NULL, side INTEGER NOT NULL,
    total INTEGER NOT NULL, speed INTEGER NOT NULL, cost REAL NOT NULL,
    c_in INTEGER NOT NULL, c_out INTEGER NOT NULL, c_cr INTEGER NOT NULL,
    c_cc INTEGER NOT NULL, c_cost REAL NOT NULL, labels INTEGER NOT NULL,
    PRIMARY KEY (msg, req)
) WITHOUT ROWID;
-- The responses rows of a cold backfill (the responses table empty when it started), appended
-- in commit order: one keyed by hashes touches nearly every page at each commit, so a
-- backfill's commits cost the square of its responses. Moved into `responses` in key order
-- when the backfill ends (Store.merge_staged) or, after a crash, when the database is opened;
-- the latest `seq` of a (msg, req) is its current row. Added in schema 1 without a version
-- change (a database from before simply has it empty).
CREATE TABLE IF NOT EXISTS responses_staged (
    seq INTEGER PRIMARY KEY, msg INTEGER NOT NULL, req INTEGER NOT NULL, side INTEGER NOT NULL,
    total INTEGER NOT NULL, speed INTEGER NOT NULL, cost REAL NOT NULL,
    c_in INTEGER NOT NULL, c_out INTEGER NOT NULL, c_cr INTEGER NOT NULL,
    c_cc INTEGER NOT NULL, c_cost REAL NOT NULL, labels INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS labelsets (
    id INTEGER PRIMARY KEY, project TEXT NOT NULL, model TEXT NOT NULL, session TEXT NOT NULL,
    UNIQUE (project, model, session)
);
CREATE TABLE IF NOT EXISTS counters (
    name TEXT NOT NULL, labels TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (name, labels)
) WITHOUT ROWID;
-- Project and model names shown as themselves (core/fold.py), in the order they got their slot.
CREATE TABLE IF NOT EXISTS kept (
    dimension TEXT NOT NULL, name TEXT NOT NULL, UNIQUE (dimension, name)
);
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY, project TEXT NOT NULL, first_ts REAL,
    last_ts REAL, t_in INTEGER NOT NULL DEFAULT 0, t_out INTEGER NOT NULL DEFAULT 0,
    t_cr INTEGER NOT NULL DEFAULT 0, t_cc INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0
);
-- What was counted per minute and labelset, for the 5-hour blocks and the spend per period
-- (blocks.py, spend.py). `minute` m holds the entries of ((m-1)*60, m*60] seconds; `first_ms`
-- is the earliest of them, in milliseconds. Written with the counters, in one transaction.
-- Added in schema 1 without a version change: a database from before has no rows for its
-- older history (the buckets start with the upgrade).
CREATE TABLE IF NOT EXISTS buckets (
    minute INTEGER NOT NULL, labels INTEGER NOT NULL, first_ms INTEGER NOT NULL,
    t_in REAL NOT NULL, t_out REAL NOT NULL, t_cr REAL NOT NULL, t_cc REAL NOT NULL,
    cost REAL NOT NULL, responses INTEGER NOT NULL, PRIMARY KEY (minute, labels)
) WITHOUT ROWID;
"""


@dataclass(slots=True)
class ResponseRow:
    """One API response's row in the ledger database."""

    msg: int
    req: int
    side: int
    total: int
    speed: int
    cost: float
    c_in: int
    c_out: int
    c_cr: int
    c_cc: int
    c_cost: float
    labels: int

    def as_tuple(self) -> tuple:
        return (
            self.msg, self.req, self.side, self.total, self.speed, self.cost,
            self.c_in, self.c_out, self.c_cr, self.c_cc, self.c_cost, self.labels,
        )  # fmt: skip


def _stored_path(path: str) -> str | bytes:
    """A file name that is not UTF-8 (os.fsdecode's surrogates) is stored as its bytes:
    SQLite text must be UTF-8, and one such name must not stop every commit."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path)
    return path


def _path_of(stored: str | bytes) -> str:
    return stored if isinstance(stored, str) else os.fsdecode(stored)


CounterKey = tuple[str, tuple[str, ...]]  # (metric name, label values in declared order)

_COLUMNS = "msg, req, side, total, speed, cost, c_in, c_out, c_cr, c_cc, c_cost, labels"
_MARKS = ",".join("?" * 12)
# The staged rows into the keyed table, in key order (appended to its end, not scattered),
# the latest copy of a key last so that it wins.
MERGE_STAGED = (
    f"INSERT OR REPLACE INTO responses SELECT {_COLUMNS} FROM responses_staged"
    " ORDER BY msg, req, seq"
)


class StagedRuns:
    """Where the staged rows of each committed batch are (responses_staged has no index on
    the message: one would be scattered like the keyed table): per batch, its messages in
    order (a batch is written sorted by message, with consecutive `seq`s from a first one).
    8 bytes a response, kept only while a cold backfill runs. A look-up searches every run;
    once look-ups have probed more than the runs hold, the runs are merged into one (then
    16 bytes a response), so that neither the look-ups nor the merges grow with the square
    of a history."""

    def __init__(self, next_seq: int) -> None:
        self.next_seq = next_seq
        # (messages in order, the first seq or each message's seq)
        self.runs: list[tuple[array, int | array]] = []
        self.size = 0  # messages in the runs
        self.probes = 0  # runs searched by look-ups since the last merge
        self._committed = (next_seq, 0, 0)  # (next_seq, runs, size) as of the last commit

    def add(self, msgs: list[int]) -> int:
        """A batch of these messages (in order) is written: the `seq` of its first row."""
        if self._committed[1] > 1 and self.probes > self.size:
            self._merge_runs()
        base = self.next_seq
        self.runs.append((array("q", msgs), base))
        self.next_seq += len(msgs)
        self.size += len(msgs)
        return base

    def _merge_runs(self) -> None:
        """The committed runs into one (a rollback drops only the runs after them)."""
        next_seq, count, size = self._committed
        pairs: list[tuple[int, int]] = []
        for run, where in self.runs[:count]:
            seqs = range(where, where + len(run)) if isinstance(where, int) else where
            pairs.extend(zip(run, seqs, strict=True))
        pairs.sort()
        merged = (array("q", [msg for msg, _ in pairs]), array("q", [seq for _, seq in pairs]))
        # a new list: a look-up going through the old one is not upset
        self.runs = [merged, *self.runs[count:]]
        self._committed = (next_seq, 1, size)
        self.probes = 0

    def seqs(self, msgs: list[int]) -> list[int]:
        """The `seq` of every staged row of these messages."""
        runs = self.runs
        self.probes += len(msgs) * len(runs)
        found: list[int] = []
        for run, where in runs:
            end = len(run)
            for msg in msgs:
                at = bisect.bisect_left(run, msg)
                while at < end and run[at] == msg:
                    found.append(where + at if isinstance(where, int) else where[at])
                    at += 1
        return found

    def committed(self) -> None:
        self._committed = (self.next_seq, len(self.runs), self.size)

    def rolled_back(self) -> None:
        self.next_seq, runs, self.size = self._committed
        del self.runs[runs:]


def _rows_of(batch: list[tuple], msgs: list[int]) -> Iterator[tuple]:
    """The rows of a response_batch (in message order) whose message is one of these."""
    for msg in msgs:
        at = bisect.bisect_left(batch, (msg,))
        while at < len(batch) and batch[at][0] == msg:
            yield batch[at]
            at += 1


class MessageFilter:
    """The message hashes a database created in this process may hold (a Bloom filter of
    fixed size): a message it has not seen is not stored, so the backfill of a new history
    skips the look-ups that were its main process's largest cost. A false positive only
    costs a look-up; 2 MiB keep them rare up to about a million responses."""

    BITS = 1 << 24

    def __init__(self) -> None:
        self._bits = bytearray(self.BITS >> 3)

    def add_all(self, msgs: Iterable[int]) -> None:
        bits, mask = self._bits, self.BITS - 1
        for msg in msgs:
            for probe in (msg & mask, (msg >> 24) & mask):
                bits[probe >> 3] |= 1 << (probe & 7)

    def held(self, msgs: Iterable[int]) -> list[int]:
        """Those of these hashes the database may hold, in order."""
        bits, mask = self._bits, self.BITS - 1
        return [
            msg
            for msg in msgs
            if all(
                bits[probe >> 3] & (1 << (probe & 7)) for probe in (msg & mask, (msg >> 24) & mask)
            )
        ]


class FastMessageFilter(MessageFilter):
    """The same filter, probed in C (_fastline.c): a backfill asks it about every message."""

    def add_all(self, msgs: Iterable[int]) -> None:
        bloom_add(self._bits, msgs)

    def held(self, msgs: Iterable[int]) -> list[int]:
        return bloom_held(self._bits, msgs)


try:  # built with the package; without a compiler, the filter in Python
    from agentwatch.sentinels.token_ledger._fastline import bloom_add, bloom_held
except ImportError:  # pragma: no cover - tests/test_fastline.py requires it
    new_filter: type[MessageFilter] = MessageFilter
else:
    new_filter = FastMessageFilter


class Store:
    """Thin, batch-oriented access to the ledger database."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # One writer per database: a second sentinel on the same state would count twice.
        self._lock = single.hold_writer(path, "token-ledger")
        try:
            self._open()
        except BaseException:  # e.g. a full disk: the next try must find the lock free
            with contextlib.suppress(Exception):
                self.db.close()
            single.release(self._lock)
            self._lock = -1
            raise

    def _open(self) -> None:
        path = self.path
        # Held while a batch is written from the ledger's commit thread (Ledger.flush): every
        # other use of the connection waits for it.
        self.lock = threading.Lock()
        self._reads: sqlite3.Connection | None = None
        self.db = ledger_db.open_versioned(
            path, _SCHEMA, SCHEMA_VERSION, "ledger", "the transcripts"
        )
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(files)")}
        if "tail" not in columns:  # a ledger from before the tail fingerprint: add it
            self.db.execute("ALTER TABLE files ADD COLUMN tail BLOB")
        self._labelsets: dict[tuple[str, str, str], int] = {}
        self._labelsets_by_id: dict[int, tuple[str, str, str]] = {}
        self._new_labelsets: list[tuple[int, str, str, str]] = []
        if self.db.execute("SELECT 1 FROM responses_staged LIMIT 1").fetchone() is not None:
            self._merge()  # a backfill stopped before its end: its rows take their place
        empty = self.db.execute("SELECT 1 FROM responses LIMIT 1").fetchone() is None
        self._stored_msgs = new_filter() if empty else None
        # A cold backfill's rows go to responses_staged until merge_staged.
        self._staged = StagedRuns(self._next_seq()) if empty else None
        self.rollback()

    def _next_seq(self) -> int:
        row = self.db.execute("SELECT coalesce(max(seq), 0) + 1 FROM responses_staged").fetchone()
        return int(row[0])

    def _merge(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute(MERGE_STAGED)
            self.db.execute("DELETE FROM responses_staged")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    @property
    def staging(self) -> bool:
        """True while responses are written to responses_staged (a cold backfill)."""
        return self._staged is not None

    def merge_staged(self) -> None:
        """At the end of a cold backfill: its staged responses into the keyed table, in one
        transaction (a failure keeps them staged, still found by look-ups); later writes go
        to the keyed table."""
        if self._staged is None:
            return
        with self.lock:
            self._merge()
            self._staged = None

    def close(self) -> None:
        if self._lock < 0:
            return
        if self._reads is not None:
            self._reads.close()
        self.db.close()
        single.release(self._lock)
        self._lock = -1

    # ---- reading
    def positions(self) -> dict[str, Position]:
        rows = self.db.execute("SELECT path, dev, ino, offset, head_len, head, tail FROM files")
        return {
            _path_of(path): Position(dev, ino, offset, head_len, head or b"", tail or b"")
            for path, dev, ino, offset, head_len, head, tail in rows
        }

    def counters(self) -> dict[CounterKey, float]:
        return {
            (name, tuple(json.loads(labels))): value
            for name, labels, value in self.db.execute("SELECT name, labels, value FROM counters")
        }

    def recent_sessions(self, since: float) -> dict[str, tuple]:
        rows = self.db.execute(
            "SELECT session, project, first_ts, last_ts, t_in, t_out, t_cr, t_cc, cost "
            "FROM sessions WHERE last_ts >= ?",
            (since,),
        )
        return {row[0]: row[1:] for row in rows}

    def minutes(self, after: int | None = None) -> Iterator[tuple[int, int, float]]:
        """(minute, first_ms, tokens of every type) in order, after a minute, for the blocks
        (blocks.build): one row per hour with entries, as its last minute. A block's edges
        are whole hours and a minute is closed at its end, so an hour's minutes never fall
        in two blocks, and its first entry is its first minute's: SQLite sums the hour, and
        ~30 times fewer rows come back (the last settle of a 1 GiB backfill read 23,267
        minutes, now 682 hours). A cursor, not a list: years of history are read once at
        the start."""
        where = "" if after is None else "WHERE minute > ?"
        return self.db.execute(
            # the hour's last minute, 60 * ceil(minute / 60): SQLite's division truncates,
            # which rounds up below zero
            "SELECT 60 * CASE WHEN minute > 0 THEN (minute + 59) / 60 ELSE minute / 60 END"
            " AS hour, min(first_ms), total(t_in + t_out + t_cr + t_cc) FROM buckets "
            f"{where} GROUP BY hour ORDER BY hour",
            () if after is None else (after,),
        )

    def tokens_by_labels(self, first: int, last: int) -> dict[int, float]:
        """Tokens of every type per labelset in the minutes first..last."""
        rows = self.db.execute(
            "SELECT labels, total(t_in + t_out + t_cr + t_cc) FROM buckets "
            "WHERE minute BETWEEN ? AND ? GROUP BY labels",
            (first, last),
        )
        return dict(rows.fetchall())

    def cost_since(self, after: int) -> float:
        """USD of the minutes after this one."""
        row = self.db.execute("SELECT total(cost) FROM buckets WHERE minute > ?", (after,))
        return float(row.fetchone()[0])

    def responses_for(
        self, msgs: Iterable[int], writing: list[tuple] | None = None
    ) -> dict[int, list[ResponseRow]]:
        """Every stored row sharing one of these message hashes (one query per 30k ids).

        `writing`: the response_batch being written from the commit thread, if one is. Its
        rows are taken from it, and the rest from the last committed state through a
        connection of its own (WAL readers do not wait for the writer), so a look-up never
        waits for a commit."""
        unique = list(set(msgs))
        if self._stored_msgs is not None:  # a history read from scratch: ask only for these
            unique = self._stored_msgs.held(unique)
        if not unique:
            return {}
        if writing is None:
            with self.lock:  # a batch written meanwhile is found once it is done
                stored = self._select_responses(self.db, unique)
        else:
            stored = self._select_responses(self._reader(), unique)
            for row in _rows_of(writing, unique):  # newer than the committed state
                stored[(row[0], row[1])] = row
        found: dict[int, list[ResponseRow]] = {}
        for row in stored.values():
            found.setdefault(row[0], []).append(ResponseRow(*row))
        return found

    def _select_responses(self, db: sqlite3.Connection, msgs: list[int]) -> dict[tuple, tuple]:
        staged = self._staged
        if staged is not None:  # nothing in `responses` (see StagedRuns)
            return self._select_staged(db, staged.seqs(msgs))
        stored: dict[tuple, tuple] = {}
        for start in range(0, len(msgs), 30000):
            part = msgs[start : start + 30000]
            marks = ",".join("?" * len(part))
            query = f"SELECT * FROM responses WHERE msg IN ({marks})"
            for row in db.execute(query, part).fetchall():
                stored[(row[0], row[1])] = row
        return stored

    @staticmethod
    def _select_staged(db: sqlite3.Connection, seqs: list[int]) -> dict[tuple, tuple]:
        """The rows at these `seq`s (a seq of a batch not committed yet finds nothing), the
        latest of each key winning."""
        rows: list[tuple] = []
        for start in range(0, len(seqs), 30000):
            part = seqs[start : start + 30000]
            marks = ",".join("?" * len(part))
            query = f"SELECT * FROM responses_staged WHERE seq IN ({marks})"
            rows.extend(db.execute(query, part).fetchall())
        rows.sort()
        return {(row[1], row[2]): row[1:] for row in rows}

    def _reader(self) -> sqlite3.Connection:
        """A read-only connection for look-ups while the commit thread writes."""
        if self._reads is None:
            self._reads = sqlite3.connect(
                str(self.path), isolation_level=None, check_same_thread=False
            )
            self._reads.execute("PRAGMA query_only=1")
        return self._reads

    def kept(self) -> dict[str, list[str]] | None:
        """Names with series of their own per dimension; None before the fold existed."""
        if self.db.execute("SELECT 1 FROM meta WHERE key='fold'").fetchone() is None:
            return None
        kept: dict[str, list[str]] = {}
        for dimension, name in self.db.execute("SELECT dimension, name FROM kept ORDER BY rowid"):
            kept.setdefault(dimension, []).append(name)
        return kept

    def save_kept(self, kept: dict[str, list[str]]) -> None:
        """Within the open transaction (or alone): names that got a slot."""
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('fold', '1')")
        self.db.executemany(
            "INSERT OR IGNORE INTO kept VALUES (?, ?)",
            ((dim, name) for dim, names in kept.items() for name in names),
        )

    def gauges(self) -> dict[str, float]:
        rows = self.db.execute("SELECT key, value FROM meta WHERE key LIKE 'gauge:%'")
        return {key[len("gauge:") :]: float(value) for key, value in rows}

    def labelset(self, project: str, model: str, session: str) -> int:
        key = (project, model, session)
        found = self._labelsets.get(key)
        if found is None:  # numbered here, written with the batch (save_labelsets)
            found = self._next_labelset
            self._next_labelset += 1
            self._labelsets[key] = found
            self._labelsets_by_id[found] = key
            self._new_labelsets.append((found, *key))
        return found

    def take_labelsets(self) -> list[tuple[int, str, str, str]]:
        """The label sets numbered since the last call, to be saved with the batch."""
        new, self._new_labelsets = self._new_labelsets, []
        return new

    def save_labelsets(self, labelsets: list[tuple[int, str, str, str]]) -> None:
        """Within the open transaction: label sets from take_labelsets."""
        self.db.executemany("INSERT INTO labelsets VALUES (?, ?, ?, ?)", labelsets)

    def labels_of(self, labelset: int) -> tuple[str, str, str]:
        return self._labelsets_by_id[labelset]

    def size_bytes(self) -> int:
        return ledger_db.size_bytes(self.path)

    # ---- writing: everything of one step in one transaction
    def begin(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.db.execute("COMMIT")
        if self._staged is not None:
            self._staged.committed()

    def rollback(self) -> None:
        with self.lock:
            self._rollback()

    def _rollback(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")
        if self._staged is not None:  # the runs of batches that were not committed
            self._staged.rolled_back()
        # Label sets inserted by the failed step are gone from the database: forget them too.
        self._labelsets = {
            (p, m, s): i for i, p, m, s in self.db.execute("SELECT * FROM labelsets")
        }
        self._labelsets_by_id = {i: key for key, i in self._labelsets.items()}
        self._next_labelset = max(self._labelsets_by_id, default=0) + 1
        self._new_labelsets = []

    def save_positions(self, positions: dict[str, Position]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                (_stored_path(path), p.dev, p.ino, p.offset, p.head_len, p.head, p.tail)
                for path, p in positions.items()
            ),
        )

    @staticmethod
    def response_batch(rows: Iterable[ResponseRow], fresh: Iterable[tuple] = ()) -> list[tuple]:
        """`rows`, and `fresh` rows as tuples (ResponseRow's fields), in the order of their
        message (the key's first part): the keys are hashes, so a batch in arrival order
        would touch the table's pages at random (a 5 GiB backfill spent most of its commits
        there). Sorted by the message alone, which is faster than by whole rows."""
        batch = [row.as_tuple() for row in rows]
        batch.extend(fresh)
        batch.sort(key=itemgetter(0))
        return batch

    def will_store(self, msgs: Iterable[int]) -> None:
        """Before a batch of responses is written (and looked up again), its messages: a
        message filter that misses one would count it twice; a rollback only costs a
        query."""
        if self._stored_msgs is not None:
            self._stored_msgs.add_all(msgs)

    def save_responses(self, batch: list[tuple]) -> None:
        """Within the open transaction: a response_batch whose messages will_store was told."""
        staged = self._staged
        if staged is None:
            self.db.executemany(
                "INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", batch
            )
            return
        base = staged.add([row[0] for row in batch])
        # SQLite numbers appended rows max(seq) + 1 on: no Python per row. Checked, since
        # the look-ups rely on it.
        self.db.executemany(f"INSERT INTO responses_staged ({_COLUMNS}) VALUES ({_MARKS})", batch)
        last = self.db.execute("SELECT max(seq) FROM responses_staged").fetchone()[0]
        if batch and last != base + len(batch) - 1:
            raise RuntimeError(f"staged responses numbered to {last}, not {base + len(batch) - 1}")

    def add_counters(self, deltas: dict[CounterKey, float]) -> None:
        self.db.executemany(
            "INSERT INTO counters VALUES (?, ?, ?) "
            "ON CONFLICT (name, labels) DO UPDATE SET value = value + excluded.value",
            ((name, json.dumps(labels), value) for (name, labels), value in deltas.items()),
        )

    def add_buckets(self, deltas: dict[tuple[int, int], list]) -> None:
        """deltas: (minute, labelset) -> [minute, labelset, first_ms, in, out, cache_read,
        cache_creation, cost, responses], the sums as floats (many lines each under the
        per-field bound can pass SQLite's int64); within the open transaction."""
        self.db.executemany(
            "INSERT INTO buckets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (minute, labels) DO UPDATE SET first_ms = min(first_ms, "
            "excluded.first_ms), t_in = t_in + excluded.t_in, t_out = t_out + excluded.t_out,"
            " t_cr = t_cr + excluded.t_cr, t_cc = t_cc + excluded.t_cc,"
            " cost = cost + excluded.cost, responses = responses + excluded.responses",
            sorted(deltas.values()),  # in key order, for the same reason as response_batch
        )

    def set_gauges(self, gauges: dict[str, float]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            ((f"gauge:{key}", repr(value)) for key, value in gauges.items()),
        )

    def add_sessions(self, deltas: dict[str, list]) -> None:
        """deltas: session -> [project, first_ts, last_ts, in, out, cache_read, cache_creation,
        cost]; a None time means no activity of that session in this batch."""
        self.db.executemany(
            "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (session) DO UPDATE SET "
            "first_ts = min(coalesce(first_ts, excluded.first_ts),"
            "               coalesce(excluded.first_ts, first_ts)),"
            " last_ts = max(coalesce(last_ts, excluded.last_ts),"
            "               coalesce(excluded.last_ts, last_ts)),"
            " t_in = t_in + excluded.t_in, t_out = t_out + excluded.t_out,"
            " t_cr = t_cr + excluded.t_cr, t_cc = t_cc + excluded.t_cc,"
            " cost = cost + excluded.cost",
            # Sums as floats: many lines each under the per-field bound can pass SQLite's
            # int64 (an OverflowError at COMMIT, forever); a REAL only loses precision.
            (
                (session, project, first_ts, last_ts, *map(float, sums))
                for session, (project, first_ts, last_ts, *sums) in deltas.items()
            ),
        )
