"""Turning new bytes of one transcript into compact usage entries: pure, so it can run in a
worker process during a large backfill while the main process decides and commits.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from hashlib import blake2b
from stat import S_ISREG

from agentwatch.core import claude
from agentwatch.core.process import die_with_parent, reuse_freed_blocks
from agentwatch.core.sanitize import label_value
from agentwatch.sentinels.token_ledger import records
from agentwatch.sentinels.token_ledger.blocks import MINUTE_MS, ms_of
from agentwatch.sentinels.token_ledger.pricing import PriceBook
from agentwatch.sentinels.token_ledger.tailer import (
    Position,
    Skim,
    read_lines,
    refresh_head,
    same_file,
)

log = logging.getLogger("agentwatch.token-ledger")

SIDECHAIN = 1  # req key of a lone sidechain copy (deduped by message id alone)
BY_LOCATION = 2  # req key of an entry without message id (keyed by file, offset, content)
READ_BLOCKS = 16 * 1024 * 1024  # a worker's reads and lines below this reuse freed memory
_PROJECT_CACHE = 10_000  # label values remembered per process (bounded: names are open-ended)

# One usage entry, ready to be decided. Its first ROW_FIELDS fields are the responses row of
# a first copy without its label set (store.ResponseRow: msg, req, side, total, speed, cost,
# then input, output, cache_read, cache_creation and cost as counted), then the index of its
# (project, model) in Chunk.groups, its timestamp, whether it was priced, and its error kind
# and usage-limit reset time when it is an API error.
UsageEntry = tuple[int, int, int, int, int, float, int, int, int, int, float, int, float, bool,
                   str | None, float | None]  # fmt: skip
ROW_FIELDS = 11


def key_hash_in_python(text: str) -> int:
    """A stable signed 64-bit hash (SQLite integers), the same in every process: BLAKE2b
    with an 8-byte digest. `_fastline.key_hash` is the same in C; this is what runs without
    it, and its reference."""
    digest = blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@dataclass
class Chunk:
    """What one read of one file produced."""

    key: str
    position: Position
    size: int = 0
    mtime: float = 0.0
    reset: bool = False  # truncated or replaced: read again from the start
    lines: int = 0
    oversize: int = 0
    bytes_read: int = 0
    entries: list[UsageEntry] = field(default_factory=list)
    groups: list[tuple[str, str]] = field(default_factory=list)  # (project, model) by index
    rejects: dict[str, int] = field(default_factory=dict)
    copies: dict[str, int] = field(default_factory=dict)  # dropped duplicates, by kind
    first_ts: float | None = None  # activity span of the accepted lines
    last_ts: float | None = None
    error: str | None = None  # "vanished", "unreadable", "symlink" or "not_regular"
    skim: Skim | None = None  # how far a long partial line at the end was scanned
    progress: int = 0  # new bytes consumed or scanned: 0 when there is nothing to do now


class ChunkReader:
    """Reads and parses; holds only the price book (loaded once per process)."""

    def __init__(self, prices: PriceBook):
        self.prices = prices
        self._projects: dict[tuple[str | None, str], str] = {}
        self._models: dict[str, str] = {}

    def read(
        self, key: str, slug: str, known: Position | None, budget: int, skim: Skim | None = None
    ) -> Chunk:
        # Not through a symlink swapped in for the file (discovery does not follow them
        # either), and never blocking on a FIFO: the open cannot wait for a writer, and
        # anything but a regular file is refused before a byte is read.
        flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
        try:
            fd = os.open(key, flags)
        except FileNotFoundError:
            return Chunk(key, known or Position(), error="vanished")
        except OSError as err:
            reason = "symlink" if err.errno == errno.ELOOP else "unreadable"
            return Chunk(key, known or Position(), error=reason)
        try:
            if not S_ISREG(os.fstat(fd).st_mode):
                return Chunk(key, known or Position(), error="not_regular")
            return self._read_open(fd, key, slug, known, budget, skim)
        except OSError:
            return Chunk(key, known or Position(), error="unreadable")
        finally:
            os.close(fd)

    def _read_open(
        self, fd: int, key: str, slug: str, known: Position | None, budget: int, skim: Skim | None
    ) -> Chunk:
        stat = os.fstat(fd)
        if known is not None and same_file(fd, stat, known):
            position = Position(**vars(known))
            reset = False
        else:
            position = Position(dev=stat.st_dev, ino=stat.st_ino)
            reset = known is not None
        chunk = Chunk(key, position, size=stat.st_size, mtime=stat.st_mtime, reset=reset)
        if stat.st_size == position.offset:
            return chunk
        start = position.offset
        if reset or skim is None or skim.scanned > stat.st_size:
            skim = None  # a replaced or truncated file: its old scan means nothing
        result = read_lines(
            fd, start, budget, tail_is_complete=records.is_whole_object, resume=skim,
            resumable=True,
        )  # fmt: skip
        chunk.skim, chunk.progress = result.skim, result.progress
        position.offset = result.end
        refresh_head(fd, stat, position)
        chunk.lines, chunk.oversize = result.lines, result.oversize
        chunk.bytes_read = result.end - start
        # Streamed copies of a response sit next to each other in one file, so most
        # duplicates are settled here, before anything is hashed or priced, and the ledger
        # only decides the survivors against what it counted before.
        kept, first_ts, last_ts = settle(
            result.candidates, lambda line: by_rules(line, key), self._better, chunk.rejects,
            chunk.copies,
        )  # fmt: skip
        chunk.first_ts, chunk.last_ts = first_ts, last_ts
        entries = chunk.entries
        compact = self._compact
        groups: dict[tuple[str, str], int] = {}
        for usage, offset, index, line in kept:
            entries.append(compact(usage, key, slug, offset, index, line, groups))
        chunk.groups = list(groups)
        return chunk

    def _better(self, usage: records.Usage, kept: records.Usage) -> bool:
        """Whether a copy beats the one kept when their totals tie (rarely): the higher cost,
        then `speed`."""
        cost, kept_cost = self._cost(usage)[0], self._cost(kept)[0]
        if cost != kept_cost:
            return cost > kept_cost
        return usage[12] and not kept[12]

    def _compact(
        self, usage: records.Usage, key: str, slug: str, offset: int, index: int, line: bytes,
        groups: dict[tuple[str, str], int],
    ) -> UsageEntry:  # fmt: skip
        msg_id, req_id, model_id, ts, sidechain, _cost_usd, cwd, t_in, t_out, t_cr, c5, c1, has_speed, _fast, total, api_error, error_text = usage  # fmt: skip # noqa: E501
        if msg_id is None:
            content = blake2b(line, digest_size=8).hexdigest()
            msg, req = key_hash(f"{key}\0{offset}\0{index}\0{content}"), BY_LOCATION
        else:  # its copies in this chunk were settled already: each key is hashed once
            msg = key_hash(msg_id)
            if sidechain:
                req = SIDECHAIN
            elif req_id is None:  # the reference reader then keys on id + instant
                req = key_hash(f"t\0{round(ts * 1000)}") | 3
            else:  # low bits set: never a reserved key
                req = key_hash("r\0" + req_id) | 3
        # Label values come from text anyone can write (cwd, folder names, model): made safe
        # here, where they are produced, so the database and every exposition hold safe text.
        project = self._projects.get((cwd, slug))
        if project is None:
            project = label_value(claude.project_name(cwd, slug))
            if len(self._projects) >= _PROJECT_CACHE:
                self._projects.clear()
            self._projects[(cwd, slug)] = project
        model = self._models.get(model_id)
        if model is None:
            model = label_value(model_id)
            if len(self._models) >= _PROJECT_CACHE:
                self._models.clear()
            self._models[model_id] = model
        group = groups.get((project, model))
        if group is None:
            group = groups[(project, model)] = len(groups)
        cost, priced = self._cost(usage)
        kind = reset_at = None
        if api_error:
            kind, reset_at = records.classify_error(error_text)
        return (
            msg, req, 1 if req == SIDECHAIN else 0, total, 1 if has_speed else 0, cost,
            t_in, t_out, t_cr, c5 + c1, cost if cost > 0.0 else 0.0,
            group, ts, priced, kind, reset_at,
        )  # fmt: skip

    def _cost(self, usage: records.Usage) -> tuple[float, bool]:
        cost_usd, model = usage[5], usage[2]
        if cost_usd is not None:
            return cost_usd, True
        if model == records.SYNTHETIC:
            return 0.0, True
        cost = self.prices.cost(
            model, usage[7], usage[8], usage[9], usage[10], usage[11], usage[13], at=usage[3]
        )
        return (0.0, False) if cost is None else (cost, True)


def by_rules(line: bytes, key: str) -> list[records.Usage] | str:
    """A candidate line the C scan declined, read by records' rules: its usage records, or
    the reason it is rejected (`key` names its file in the log)."""
    try:
        return [entry.usage() for entry in records.parse_by_rules(line)]
    except records.Rejected as rejected:
        return rejected.reason
    except Exception as err:  # a line must never stop the ledger: count it, go on
        log.warning("unexpected %s parsing a line of %s; skipped", type(err).__name__, key)
        return "parse_error"


def settle_in_python(
    candidates: list[tuple[int, bytes]],
    rules: Callable[[bytes], list[records.Usage] | str],
    better: Callable[[records.Usage, records.Usage], bool],
    rejects: dict[str, int],
    copies: dict[str, int],
) -> tuple[list[tuple[records.Usage, int, int, bytes]], float | None, float | None]:
    """The best copy of each response among one chunk's candidate (offset, line)s, in the
    order they first appear, as (usage, offset, index in its line, line); and the span of
    the accepted records' times. The best is the largest total, then what `better` says
    (cost, then `speed`), then the first: the reference reader's rules. A sidechain replay
    of a response with a main copy is dropped. Rejected lines go to `rejects` by reason,
    dropped copies to `copies` by kind. `_fastline.settle` is the same in C; this is what
    runs without it, and its reference."""
    best: dict[tuple, tuple[records.Usage, int, int, bytes]] = {}
    main_msgs: set[str] = set()  # responses with a main copy: their sidechain replays go
    first_ts = last_ts = None
    for offset, line in candidates:
        fields = records.scan(line)
        parsed = (fields,) if fields is not None else rules(line)
        if isinstance(parsed, str):
            rejects[parsed] = rejects.get(parsed, 0) + 1
            continue
        for index, usage in enumerate(parsed):
            msg_id, req_id, _model, ts, sidechain = usage[:5]
            if first_ts is None or ts < first_ts:
                first_ts = ts
            if last_ts is None or ts > last_ts:
                last_ts = ts
            # What the copies of one response share, as the ledger keys them (SIDECHAIN,
            # BY_LOCATION and the request keys of _compact), before hashing.
            if msg_id is None:
                copy_key: tuple = (offset, index)  # keyed by its place: never a copy
            elif sidechain:
                copy_key = (msg_id, None)
            else:
                main_msgs.add(msg_id)
                copy_key = (msg_id, round(ts * 1000) if req_id is None else req_id)
            kept = best.get(copy_key)
            if kept is None:
                best[copy_key] = (usage, offset, index, line)
                continue
            copies["copy"] = copies.get("copy", 0) + 1
            if (usage[14] > kept[0][14]) if usage[14] != kept[0][14] else better(usage, kept[0]):
                best[copy_key] = (usage, offset, index, line)
    survivors = []
    for found in best.values():
        if found[0][4] and found[0][0] in main_msgs:  # a sidechain replay of a main copy
            copies["sidechain_replay"] = copies.get("sidechain_replay", 0) + 1
        else:
            survivors.append(found)
    return survivors, first_ts, last_ts


def add_counted(
    sums: list, d_in: int, d_out: int, d_cr: int, d_cc: int, d_cost: float, priced: bool,
    new: int,
) -> None:  # fmt: skip
    """What one response's copy added, into the sums of its label set (or group): [input,
    output, cache_read, cache_creation, cost, unpriced tokens, new responses]."""
    sums[0] += d_in
    sums[1] += d_out
    sums[2] += d_cr
    sums[3] += d_cc
    sums[4] += d_cost
    if not priced:
        sums[5] += d_in + d_out + d_cr + d_cc
    sums[6] += new


def add_to_bucket(
    buckets: dict[tuple[int, int], list], labels: int, ts: float, d_in: int, d_out: int,
    d_cr: int, d_cc: int, d_cost: float, new: int,
) -> None:  # fmt: skip
    """The same into the bucket row (store.add_buckets) of its minute and label set (or
    group), by the time of the line that changed the count."""
    ms = ms_of(ts)
    key = (-(-ms // MINUTE_MS), labels)  # blocks.minute_of
    # floats: many lines' sums can pass int64 (store.add_buckets)
    bucket = [*key, ms, float(d_in), float(d_out), float(d_cr), float(d_cc), d_cost, new]
    have = buckets.get(key)
    if have is None:
        buckets[key] = bucket
    else:
        merge_bucket(have, bucket)


def merge_bucket(have: list, bucket: list) -> None:
    """Add one bucket row's sums to another's of the same minute and label set."""
    if bucket[2] < have[2]:
        have[2] = bucket[2]
    for index in range(3, 9):
        have[index] += bucket[index]


def totals_in_python(entries: list[UsageEntry], groups: int) -> tuple[list[list], list[list]]:
    """What these entries of one chunk count if each is a response seen for the first time
    (most of a backfill): per group of Chunk.groups the sums of add_counted, and per
    (minute, group) in order of first appearance the bucket row of add_to_bucket, with the
    group for the label set."""
    sums: list[list] = [[0, 0, 0, 0, 0.0, 0, 0] for _ in range(groups)]
    buckets: dict[tuple[int, int], list] = {}
    for entry in entries:
        t_in, t_out, t_cr, t_cc, cost, group, ts, priced = entry[6:14]
        add_counted(sums[group], t_in, t_out, t_cr, t_cc, cost, priced, 1)
        add_to_bucket(buckets, group, ts, t_in, t_out, t_cr, t_cc, cost, 1)
    return sums, list(buckets.values())


def absorb_in_python(
    entries: list[UsageEntry], labels: list[int], by_labels: dict[int, list],
    buckets: dict[tuple[int, int], list], fresh: dict[int, tuple],
) -> bool:  # fmt: skip
    """Count a chunk's entries as first copies into a batch (ledger._Pending): the sums of
    each label set (`labels`: Chunk.groups' label sets), the bucket rows of each (minute,
    label set), and each entry's responses row in `fresh` (message -> row).
    `_fastline.absorb` is the same in C; this is what runs without it (or when it declines
    sums past 64 bits), and its reference."""
    sums_by_group, new_buckets = totals_in_python(entries, len(labels))
    for labelset, sums in zip(labels, sums_by_group, strict=True):
        have = by_labels.get(labelset)
        if have is None:
            by_labels[labelset] = sums
        else:
            for index, value in enumerate(sums):
                have[index] += value
    for bucket in new_buckets:
        bucket[1] = labelset = labels[bucket[1]]
        have = buckets.get((bucket[0], labelset))
        if have is None:
            buckets[(bucket[0], labelset)] = bucket
        else:
            merge_bucket(have, bucket)
    fresh.update((entry[0], (*entry[:ROW_FIELDS], labels[entry[11]])) for entry in entries)
    return True


def absorb(
    entries: list[UsageEntry], labels: list[int], by_labels: dict[int, list],
    buckets: dict[tuple[int, int], list], fresh: dict[int, tuple],
) -> None:  # fmt: skip
    """absorb_in_python, in C where it can be."""
    if fast_absorb is None or not fast_absorb(entries, labels, by_labels, buckets, fresh):
        absorb_in_python(entries, labels, by_labels, buckets, fresh)


fast_absorb: Callable[[list, list, dict, dict, dict], bool] | None
try:  # built with the package
    from agentwatch.sentinels.token_ledger._fastline import absorb as fast_absorb
    from agentwatch.sentinels.token_ledger._fastline import key_hash, settle
except ImportError:  # pragma: no cover - tests/test_fastline.py requires it
    settle, fast_absorb, key_hash = settle_in_python, None, key_hash_in_python


# ---- worker-process side of a parallel backfill
_worker_reader: ChunkReader | None = None


def init_worker(prices: PriceBook, parent: int) -> None:
    """Runs once in each worker: die with the sentinel (a killed sentinel must not leave
    workers holding its files). The price book is the sentinel's own, forked with it."""
    global _worker_reader
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the sentinel's graceful handlers
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the sentinel, which stops us
    die_with_parent(signal.SIGKILL, parent)
    reuse_freed_blocks(READ_BLOCKS)
    _worker_reader = ChunkReader(prices)


def read_in_worker(jobs: list[tuple[str, str, Position | None, int, Skim | None]]) -> list[Chunk]:
    """Read several (key, slug, position, budget, skim) jobs: one round trip for many small
    files."""
    assert _worker_reader is not None, "init_worker was not run"
    return [_worker_reader.read(*job) for job in jobs]
