"""`agentwatch sentinel token-ledger`: follow transcripts, keep the ledger, write the spool file.

Wakes on inotify events (watchdog) and on a reconcile timer that catches whatever the events
missed; during a large first backfill it logs its progress and keeps publishing partial
totals, newest files first, so it is usable while it catches up.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from pathlib import Path

from watchdog.events import (
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from agentwatch.exporter.config import Config
from agentwatch.exporter.runtime import Runner
from agentwatch.sentinels.token_ledger import discovery
from agentwatch.sentinels.token_ledger.ledger import Ledger
from agentwatch.sentinels.token_ledger.metrics import CounterText, families
from agentwatch.sentinels.token_ledger.pricing import PriceBook
from agentwatch.sentinels.token_ledger.store import StateInUse, Store

NAME = "token-ledger"
log = logging.getLogger("agentwatch.token-ledger")
IDLE_POLL = 30.0
PUBLISH_GAP = 0.025  # at most 40 spool writes a second while lines stream in
BACKFILL_PUBLISH_EVERY = 1.0


# Only these reach us (the kernel is asked for nothing else): our own reads would otherwise
# wake the loop with open/close events.
WATCHED_EVENTS: list[type[FileSystemEvent]] = [FileCreatedEvent, FileModifiedEvent, FileMovedEvent]


class _Events(FileSystemEventHandler):
    """Collects the paths of changed transcripts and wakes the loop.

    Only events that can mean new bytes count: our own reads cause "opened" and
    "closed_no_write" events, which must never wake us (that would be a busy loop).
    """

    WANTED = frozenset(kind.event_type for kind in WATCHED_EVENTS)

    def __init__(self, runner: Runner):
        self.runner = runner
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
                self.runner.wake()

    def take(self) -> list[str]:
        with self.lock:
            taken, self.dirty = list(self.dirty), set()
        return taken


class _Watch:
    """The inotify side: watches each transcript root that exists, added as roots appear."""

    def __init__(self, roots: list[Path], handler: _Events):
        self.roots = roots
        self.handler = handler
        # Events wake the observer at once; the timeout only paces its idle polling (the
        # default 1 s would wake two threads every second for nothing).
        self.observer = Observer(timeout=IDLE_POLL)
        self.watched: set[Path] = set()
        self.observer.start()

    def refresh(self) -> bool:
        """Watch roots that exist now; True when one was added (it may already hold files)."""
        added = False
        for root in self.roots:
            if root not in self.watched and root.is_dir():
                added = True
                try:
                    self.observer.schedule(
                        self.handler, str(root), recursive=True, event_filter=WATCHED_EVENTS
                    )
                    self.watched.add(root)
                except OSError as err:  # e.g. inotify watch limit: the reconcile scan still works
                    log.warning("cannot watch %s (%s); relying on the periodic scan", root, err)
                    self.watched.add(root)
        return added

    def stop(self) -> None:
        self.observer.stop()
        self.observer.join(timeout=1)  # daemon threads: no need to wait out their poll


class _Progress:
    """Human progress lines during a large backfill: done, rate, time left."""

    def __init__(self, ledger: Ledger, every: float):
        self.ledger = ledger
        self.every = every
        self.started = time.monotonic()
        self.total = ledger.unread_bytes()
        self.total_files = len(ledger.pending())
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
        files_left = len(self.ledger.pending())
        eta = f"about {left / rate:.0f} s left" if rate > 0 and left else "done"
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


def build(config: Config, state_dir: Path) -> Ledger:
    settings = config.sentinel(NAME)
    source = (settings["pricing_file"], settings["prices"])
    roots = discovery.projects_roots(configured=settings["claude_config_dir"])
    return Ledger(
        store=Store(state_dir / "token-ledger.sqlite"),
        prices=PriceBook.load(*source),
        roots=roots,
        session_ttl=settings["session_ttl"],
        pricing_source=source,
    )


def run(config: Config, spool_dir: Path, state_dir: Path, once: bool) -> int:
    settings = config.sentinel(NAME)
    try:
        ledger = build(config, state_dir)
    except StateInUse as err:
        log.error("%s", err)
        return 2
    log.info("reading transcripts under %s", ", ".join(str(root) for root in ledger.roots))
    counters = CounterText()
    runner = Runner(
        NAME,
        settings["interval"],
        spool_dir,
        lambda: families(ledger, ledger.store.size_bytes(), counters),
    )
    runner.stop_on_signals()
    handler = _Events(runner)
    watch = None
    workers = settings["workers"] or min(2, os.cpu_count() or 1)
    try:
        # No threads yet, so parse workers can be forked safely. Whatever is written during
        # the backfill is found by the scan that starts the live phase.
        _backfill(ledger, runner, workers, settings["progress_interval"])
        if not once:
            watch = _Watch(ledger.roots, handler)
            watch.refresh()
            _follow(ledger, runner, handler, watch, settings["reconcile_interval"])
    finally:
        if watch is not None:
            watch.stop()
        ledger.store.close()
    return 0


def _backfill(ledger: Ledger, runner: Runner, workers: int, progress_every: float) -> None:
    """Read everything not yet read, publishing partial totals as it goes."""
    ledger.scan()
    progress = _Progress(ledger, progress_every)
    last_publish = -math.inf  # publish after the first chunk: partial totals are there at once
    for _ in ledger.read_all(workers):
        progress.tick()
        if runner.stopping:
            break
        if time.monotonic() - last_publish >= BACKFILL_PUBLISH_EVERY:
            ledger.flush()
            runner.publish()
            last_publish = time.monotonic()
    ledger.flush()
    runner.publish()
    progress.tick(force=progress.active)


def _drain(ledger: Ledger, keys: list[str], runner: Runner) -> bool:
    """Read the given files to their end; True when anything was read."""
    changed = False
    for key in keys:
        while not runner.stopping and ledger.step(key):
            changed = True
            if not ledger.has_unread(key):
                break
    ledger.flush()
    return changed


def _follow(
    ledger: Ledger, runner: Runner, handler: _Events, watch: _Watch, reconcile_every: float
) -> None:
    """The live phase: wake on events, publish promptly, write a heartbeat every interval,
    and reconcile with a full scan (which catches whatever the events missed) less often."""
    last_scan = -math.inf  # scan at once: files may have grown while the watch was not yet on
    last_publish = time.monotonic()
    unpublished = False
    while not runner.stopping:
        keys = [path for path in handler.take() if ledger.track(Path(path)) is not None]
        unpublished = _drain(ledger, keys, runner) or unpublished
        now = time.monotonic()
        if now - last_scan >= reconcile_every:
            ledger.scan()
            watch.refresh()
            unpublished = _drain(ledger, ledger.pending(), runner) or unpublished
            last_scan = now
        if now - last_publish >= runner.interval:
            unpublished = True  # a heartbeat: the exporter judges staleness by it
            if watch.refresh():  # a root created since (e.g. the first Claude Code run)
                last_scan = -math.inf
                continue
        if unpublished and now - last_publish >= PUBLISH_GAP:
            runner.publish()
            last_publish, unpublished = now, False
        timeout = min(runner.interval - (now - last_publish), reconcile_every - (now - last_scan))
        if unpublished:
            timeout = min(timeout, PUBLISH_GAP - (now - last_publish))
        runner.wait(max(timeout, 0.0))
    runner.publish()
