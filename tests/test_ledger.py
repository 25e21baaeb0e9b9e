"""The ledger against real files: exactly-once counting across restarts, rewrites and copies."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.metrics_core import CounterMetricFamily

from agentwatch.core import claude, spool
from agentwatch.sentinels.token_ledger.ledger import Ledger
from agentwatch.sentinels.token_ledger.metrics import (
    BY_AGENT,
    COUNTERS,
    ERROR_KINDS,
    CounterText,
    families,
)
from agentwatch.sentinels.token_ledger.pricing import PriceBook
from agentwatch.sentinels.token_ledger.store import StagedRuns, Store
from tests.transcripts import append, assistant, encode, transcript, user_line

PRICES = PriceBook.load()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "claude"


@pytest.fixture
def open_ledger(tmp_path: Path, root: Path) -> Iterator:
    opened: list[Ledger] = []

    def make(now: float = 1_795_000_000.0) -> Ledger:
        for ledger in opened:
            ledger.store.close()
        ledger = Ledger(
            Store(tmp_path / "ledger.sqlite"), PRICES, [root / "projects"], clock=lambda: now
        )
        opened.append(ledger)
        return ledger

    yield make
    for ledger in opened:
        ledger.store.close()


def totals(ledger: Ledger) -> dict[str, float]:
    out: dict[str, float] = {}
    for (name, labels), value in ledger.counters.items():
        if name == "agentwatch_tokens":
            out[labels[2]] = out.get(labels[2], 0) + value
        elif name == "agentwatch_cost_usd":
            out["cost"] = out.get("cost", 0) + value
    return out


def counter(ledger: Ledger, name: str, *labels: str) -> float:
    return ledger.counters.get((name, labels), 0.0)


def test_counts_and_restart_adds_nothing(root: Path, open_ledger) -> None:
    path = transcript(root)
    path.write_bytes(
        encode(
            user_line(),
            assistant(input_tokens=1000, output_tokens=500, cache_creation=2000, cache_read=10000),
        )
    )
    ledger = open_ledger()
    ledger.catch_up()
    first = totals(ledger)
    assert first["input"] == 1000 and first["cache_read"] == 10000
    assert first["cost"] == pytest.approx(0.021)
    assert counter(ledger, "agentwatch_ledger_lines_read") == 2
    again = open_ledger()
    again.catch_up()
    assert totals(again) == first
    assert counter(again, "agentwatch_ledger_lines_read") == 2


def test_streamed_copies_add_only_the_difference(root: Path, open_ledger) -> None:
    path = transcript(root)
    ledger = open_ledger()
    append(path, encode(assistant("msg_A", output_tokens=1)))
    ledger.catch_up()
    assert totals(ledger)["output"] == 1
    append(path, encode(assistant("msg_A", output_tokens=1), assistant("msg_A", output_tokens=40)))
    ledger.catch_up()
    assert totals(ledger)["output"] == 40 and totals(ledger)["input"] == 100
    assert counter(ledger, "agentwatch_api_responses", "proj", "claude-sonnet-4-5-20250929") == 1
    assert counter(ledger, "agentwatch_ledger_duplicate_copies", "copy") == 2


def test_copies_across_files_and_sidechain_replays(root: Path, open_ledger) -> None:
    main = transcript(root, session="s1")
    other = transcript(root, slug="-home-alice-other", session="s2")
    main.write_bytes(encode(assistant("msg_A", "req_1", input_tokens=7)))
    # Same response in a sub-agent file and a /btw sidechain replay: counted once.
    sub = root / "projects" / "-home-alice-proj" / "s1" / "subagents" / "agent-1.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_bytes(encode(assistant("msg_A", "req_1", input_tokens=7)))
    other.write_bytes(encode(assistant("msg_A", "req_2", input_tokens=7, sidechain=True)))
    ledger = open_ledger()
    ledger.catch_up()
    assert totals(ledger)["input"] == 7


def test_sidechain_counted_first_is_superseded_not_doubled(root: Path, open_ledger) -> None:
    path = transcript(root)
    path.write_bytes(encode(assistant("msg_A", "req_2", input_tokens=7, sidechain=True)))
    ledger = open_ledger()
    ledger.catch_up()
    append(path, encode(assistant("msg_A", "req_1", input_tokens=7)))
    ledger.catch_up()
    assert totals(ledger)["input"] == 7
    append(path, encode(assistant("msg_A", "req_3", input_tokens=7, sidechain=True)))
    ledger.catch_up()
    assert totals(ledger)["input"] == 7


def test_truncated_and_replaced_files_are_not_double_counted(root: Path, open_ledger) -> None:
    path = transcript(root)
    lines = [assistant(input_tokens=10 * (i + 1)) for i in range(5)]
    path.write_bytes(encode(*lines))
    ledger = open_ledger()
    ledger.catch_up()
    assert totals(ledger)["input"] == 150
    # Rewritten in place (same inode, shorter, then the same content again): no new tokens.
    path.write_bytes(encode(*lines[:2]))
    ledger.catch_up()
    path.write_bytes(encode(*lines))
    ledger.catch_up()
    assert totals(ledger)["input"] == 150
    # Replaced by rename (new inode), with one new line: only that line counts.
    replacement = path.with_suffix(".tmp")
    replacement.write_bytes(encode(*lines, assistant(input_tokens=1)))
    os.replace(replacement, path)
    ledger.catch_up()
    assert totals(ledger)["input"] == 151
    assert counter(ledger, "agentwatch_ledger_file_resets") >= 2


def test_lines_without_message_id_survive_a_rewrite(root: Path, open_ledger) -> None:
    no_id = assistant(input_tokens=5)
    del no_id["message"]["id"]
    path = transcript(root)
    path.write_bytes(encode(no_id, no_id))
    ledger = open_ledger()
    ledger.catch_up()
    assert totals(ledger)["input"] == 10  # never deduplicated, as the reference reader does
    copy = path.with_suffix(".tmp")
    shutil.copy(path, copy)
    os.replace(copy, path)
    ledger.catch_up()
    assert totals(ledger)["input"] == 10


def test_bad_input_is_counted_never_fatal(root: Path, open_ledger, monkeypatch) -> None:
    path = transcript(root)
    good = encode(assistant(input_tokens=3))
    path.write_bytes(
        b'{"broken":"usage":{\n'
        + good.replace(b'"hi"', b'"h\xffi"')
        + encode(assistant(timestamp="yesterday"))
        + encode(assistant(version="v2"))
        + encode(assistant(cwd=None))
        + good
    )
    vanishing = transcript(root, session="gone")
    vanishing.write_bytes(good)
    locked = transcript(root, session="locked")
    locked.write_bytes(encode(assistant(input_tokens=1000)))
    ledger = open_ledger()
    ledger.scan()
    vanishing.unlink()
    real_open = os.open

    def refusing_open(name, flags, *args):  # running as root: simulate a permission error
        if str(name) == str(locked):
            raise PermissionError(13, "Permission denied", str(name))
        return real_open(name, flags, *args)

    monkeypatch.setattr(os, "open", refusing_open)
    for key in ledger.pending():
        ledger.step(key)
    ledger.flush()
    assert totals(ledger)["input"] == 3
    rejected = {
        labels[0]: value
        for (name, labels), value in ledger.counters.items()
        if name == "agentwatch_ledger_lines_rejected"
    }
    assert rejected == {
        "malformed_json": 1,
        "invalid_utf8": 1,
        "bad_timestamp": 1,
        "bad_version": 1,
        "null_field": 1,
    }
    assert ledger.read_errors == {"vanished": 1, "unreadable": 1}
    monkeypatch.setattr(os, "open", real_open)
    ledger.catch_up()  # readable again: counted then
    assert totals(ledger)["input"] == 1003


def test_api_errors_unpriced_models_and_sessions(root: Path, open_ledger) -> None:
    error = assistant(
        input_tokens=0,
        output_tokens=0,
        model="<synthetic>",
        isApiErrorMessage=True,
        timestamp="2026-11-28T10:05:00.000Z",
    )
    error["message"]["content"] = [
        {"type": "text", "text": "Claude AI usage limit reached|1795100000"}
    ]
    overloaded = assistant(
        input_tokens=0, output_tokens=0, model="<synthetic>", isApiErrorMessage=True
    )
    overloaded["message"]["content"] = [{"type": "text", "text": "API Error: 529 overloaded_error"}]
    path = transcript(root, session="sess-1")
    path.write_bytes(encode(assistant(model="claude-future-9", input_tokens=50), error, overloaded))
    now = 1_795_000_000.0  # 2026-11-17; the lines are from 2026-11-28 (in the "future": recent)
    ledger = open_ledger(now)
    ledger.catch_up()
    assert counter(ledger, "agentwatch_api_errors", "proj", "usage_limit") == 1
    assert counter(ledger, "agentwatch_api_errors", "proj", "overloaded") == 1
    assert ledger.gauges["usage_limit_reset"] == 1795100000
    assert counter(ledger, "agentwatch_ledger_unpriced_tokens", "claude-future-9") == 60
    assert counter(ledger, "agentwatch_ledger_unpriced_tokens", "<synthetic>") == 0
    text = spool.render(families(ledger, 0, CounterText()))
    assert "sess-1" in text
    # Sessions expire: a ledger whose clock is a day later shows none.
    later = open_ledger(now + 30 * 86400)
    assert later.sessions == {}


def test_symlinks_inside_projects_are_not_followed(root: Path, open_ledger, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.jsonl").write_bytes(encode(assistant(input_tokens=99)))
    project = transcript(root).parent
    (project / "linked").symlink_to(outside)
    (project / "loop").symlink_to(project)
    transcript(root).write_bytes(encode(assistant(input_tokens=1)))
    ledger = open_ledger()
    ledger.catch_up()
    assert totals(ledger)["input"] == 1


def test_parallel_backfill_equals_serial(tmp_path: Path, root: Path, monkeypatch) -> None:
    from agentwatch.sentinels.token_ledger import ledger as ledger_module

    for number in range(12):
        records = []
        for index in range(50):
            msg = f"msg_{number % 3}_{index}"  # the same responses appear in several files
            records += [assistant(msg, output_tokens=1), assistant(msg, output_tokens=9 + index)]
        transcript(root, slug=f"-p{number % 4}", session=f"s{number}").write_bytes(encode(*records))
    serial = Ledger(Store(tmp_path / "serial.sqlite"), PRICES, [root / "projects"])
    serial.catch_up(workers=1)
    monkeypatch.setattr(ledger_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(ledger_module, "STEP_BYTES", 4096)  # many jobs, files split in slices
    monkeypatch.setattr(ledger_module, "COMMIT_ENTRIES", 100)  # batches written in a thread
    parallel = Ledger(Store(tmp_path / "parallel.sqlite"), PRICES, [root / "projects"])
    parallel.catch_up(workers=2)
    assert parallel.commits > 3
    assert totals(parallel) == totals(serial)
    assert totals(serial)["output"] == 3 * sum(9 + index for index in range(50))
    serial.store.close()
    parallel.store.close()


def test_a_batch_failing_in_the_commit_thread_loses_nothing_and_adds_nothing(
    tmp_path: Path, root: Path, monkeypatch
) -> None:
    """A batch written in the background fails (a full disk): it and the batch decided
    after it are dropped whole, the error reaches the caller, and reading again counts
    exactly what one clean pass counts."""
    from agentwatch.sentinels.token_ledger import ledger as ledger_module

    for number in range(8):
        records = [assistant(f"m{number}_{i}", output_tokens=i + 1) for i in range(60)]
        transcript(root, slug=f"-p{number % 2}", session=f"s{number}").write_bytes(encode(*records))
    clean = Ledger(Store(tmp_path / "clean.sqlite"), PRICES, [root / "projects"])
    clean.catch_up()
    monkeypatch.setattr(ledger_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(ledger_module, "STEP_BYTES", 2048)
    monkeypatch.setattr(ledger_module, "COMMIT_ENTRIES", 50)
    ledger = Ledger(Store(tmp_path / "failing.sqlite"), PRICES, [root / "projects"])
    real_add = ledger.store.add_counters
    failed_in: list[str] = []

    def add_counters(deltas: dict) -> None:
        if ledger.commits == 2 and not failed_in:
            failed_in.append(threading.current_thread().name)
            raise sqlite3.OperationalError("database or disk is full")
        real_add(deltas)

    monkeypatch.setattr(ledger.store, "add_counters", add_counters)
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        ledger.catch_up(workers=2)
    assert failed_in == ["ledger-commit"]
    assert ledger._committing is None and not ledger.store.db.in_transaction
    ledger.catch_up(workers=2)
    assert totals(ledger) == totals(clean)
    assert totals(ledger)["output"] == 8 * sum(range(1, 61))
    ledger.store.close()
    reopened = Ledger(Store(tmp_path / "failing.sqlite"), PRICES, [root / "projects"])
    assert totals(reopened) == totals(clean)  # what was committed, and nothing twice
    reopened.store.close()
    clean.store.close()


def test_a_look_up_while_a_batch_is_written_takes_it_from_memory(tmp_path: Path) -> None:
    """While the commit thread holds the database (its transaction open, the store's lock
    held), a look-up does not wait: the committed rows come from their own connection, the
    rows of the batch being written from that batch, newer ones replacing older."""
    store = Store(tmp_path / "ledger.sqlite")
    row = (11, 5, 0, 100, 0, 0.5, 10, 20, 30, 40, 0.5, 1)
    committed = [row, (22, 5, 0, 7, 0, 0.1, 1, 2, 3, 1, 0.1, 1)]
    store.will_store(row[0] for row in committed)
    store.begin()
    store.save_responses(Store.response_batch([], committed))
    store.commit()
    writing = Store.response_batch([], [(11, 5, 0, 150, 1, 0.7, 10, 70, 30, 40, 0.7, 1),
                                        (11, 9, 1, 3, 0, 0.0, 3, 0, 0, 0, 0.0, 2),
                                        (33, 5, 0, 1, 0, 0.0, 1, 0, 0, 0, 0.0, 1)])  # fmt: skip
    store.will_store(row[0] for row in writing)
    store.lock.acquire()
    store.begin()
    store.save_responses(writing)  # written, not yet committed
    found: dict = {}
    looking = threading.Thread(target=lambda: found.update(store.responses_for([11, 22], writing)))
    looking.start()
    looking.join(10)
    try:
        assert not looking.is_alive(), "the look-up waited for the commit"
        assert sorted(r.as_tuple() for r in found[11]) == [writing[0], writing[1]]
        assert [r.as_tuple() for r in found[22]] == [committed[1]]
        assert set(found) == {11, 22}
    finally:
        store.commit()
        store.lock.release()
        looking.join()
    assert [r.as_tuple() for r in store.responses_for([11, 33])[33]] == [writing[2]]
    store.close()


def test_workers_forked_before_the_scan_read_the_backfill(
    tmp_path: Path, root: Path, monkeypatch
) -> None:
    """Workers started ahead of the scan (a cold backfill) do the parallel read, and are
    stopped after it; started for a backfill that turns out small, they are stopped unused."""
    from agentwatch.sentinels.token_ledger import ledger as ledger_module

    for number in range(6):
        records = [assistant(f"msg_{number}_{i}", output_tokens=i + 1) for i in range(40)]
        transcript(root, slug=f"-p{number % 2}", session=f"s{number}").write_bytes(encode(*records))
    monkeypatch.setattr(ledger_module, "PARALLEL_MIN_BYTES", 0)
    early = Ledger(Store(tmp_path / "early.sqlite"), PRICES, [root / "projects"])
    early.start_workers(2)
    pool = early._pool
    assert pool is not None and len(pool._processes) == 2  # forked already, before the scan
    early.catch_up(workers=2)
    assert early._pool is None and not pool._processes  # stopped with the backfill
    assert totals(early)["output"] == 6 * sum(range(1, 41))
    monkeypatch.setattr(ledger_module, "PARALLEL_MIN_BYTES", 1 << 40)
    small = Ledger(Store(tmp_path / "small.sqlite"), PRICES, [root / "projects"])
    small.start_workers(2)
    unused = small._pool
    small.catch_up(workers=2)  # read in this process
    assert small._pool is None and unused is not None and not unused._processes
    assert totals(small) == totals(early)
    early.store.close()
    small.store.close()


def test_size_checks_take_a_bounded_share_of_a_backfill(open_ledger) -> None:
    """With many files, looking at every size takes long: the next look waits 20 times as
    long as the last took, so it costs at most RESIZE_SHARE of the time."""
    from agentwatch.sentinels.token_ledger.ledger import RESIZE_EVERY, RESIZE_SHARE

    ledger = open_ledger()
    ledger._resize_seconds = 0.001
    assert ledger._next_resize() - time.monotonic() == pytest.approx(RESIZE_EVERY, abs=0.05)
    ledger._resize_seconds = 0.5
    assert ledger._next_resize() - time.monotonic() == pytest.approx(0.5 / RESIZE_SHARE, abs=0.05)
    ledger.refresh_sizes()
    assert 0 <= ledger._resize_seconds < 0.5  # measured by the look itself
    # ...and by CPU: the next look also waits until this process has worked 1/share times
    # as long as the last look took (a busy machine's wall time says little of that)
    assert ledger._resize_cpu_at >= time.process_time() - 0.5
    past = time.monotonic() - 1.0
    ledger._resize_cpu_at = time.process_time() + 3600.0
    assert not ledger._resize_due(past)
    ledger._resize_cpu_at = 0.0
    assert ledger._resize_due(past)
    assert not ledger._resize_due(time.monotonic() + 3600.0)


@pytest.mark.parametrize("ledger", ["token-ledger", "agent-ledger"])
def test_second_ledger_on_the_same_state_is_refused(tmp_path: Path, ledger: str) -> None:
    """Both ledgers hold their database through core.single's one writer lock."""
    from agentwatch.core.single import StateInUse
    from agentwatch.sentinels.agent_ledger import store as agent_store

    opened = Store if ledger == "token-ledger" else agent_store.Store
    first = opened(tmp_path / "l.sqlite")
    held_by = rf"in use by another {ledger} process \(PID {os.getpid()}\)"
    with pytest.raises(StateInUse, match=held_by):
        opened(tmp_path / "l.sqlite")
    first.close()
    opened(tmp_path / "l.sqlite").close()  # free again once the owner is gone


def _fresh_counter_text(ledger: Ledger) -> str:
    """The counter families rendered from scratch, as the cache must reproduce them."""
    projects = {row[0] for row in ledger.sessions.values()}
    out = []
    for name, (documentation, label_names) in COUNTERS.items():
        agent = ("agent",) if name in BY_AGENT else ()
        family = CounterMetricFamily(name, documentation, labels=[*agent, *label_names])
        rows = {
            (claude.AGENT,) * len(agent) + labels: value
            for (n, labels), value in ledger.counters.items()
            if n == name
        }
        if name == "agentwatch_api_errors":
            for project in projects:
                for kind in ERROR_KINDS:
                    rows.setdefault((project, kind), 0.0)
        for labels, value in sorted(rows.items()):
            family.add_metric(list(labels), value)
        out.append(family)
    return spool.render(out)


def test_counter_text_cache_equals_a_fresh_rendering(root: Path, open_ledger) -> None:
    """Lines arrive in several batches (new projects, new models, a first error): after each
    one, the incrementally updated text is byte for byte a fresh rendering."""
    ledger = open_ledger()
    cache = CounterText()
    batches = [
        (transcript(root), encode(assistant(input_tokens=5))),
        (transcript(root, slug="-home-bob-other", session="s2"), encode(assistant())),
        (transcript(root), encode(assistant(model="claude-opus-4-5", output_tokens=7))),
        (transcript(root, session="s3"), encode(assistant(), user_line())),
    ]
    for path, data in batches:
        append(path, data)
        ledger.catch_up()
        text = "".join(cache.render(ledger))
        assert text == _fresh_counter_text(ledger)
        assert ledger.changed == set()
    # Nothing changed: the same text, without re-rendering.
    assert "".join(cache.render(ledger)) == text


def test_unread_bytes_follow_scans_reads_appends_and_deletions(root: Path, open_ledger) -> None:
    first, second = transcript(root), transcript(root, session="s2")
    first.write_bytes(encode(assistant(), assistant()))
    second.write_bytes(encode(assistant()))
    ledger = open_ledger()
    ledger.scan()
    assert ledger.unread_bytes() == first.stat().st_size + second.stat().st_size
    while ledger.step(str(first)):
        pass
    assert ledger.unread_bytes() == second.stat().st_size  # read but not yet flushed: counts
    ledger.catch_up()
    assert ledger.unread_bytes() == 0
    line = encode(assistant())
    append(first, line)
    ledger.scan()
    assert ledger.unread_bytes() == len(line)
    second.unlink()
    append(first, line)
    ledger.scan()
    assert ledger.unread_bytes() == 2 * len(line)
    ledger.catch_up()
    assert ledger.unread_bytes() == 0


def test_rewrite_in_place_keeping_the_first_lines_loses_none(root: Path, open_ledger) -> None:
    """Truncated and rewritten with the same first lines, then grown past the old position:
    the head still matches, the bytes before the position do not, so it is read again."""
    path = transcript(root)
    old = [encode(assistant(f"msg_old_{index}")) for index in range(20)]
    new = [encode(assistant(f"msg_new_{index}")) for index in range(20)]
    path.write_bytes(b"".join(old))
    open_ledger().catch_up()
    with path.open("r+b") as handle:
        handle.truncate(0)
        handle.write(b"".join(old[:10] + new))
    ledger = open_ledger()
    ledger.catch_up()
    assert counter(ledger, "agentwatch_ledger_file_resets") == 1
    assert sum(v for (n, _), v in ledger.counters.items() if n == "agentwatch_api_responses") == 40


def test_a_ledger_from_before_the_tail_fingerprint_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema', '1');"
        "CREATE TABLE files (path TEXT PRIMARY KEY, dev INTEGER, ino INTEGER, offset INTEGER,"
        " head_len INTEGER, head BLOB);"
        "INSERT INTO files VALUES ('/t.jsonl', 1, 2, 300, 10, x'00');"
    )
    old.commit()
    old.close()
    store = Store(path)
    try:
        position = store.positions()["/t.jsonl"]
        assert (position.offset, position.tail) == (300, b"")  # unknown tail: not a reset
    finally:
        store.close()


def _responses(path: Path) -> list[tuple]:
    """The responses table with label values for ids (numbered in reading order)."""
    db = sqlite3.connect(path)
    try:
        return db.execute(
            "SELECT msg, req, side, total, speed, cost, c_in, c_out, c_cr, c_cc, c_cost, "
            "project, model, session FROM responses JOIN labelsets ON labels = labelsets.id "
            "ORDER BY msg, req"
        ).fetchall()
    finally:
        db.close()


def _staged_and_keyed(path: Path) -> tuple[int, int]:
    db = sqlite3.connect(path)
    try:
        return tuple(  # type: ignore[return-value]
            db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("responses_staged", "responses")
        )
    finally:
        db.close()


@pytest.mark.parametrize("merged_on_open", [True, False], ids=["merged", "mutant-unmerged"])
def test_a_backfill_stopped_with_staged_rows_counts_as_a_clean_one(
    tmp_path: Path, root: Path, monkeypatch, merged_on_open: bool
) -> None:
    """A cold backfill writes its responses to responses_staged, merged into the keyed table
    when it ends. Stopped before (its batches committed, no merge), the next open merges them
    first: the totals and the rows equal one clean pass. Later copies of a response, in
    later batches, find the staged row and add only their difference. The mutant without
    the merge on open counts those copies again."""
    from agentwatch.sentinels.token_ledger import ledger as ledger_module

    for number in range(8):
        records = [assistant(f"m{number}_{i}", output_tokens=i + 1) for i in range(40)]
        if number:  # the streamed final copies of the previous file's responses, larger
            records += [assistant(f"m{number - 1}_{i}", output_tokens=i + 50) for i in range(40)]
        transcript(root, slug=f"-p{number % 2}", session=f"s{number}").write_bytes(encode(*records))
    clean = Ledger(Store(tmp_path / "clean.sqlite"), PRICES, [root / "projects"])
    clean.catch_up()
    clean.store.close()
    assert _staged_and_keyed(tmp_path / "clean.sqlite") == (0, 8 * 40)
    assert totals(clean)["output"] == 7 * sum(range(50, 90)) + sum(range(1, 41))

    monkeypatch.setattr(ledger_module, "COMMIT_ENTRIES", 50)  # a batch per file or two
    stopped = Ledger(Store(tmp_path / "ledger.sqlite"), PRICES, [root / "projects"])
    stopped.scan()
    reading = stopped.read_all()
    for _ in range(4):  # half of the files, several batches committed
        next(reading)
    reading.close()
    stopped.flush()
    assert stopped.commits >= 3
    stopped.store.close()  # as a kill leaves it: committed batches, no merge
    staged, keyed = _staged_and_keyed(tmp_path / "ledger.sqlite")
    assert staged > 50 and keyed == 0

    if not merged_on_open:
        monkeypatch.setattr(Store, "_merge", lambda self: None)
    again = Ledger(Store(tmp_path / "ledger.sqlite"), PRICES, [root / "projects"])
    if merged_on_open:
        assert _staged_and_keyed(tmp_path / "ledger.sqlite") == (0, staged)
        assert not again.store.staging  # the rest is written to the keyed table
    again.catch_up()
    again.store.close()
    if merged_on_open:
        assert totals(again) == totals(clean)
        assert _responses(tmp_path / "ledger.sqlite") == _responses(tmp_path / "clean.sqlite")
    else:
        assert totals(again)["output"] > totals(clean)["output"]


def test_look_ups_during_a_cold_backfill_find_the_latest_staged_row(tmp_path: Path) -> None:
    """Staged rows are found by message through the batches' runs, across batches, the
    latest copy of a key winning; a batch rolled back is forgotten, and its numbers are
    given to the next batch."""
    store = Store(tmp_path / "ledger.sqlite")
    assert store.staging
    first = Store.response_batch([], [(11, 5, 0, 100, 0, 0.5, 10, 20, 30, 40, 0.5, 1),
                                      (22, 5, 0, 7, 0, 0.1, 1, 2, 3, 1, 0.1, 1)])  # fmt: skip
    second = Store.response_batch([], [(11, 5, 0, 150, 1, 0.7, 10, 70, 30, 40, 0.7, 1),
                                       (11, 9, 1, 3, 0, 0.0, 3, 0, 0, 0, 0.0, 2)])  # fmt: skip
    for batch in (first, second):
        store.will_store(row[0] for row in batch)
        store.begin()
        store.save_responses(batch)
        store.commit()
    lost = Store.response_batch([], [(11, 5, 0, 999, 0, 9.0, 9, 9, 9, 9, 9.0, 1)])
    store.will_store([11])
    store.begin()
    store.save_responses(lost)
    store.rollback()
    found = store.responses_for([11, 22, 33])
    assert sorted(r.as_tuple() for r in found[11]) == sorted(second)
    assert [r.as_tuple() for r in found[22]] == [first[1]]
    assert set(found) == {11, 22}
    third = Store.response_batch([], [(33, 5, 0, 1, 0, 0.0, 1, 0, 0, 0, 0.0, 1)])
    store.will_store([33])
    store.begin()
    store.save_responses(third)  # numbered where the lost batch was
    store.commit()
    assert [r.as_tuple() for r in store.responses_for([33])[33]] == third
    store.merge_staged()
    assert not store.staging
    assert sorted(r.as_tuple() for r in store.responses_for([11])[11]) == sorted(second)
    store.close()
    db = sqlite3.connect(tmp_path / "ledger.sqlite")
    assert db.execute("SELECT count(*) FROM responses_staged").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM responses").fetchone()[0] == 4
    db.close()


def test_staged_runs_are_merged_once_look_ups_outweigh_them() -> None:
    """Each batch is a run searched by every look-up; when the look-ups have probed more
    than the runs hold, the committed runs become one before the next batch's, and a
    rollback of that batch keeps the merged run."""
    runs = StagedRuns(1)
    assert runs.add([1, 5, 9]) == 1
    runs.committed()
    assert runs.add([5, 7]) == 4
    runs.committed()
    assert sorted(runs.seqs([9])) == [3]  # 2 probes: not worth a merge
    assert runs.add([8]) == 6
    runs.committed()
    assert len(runs.runs) == 3
    assert sorted(runs.seqs([5, 9])) == [2, 3, 4]  # 8 probes in all, more than 6 messages
    assert runs.add([5]) == 7
    assert len(runs.runs) == 2  # the merged run and the new one
    assert sorted(runs.seqs([5, 7, 1, 8])) == [1, 2, 4, 5, 6, 7]
    runs.rolled_back()
    assert len(runs.runs) == 1 and runs.next_seq == 7
    assert sorted(runs.seqs([5, 9])) == [2, 3, 4]
    assert runs.add([2]) == 7


def test_staged_runs_merge_only_committed_batches() -> None:
    """Two batches in one transaction: the merge before the second takes the committed runs
    only, so a rollback still forgets the first."""
    runs = StagedRuns(1)
    runs.add([1, 2])
    runs.committed()
    runs.add([3])
    runs.committed()
    runs.seqs([1, 2, 3])  # 6 probes, 3 messages
    runs.add([4])  # not committed
    runs.add([5])  # merges the 2 committed runs only
    assert len(runs.runs) == 3
    runs.rolled_back()
    assert runs.next_seq == 4 and sorted(runs.seqs([1, 2, 3, 4, 5])) == [1, 2, 3]
