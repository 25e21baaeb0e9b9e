"""The cycles of `agentwatch sentinel token-ledger`: backfill, then follow the transcripts live.

First the backfill reads everything not read yet, newest files first, one second of reading
per cycle so partial totals are published as it goes (with parse workers forked before any
thread exists). Then it follows: inotify events (watchdog) wake the loop for the files that
changed, every `interval` a heartbeat cycle looks for transcript roots that appeared and polls
the roots inotify cannot watch, and every `reconcile_interval` a full scan catches whatever
the events missed. Without inotify (its per-user instance or watch limit reached, as on a
workstation with an IDE and other watchers) a root is polled instead, which is said once in
the log and shown by `agentwatch_ledger_roots_polled`, and inotify is tried again each
heartbeat.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Generator, Iterator
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from watchdog.events import (
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)

from agentwatch.core import claude
from agentwatch.core.config import Config
from agentwatch.core.loop import Outcome
from agentwatch.core.single import StateInUse
from agentwatch.sentinels.contract import Context, SentinelError
from agentwatch.sentinels.token_ledger import scanner
from agentwatch.sentinels.token_ledger.full import StoreFull, is_full
from agentwatch.sentinels.token_ledger.ledger import Ledger
from agentwatch.sentinels.token_ledger.metrics import CounterText, families
from agentwatch.sentinels.token_ledger.pricing import PriceBook
from agentwatch.sentinels.token_ledger.store import DATABASE_FILE, Store
from agentwatch.sentinels.token_ledger.windows import Windows

if TYPE_CHECKING:  # the observer is imported when the first watch starts: not for --once
    from watchdog.observers.api import BaseObserver

log = logging.getLogger("agentwatch.token-ledger")
IDLE_POLL = 30.0
BACKFILL_PUBLISH_EVERY = 1.0
# Allocations between the young generation's collections while backfilling: the default 700
# ran a collection every few lines, a tenth of the backfill's time, for no cycle to free.
BACKFILL_GC_THRESHOLD = 100_000
DRAIN_SLICE = 0.1  # seconds of live reading before new events are taken and metrics published


# Only these reach us (the kernel is asked for nothing else): our own reads would otherwise
# wake the loop with open/close events.
WATCHED_EVENTS: list[type[FileSystemEvent]] = [FileCreatedEvent, FileModifiedEvent, FileMovedEvent]


class _Events(FileSystemEventHandler):
    """Collects the paths of changed transcripts and wakes the loop.

    Only events that can mean new bytes count: our own reads cause "opened" and
    "closed_no_write" events, which must never wake us (that would be a busy loop).
    """

    WANTED = frozenset(kind.event_type for kind in WATCHED_EVENTS)

    def __init__(self, wake: Callable[[], None]):
        self.wake = wake
        self.dirty: set[str] = set()
        self.lock = threading.Lock()

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in self.WANTED or event.is_directory:
            return
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            path = raw.decode() if isinstance(raw, bytes) else raw
            if path and path.endswith(".jsonl"):
                with self.lock:
                    self.dirty.add(path)
                self.wake()

    def take(self) -> list[str]:
        with self.lock:
            taken, self.dirty = list(self.dirty), set()
        return taken


class _Watch:
    """Follows each transcript root that exists: with inotify where the kernel allows it,
    by polling where it does not (retried each heartbeat), added as roots appear."""

    def __init__(self, roots: list[Path], handler: _Events, poll_every: float):
        self.roots = roots
        self.handler = handler
        self.poll_every = poll_every
        self.observer: BaseObserver | None = None  # created with the first watch
        self.watched: set[Path] = set()
        self.polled: set[Path] = set()

    def refresh(self) -> bool:
        """Follow the roots that exist now; True when one is followed that was not before
        (it may already hold files, so the caller scans)."""
        added = False
        for root in self.roots:
            if root in self.watched or not root.is_dir():
                continue
            error = self._watch(root)
            if error is not None:
                if root not in self.polled:
                    log.warning(
                        "cannot watch %s with inotify (%s): polling it every %gs instead, "
                        "until inotify is available again",
                        root,
                        error,
                        self.poll_every,
                    )
                    self.polled.add(root)
                    added = True
                continue
            self.watched.add(root)
            if root in self.polled:
                self.polled.discard(root)
                log.info("watching %s with inotify again (no more polling)", root)
            else:
                added = True
        return added

    def _watch(self, root: Path) -> str | None:
        """Add an inotify watch on the root's tree; why not, when the kernel refuses (e.g.
        fs.inotify.max_user_instances or max_user_watches reached)."""
        try:
            if self.observer is None:
                from watchdog.observers import Observer  # 35 ms of every backfill's start

                # Events wake the observer at once; the timeout only paces its idle polling
                # (the default 1 s would wake two threads every second for nothing).
                observer = Observer(timeout=IDLE_POLL)
                observer.start()
                self.observer = observer
            self.observer.schedule(
                self.handler, str(root), recursive=True, event_filter=WATCHED_EVENTS
            )
        except OSError as err:
            return err.strerror or str(err)
        return None

    def stop(self) -> None:
        if self.observer is not None:
            self.observer.stop()
            self.observer.join(timeout=1)  # daemon threads: no need to wait out their poll


class _Progress:
    """Human progress lines during a large backfill: done, rate, time left."""

    def __init__(self, ledger: Ledger, every: float):
        self.ledger = ledger
        self.every = every
        self.started = time.monotonic()
        self.total = ledger.unread_bytes()
        self.total_files = ledger.unread_files()
        self.last = self.started
        self.active = self.total >= 64 * 1024 * 1024
        if self.active:
            log.info(
                "backfill: %.1f MB in %d files to read; metrics are published as it goes",
                self.total / 1e6,
                self.total_files,
            )

    def tick(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self.active or (not force and now - self.last < self.every):
            return
        self.last = now
        left = self.ledger.unread_bytes()
        done = max(0, self.total - left)
        elapsed = max(now - self.started, 1e-6)
        rate = done / elapsed
        files_left = self.ledger.unread_files()
        if not left:
            eta = "done"
        elif done <= 0 or now - self.started < 1.0:
            eta = "estimating the time left"
        else:
            eta = f"about {left / rate:.0f} s left"
        log.info(
            "backfill: %.1f of %.1f MB (%.0f%%), %d of %d files, %.1f MB/s, %s",
            done / 1e6,
            self.total / 1e6,
            100.0 * done / max(self.total, 1),
            self.total_files - files_left,
            self.total_files,
            rate / 1e6,
            eta,
        )
        if not left:
            self.active = False


def roots_of(config: Config) -> list[Path]:
    return claude.projects_roots(configured=config.claude_config_dirs)


def build(config: Config, state_dir: Path) -> Ledger:
    settings = config.sentinel("token-ledger")
    return Ledger(
        store=Store(state_dir / DATABASE_FILE),
        prices=PriceBook.load(settings["pricing_file"], settings["prices"]),
        roots=roots_of(config),
        session_ttl=settings["session_ttl"],
        max_projects=settings["max_projects"],
        max_models=settings["max_models"],
        max_sessions=settings["max_sessions"],
        timebox_minutes=settings["timebox_minutes"],
        project_timebox=settings["project_timebox_minutes"],
    )


def warn_missing_roots(config: Config, roots: list[Path]) -> None:
    """A transcript root that does not exist is said at the start (and counted as a metric):
    a mistyped CLAUDE_CONFIG_DIR must not look like a quiet day. Of Claude Code's two default
    folders one is usually absent; only both being absent is worth a line."""
    missing = [root for root in roots if not root.is_dir()]
    if not missing:
        return
    chosen = config.claude_config_dirs is not None
    if chosen or os.environ.get("CLAUDE_CONFIG_DIR", "").strip():
        for root in missing:
            log.warning("transcript root %s does not exist (yet); following it if it appears", root)
    elif len(missing) == len(roots):
        log.warning(
            "no Claude Code transcripts yet (%s do not exist); following them when they appear",
            " and ".join(str(root) for root in roots),
        )


def _drain(ledger: Ledger, keys: list[str], stopping: Callable[[], bool]) -> tuple[bool, list[str]]:
    """Read the given files one slice each in turn, for up to DRAIN_SLICE seconds; whether
    anything was read, and the files left with unread bytes (read next cycle, after the new
    events: a huge file cannot keep an append elsewhere waiting)."""
    changed = False
    todo = list(dict.fromkeys(keys))
    deadline = time.monotonic() + DRAIN_SLICE
    while todo and not stopping():
        left = []
        for key in todo:
            if ledger.step(key):
                changed = True
                if ledger.has_unread(key):
                    left.append(key)
        todo = left
        if time.monotonic() >= deadline:
            break
    ledger.flush()
    return changed, todo


class TokenLedger:
    """The token ledger's work: the backfill, then the live cycles (see the module doc)."""

    def __init__(self, context: Context):
        settings = context.settings
        self.config, self.state_dir = context.config, context.state_dir
        self.roots = roots_of(context.config)
        log.info("reading transcripts under %s", ", ".join(str(r) for r in self.roots))
        warn_missing_roots(context.config, self.roots)
        scanner.warn_if_missing(log)
        self.store_full = StoreFull(log, f"ledger database in {context.state_dir}")
        self.block_token_limit = settings["block_token_limit"]
        self.plan, self.estimate = settings["plan"], settings["block_limit_estimate"]
        self.ledger: Ledger | None = None  # None while a full disk keeps it from opening
        self.windows: Windows | None = None
        self._open()
        self.once = context.once
        self.stopping = context.stopping
        self.interval = settings["interval"]
        self.reconcile_every = settings["reconcile_interval"]
        self.progress_every = settings["progress_interval"]
        self.workers = settings["workers"] or min(2, os.cpu_count() or 1)
        self.counters = CounterText()
        self.handler = _Events(context.wake)
        self.watch: _Watch | None = None
        self.reading: Generator[int] | None = None  # the backfill, while it runs
        self.progress: _Progress | None = None
        self.gc_threshold = gc.get_threshold()  # restored when the backfill ends
        self.next_partial = -math.inf  # partial totals after the first chunk already
        self.last_scan = -math.inf
        self.left: list[str] = []  # files a live cycle's time slice left unfinished

    def _open(self) -> float | None:
        """Open the database; when the disk is full, seconds until the next try."""
        try:
            ledger = build(self.config, self.state_dir)
            try:
                windows = Windows(
                    ledger, self.state_dir, self.block_token_limit,
                    plan=self.plan, estimate=self.estimate,
                )  # fmt: skip
            except BaseException:
                ledger.store.close()  # the next try must find the lock free
                raise
            self.ledger, self.windows = ledger, windows
        except StateInUse as err:
            raise SentinelError(str(err)) from err
        except Exception as err:
            if not is_full(err):
                raise
            return self.store_full.failed(err)
        return None

    def cycle(self, due: bool = True) -> Outcome:
        if self.ledger is None:
            retry_in = self._open()
            if retry_in is not None:
                return Outcome(again_in=retry_in)
        ledger = self.ledger
        assert ledger is not None
        commits = ledger.commits
        try:
            outcome = self._backfill(ledger) if self.watch is None else self._follow(ledger, due)
        except BaseException as err:
            ledger.discard()  # the batch is read again: never half-counted
            if self.reading is not None:
                self.reading.close()
                self.reading = None
            if not is_full(err):
                raise
            return Outcome(again_in=self.store_full.failed(err))
        if self.store_full.full and ledger.commits > commits:
            self.store_full.committed()
        return outcome

    def _backfill(self, ledger: Ledger) -> Outcome:
        """Read until partial totals are due (after the first chunk, then every second; all
        of it with --once), then let the loop publish. No thread may exist before the parse
        workers are forked; the watch starts after the backfill."""
        if self.reading is None:
            if self.progress is None:  # the backfill's first cycle (workers inherit this)
                self.gc_threshold = gc.get_threshold()
                gc.set_threshold(BACKFILL_GC_THRESHOLD, *self.gc_threshold[1:])
            if (
                self.progress is None
                and not ledger.positions
                and claude.has_transcripts(ledger.roots)
            ):
                # A cold backfill (nothing read yet): the workers are forked before the
                # scan, so that they do not each hold a copy of its table of files, and the
                # blocks are computed once it is done (or published), not per batch.
                ledger.start_workers(self.workers)
                assert self.windows is not None
                self.windows.blocks.recompute()
            ledger.scan()
            if self.progress is None:  # a retry after a full disk goes on with the same one
                self.progress = _Progress(ledger, self.progress_every)
            self.reading = ledger.read_all(self.workers)
        assert self.progress is not None
        for _ in self.reading:
            self.progress.tick()
            now = time.monotonic()
            if self.stopping() or (not self.once and now >= self.next_partial):
                self.next_partial = now + BACKFILL_PUBLISH_EVERY
                ledger.flush()
                return Outcome(again_in=0.0)
        self.reading = None
        ledger.flush()
        ledger.end_backfill()  # a failure: the next cycle reads nothing new and tries again
        gc.set_threshold(*self.gc_threshold)
        self.progress.tick(force=self.progress.active)
        if not self.once:
            # What was written during the backfill is found by the scan the live phase
            # starts with.
            self.watch = _Watch(ledger.roots, self.handler, self.interval)
            self.watch.refresh()
        return Outcome(again_in=0.0)

    def _follow(self, ledger: Ledger, due: bool) -> Outcome:
        assert self.watch is not None
        keys = [path for path in self.handler.take() if ledger.track(Path(path)) is not None]
        keys += self.left  # what the last cycle's time slice did not finish
        if self.store_full.full:  # a retry: everything the failed commits dropped
            keys += ledger.pending()
        changed, left = _drain(ledger, keys, self.stopping)
        changed = changed or ledger.take_noticed()
        now = time.monotonic()
        if now - self.last_scan >= self.reconcile_every:
            ledger.scan()
            self.watch.refresh()
            read, left = _drain(ledger, [*left, *ledger.pending()], self.stopping)
            changed = read or changed
            self.last_scan = now
        elif due:
            if self.watch.refresh():  # a root appeared (e.g. Claude Code's first run)
                self.last_scan = -math.inf
                self.left = left
                return Outcome(changed=changed, again_in=0.0)
            if self.watch.polled:
                ledger.scan(self.watch.polled)
                read, left = _drain(ledger, [*left, *ledger.pending()], self.stopping)
                changed = read or changed
        self.left = left
        if left:
            return Outcome(changed=changed, again_in=0.0)
        return Outcome(changed=changed, again_in=self.reconcile_every - (now - self.last_scan))

    def families(self) -> Iterator[Metric | str]:
        full = GaugeMetricFamily(
            "agentwatch_ledger_store_full",
            "1 while the ledger's database cannot be written for lack of space (retried).",
            value=1 if self.store_full.full else 0,
        )
        if self.ledger is None:
            return iter([full, scanner.family()])
        polled = len(self.watch.polled) if self.watch is not None else 0
        size = self.ledger.store.size_bytes()
        assert self.windows is not None
        return chain(
            families(self.ledger, size, self.counters, polled),
            # During a backfill, blocks it shuffles are computed again only now and then.
            self.windows.families(settle=self.reading is None),
            [self.ledger.commit_seconds.family(), full, scanner.family()],
        )

    def close(self) -> None:
        if self.reading is not None:
            self.reading.close()
        if self.watch is not None:
            self.watch.stop()
        if self.ledger is not None:
            with contextlib.suppress(Exception):  # a batch being written: kept, or dropped whole
                self.ledger.finish_commit()
            self.ledger.stop_workers()
            self.ledger.store.close()
