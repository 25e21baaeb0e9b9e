"""The ledger: turns new transcript bytes into counter increments, exactly once.

Chunks of new lines (see reader.py) are decided against what is already counted (dedup, best
copy, sidechain replays) inside one open transaction, which also holds the new position of
every file involved; `flush()` commits it. A crash at any moment keeps a transaction whole or
drops it whole: nothing is counted twice and nothing is lost (dropped chunks are read again).
Counters only ever grow: a better copy of an already counted response adds the difference.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Generator, Iterable
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING

from agentwatch.core import claude
from agentwatch.core.fold import DIMENSIONS, Fold, SessionFold, top_names
from agentwatch.core.log import FailureGate
from agentwatch.core.sanitize import label_value
from agentwatch.sentinels.token_ledger.commit_times import CommitTimes
from agentwatch.sentinels.token_ledger.pricing import PriceBook
from agentwatch.sentinels.token_ledger.reader import (
    BY_LOCATION,
    SIDECHAIN,
    Chunk,
    ChunkReader,
    UsageEntry,
    absorb,
    add_counted,
    add_to_bucket,
    init_worker,
    read_in_worker,
)
from agentwatch.sentinels.token_ledger.store import CounterKey, ResponseRow, Store
from agentwatch.sentinels.token_ledger.tailer import Position, Skim

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

log = logging.getLogger("agentwatch.token-ledger")

SKIP_REASONS = {
    "not_regular": "not a regular file (a FIFO, socket or device)",
    "symlink": "a symlink now (symlinks are not followed, as in discovery)",
}
DROPPED = 2  # `side` of a sidechain row superseded by a main copy
TOKEN_TYPES = ("input", "output", "cache_read", "cache_creation")
STEP_BYTES = 16 * 1024 * 1024  # one chunk of one file
# Commit the open batch after about this many entries: a commit rewrites most pages of the
# responses table (its keys are hashes), so the commits' cost grows with the square of a
# history's responses, and fewer commits cost less (10,000: 1.2 s of a 5 GiB backfill's 8 s
# in the commit thread; 20,000 saved 0.5-0.8 s of CPU there, for 10 MiB more memory at any
# size); memory holds two batches (one being written while the next is decided).
COMMIT_ENTRIES = 20_000
PARALLEL_MIN_BYTES = 64 * 1024 * 1024  # below this a backfill is read in-process
# Jobs queued per parse worker: enough that the workers go on while this process decides;
# their results are held until taken (more would hold a 5 GiB history's memory less flat).
IN_FLIGHT_PER_WORKER = 8
TAIL_SHARE = 0.3  # of a parallel backfill: read while its last commit but one is written
RESIZE_EVERY = 0.25  # seconds of backfill reading between looks at the tracked files' sizes
RESIZE_SHARE = 0.05  # ...or longer, so that looking costs at most this share of the backfill
# ...and of this process's CPU: paced on wall time alone, a busy machine's backfill (long in
# wall time) looked at its 10,000 files ever more often per byte read.
RESIZE_CPU_SHARE = 0.02


# Where the project and model labels sit in each counter's label values.
_LABEL_AT: dict[str, tuple[int | None, int | None]] = {
    "agentwatch_tokens": (0, 1),
    "agentwatch_cost_usd": (0, 1),
    "agentwatch_api_responses": (0, 1),
    "agentwatch_api_errors": (0, None),
    "agentwatch_ledger_unpriced_tokens": (None, 0),
}


def _names(counters: Iterable[CounterKey]) -> dict[str, set[str]]:
    """The project and model names that occur in these counters."""
    found: dict[str, set[str]] = {dim: set() for dim in DIMENSIONS}
    for name, labels in counters:
        at = _LABEL_AT.get(name)
        if at is None:
            continue
        for dim, index in zip(DIMENSIONS, at, strict=True):
            if index is not None:
                found[dim].add(labels[index])
    return found


def folded_labels(fold: Fold, name: str, labels: tuple[str, ...]) -> tuple[str, ...]:
    """A counter's label values as exposed: folded names become "other"."""
    at = _LABEL_AT.get(name)
    if at is None:
        return labels
    shown = list(labels)
    for dim, index in zip(DIMENSIONS, at, strict=True):
        if index is not None:
            shown[index] = fold.show(dim, labels[index])
    return tuple(shown)


@dataclass
class TrackedFile:
    """A transcript the ledger follows, and its size and mtime when last read."""

    transcript: claude.Transcript
    root: Path  # the projects root it was found under
    size: int = 0
    mtime: float = 0.0


def _wins(total: int, cost: float, speed: int, row: ResponseRow) -> bool:
    """The reference reader keeps the largest total, then the higher cost, then `speed`."""
    if total != row.total:
        return total > row.total
    if cost != row.cost:
        return cost > row.cost
    return bool(speed) and not row.speed


@dataclass
class _Pending:
    """Everything decided since the last commit."""

    rows: dict[tuple[int, int], ResponseRow] = field(default_factory=dict)
    known: dict[int, list[ResponseRow]] = field(default_factory=dict)  # msg -> rows (db + new)
    # msg -> the responses row (a tuple) of a response first seen in this batch, counted
    # whole with its chunk (_apply_new); becomes a ResponseRow in `rows` and `known` when
    # another copy of it comes.
    fresh: dict[int, tuple] = field(default_factory=dict)
    counters: dict[CounterKey, float] = field(default_factory=dict)
    # labelset id -> [input, output, cache_read, cache_creation, cost, unpriced tokens,
    # new responses]
    by_labels: dict[int, list[float]] = field(default_factory=dict)
    # session -> [project, first_ts, last_ts]
    activity: dict[str, list] = field(default_factory=dict)
    # (minute, labelset id) -> [minute, labelset id, first_ms, input, output, cache_read,
    # cache_creation, cost, responses]: what this batch counted per minute (blocks.py)
    buckets: dict[tuple[int, int], list] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)
    positions: dict[str, Position] = field(default_factory=dict)
    entries: int = 0

    def add(self, key: CounterKey, value: float) -> None:
        if value:
            self.counters[key] = self.counters.get(key, 0.0) + value


@dataclass
class _Commit:
    """A batch on its way into the database (Ledger.flush), and what the in-memory view
    takes from it once it is written."""

    pending: _Pending
    planned: dict
    session_deltas: dict[str, list]
    labelsets: list[tuple[int, str, str, str]]
    responses: list[tuple]
    thread: threading.Thread | None = None
    error: BaseException | None = None
    seconds: float = 0.0


@dataclass
class Ledger:
    """In-memory view of the counters plus the logic that changes them."""

    store: Store
    prices: PriceBook
    roots: list[Path]
    session_ttl: float = 7200.0
    clock: Callable[[], float] = time.time
    counters: dict[CounterKey, float] = field(default_factory=dict)
    sessions: dict[str, list] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)
    files: dict[str, TrackedFile] = field(default_factory=dict)
    positions: dict[str, Position] = field(default_factory=dict)
    read_errors: dict[str, int] = field(default_factory=dict)
    max_projects: int = 50
    max_models: int = 25
    max_sessions: int = 100
    timebox_minutes: float = 0.0  # a session's time-box from its first message (0: none)
    project_timebox: dict[str, float] = field(default_factory=dict)  # by project, over it

    def timebox(self, project: str) -> float:
        """Seconds a session of `project` is time-boxed to; 0 when none is set."""
        return 60.0 * self.project_timebox.get(project, self.timebox_minutes)

    def __post_init__(self) -> None:
        self.counters = self.store.counters()
        # Counters changed since the metrics last rendered them (all of them at first), and
        # by how much (the folded series add up these deltas).
        self.changed: set[CounterKey] = set(self.counters)
        self.deltas: dict[CounterKey, float] = dict(self.counters)
        self.fold = self._load_fold()
        self.positions = self.store.positions()
        self.gauges = self.store.gauges()
        since = self.clock() - self.session_ttl
        self.sessions = {s: list(row) for s, row in self.store.recent_sessions(since).items()}
        self.session_fold = SessionFold(self.max_sessions, self.sessions)
        self.reader = ChunkReader(self.prices)
        self._pending = _Pending()
        self._unreadable: dict[str, FailureGate] = {}  # logs once per failing file
        self._unread: dict[str, int] = {}
        self._unread_total = 0
        self._unread_files = 0  # files with unread bytes (their count in _unread)
        self._rejects_logged: set[str] = set()
        self._skipped: dict[str, str] = {}  # path -> why it is not read (counted once)
        self._skims: dict[str, Skim] = {}  # path -> how far its long partial line was scanned
        self._skips_logged: set[str] = set()
        self.unreadable_dirs: dict[str, Path] = {}  # folder -> its root, from the last scan
        self.commits = 0  # batches committed since the start (a full disk ends on one)
        self.commit_seconds = CommitTimes()
        # Told each committed batch's bucket changes (windows.py keeps the blocks and the
        # spend up to date with them instead of summing the database again).
        self.on_commit: list[Callable[[dict[tuple[int, int], list]], None]] = []
        self.noticed = False  # a metric changed without a commit (a skipped file)
        self._resize_seconds = 0.0  # how long the last look at every file's size took
        self._resize_cpu_at = 0.0  # process CPU time before which the next look waits
        self._pool: ProcessPoolExecutor | None = None  # workers forked ahead (start_workers)
        self._committing: _Commit | None = None  # the batch being written (flush)
        self._reading_in_parallel = False  # its batches are written in the background

    def _load_fold(self) -> Fold:
        caps = {"project": self.max_projects, "model": self.max_models}
        known = _names(self.counters)
        kept = self.store.kept()
        if kept is None:  # a database from before the fold: the largest names keep series
            by_name: dict[str, dict[str, float]] = {dim: {} for dim in DIMENSIONS}
            for (name, labels), value in self.counters.items():
                if name == "agentwatch_tokens":
                    for dim, label in zip(DIMENSIONS, labels, strict=False):
                        by_name[dim][label] = by_name[dim].get(label, 0.0) + value
            kept = {dim: top_names(by_name[dim].items(), caps[dim]) for dim in DIMENSIONS}
            self.store.save_kept(kept)
        return Fold(caps, kept, known)

    # ---- discovery
    def scan(self, roots: Iterable[Path] | None = None) -> None:
        """Reconcile with the file system: find new files, note sizes, forget vanished ones;
        only under `roots` when given (the roots followed by polling), else under all."""
        chosen = self.roots if roots is None else list(roots)
        seen: dict[str, TrackedFile] = {
            key: tracked for key, tracked in self.files.items() if tracked.root not in chosen
        }
        unreadable: dict[str, tuple[Path, OSError]] = {}
        for root in chosen:

            def failed(folder: str, err: OSError, root: Path = root) -> None:
                unreadable[folder] = (root, err)

            for entry in claude.walk(root, failed):
                key = entry.path
                if key in seen:
                    continue
                tracked = self.files.get(key)
                if tracked is None:
                    transcript = claude.describe(root, key)
                    if transcript is None:
                        continue
                    tracked = TrackedFile(transcript, root)
                try:
                    stat = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not S_ISREG(stat.st_mode):  # a FIFO, socket or device named *.jsonl
                    self._skip(key, "not_regular")
                    continue
                tracked.size, tracked.mtime = stat.st_size, stat.st_mtime
                seen[key] = tracked
        self.files = seen
        self._recount_all()
        self._note_unreadable_dirs(chosen, unreadable)

    def _note_unreadable_dirs(
        self, roots: list[Path], failed: dict[str, tuple[Path, OSError]]
    ) -> None:
        """Folders under these roots that cannot be listed: a gauge, one line per folder
        when it starts failing and one when it can be read again."""
        for folder in [f for f, root in self.unreadable_dirs.items() if root in roots]:
            if folder not in failed:
                del self.unreadable_dirs[folder]
                self.noticed = True
                log.info("folder %s can be listed again", label_value(folder, 512))
        for folder, (root, err) in failed.items():
            if folder not in self.unreadable_dirs:
                self.noticed = True
                log.warning(
                    "cannot list %s (%s): its transcripts are not counted until it can be "
                    "(agentwatch_ledger_unreadable_dirs)",
                    label_value(folder, 512),
                    label_value(err.strerror or type(err).__name__),
                )
            self.unreadable_dirs[folder] = root

    def _skip(self, key: str, reason: str) -> None:
        """A path discovery or an event offered that is not a transcript we may read:
        counted once per path (as a read error), logged once per reason."""
        if self._skipped.get(key) == reason:
            return
        self._skipped[key] = reason
        self.read_errors[reason] = self.read_errors.get(reason, 0) + 1
        self.noticed = True
        if reason not in self._skips_logged:
            self._skips_logged.add(reason)
            log.warning(
                "skipped %s: %s; such files are counted in "
                "agentwatch_ledger_read_errors_total and not logged again",
                label_value(key, 512),
                SKIP_REASONS[reason],
            )

    def track(self, path: Path) -> TrackedFile | None:
        """Start tracking one file named by a file-system event (if it is a transcript)."""
        key = str(path)
        if key in self.files:
            return self.files[key]
        for root in self.roots:
            transcript = claude.describe(root, path)
            if transcript is not None and not claude.behind_symlink(root, path):
                try:
                    if not S_ISREG(os.lstat(path).st_mode):
                        self._skip(key, "not_regular")
                        return None
                except OSError:
                    return None
                tracked = TrackedFile(transcript, root)
                self.files[key] = tracked
                self._recount(key)
                return tracked
        return None

    def take_noticed(self) -> bool:
        """Whether a metric changed outside the counters since the last call."""
        noticed, self.noticed = self.noticed, False
        return noticed

    def _position(self, key: str) -> Position | None:
        found = self._pending.positions.get(key)
        if found is None and self._committing is not None:
            found = self._committing.pending.positions.get(key)
        return found or self.positions.get(key)

    def pending(self) -> list[str]:
        """Files with unread bytes, most recently modified first (live sessions go first)."""
        waiting = [
            (tracked.mtime, key)
            for key, tracked in self.files.items()
            if tracked.size != (self._position(key) or Position()).offset
        ]
        return [key for _, key in sorted(waiting, reverse=True)]

    def has_unread(self, key: str) -> bool:
        tracked = self.files.get(key)
        position = self._position(key)
        return tracked is not None and tracked.size > (position.offset if position else 0)

    def unread_files(self) -> int:
        """Files with bytes not read yet, counted like unread_bytes: the backfill's progress
        line asks every few seconds, and listing 10,000 files each time grew with the
        history and the wall time (a busy machine's backfill is long)."""
        return self._unread_files

    def unread_bytes(self) -> int:
        """Bytes written but not read yet: kept up to date per file, because it is published
        with every live line and summing 2,000 files each time would cost more than the line."""
        return self._unread_total

    def _recount(self, key: str) -> None:
        tracked = self.files.get(key)
        position = self._position(key)
        unread = 0
        if tracked is not None:
            done = position.offset if position else 0
            skim = self._skims.get(key)
            if skim is not None and skim.line_start == done:  # a long line scanned so far
                done = skim.scanned
            unread = max(tracked.size - done, 0)
        before = self._unread.get(key, 0)
        self._unread_total += unread - before
        self._unread_files += (unread > 0) - (before > 0)
        self._unread[key] = unread

    def _recount_all(self) -> None:
        self._unread, self._unread_total, self._unread_files = {}, 0, 0
        for key in self.files:
            self._recount(key)

    # ---- reading
    def step(self, key: str, budget: int = STEP_BYTES) -> int:
        """Read one chunk of one file in this process and decide it; returns bytes read.
        The result is committed by `flush()` (or automatically when the batch is large)."""
        tracked = self.files.get(key)
        if tracked is None:
            return 0
        if claude.behind_symlink(tracked.root, Path(key)):  # a folder swapped for a symlink
            self.apply(Chunk(key, self._position(key) or Position(), error="symlink"))
            return 0
        chunk = self.reader.read(
            key, tracked.transcript.slug, self._position(key), budget, self._skims.get(key)
        )
        self.apply(chunk)
        return chunk.progress

    def catch_up(self, workers: int = 1) -> None:
        """Scan, then read every file to its end and commit (one `--once` cycle)."""
        self.scan()
        for _ in self.read_all(workers):
            pass
        self.flush()
        self.end_backfill()

    def end_backfill(self) -> None:
        """After a backfill's last flush: the responses a cold backfill staged go into their
        keyed table (Store.merge_staged), so that the live phase writes there."""
        self.finish_commit()
        self.store.merge_staged()

    def read_all(self, workers: int = 1) -> Generator[int]:
        """Read every pending file to its end, yielding bytes read per chunk (for progress).

        Large backfills are parsed by `workers` processes while this one decides; the
        decisions and commits stay here, in one place.
        """
        keys = self.pending()
        if workers > 1 and self.unread_bytes() >= PARALLEL_MIN_BYTES:
            yield from self._read_parallel(keys, workers)
            return
        self.stop_workers()  # started for a backfill that turned out small
        # One slice of each file in turn, so a huge file cannot hold up the others; the
        # sizes are looked at again every RESIZE_EVERY, and a file that grew takes its turn
        # first (a line appended while a 10 GB file is read shows within about a second).
        queue = deque(keys)
        queued = set(queue)
        resize_at = time.monotonic() + RESIZE_EVERY
        while queue:
            key = queue.popleft()
            queued.discard(key)
            got = self.step(key)
            yield got
            if got and self.has_unread(key):
                queue.append(key)
                queued.add(key)
            if self._resize_due(resize_at):
                for grown in reversed(self.refresh_sizes(queued)):
                    queue.appendleft(grown)
                    queued.add(grown)
                resize_at = self._next_resize()

    def _next_resize(self) -> float:
        """When to look at the sizes again: after RESIZE_EVERY, or later when one look takes
        more than RESIZE_SHARE of that (tens of thousands of files)."""
        return time.monotonic() + max(RESIZE_EVERY, self._resize_seconds / RESIZE_SHARE)

    def _resize_due(self, resize_at: float) -> bool:
        """Whether to look at the sizes again: `resize_at` (_next_resize) has passed, and this
        process has used 1/RESIZE_CPU_SHARE times the CPU the last look took since it."""
        return time.monotonic() >= resize_at and time.process_time() >= self._resize_cpu_at

    def refresh_sizes(self, waiting: Collection[str] = ()) -> list[str]:
        """Stat every tracked file (no walk: cheap); the ones that grew, newest first. Files
        `waiting` for their turn are read to their end anyway: not looked at (early in a
        backfill that is nearly all of them)."""
        started, cpu = time.monotonic(), time.thread_time()
        try:
            return self._refresh_sizes(waiting)
        finally:
            self._resize_seconds = time.monotonic() - started
            spent = time.thread_time() - cpu
            self._resize_cpu_at = time.process_time() + spent / RESIZE_CPU_SHARE

    def _refresh_sizes(self, waiting: Collection[str]) -> list[str]:
        grown: list[tuple[float, str]] = []
        for key, tracked in self.files.items():
            if key in waiting:
                continue
            try:
                info = os.stat(key, follow_symlinks=False)
            except OSError:
                continue
            if info.st_size != tracked.size or info.st_mtime != tracked.mtime:
                tracked.size, tracked.mtime = info.st_size, info.st_mtime
                self._recount(key)
                grown.append((info.st_mtime, key))
        return [key for _, key in sorted(grown, reverse=True)]

    def start_workers(self, workers: int) -> None:
        """Fork the parse workers now, before the scan fills this process with the table of
        files: forked after it, each worker would carry a copy (per-file state is what grows
        with a history). They serve the next parallel read, or stop if there is none."""
        if workers > 1 and self._pool is None:
            self._pool = self._new_pool(workers)
            self._pool.submit(read_in_worker, [])  # a fork context forks them all here

    def stop_workers(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=True, cancel_futures=True)

    def _new_pool(self, workers: int) -> ProcessPoolExecutor:
        # Imported for a cold backfill only: 0.8 MiB of private memory the resident ledger
        # otherwise never uses.
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        context = get_context("fork")  # the caller has no threads yet (see main.run)
        return ProcessPoolExecutor(
            workers, mp_context=context, initializer=init_worker,
            initargs=(self.prices, os.getpid()),
        )  # fmt: skip

    def _read_parallel(self, keys: list[str], workers: int) -> Generator[int]:
        pool, self._pool = self._pool or self._new_pool(workers), None
        self._reading_in_parallel = True
        try:
            yield from self._read_with(pool, keys, workers)
        finally:
            self._reading_in_parallel = False

    def _read_with(
        self, pool: ProcessPoolExecutor, keys: list[str], workers: int
    ) -> Generator[int]:
        tail_bytes = self.unread_bytes() * TAIL_SHARE
        with pool:
            todo = deque(keys)  # taken from the left: a list's pop(0) grew with the files
            running: deque = deque()
            resize_at = time.monotonic() + RESIZE_EVERY
            in_flight: set[str] = set()  # one job per file at a time: positions move in order
            while todo or running:
                if self._resize_due(resize_at):  # a file that grew goes first (see read_all)
                    todo.extendleft(reversed(self.refresh_sizes(set(todo) | in_flight)))
                    resize_at = self._next_resize()
                while todo and len(running) < IN_FLIGHT_PER_WORKER * workers:
                    jobs = self._next_jobs(todo)
                    in_flight.update(job[0] for job in jobs)
                    running.append(pool.submit(read_in_worker, jobs))
                chunks = running.popleft().result()  # in submission order: bounded memory
                for chunk in chunks:
                    in_flight.discard(chunk.key)
                    self.apply(chunk)
                    yield chunk.bytes_read
                    if chunk.progress and self.has_unread(chunk.key):
                        todo.append(chunk.key)  # a large file: its next slice, after the others
                if tail_bytes and self.unread_bytes() <= tail_bytes:
                    # The batch so far is written while the workers read the rest: the
                    # commit that ends the backfill, which nothing overlaps, is then small.
                    tail_bytes = 0
                    self.flush(background=True)

    def _next_jobs(
        self, todo: deque[str]
    ) -> list[tuple[str, str, Position | None, int, Skim | None]]:
        """Small files travel together (about STEP_BYTES a batch); a large one alone."""
        jobs: list[tuple[str, str, Position | None, int, Skim | None]] = []
        planned = 0
        while todo and planned < STEP_BYTES:
            key = todo.popleft()
            position = self._position(key)
            planned += self.files[key].size - (position.offset if position else 0)
            slug = self.files[key].transcript.slug
            jobs.append((key, slug, position, STEP_BYTES, self._skims.get(key)))
        return jobs

    # ---- deciding
    def apply(self, chunk: Chunk) -> None:
        """Decide one chunk's entries into the open batch (committed by flush)."""
        try:
            self._apply(chunk)
        finally:
            self._recount(chunk.key)

    def _apply(self, chunk: Chunk) -> None:
        key = chunk.key
        tracked = self.files.get(key)
        if chunk.skim is not None:
            self._skims[key] = chunk.skim
        else:
            self._skims.pop(key, None)
        if chunk.error in SKIP_REASONS:  # no longer a transcript: dropped, as discovery would
            self.files.pop(key, None)
            self._unreadable.pop(key, None)
            self._skip(key, chunk.error)
            return
        if chunk.error:
            self.read_errors[chunk.error] = self.read_errors.get(chunk.error, 0) + 1
            if chunk.error == "vanished":
                self.files.pop(key, None)
                self._unreadable.pop(key, None)
            else:
                gate = self._unreadable.get(key)
                if gate is None:
                    what = f"transcript {label_value(key, 512)}"
                    gate = self._unreadable[key] = FailureGate(log, what)
                gate.failed("cannot be read")
                if tracked is not None:  # retry on the next change, not in a loop
                    tracked.size = (self._position(key) or Position()).offset
            return
        if key in self._unreadable:
            self._unreadable.pop(key).succeeded()
        if tracked is not None:
            tracked.size, tracked.mtime = chunk.size, chunk.mtime
        pending = self._pending
        if chunk.bytes_read == 0 and not chunk.reset:
            return
        pending.positions[key] = chunk.position
        pending.add(("agentwatch_ledger_file_resets", ()), 1 if chunk.reset else 0)
        pending.add(("agentwatch_ledger_lines_read", ()), chunk.lines)
        pending.add(("agentwatch_ledger_bytes_read", ()), chunk.bytes_read)
        pending.add(("agentwatch_ledger_lines_rejected", ("oversize",)), chunk.oversize)
        for reason, count in chunk.rejects.items():
            pending.add(("agentwatch_ledger_lines_rejected", (reason,)), count)
            if reason not in self._rejects_logged:  # once per reason: the counter tells more
                self._rejects_logged.add(reason)
                log.warning(
                    "a line of %s was rejected (%s); such lines are counted in "
                    "agentwatch_ledger_lines_rejected_total and not logged again",
                    label_value(key, limit=512),
                    reason,
                )
        for kind, count in chunk.copies.items():
            pending.add(("agentwatch_ledger_duplicate_copies", (kind,)), count)
        session = label_value(tracked.transcript.session) if tracked else "unknown"
        if chunk.first_ts is not None and chunk.last_ts is not None:
            # A line from the future must not keep its session's series past the others:
            # activity times are clamped to now.
            now = self.clock()
            chunk.first_ts, chunk.last_ts = min(chunk.first_ts, now), min(chunk.last_ts, now)
            activity = pending.activity.get(session)
            if activity is None:
                project = chunk.groups[chunk.entries[0][11]][0] if chunk.entries else "unknown"
                pending.activity[session] = [project, chunk.first_ts, chunk.last_ts]
            else:
                activity[1] = min(activity[1], chunk.first_ts)
                activity[2] = max(activity[2], chunk.last_ts)
        entries = chunk.entries
        if not entries:
            return
        if not self._apply_new(chunk, session):
            self._decide_each(chunk, session)
        pending.entries += len(entries)
        if pending.entries >= COMMIT_ENTRIES:
            self.flush(background=self._reading_in_parallel)

    def _apply_new(self, chunk: Chunk, session: str) -> bool:
        """Count a chunk whole (reader.absorb) when every response in it is seen for the
        first time, as in most of a backfill: what deciding each entry would do, without
        doing it per entry. False (nothing done) when one may be known."""
        pending, store, entries = self._pending, self.store, chunk.entries
        msgs = [entry[0] for entry in entries]
        unique = set(msgs)
        if (
            len(unique) != len(msgs)  # two requests of one message: decided one by one
            or not pending.fresh.keys().isdisjoint(unique)
            or not pending.known.keys().isdisjoint(unique)
        ):
            return False
        stored = store.responses_for(unique, self._writing())
        if stored:  # looked up once: _decide_each takes them from `known`
            for msg in unique:
                pending.known[msg] = stored.get(msg, [])
            return False
        labels = [store.labelset(project, model, session) for project, model in chunk.groups]
        absorb(entries, labels, pending.by_labels, pending.buckets, pending.fresh)
        for entry in entries:
            if entry[14] is not None:
                self._count_error(labels[entry[11]], entry[14], entry[12], entry[15])
        return True

    def _writing(self) -> list[tuple] | None:
        """The responses of the batch being written from the commit thread, if one is."""
        batch = self._committing
        return batch.responses if batch is not None and batch.thread is not None else None

    def _decide_each(self, chunk: Chunk, session: str) -> None:
        """Decide every entry of a chunk against what is counted already."""
        pending = self._pending
        known, fresh = pending.known, pending.fresh
        msgs = {entry[0] for entry in chunk.entries}
        for msg in msgs & fresh.keys():  # first seen in this batch: decided as rows from now
            row = ResponseRow(*fresh.pop(msg))
            known[msg] = [row]
            pending.rows[(row.msg, row.req)] = row
        unknown = [msg for msg in msgs if msg not in known]
        if unknown:
            found = self.store.responses_for(unknown, self._writing())
            for msg in unknown:
                known[msg] = found.get(msg, [])
        groups = chunk.groups
        for entry in chunk.entries:
            self._decide(entry, groups, session)

    def _decide(self, entry: UsageEntry, groups: list[tuple[str, str]], session: str) -> None:
        pending = self._pending
        msg, req, on_side, total, speed, cost, t_in, t_out, t_cr, t_cc, d_cost, group, ts, priced, kind, reset_at = entry  # fmt: skip # noqa: E501
        rows = pending.known.get(msg)
        if not rows:  # the first copy of a response anywhere: counted whole
            labels = self.store.labelset(*groups[group], session)
            row = ResponseRow(
                msg, req, on_side, total, speed, cost, t_in, t_out, t_cr, t_cc, d_cost, labels
            )
            pending.known[msg] = [row]
            if kind is not None:
                self._count_error(labels, kind, ts, reset_at)
            self._add_counted(row, ts, t_in, t_out, t_cr, t_cc, d_cost, priced, 1)
            return
        same = None
        new = 0
        for row in rows:
            if row.req == req:
                same = row
            elif req == SIDECHAIN and row.req != SIDECHAIN:
                pending.add(("agentwatch_ledger_duplicate_copies", ("sidechain_replay",)), 1)
                return  # a main copy exists: every sidechain replay of it is dropped
        if same is not None:
            pending.add(("agentwatch_ledger_duplicate_copies", ("copy",)), 1)
            if not _wins(total, cost, speed, same):
                return
            row = same
        else:
            labels = self.store.labelset(*groups[group], session)
            row = ResponseRow(msg, req, 0, 0, 0, 0.0, 0, 0, 0, 0, 0.0, labels)
            side = next((r for r in rows if r.req == SIDECHAIN and r.side != DROPPED), None)
            if req not in (SIDECHAIN, BY_LOCATION) and side is not None:
                # A main copy supersedes the sidechain replay counted before it: carry the
                # counted amounts over instead of counting the response twice.
                row.labels = side.labels
                row.c_in, row.c_out, row.c_cr, row.c_cc, row.c_cost = (
                    side.c_in, side.c_out, side.c_cr, side.c_cc, side.c_cost,
                )  # fmt: skip
                side.side = DROPPED
                side.c_in = side.c_out = side.c_cr = side.c_cc = 0
                side.c_cost = 0.0
                pending.rows[(side.msg, side.req)] = side
            else:
                if kind is not None:
                    self._count_error(row.labels, kind, ts, reset_at)
                new = 1
            rows.append(row)
        row.side = 1 if req == SIDECHAIN else 0
        row.total, row.cost, row.speed = total, cost, speed
        d_in, d_out = max(0, t_in - row.c_in), max(0, t_out - row.c_out)
        d_cr, d_cc = max(0, t_cr - row.c_cr), max(0, t_cc - row.c_cc)
        d_cost = max(0.0, cost - row.c_cost)
        row.c_in += d_in
        row.c_out += d_out
        row.c_cr += d_cr
        row.c_cc += d_cc
        row.c_cost += d_cost
        self._add_counted(row, ts, d_in, d_out, d_cr, d_cc, d_cost, priced, new)

    def _add_counted(
        self, row: ResponseRow, ts: float, d_in: int, d_out: int, d_cr: int, d_cc: int,
        d_cost: float, priced: bool, new: int,
    ) -> None:  # fmt: skip
        """Into the batch: what a response's copy added to the counts (the row has it)."""
        pending = self._pending
        sums = pending.by_labels.get(row.labels)
        if sums is None:
            sums = pending.by_labels[row.labels] = [0, 0, 0, 0, 0.0, 0, 0]
        add_counted(sums, d_in, d_out, d_cr, d_cc, d_cost, priced, new)
        pending.rows[(row.msg, row.req)] = row
        if new or d_in or d_out or d_cr or d_cc or d_cost:
            # The minute of the line that changed the count: a later, better copy adds its
            # difference to its own minute (counters only grow; see docs/ledger-rules.md).
            add_to_bucket(pending.buckets, row.labels, ts, d_in, d_out, d_cr, d_cc, d_cost, new)

    def _count_error(self, labels: int, kind: str, ts: float, reset_at: float | None) -> None:
        """A new response that is an API error (the responses are counted per label set)."""
        project, _model, _session = self.store.labels_of(labels)
        pending = self._pending
        pending.add(("agentwatch_api_errors", (project, kind)), 1)
        self._raise_gauge(f"api_error_last:{kind}", ts)
        if reset_at is not None:
            self._raise_gauge("usage_limit_reset", reset_at)

    def _raise_gauge(self, key: str, value: float) -> None:
        """Keep the newest time seen: files are not read in time order."""
        gauges = self._pending.gauges
        writing = self._committing.pending.gauges if self._committing is not None else {}
        if value > max(gauges.get(key, 0.0), writing.get(key, 0.0), self.gauges.get(key, 0.0)):
            gauges[key] = value

    # ---- committing
    def discard(self) -> None:
        """Drop the open batch (after a failure mid-way), and one being written: nothing of
        them was committed, so the same bytes are read and decided again, never counted
        twice."""
        batch, self._committing = self._committing, None
        if batch is not None and batch.thread is not None:
            batch.thread.join()
        if self.store.db.in_transaction:
            self.store.rollback()
        self._pending = _Pending()
        self._recount_all()

    def flush(self, background: bool = False) -> None:
        """Commit the open batch: responses, counters, sessions and positions together.

        `background`: written from a thread while this one goes on deciding (a backfill's
        workers keep reading); the next flush, or any look-up in the database, waits for
        it, and a failure is raised from the next flush. Only one batch is in flight."""
        self.finish_commit()
        pending = self._pending
        if not pending.positions:
            return
        counters = pending.counters
        session_deltas: dict[str, list] = {}
        for labels, sums in pending.by_labels.items():
            d_in, d_out, d_cr, d_cc, d_cost, unpriced, responses = sums
            project, model, session = self.store.labels_of(labels)
            pending.add(("agentwatch_api_responses", (project, model)), responses)
            for kind, value in zip(TOKEN_TYPES, (d_in, d_out, d_cr, d_cc), strict=True):
                pending.add(("agentwatch_tokens", (project, model, kind)), value)
            pending.add(("agentwatch_cost_usd", (project, model)), d_cost)
            pending.add(("agentwatch_ledger_unpriced_tokens", (model,)), unpriced)
            delta = session_deltas.setdefault(session, [project, None, None, 0, 0, 0, 0, 0.0])
            for index, value in enumerate((d_in, d_out, d_cr, d_cc, d_cost), start=3):
                delta[index] += value
        for session, (project, first_ts, last_ts) in pending.activity.items():
            delta = session_deltas.setdefault(session, [project, None, None, 0, 0, 0, 0, 0.0])
            delta[1], delta[2] = first_ts, last_ts
        store = self.store
        rows = store.response_batch(pending.rows.values(), pending.fresh.values())
        store.will_store(chain(pending.fresh, [row.msg for row in pending.rows.values()]))
        batch = _Commit(
            pending, self.fold.plan(_names(counters)), session_deltas, store.take_labelsets(),
            rows,
        )  # fmt: skip
        self._pending = _Pending()
        self._committing = batch
        store.lock.acquire()  # released by _write: from now on the database waits for it
        if background:
            batch.thread = threading.Thread(
                target=self._write, args=(batch,), name="ledger-commit", daemon=True
            )
            batch.thread.start()
        else:
            self._write(batch)
            self.finish_commit()

    def _write(self, batch: _Commit) -> None:
        """The batch into the database, in one transaction (holding store.lock)."""
        store, pending = self.store, batch.pending
        started = time.perf_counter()
        try:
            if not store.db.in_transaction:
                store.begin()
            store.save_labelsets(batch.labelsets)
            store.save_kept({dim: kept for dim, (_, kept) in batch.planned.items() if kept})
            store.save_responses(batch.responses)
            store.add_counters(pending.counters)
            store.add_sessions(batch.session_deltas)
            store.add_buckets(pending.buckets)
            store.set_gauges(pending.gauges)
            store.save_positions(pending.positions)
            store.commit()
        except BaseException as err:  # raised in the deciding thread (finish_commit)
            batch.error = err
        finally:
            batch.seconds = time.perf_counter() - started
            store.lock.release()

    def finish_commit(self) -> None:
        """Wait for the batch being written, then take it into the in-memory view (or, when
        it failed, drop it with the open batch, decided after it, and raise the error)."""
        batch = self._committing
        if batch is None:
            return
        if batch.thread is not None:
            batch.thread.join()
        if batch.error is not None:
            self.discard()
            raise batch.error
        self._committing = None
        pending = batch.pending
        self.commits += 1
        self.commit_seconds.observe(batch.seconds)
        self.positions.update(pending.positions)
        counters = pending.counters
        for counter, value in counters.items():
            self.counters[counter] = self.counters.get(counter, 0.0) + value
        self.changed.update(counters)
        deltas = self.deltas
        for counter, value in counters.items():
            deltas[counter] = deltas.get(counter, 0.0) + value
        self.fold.apply(batch.planned)
        self.gauges.update(pending.gauges)
        self._remember_sessions(batch.session_deltas)
        for listener in self.on_commit:  # last: the ledger is consistent whatever they do
            listener(pending.buckets)

    def _remember_sessions(self, deltas: dict[str, list]) -> None:
        cutoff = self.clock() - self.session_ttl
        for session, (project, first_ts, last_ts, *values) in deltas.items():
            current = self.sessions.get(session)
            if current is None:
                if last_ts is None or last_ts < cutoff:
                    continue
                current = self.sessions[session] = [project, first_ts, last_ts, 0, 0, 0, 0, 0.0]
                self.session_fold.admit(session)
            if first_ts is not None:
                current[1] = min(current[1], first_ts)
                current[2] = max(current[2], last_ts)
            for index, value in enumerate(values, start=3):
                current[index] += value

    def expire_sessions(self) -> None:
        cutoff = self.clock() - self.session_ttl
        for session in [s for s, row in self.sessions.items() if row[2] < cutoff]:
            self.session_fold.expired(session, self.sessions.pop(session))
