"""The agent ledger's store during a backfill, in process on the fake reader: the indexes
are dropped while an empty table fills and built when the queue is done (a stop before that
leaves them to the next open, which then counts what a clean run counts), a ledger with rows
keeps them; a cold start's look-ups of keys it wrote itself still count a repeated key once,
also after a batch rolled back; `--once`'s larger batches count what the live cycle's small
ones count; a batch runs with fewer garbage collections; a schema 1 or 2 database is
migrated without counting anything again."""

from __future__ import annotations

import gc
import hashlib
import random
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import pytest

from agentwatch.core import single
from agentwatch.sentinels import registry
from agentwatch.sentinels.agent_ledger import readers
from agentwatch.sentinels.agent_ledger import store as store_module
from agentwatch.sentinels.agent_ledger.base import ReadResult
from agentwatch.sentinels.agent_ledger.ledger import (
    BATCH_ENTRIES,
    BATCH_FILES,
    BATCH_GC_THRESHOLD,
    COST,
    ONCE_BATCH_ENTRIES,
    ONCE_BATCH_FILES,
    RESPONSES,
    TOKENS,
    Ledger,
)
from agentwatch.sentinels.agent_ledger.main import open_ledger
from agentwatch.sentinels.agent_ledger.store import DATABASE_FILE, Store
from agentwatch.sentinels.contract import Context
from tests.agents import agent_ledger_fake as fake

FILES = 6


def _write(folder: Path, files: int = FILES, start: int = 0) -> None:
    folder.mkdir(exist_ok=True)
    for number in range(start, start + files):
        lines = [fake.line(f"f{number}-{n}", 1.7e9 + 60 * n + number, f"s{number}", "p", "m",
                           (10 + n, 2, 3, 0)) for n in range(5)]  # fmt: skip
        (folder / f"{number:03d}.jsonl").write_text("".join(lines))


def _ledger(tmp_path: Path, folder: Path, batch: tuple[int, int]) -> Ledger:
    plug = readers.Plug(fake.PLUG_MODULE, name=fake.AGENT)  # per file: one batch per `batch`
    env = {fake.DIR_ENV: str(folder)}
    return Ledger(Store(tmp_path / DATABASE_FILE), {fake.AGENT: (plug, fake)}, env=env,  # type: ignore[dict-item]
                  home=tmp_path, batch=batch)  # fmt: skip


def _has_time_index(path: Path) -> bool:
    """Both indexes of the responses table (they are deferred and built together)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        found = db.execute(
            "SELECT count(*) FROM sqlite_master WHERE name IN "
            "('responses_by_time', 'responses_by_key')"
        ).fetchone()[0]
    assert found in (0, 2)
    return found == 2


def _responses(path: Path) -> list[tuple]:
    """The stored rows as `agentwatch report` reads them (cli/report_rows.py), in key order."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("SELECT * FROM responses ORDER BY key").fetchall()


def _input(ledger: Ledger) -> float:
    return sum(v for (name, labels), v in ledger.counters.items()
               if name == TOKENS and labels[3] == "input")  # fmt: skip


def test_a_backfill_into_an_empty_table_builds_the_time_index_at_its_end(tmp_path: Path) -> None:
    folder = tmp_path / "fake"
    _write(folder)
    database = tmp_path / DATABASE_FILE
    ledger = _ledger(tmp_path, folder, (2, BATCH_ENTRIES))
    assert _has_time_index(database)
    ledger.scan()
    assert len(ledger.queue) == FILES // 2
    assert not _has_time_index(database)
    while ledger.queue:
        assert ledger.step()
        assert not _has_time_index(database)
    assert not ledger.step()
    assert _has_time_index(database)
    spent = ledger.store.cost_since(0.0)
    assert spent.keys() == {fake.AGENT}
    assert abs(spent[fake.AGENT] - FILES * sum(10 + n + 5 for n in range(5)) / 1e6) < 1e-12
    _write(folder, files=2, start=FILES)  # rows there: the index stays while they are added
    ledger.scan()
    assert ledger.queue
    assert _has_time_index(database)
    while ledger.step():
        pass
    assert _input(ledger) == (FILES + 2) * sum(10 + n for n in range(5))
    ledger.store.close()


def _stop(ledger: Ledger) -> None:
    """As a kill leaves it: no `backfilled`, no clean close."""
    ledger.store.db.close()
    ledger.store._lock, lock = -1, ledger.store._lock
    single.release(lock)


@pytest.mark.parametrize("reopen", [True, False], ids=["reopened", "mutant_no_key_index"])
def test_a_backfill_stopped_before_its_end_gets_the_index_at_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reopen: bool
) -> None:
    """Rows appended without indexes, then a stop mid-backfill: the next open builds them,
    and what it counts then (the rest of the files, and a key of the committed batch grown
    in a later file) equals a clean run, rows and counters. The mutant (an open that leaves
    the key index out) appends the grown key's row a second time."""
    folder = tmp_path / "fake"
    _write(folder)
    grown = fake.line("f0-0", 1.7e9, "s0", "p", "m", (10 + 7, 2, 3, 0))  # in the last batch
    (folder / "100.jsonl").write_text(grown + fake.line("new", 1.7e9, "s9", "p", "m", (1, 0, 0, 0)))
    clean = _ledger(tmp_path / "clean", folder, (2, BATCH_ENTRIES))
    clean.scan()
    while clean.step():
        pass
    database = tmp_path / DATABASE_FILE
    ledger = _ledger(tmp_path, folder, (2, BATCH_ENTRIES))
    ledger.scan()
    assert ledger.step()  # one batch committed, the others not: as a kill would leave it
    _stop(ledger)
    assert not _has_time_index(database)
    if not reopen:
        monkeypatch.setattr(store_module, "_SCHEMA", store_module._SCHEMA.replace(
            store_module._INDEXES[0], "SELECT 1"))  # fmt: skip
    again = _ledger(tmp_path, folder, (2, BATCH_ENTRIES))
    if reopen:
        assert _has_time_index(database)
    again.scan()
    while again.step():
        pass
    assert _input(again) == FILES * sum(10 + n for n in range(5)) + 7 + 1
    assert again.counters == clean.counters
    assert (_responses(database) == _responses(tmp_path / "clean" / DATABASE_FILE)) is reopen
    again.store.close()
    clean.store.close()


def test_a_batch_rolled_back_mid_backfill_leaves_no_rowid_behind(tmp_path: Path) -> None:
    """The rowids a failed batch's appended rows would have had are given out again: the
    keys noted with them are forgotten, so a later batch's look-up of such a key reads
    nothing rather than another key's row."""
    folder = tmp_path / "fake"
    _write(folder, files=4)
    ledger = _ledger(tmp_path, folder, (2, BATCH_ENTRIES))
    ledger.scan()
    real = ledger.store.db
    failing = _FailOnce(real)
    ledger.store.db = failing  # type: ignore[assignment]
    with pytest.raises(sqlite3.OperationalError):  # the loop logs it as a failed cycle
        ledger.step()  # the first batch's rows were appended, then its sessions failed
    assert failing.failed and not ledger.files[fake.AGENT]
    assert ledger.store._written == {}
    ledger.store.db = real
    ledger.scan()
    while ledger.step():
        pass
    (folder / "100.jsonl").write_text(fake.line("f0-1", 1.7e9, "s0", "p", "m", (11 + 5, 2, 3, 0)))
    ledger.scan()
    while ledger.step():
        pass
    assert _input(ledger) == 4 * sum(10 + n for n in range(5)) + 5
    rows = _responses(tmp_path / DATABASE_FILE)
    assert len(rows) == len({row[0] for row in rows}) == 4 * 5
    ledger.store.close()


class _FailOnce:
    """A connection whose first sessions write fails (after the responses were written)."""

    def __init__(self, db: sqlite3.Connection):
        self.db, self.failed = db, False

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)

    def executemany(self, sql: str, rows: object) -> sqlite3.Cursor:
        if sql.startswith("INSERT INTO sessions") and not self.failed:
            self.failed = True
            raise sqlite3.OperationalError("disk I/O error")
        return self.db.executemany(sql, rows)  # type: ignore[arg-type]


def test_once_batches_count_what_small_batches_count(tmp_path: Path) -> None:
    folder = tmp_path / "fake"
    _write(folder, files=40)
    # 3 files a batch, cut after 2 when their 10 entries pass 7: 13 x 2 + 1 commits
    small = _ledger(tmp_path / "small", folder, (3, 7))
    large = _ledger(tmp_path / "large", folder, (ONCE_BATCH_FILES, ONCE_BATCH_ENTRIES))
    for ledger in (small, large):
        ledger.scan()
        while ledger.step():
            pass
    assert small.commits == 27 and large.commits == 1
    assert small.counters.keys() == large.counters.keys()
    for counter, value in small.counters.items():  # costs are summed in another grouping
        assert abs(value - large.counters[counter]) <= 1e-9 * max(1.0, value), counter
        assert value == large.counters[counter] or counter[0] == COST
    assert abs(small.store.cost_since(0.0)["fake"] - large.store.cost_since(0.0)["fake"]) < 1e-12
    small.store.close()
    large.store.close()


@pytest.mark.parametrize("most", [store_module._WRITTEN_MAX, 3], ids=["kept", "forgotten"])
def test_a_key_of_an_earlier_batch_of_a_cold_start_counts_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, most: int
) -> None:
    """A cold store asks SQLite only about keys it wrote (or, past _WRITTEN_MAX of them,
    about all): a key one batch counted and a later batch's file holds again adds only
    what grew, in the same process (in the backfill and after it) and after a reopen."""
    monkeypatch.setattr(store_module, "_WRITTEN_MAX", most)
    folder = tmp_path / "fake"
    _write(folder)  # f0-0 .. f5-4, one batch of 2 files each
    with (folder / "100.jsonl").open("w") as copy:  # a later batch: a copy, one grown
        copy.write(fake.line("f0-0", 1.7e9, "s0", "p", "m", (10, 2, 3, 0)))
        copy.write(fake.line("f1-1", 1.7e9, "s1", "p", "m", (11 + 4, 2, 3, 0)))
        copy.write(fake.line("new", 1.7e9, "s9", "p", "m", (1, 0, 0, 0)))
    ledger = _ledger(tmp_path, folder, (2, BATCH_ENTRIES))
    ledger.scan()
    while ledger.step():
        pass
    assert ledger.commits == 4
    assert _input(ledger) == FILES * sum(10 + n for n in range(5)) + 4 + 1
    responses = {labels: v for (name, labels), v in ledger.counters.items() if name == RESPONSES}
    assert responses == {(fake.AGENT, "p", "m"): FILES * 5 + 1}
    assert ledger.store._written is None  # the backfill is done: the keys are let go
    (folder / "102.jsonl").write_text(fake.line("f3-3", 1.7e9, "s3", "p", "m", (13 + 2, 2, 3, 0)))
    ledger.scan()
    while ledger.step():
        pass
    assert _input(ledger) == FILES * sum(10 + n for n in range(5)) + 4 + 1 + 2
    ledger.store.close()
    (folder / "101.jsonl").write_text(fake.line("f2-2", 1.7e9, "s2", "p", "m", (12 + 1, 2, 3, 0)))
    again = _ledger(tmp_path, folder, (2, BATCH_ENTRIES))
    again.scan()
    while again.step():
        pass
    assert _input(again) == FILES * sum(10 + n for n in range(5)) + 4 + 1 + 2 + 1
    again.store.close()


class _Watching:
    """The fake reader, noting the collector's threshold while it reads; raises if told."""

    AGENT = fake.AGENT

    def __init__(self, folder: Path, raises: bool):
        self.folder, self.raises = folder, raises
        self.thresholds: list[int] = []
        self.files, self.price = fake.files, fake.price

    def roots(self, env: object, home: Path) -> list[Path]:
        return [self.folder]

    def read_files(self, paths: Iterable[Path]) -> ReadResult:
        self.thresholds.append(gc.get_threshold()[0])
        if self.raises:
            raise KeyError("a reader's bug")
        return fake.read_files(paths)


@pytest.mark.parametrize("raises", [False, True], ids=["read", "reader_raises"])
def test_a_batch_runs_with_fewer_collections_and_restores_them(
    tmp_path: Path, raises: bool
) -> None:
    folder = tmp_path / "fake"
    _write(folder, files=2)
    reader = _Watching(folder, raises)
    plug = readers.Plug(fake.PLUG_MODULE, name=fake.AGENT)
    ledger = Ledger(Store(tmp_path / DATABASE_FILE), {fake.AGENT: (plug, reader)}, home=tmp_path)  # type: ignore[dict-item]
    before = gc.get_threshold()
    ledger.scan()
    while ledger.step():
        pass
    assert gc.get_threshold() == before
    assert reader.thresholds and set(reader.thresholds) == {BATCH_GC_THRESHOLD}
    assert (ledger.commits == 0) == raises
    ledger.store.close()


@pytest.mark.parametrize("once", [True, False], ids=["once", "loop"])
def test_the_sentinel_reads_in_larger_batches_with_once(tmp_path: Path, once: bool) -> None:
    config = registry.config_from_mapping({"sentinels": {"agent-ledger": {"agents": ["gemini"]}}})
    context = Context(config, tmp_path / "spool", tmp_path / "state", once, lambda: None,
                      lambda: False, "agent-ledger")  # fmt: skip
    ledger = open_ledger(context)
    try:
        expected = (ONCE_BATCH_FILES, ONCE_BATCH_ENTRIES) if once else (BATCH_FILES, BATCH_ENTRIES)
        assert (ledger.batch_files, ledger.batch_entries) == expected
    finally:
        ledger.store.close()


# Schema 1's responses table, as store.py created it until schema 2 (keys: 16-byte blobs).
_SCHEMA_1_RESPONSES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE responses (
    key BLOB PRIMARY KEY, agent TEXT NOT NULL, session TEXT NOT NULL, project TEXT NOT NULL,
    model TEXT NOT NULL, ts REAL NOT NULL, t_in REAL NOT NULL, t_out REAL NOT NULL,
    t_cr REAL NOT NULL, t_cc REAL NOT NULL, cost REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX responses_by_time ON responses (ts, agent);
INSERT INTO meta VALUES ('schema', '1');
"""


_SCHEMA_2_RESPONSES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE responses (
    key INTEGER PRIMARY KEY, agent TEXT NOT NULL, session TEXT NOT NULL, project TEXT NOT NULL,
    model TEXT NOT NULL, ts REAL NOT NULL, t_in REAL NOT NULL, t_out REAL NOT NULL,
    t_cr REAL NOT NULL, t_cc REAL NOT NULL, cost REAL NOT NULL
);
CREATE INDEX responses_by_time ON responses (ts, agent);
INSERT INTO meta VALUES ('schema', '2');
"""


@pytest.mark.parametrize("schema", [1, 2])
def test_an_older_schema_is_migrated_and_nothing_counts_again(tmp_path: Path, schema: int) -> None:
    """What schema 1 stored under a 16-byte key, and schema 2 under the 64-bit key as the
    rowid, is found under the 64-bit key of the same text after the migration (with both
    indexes): a file read again adds only what grew since."""
    folder = tmp_path / "fake"
    _write(folder, files=2)  # f0-* and f1-*: f0-* counted by the old ledger, f0-4 since grown
    (folder / "000.jsonl").open("a").write(
        fake.line("f0-4", 1.7e9, "s0", "p", "m", (14 + 3, 2, 3, 0))
    )
    database = tmp_path / DATABASE_FILE
    with sqlite3.connect(database) as old:
        old.executescript(_SCHEMA_1_RESPONSES if schema == 1 else _SCHEMA_2_RESPONSES)
        for n in range(5):
            key = hashlib.blake2b(f"f0-{n}".encode(), digest_size=16).digest()
            if schema == 2:
                key = store_module.key_hash(f"f0-{n}")  # type: ignore[assignment]
            row = (key, fake.AGENT, "s0", "p", "m", 1.7e9, 10.0 + n, 2.0, 3.0, 0.0, 0.0)
            old.execute("INSERT INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?)", row)
    ledger = _ledger(tmp_path, folder, (BATCH_FILES, BATCH_ENTRIES))
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("3",)
        assert db.execute("SELECT count(*), typeof(min(key)) FROM responses").fetchone() == (
            5,
            "integer",
        )
    assert _has_time_index(database)
    ledger.scan()
    while ledger.step():
        pass
    assert _input(ledger) == sum(10 + n for n in range(5)) + 3  # file 001, and f0-4's growth
    responses = {labels: v for (name, labels), v in ledger.counters.items() if name == RESPONSES}
    assert responses == {(fake.AGENT, "p", "m"): 5}
    ledger.store.close()
    again = _ledger(tmp_path, folder, (BATCH_FILES, BATCH_ENTRIES))  # schema 3 stays as it is
    again.scan()
    while again.step():
        pass
    assert again.commits == 0
    again.store.close()


def test_keys_hashed_together_are_what_one_key_hashes_to() -> None:
    """`key_hashes` (the ledger's, in C) and its Python stand-in give `key_hash` of each key,
    also for keys with non-ASCII text and a lone surrogate (encoded with surrogatepass), of
    every length around BLAKE2b's 128-byte block, and the first 8 bytes of the 16-byte
    BLAKE2b digest, as schema 1's keys began."""
    from agentwatch.sentinels.agent_ledger import _keyhash

    assert store_module.key_hashes is _keyhash.key_hashes  # the C one is built and used
    rng = random.Random(29)
    keys = ["opencode:msg_1", "", "gemini:é/ü\0x", "codex:\ud800", "k" * 500]
    for size in [*range(300), *(rng.randrange(300, 3000) for _ in range(50))]:
        for alphabet in ("codex:0123456789abcdef", "é€\U0001f600a", "a\ud800b\0"):
            keys.append("".join(rng.choice(alphabet) for _ in range(size)))
    hashed = store_module.key_hashes(keys)
    assert hashed == [store_module.key_hash(key) for key in keys]
    assert store_module._key_hashes_py(keys) == hashed
    with pytest.raises(TypeError):
        store_module.key_hashes(["a", b"b"])  # type: ignore[list-item]
    digest = hashlib.blake2b(b"opencode:msg_1", digest_size=16).digest()
    assert hashed[0] == int.from_bytes(digest[:8], "big", signed=True)


def test_the_bounds_check_keeps_what_out_of_bounds_keeps() -> None:
    """Ledger._bounded checks a plain AgentUsage's bounds inline: for every count and cost at
    and around the bounds (and of the wrong type), it keeps and rejects what
    base.out_of_bounds keeps and rejects, with its reason."""
    from agentwatch.sentinels.agent_ledger import base

    counts = [0, 1, base.MAX_TOKENS, base.MAX_TOKENS + 1, -1, 2.0, True, None]
    costs = [None, 0.0, 1.5, base.MAX_COST_USD, base.MAX_COST_USD + 0.01, -0.01, -0.0,
             float("nan"), float("inf"), float("-inf"), 2, True, "1"]  # fmt: skip
    entries = []
    for at in range(4):
        for count in counts:
            numbers = [7, 7, 7, 7]
            numbers[at] = count  # type: ignore[call-overload]
            for cost in costs:
                entries.append(base.usage("gemini", f"k{len(entries)}", 0.0, "s", "p", "m",
                                          *numbers, cost_usd=cost))  # type: ignore[arg-type]  # fmt: skip
    priced = base.usage("gemini", "priced", 0.0, "s", "p", "m", 1, 2, 3, 4)  # cost from price

    class Reader:
        @staticmethod
        def price(entry: base.AgentUsage) -> float | None:
            return float("nan") if entry.key == "priced" else None

    result = base.ReadResult(entries=[*entries, priced])
    kept = Ledger._bounded(result, Reader)  # type: ignore[arg-type]
    want_kept, want_rejects = [], {}
    for entry in result.entries:
        cost = entry.cost_usd if entry.cost_usd is not None else Reader.price(entry)
        reason = base.out_of_bounds(entry, cost)
        if reason is None:
            want_kept.append((entry, cost))
        else:
            want_rejects[reason] = want_rejects.get(reason, 0) + 1
    assert [(e.key, c) for e, c in kept] == [(e.key, c) for e, c in want_kept]
    assert result.rejects == want_rejects
    assert want_rejects["bad_token_count"] and want_rejects["bad_cost"] and len(want_kept) > 20


def test_a_new_database_has_large_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    old = tmp_path / "old" / DATABASE_FILE
    old.parent.mkdir()
    sqlite3.connect(old).execute("CREATE TABLE t (x)").connection.close()  # 4 KiB pages
    for path, size in ((tmp_path / DATABASE_FILE, store_module.PAGE_SIZE), (old, 4096)):
        store = Store(path)
        try:
            assert store.db.execute("PRAGMA page_size").fetchone()[0] == size
        finally:
            store.close()
