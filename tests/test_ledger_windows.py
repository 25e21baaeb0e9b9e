"""The ledger's time windows with a fake clock: minute buckets, 5-hour blocks kept up to date
incrementally, spend per local period and per started run, and the commit histogram.

ccusage itself checks the blocks in tests/conformance/test_blocks_conformance.py; here the
incremental tracker is held against a full computation, on every order of arrival."""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentwatch.core import run_budget
from agentwatch.core.spend import period_starts
from agentwatch.demo.transcripts import iso_ms
from agentwatch.sentinels.token_ledger import blocks
from agentwatch.sentinels.token_ledger.blocks import BLOCK_MS, HOUR_MS, MINUTE_MS, BlockTracker
from agentwatch.sentinels.token_ledger.commit_times import BUCKETS, CommitTimes
from agentwatch.sentinels.token_ledger.ledger import Ledger
from agentwatch.sentinels.token_ledger.pricing import PriceBook
from agentwatch.sentinels.token_ledger.store import Store
from agentwatch.sentinels.token_ledger.windows import Windows
from tests.transcripts import append, assistant, encode, transcript

PRICES = PriceBook.load()
CLAUDE = ("agent", "claude-code")  # the label of every series of the token ledger's spend
T0 = 1_795_000_000_000 // HOUR_MS * HOUR_MS  # an hour boundary (ms), 2026-11-18T...


def at(ms: int) -> str:
    return iso_ms(ms)


@pytest.fixture
def tz(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """Set the process's zone (TZ) for one test, restored after."""

    def use(zone: str) -> None:
        monkeypatch.setenv("TZ", zone)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def make(tmp_path: Path) -> Iterator:
    """A ledger on `tmp_path/claude` with windows on a fake clock; reopening closes the last."""
    opened: list[Ledger] = []

    def build(clock: Clock, limit: int = 0, max_sessions: int = 100) -> tuple[Ledger, Windows]:
        for ledger in opened:
            ledger.store.close()
        ledger = Ledger(
            Store(tmp_path / "state" / "ledger.sqlite"), PRICES, [tmp_path / "claude/projects"],
            clock=clock, session_ttl=7 * 86400.0, max_sessions=max_sessions,
        )  # fmt: skip
        opened.append(ledger)
        return ledger, Windows(ledger, tmp_path / "state", limit, clock=clock)

    yield build
    for ledger in opened:
        ledger.store.close()


def metrics(windows: Windows, settle: bool = True) -> dict[tuple[str, tuple], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in windows.families(settle=settle)
        for sample in family.samples
    }


def line(ms: int, tokens: int = 10, cost: float | None = None, msg: str | None = None) -> dict:
    extra = {} if cost is None else {"costUSD": cost}
    return assistant(msg, input_tokens=tokens, output_tokens=0, timestamp=at(ms), **extra)


# ------------------------------------------------------------------- buckets and blocks


def test_minute_of_is_closed_at_the_minute_end() -> None:
    assert blocks.minute_of(600.0) == 10  # exactly 10:00 is the last instant of minute 10
    assert blocks.minute_of(600.001) == 11
    assert blocks.minute_of(540.001) == 10


def test_build_follows_ccusage_rules() -> None:
    """Start floored to the hour; an entry at start + 5 h stays; 1 ms later starts the next;
    the gap rule never changes the tokens (a 5 h gap implies start + 5 h passed)."""
    minutes = [
        (blocks.minute_of((T0 + 17 * MINUTE_MS + 5) / 1000), T0 + 17 * MINUTE_MS + 5, 1.0),
        (blocks.minute_of((T0 + BLOCK_MS) / 1000), T0 + BLOCK_MS, 2.0),
        (blocks.minute_of((T0 + BLOCK_MS + 1) / 1000), T0 + BLOCK_MS + 1, 4.0),
        (blocks.minute_of((T0 + 20 * HOUR_MS) / 1000), T0 + 20 * HOUR_MS, 8.0),  # a gap
    ]
    found = blocks.build(minutes)
    assert [(b.start_ms - T0, b.tokens) for b in found] == [
        (0, 3.0), (BLOCK_MS, 4.0), (20 * HOUR_MS, 8.0),
    ]  # fmt: skip
    # A bucket that holds only an entry at exactly an hour starts its block at that hour.
    assert blocks.build([(T0 // MINUTE_MS, T0, 1.0)])[0].start_ms == T0
    assert blocks.build([(T0 // MINUTE_MS, T0 - 1, 1.0)])[0].start_ms == T0 - HOUR_MS


class FakeBuckets:
    """The database side of a BlockTracker: minute -> [first_ms, tokens]."""

    def __init__(self) -> None:
        self.rows: dict[int, list] = {}
        self.reads = 0

    def put(self, minute: int, first_ms: int, tokens: float) -> None:
        row = self.rows.setdefault(minute, [first_ms, 0.0])
        row[0] = min(row[0], first_ms)
        row[1] += tokens

    def minutes(self, after: int | None) -> list[tuple[int, int, float]]:
        self.reads += 1
        return [(m, r[0], r[1]) for m, r in sorted(self.rows.items()) if after is None or m > after]

    def labels_in(self, first: int, last: int) -> dict[int, float]:
        return {1: sum(r[1] for m, r in self.rows.items() if first <= m <= last)}


@pytest.mark.parametrize("seed", range(40))
def test_incremental_blocks_equal_a_full_computation(seed: int) -> None:
    """Entries arrive in any order (a backfill reads newest files first), in batches: after
    each batch the tracker's blocks equal blocks built from every bucket at once."""
    rng = random.Random(seed)
    entries = []
    for _ in range(rng.randint(1, 60)):
        ms = T0 + rng.choice([rng.randint(0, 40 * HOUR_MS), rng.randint(0, 40) * HOUR_MS,
                              rng.randint(0, 8) * BLOCK_MS + rng.choice([0, 1, -1])])  # fmt: skip
        entries.append((ms, float(rng.randint(1, 1000))))
    rng.shuffle(entries)
    db = FakeBuckets()
    tracker = BlockTracker(db.minutes, db.labels_in)
    while entries:
        size = rng.randint(1, 8)
        batch, entries = entries[:size], entries[size:]
        deltas: dict = {}
        for ms, tokens in batch:
            minute = blocks.minute_of(ms / 1000)
            db.put(minute, ms, tokens)
            row = deltas.setdefault((minute, 1), [minute, 1, ms, 0, 0, 0, 0, 0.0, 1])
            row[2] = min(row[2], ms)
            row[3] += tokens
        tracker.add(deltas)
        tracker.settle(force=True)
        expected = blocks.build(db.minutes(None))
        assert [(b.start_ms, b.tokens) for b in tracker.blocks] == [
            (b.start_ms, b.tokens) for b in expected
        ]


def test_a_backfill_from_scratch_computes_the_blocks_once() -> None:
    """After `recompute` the batches are not folded in one by one (no block exists until
    the next settle), and that settle equals a full computation, in one read."""
    db = FakeBuckets()
    tracker = BlockTracker(db.minutes, db.labels_in)
    tracker.recompute()
    for hour in (30, 0, 10, 11, 2):
        ms = T0 + hour * HOUR_MS + 7
        minute = blocks.minute_of(ms / 1000)
        db.put(minute, ms, 1.0)
        tracker.add({(minute, 1): [minute, 1, ms, 1.0, 0, 0, 0, 0.0, 1]})
    assert tracker.pending and tracker.blocks == []
    tracker.settle(force=True)
    assert db.reads == 2  # the start's and the settle's
    expected = blocks.build(db.minutes(None))
    assert [(b.start_ms, b.tokens) for b in tracker.blocks] == [
        (b.start_ms, b.tokens) for b in expected
    ]
    assert len(expected) == 3


@pytest.mark.parametrize("seed", range(8))
def test_the_stores_hour_rows_build_the_blocks_its_minutes_build(tmp_path: Path, seed: int) -> None:
    """Store.minutes sums each hour in SQLite: the blocks built from its rows equal those
    built from every minute, on entries at, just before and just after hour and block
    edges, before 1970 too, and from any minute on."""
    rng = random.Random(seed)
    base = rng.choice([T0, -40 * HOUR_MS])  # minutes below zero round to their hour too
    store = Store(tmp_path / "ledger.sqlite")
    rows: dict[tuple[int, int], list] = {}
    for _ in range(300):
        edge = rng.choice([0, 1, -1, 0])
        ms = base + edge + rng.choice([rng.randint(0, 60 * HOUR_MS), rng.randint(0, 60) * HOUR_MS,
                                       rng.randint(0, 12) * BLOCK_MS])  # fmt: skip
        minute, labels = blocks.minute_of(ms / 1000), rng.randint(1, 3)
        row = rows.setdefault((minute, labels), [minute, labels, ms, 0.0, 0.0, 0.0, 0.0, 0.0, 0])
        row[2] = min(row[2], ms)
        row[3] += rng.randint(1, 1000)
    store.begin()
    store.add_buckets(rows)
    store.commit()
    by_minute: dict[int, list] = {}
    for minute, _labels, first_ms, tokens, *_ in rows.values():
        have = by_minute.setdefault(minute, [first_ms, 0.0])
        have[0] = min(have[0], first_ms)
        have[1] += tokens
    minutes = [(m, first, tokens) for m, (first, tokens) in sorted(by_minute.items())]
    assert len(list(store.minutes())) < len(minutes)
    expected = [(b.start_ms, b.tokens) for b in blocks.build(minutes)]
    assert [(b.start_ms, b.tokens) for b in blocks.build(store.minutes())] == expected
    after = blocks.build(minutes)[len(expected) // 2].end_ms // MINUTE_MS
    later = [(b.start_ms, b.tokens) for b in blocks.build([m for m in minutes if m[0] > after])]
    assert [(b.start_ms, b.tokens) for b in blocks.build(store.minutes(after))] == later
    store.close()


def test_blocks_after_the_last_need_no_database_read() -> None:
    """Live use only appends: no read after the start."""
    db = FakeBuckets()
    tracker = BlockTracker(db.minutes, db.labels_in)
    for hour in range(30):
        ms = T0 + hour * HOUR_MS + 7
        db.put(blocks.minute_of(ms / 1000), ms, 1.0)
        minute = blocks.minute_of(ms / 1000)
        tracker.add({(minute, 1): [minute, 1, ms, 1.0, 0, 0, 0, 0.0, 1]})
        tracker.settle()
    assert db.reads == 1
    assert len(tracker.blocks) == 6


def test_settle_is_rate_limited_during_a_backfill() -> None:
    db = FakeBuckets()
    ticks = iter(range(1000))  # each rebuild takes 1 s on this clock
    tracker = BlockTracker(db.minutes, db.labels_in, monotonic=lambda: next(ticks))
    for ms in (T0 + 30 * HOUR_MS, T0, T0 + 10 * HOUR_MS):  # the last two land before/between
        db.put(blocks.minute_of(ms / 1000), ms, 1.0)
        minute = blocks.minute_of(ms / 1000)
        tracker.add({(minute, 1): [minute, 1, ms, 1.0, 0, 0, 0, 0.0, 1]})
        tracker.settle()  # the first rebuild at once; the next not within 20x its time...
    assert tracker.pending
    tracker.settle(force=True)  # ...until forced (the backfill is done)
    assert not tracker.pending and len(tracker.blocks) == 3


def test_a_better_copy_adds_its_difference_to_its_own_minute(make, tmp_path: Path) -> None:
    path = transcript(tmp_path / "claude")
    path.write_bytes(encode(assistant("m1", output_tokens=10, timestamp=at(T0 + 5_000))))
    clock = Clock(T0 / 1000 + 3600)
    ledger, _ = make(clock)
    ledger.catch_up()
    append(path, encode(assistant("m1", output_tokens=50, timestamp=at(T0 + 3 * MINUTE_MS))))
    ledger.catch_up()
    rows = ledger.store.db.execute(
        "SELECT minute, t_in, t_out, responses FROM buckets ORDER BY minute"
    ).fetchall()
    first = T0 // MINUTE_MS + 1
    assert rows == [(first, 100.0, 10.0, 1), (first + 2, 0.0, 40.0, 0)]


def test_active_block_metrics_and_limits(make, tmp_path: Path) -> None:
    """A past block, then the active one: its tokens, start, end and each session's share
    (a session past max_sessions is in other/other); the limit from the largest past block
    or from the config."""
    root = tmp_path / "claude"
    files = {
        "s1": [line(T0 + 10 * HOUR_MS + 125_000, 100), line(T0 + 11 * HOUR_MS, 20)],
        "s2": [line(T0 + 11 * HOUR_MS + 60_000, 7)],
        "old": [line(T0 + 60_000, 5000)],
    }
    for mtime, (session, lines) in enumerate(files.items(), start=1_700_000_000):
        path = transcript(root, session=session)
        path.write_bytes(encode(*lines))
        os.utime(path, (mtime, mtime))  # read newest first: old and s2 get the two slots
    clock = Clock((T0 + 12 * HOUR_MS) / 1000)
    ledger, windows = make(clock, max_sessions=2)
    ledger.catch_up()
    seen = metrics(windows)
    tokens_of = {"old": 5000, "s1": 120, "s2": 7}
    assert seen[("agentwatch_block_tokens", ())] == tokens_of["s1"] + tokens_of["s2"]
    assert seen[("agentwatch_block_start_timestamp_seconds", ())] == (T0 + 10 * HOUR_MS) / 1000
    assert seen[("agentwatch_block_end_timestamp_seconds", ())] == (T0 + 15 * HOUR_MS) / 1000
    assert seen[("agentwatch_block_limit_tokens", (("source", "p90_block"),))] == 5000
    shares = {k[1]: v for k, v in seen.items() if k[0] == "agentwatch_block_session_tokens"}
    assert sorted(ledger.session_fold.kept) == ["old", "s2"]
    own, folded = "s2", "s1"
    assert shares == {
        (("project", "proj"), ("session", own)): tokens_of[own],
        (("project", "other"), ("session", "other")): tokens_of[folded],
    }
    # A live line in the active block updates tokens and shares without a read.
    append(transcript(root, session=own), encode(line(T0 + 11 * HOUR_MS + 300_000, 1000)))
    ledger.catch_up()
    again = metrics(windows)
    assert again[("agentwatch_block_tokens", ())] == seen[("agentwatch_block_tokens", ())] + 1000
    assert again[("agentwatch_block_session_tokens", (("project", "proj"), ("session", own)))] == (
        tokens_of[own] + 1000
    )
    # After the block's end nothing is active; the configured limit wins over the largest.
    clock.now = (T0 + 15 * HOUR_MS) / 1000
    ledger, windows = make(clock, limit=123_456)
    ended = metrics(windows)
    assert not [k for k in ended if k[0].startswith("agentwatch_block_") and "limit" not in k[0]]
    assert ended[("agentwatch_block_limit_tokens", (("source", "config"),))] == 123_456


def test_no_limit_before_a_block_has_ended(make, tmp_path: Path) -> None:
    transcript(tmp_path / "claude").write_bytes(encode(line(T0 + 60_000)))
    ledger, windows = make(Clock(T0 / 1000 + 600))
    ledger.catch_up()
    seen = metrics(windows)
    assert ("agentwatch_block_tokens", ()) in seen
    assert not [k for k in seen if k[0] == "agentwatch_block_limit_tokens"]


# ----------------------------------------------------------------------------- periods


def local(text: str) -> float:
    """A naive local time (the TZ in force) as Unix seconds."""
    return datetime.fromisoformat(text).timestamp()


@pytest.mark.parametrize(
    ("zone", "now", "day", "week", "month"),
    [
        # New York, the Sunday DST ends: the week began Monday 26 Oct (EDT, UTC-4).
        ("America/New_York", "2026-11-01T23:30:00", "2026-11-01T04:00:00+00:00",
         "2026-10-26T04:00:00+00:00", "2026-11-01T04:00:00+00:00"),
        # ...and the Monday after: midnight is EST (UTC-5) now.
        ("America/New_York", "2026-11-02T00:00:00", "2026-11-02T05:00:00+00:00",
         "2026-11-02T05:00:00+00:00", "2026-11-01T04:00:00+00:00"),
        # Kolkata (+05:30): a month that began on a Tuesday, one second before its end.
        ("Asia/Kolkata", "2026-12-31T23:59:59", "2026-12-30T18:30:00+00:00",
         "2026-12-27T18:30:00+00:00", "2026-11-30T18:30:00+00:00"),
    ],
)  # fmt: skip
def test_period_starts_are_local(tz, zone: str, now: str, day: str, week: str, month: str) -> None:
    tz(zone)
    starts = period_starts(local(now))
    utc = {k: datetime.fromtimestamp(v, UTC).isoformat() for k, v in starts.items()}
    assert utc == {"day": day, "week": week, "month": month}


def test_spend_per_period_in_a_local_zone(tz, make, tmp_path: Path) -> None:
    """Costs at instants around local midnight, Monday and the 1st, in Berlin (UTC+1): each
    period sums exactly the lines since its start; the next day starts from zero."""
    tz("Europe/Berlin")
    costs = {  # local time -> USD (powers of two: a wrong sum names the line)
        "2026-11-29T12:00:00": 1.0,  # Sunday, last month: none of the periods
        "2026-11-30T23:59:59": 2.0,  # Monday (week), but last month and day
        "2026-12-01T00:00:00.001": 4.0,  # the 1st, just after midnight: day, week, month
        "2026-12-01T09:15:00": 8.0,
    }
    lines = [line(round(local(t) * 1000), cost=usd) for t, usd in costs.items()]
    transcript(tmp_path / "claude").write_bytes(encode(*lines))
    clock = Clock(local("2026-12-01T10:00:00"))
    ledger, windows = make(clock)
    ledger.catch_up()
    seen = metrics(windows)
    spend = {k[1][1][1]: v for k, v in seen.items() if k[0] == "agentwatch_spend_usd"}
    assert spend == {"day": 12.0, "week": 14.0, "month": 12.0}
    # Live lines add to the periods without a new sum, as a new sum would count them: one at
    # exactly midnight is in the minute that ends then, the day before's (minute resolution).
    midnight = round(local("2026-12-01T00:00:00") * 1000)
    live = [line(int(clock.now * 1000) - 5000, cost=16.0), line(midnight, cost=32.0)]
    append(transcript(tmp_path / "claude"), encode(*live))
    ledger.catch_up()
    spend = {k[1][1][1]: v for k, v in metrics(windows).items() if k[0] == "agentwatch_spend_usd"}
    assert spend == {"day": 28.0, "week": 62.0, "month": 28.0}
    _, fresh = make(clock)
    assert {k: v for k, v in metrics(fresh).items() if k[0] == "agentwatch_spend_usd"} == {
        ("agentwatch_spend_usd", (CLAUDE, ("period", period))): value
        for period, value in spend.items()
    }
    # ...and the next day starts again from its midnight.
    clock.now = local("2026-12-02T00:00:30")
    spend = {k[1][1][1]: v for k, v in metrics(fresh).items() if k[0] == "agentwatch_spend_usd"}
    assert spend == {"day": 0.0, "week": 62.0, "month": 28.0}


def test_run_spend_counts_from_the_started_minute(make, tmp_path: Path) -> None:
    start = T0 / 1000 + 90.0  # 30 s into a minute: that minute counts whole (minute resolution)
    transcript(tmp_path / "claude").write_bytes(
        encode(
            line(T0 + 59_000, cost=1.0),  # the minute before: not counted
            line(T0 + 61_000, cost=2.0),  # before the start, but in its minute
            line(T0 + 95_000, cost=4.0),
            line(T0 + 3 * HOUR_MS, cost=8.0),
        )
    )
    state = tmp_path / "state"
    clock = Clock(T0 / 1000 + 4 * 3600)
    ledger, windows = make(clock)
    ledger.catch_up()
    assert not [k for k in metrics(windows) if "run" in str(k)]
    run_budget.start(state, start)
    seen = metrics(windows)
    assert seen[("agentwatch_spend_usd", (CLAUDE, ("period", "run")))] == 14.0
    assert seen[("agentwatch_run_started_timestamp_seconds", ())] == start
    run_budget.stop(state)
    assert not [k for k in metrics(windows) if "run" in str(k)]


def test_an_unusable_run_file_counts_nothing_and_is_logged_once(
    make, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    transcript(tmp_path / "claude").write_bytes(encode(line(T0 + 61_000, cost=2.0)))
    ledger, windows = make(Clock(T0 / 1000 + 3600))
    ledger.catch_up()
    run_budget.path(tmp_path / "state").write_text('{"started_at": "yesterday"}')
    with caplog.at_level(logging.WARNING, logger="agentwatch.token-ledger"):
        for _ in range(3):
            seen = metrics(windows)
            assert not [k for k in seen if "run" in str(k)]
            assert seen[("agentwatch_spend_usd", (CLAUDE, ("period", "day")))] >= 0
    said = [r for r in caplog.records if "run-budget.json" in r.getMessage()]
    assert len(said) == 1 and "started_at is not a positive number" in said[0].getMessage()


# ------------------------------------------------------------------ storage and commits


def test_a_database_from_before_the_buckets_is_migrated(make, tmp_path: Path) -> None:
    """Its counters stay; the buckets start empty and fill from new lines on."""
    path = transcript(tmp_path / "claude")
    path.write_bytes(encode(line(T0 + 60_000, 10)))
    clock = Clock(T0 / 1000 + 600)
    ledger, _ = make(clock)
    ledger.catch_up()
    ledger.store.close()
    db = sqlite3.connect(tmp_path / "state" / "ledger.sqlite")
    db.execute("DROP TABLE buckets")  # what a database of the previous version holds
    db.commit()
    db.close()
    append(path, encode(line(T0 + 120_000, 5)))
    ledger, windows = make(clock)
    ledger.catch_up()
    tokens = sum(v for (name, _), v in ledger.counters.items() if name == "agentwatch_tokens")
    assert tokens == 15  # the first line counted once, before and after the upgrade
    assert metrics(windows)[("agentwatch_block_tokens", ())] == 5  # only the new line


def test_commit_histogram(make, tmp_path: Path) -> None:
    times = CommitTimes()
    for seconds in (0.0005, 0.001, 0.003, 0.7, 30.0):
        times.observe(seconds)
    cumulative = dict(times.cumulative())
    assert cumulative["0.001"] == 2 and cumulative["0.005"] == 3 and cumulative["1.0"] == 4
    assert cumulative["10.0"] == 4 and cumulative["+Inf"] == 5
    assert len(cumulative) == len(BUCKETS) + 1
    path = transcript(tmp_path / "claude")
    path.write_bytes(encode(line(T0)))
    ledger, _ = make(Clock(T0 / 1000))
    ledger.catch_up()
    append(path, encode(line(T0 + 1)))
    ledger.catch_up()
    assert sum(ledger.commit_seconds.counts) == ledger.commits == 2
    assert 0 < ledger.commit_seconds.total < 2
