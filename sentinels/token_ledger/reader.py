"""Turning new bytes of one transcript into compact usage entries: pure, so it can run in a
worker process during a large backfill while the main process decides and commits.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import signal
from dataclasses import dataclass, field
from stat import S_ISREG

from agentwatch.core import claude
from agentwatch.core.process import die_with_parent
from agentwatch.core.sanitize import label_value
from agentwatch.sentinels.token_ledger import records
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
_PROJECT_CACHE = 10_000  # label values remembered per process (bounded: names are open-ended)
_HASH_CACHE = 4096  # id hashes remembered: enough for the copies of every response in a chunk

# One usage entry, ready to be decided: (msg, req, project, model, timestamp, input, output,
# cache_read, cache_creation, cost, priced, has_speed, error_kind, reset_at, total)
UsageEntry = tuple[int, int, str, str, float, int, int, int, int, float, bool, bool,
                   str | None, float | None, int]  # fmt: skip


def key_hash(text: str) -> int:
    """A stable signed 64-bit hash (SQLite integers), the same in every process."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
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
        # Recent ids' key hashes: the copies of a response share them.
        self._msg_hashes: dict[str, int] = {}
        self._req_hashes: dict[str, int] = {}

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
        # duplicates are settled here, before anything is hashed or priced (largest total,
        # then cost, then `speed`, then the first: the reference reader's rules), and the
        # ledger only decides the survivors against what it counted before.
        best: dict[tuple, tuple[records.Entry, int, int, bytes]] = {}
        main_msgs: set[str] = set()  # responses with a main copy: their sidechain replays go
        copies, rejects, parse = chunk.copies, chunk.rejects, records.parse
        first_ts = last_ts = None
        for offset, line in result.candidates:
            try:
                parsed = parse(line)
            except records.Rejected as rejected:
                rejects[rejected.reason] = rejects.get(rejected.reason, 0) + 1
                continue
            except Exception as err:  # a line must never stop the ledger: count it, go on
                log.warning("unexpected %s parsing a line of %s; skipped", type(err).__name__, key)
                rejects["parse_error"] = rejects.get("parse_error", 0) + 1
                continue
            for index, entry in enumerate(parsed):
                ts = entry.timestamp
                if first_ts is None or ts < first_ts:
                    first_ts = ts
                if last_ts is None or ts > last_ts:
                    last_ts = ts
                copy_key = _copy_key(entry, offset, index, main_msgs)
                kept = best.get(copy_key)
                if kept is None:
                    best[copy_key] = (entry, offset, index, line)
                    continue
                copies["copy"] = copies.get("copy", 0) + 1
                if self._better(entry, kept[0]):
                    best[copy_key] = (entry, offset, index, line)
        chunk.first_ts, chunk.last_ts = first_ts, last_ts
        entries = chunk.entries
        compact = self._compact
        for entry, offset, index, line in best.values():
            if entry.sidechain and entry.msg_id in main_msgs:
                copies["sidechain_replay"] = copies.get("sidechain_replay", 0) + 1
            else:
                entries.append(compact(entry, key, slug, offset, index, line))
        return chunk

    def _better(self, entry: records.Entry, kept: records.Entry) -> bool:
        """Whether a copy beats the one kept; priced only when the totals tie (rarely)."""
        total, kept_total = entry.total, kept.total
        if total != kept_total:
            return total > kept_total
        cost, kept_cost = self._cost(entry)[0], self._cost(kept)[0]
        if cost != kept_cost:
            return cost > kept_cost
        return entry.has_speed and not kept.has_speed

    def _compact(
        self, entry: records.Entry, key: str, slug: str, offset: int, index: int, line: bytes
    ) -> UsageEntry:
        if entry.msg_id is None:
            content = hashlib.blake2b(line, digest_size=8).hexdigest()
            msg, req = key_hash(f"{key}\0{offset}\0{index}\0{content}"), BY_LOCATION
        else:
            # The copies of one response follow each other: their keys are hashed once.
            known = self._msg_hashes.get(entry.msg_id)
            if known is None:
                known = _remember(self._msg_hashes, entry.msg_id, key_hash(entry.msg_id))
            msg = known
            if entry.sidechain:
                req = SIDECHAIN
            elif entry.req_id is None:  # the reference reader then keys on id + instant
                req = key_hash(f"t\0{round(entry.timestamp * 1000)}") | 3
            else:
                known = self._req_hashes.get(entry.req_id)
                if known is None:  # low bits set: never a reserved key
                    known = _remember(
                        self._req_hashes, entry.req_id, key_hash("r\0" + entry.req_id) | 3
                    )
                req = known
        # Label values come from text anyone can write (cwd, folder names, model): made safe
        # here, where they are produced, so the database and every exposition hold safe text.
        project = self._projects.get((entry.cwd, slug))
        if project is None:
            project = label_value(claude.project_name(entry.cwd, slug))
            if len(self._projects) >= _PROJECT_CACHE:
                self._projects.clear()
            self._projects[(entry.cwd, slug)] = project
        model = self._models.get(entry.model)
        if model is None:
            model = label_value(entry.model)
            if len(self._models) >= _PROJECT_CACHE:
                self._models.clear()
            self._models[entry.model] = model
        cost, priced = self._cost(entry)
        kind = reset_at = None
        if entry.api_error:
            kind, reset_at = records.classify_error(entry.error_text)
        return (
            msg, req, project, model, entry.timestamp, entry.input, entry.output,
            entry.cache_read, entry.cache_creation, cost, priced, entry.has_speed, kind,
            reset_at, entry.total,
        )  # fmt: skip

    def _cost(self, entry: records.Entry) -> tuple[float, bool]:
        if entry.cost_usd is not None:
            return entry.cost_usd, True
        if entry.model == records.SYNTHETIC:
            return 0.0, True
        cost = self.prices.cost(
            entry.model, entry.input, entry.output, entry.cache_read,
            entry.cache_5m, entry.cache_1h, entry.fast, at=entry.timestamp,
        )  # fmt: skip
        return (0.0, False) if cost is None else (cost, True)


def _remember(cache: dict[str, int], text: str, value: int) -> int:
    if len(cache) >= _HASH_CACHE:
        cache.clear()
    cache[text] = value
    return value


def _copy_key(entry: records.Entry, offset: int, index: int, main_msgs: set[str]) -> tuple:
    """What the copies of one response share, as the ledger keys them (reader.SIDECHAIN,
    BY_LOCATION and the request keys of _compact), before hashing."""
    msg_id = entry.msg_id
    if msg_id is None:
        return (offset, index)  # keyed by its place: never a copy of another line
    if entry.sidechain:
        return (msg_id, None)
    main_msgs.add(msg_id)
    if entry.req_id is None:
        return (msg_id, round(entry.timestamp * 1000))
    return (msg_id, entry.req_id)


# ---- worker-process side of a parallel backfill
_worker_reader: ChunkReader | None = None


def init_worker(pricing_file: object, overrides: dict[str, dict[str, float]], parent: int) -> None:
    """Runs once in each worker: die with the sentinel (a killed sentinel must not leave
    workers holding its files), and build the price book here (it is not picklable)."""
    global _worker_reader
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the sentinel's graceful handlers
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the sentinel, which stops us
    die_with_parent(signal.SIGKILL, parent)
    _worker_reader = ChunkReader(PriceBook.load(pricing_file, overrides))  # type: ignore[arg-type]


def read_in_worker(jobs: list[tuple[str, str, Position | None, int, Skim | None]]) -> list[Chunk]:
    """Read several (key, slug, position, budget, skim) jobs: one round trip for many small
    files."""
    assert _worker_reader is not None, "init_worker was not run"
    return [_worker_reader.read(*job) for job in jobs]
