"""`agentwatch sentinel token-ledger`: follow transcripts, keep the ledger, write the spool file.

Wakes on inotify events (watchdog) and on a reconcile timer that catches whatever the events
missed; during a large first backfill it logs its progress and keeps publishing partial
totals, newest files first, so it is usable while it catches up.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from pathlib import Path

from agentwatch.exporter.config import Config
from agentwatch.exporter.runtime import Runner
from agentwatch.sentinels.token_ledger import discovery
from agentwatch.sentinels.token_ledger.ledger import Ledger
from agentwatch.sentinels.token_ledger.metrics import families
from agentwatch.sentinels.token_ledger.pricing import PriceBook
from agentwatch.sentinels.token_ledger.store import Store
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

NAME = "token-ledger"
log = logging.getLogger("agentwatch.token-ledger")
PUBLISH_GAP = 0.2  # at most five spool writes a second while lines stream in
BACKFILL_PUBLISH_EVERY = 1.0


class _Events(FileSystemEventHandler):
    """Collects the paths of changed transcripts and wakes the loop."""

    def __init__(self, runner: Runner):
        self.runner = runner
        self.dirty: set[str] = set()
        self.lock = threading.Lock()

    def on_any_event(self, event: FileSystemEvent) -> None:
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
        self.observer = Observer()
        self.watched: set[Path] = set()
        self.observer.start()

    def refresh(self) -> None:
        for root in self.roots:
            if root not in self.watched and root.is_dir():
                try:
                    self.observer.schedule(self.handler, str(root), recursive=True)
                    self.watched.add(root)
                except OSError as err:  # e.g. inotify watch limit: the reconcile scan still works
                    log.warning("cannot watch %s (%s); relying on the periodic scan", root, err)
                    self.watched.add(root)

    def stop(self) -> None:
        self.observer.stop()
        self.observer.join(timeout=5)


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
    prices = PriceBook.load(settings["pricing_file"], settings["prices"])
    roots = discovery.projects_roots(configured=settings["claude_config_dir"])
    store = Store(state_dir / "token-ledger.sqlite")
    return Ledger(store=store, prices=prices, roots=roots, session_ttl=settings["session_ttl"])


def run(config: Config, spool_dir: Path, state_dir: Path, once: bool) -> int:
    settings = config.sentinel(NAME)
    ledger = build(config, state_dir)
    log.info("reading transcripts under %s", ", ".join(str(root) for root in ledger.roots))
    runner = Runner(
        NAME, settings["interval"], spool_dir, lambda: families(ledger, ledger.store.size_bytes())
    )
    runner.stop_on_signals()
    handler = _Events(runner)
    watch = None if once else _Watch(ledger.roots, handler)
    try:
        _loop(ledger, runner, handler, watch, once, settings["progress_interval"])
    finally:
        if watch is not None:
            watch.stop()
        ledger.store.close()
    return 0


def _loop(
    ledger: Ledger,
    runner: Runner,
    handler: _Events,
    watch: _Watch | None,
    once: bool,
    progress_every: float,
) -> None:
    if watch is not None:
        watch.refresh()  # watch before scanning, so nothing written meanwhile is missed
    ledger.scan()
    progress = _Progress(ledger, progress_every)
    queue: deque[str] = deque(ledger.pending())
    last_scan = time.monotonic()
    last_publish = 0.0
    changed = True
    while not runner.stopping:
        urgent = handler.take()
        for path in urgent:
            if ledger.track(Path(path)) is not None:
                queue.appendleft(path)
        if queue:
            key = queue.popleft()
            result = ledger.step(key)
            if result.bytes_read and ledger.has_unread(key):
                queue.appendleft(key)  # budget used up: continue this file next
            changed = changed or bool(result.bytes_read)
            progress.tick()
            if queue and time.monotonic() - last_publish < BACKFILL_PUBLISH_EVERY:
                continue
        now = time.monotonic()
        if changed and (queue or now - last_publish >= PUBLISH_GAP or once):
            runner.publish()
            last_publish, changed = time.monotonic(), False
        if queue:
            continue
        progress.tick(force=progress.active)
        if once:
            return
        if now - last_scan >= runner.interval:
            ledger.scan()
            if watch is not None:
                watch.refresh()
            queue.extend(key for key in ledger.pending() if key not in queue)
            last_scan = now
            runner.publish()  # also a heartbeat: the exporter judges staleness by it
            last_publish, changed = time.monotonic(), False
            continue
        timeout = runner.interval - (now - last_scan)
        if changed:
            timeout = min(timeout, PUBLISH_GAP - (now - last_publish))
        runner.wait(max(timeout, 0.0))
    runner.publish()
