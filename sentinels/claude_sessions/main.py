"""The cycles of `agentwatch sentinel claude-sessions`: follow the hook-event spool and the
statusline snapshots, keep the session table, save it with the spool position.

inotify (watchdog) on the spool folder wakes the loop as soon as a hook appends or a
statusline is replaced; without inotify the heartbeat (`interval`) polls, which is said once
in the log. The state file is saved at most every SAVE_GAP seconds and at the end: a restart
reads again from the saved position with the saved counts, so a line is never counted twice
or lost, whatever moment the process dies at.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator

from prometheus_client.metrics_core import Metric
from watchdog.events import (
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from agentwatch.core import claude_events, paths
from agentwatch.core.log import FailureGate
from agentwatch.core.loop import Outcome
from agentwatch.sentinels.claude_sessions.follow import Follower, account
from agentwatch.sentinels.claude_sessions.metrics import families, writer_failures
from agentwatch.sentinels.claude_sessions.records import Rejected, parse
from agentwatch.sentinels.claude_sessions.sessions import Table
from agentwatch.sentinels.claude_sessions.snapshots import Snapshots
from agentwatch.sentinels.claude_sessions.store import Store
from agentwatch.sentinels.contract import Context

log = logging.getLogger("agentwatch.claude-sessions")
SAVE_GAP = 1.0
IDLE_POLL = 30.0
WRITER_REASONS = {  # what each counters.json reason means, for the one warning it gets
    claude_events.SPOOL_REFUSED: "events.jsonl is not a regular file (a FIFO, symlink or "
    "device put there): refused without waiting, events lost until it is removed",
    claude_events.LOCK_REFUSED: "a spool lock file (.counters.lock, .rotate.lock) is not a "
    "regular file: refused without waiting; remove it",
    claude_events.STATUS_REFUSED: "a statusline snapshot's place is not a regular file",
    claude_events.TOO_DEEP: "a payload nested past the JSON parser's depth was rejected",
    claude_events.OUT_OF_RANGE: "a statusline number (cost, percentage, time) past its "
    "bound was not exported",
    claude_events.SPOOL_UNWRITABLE: "events.jsonl could not be appended (full disk, rights)",
}
WATCHED_EVENTS: list[type[FileSystemEvent]] = [FileCreatedEvent, FileModifiedEvent, FileMovedEvent]


class _Wake(FileSystemEventHandler):
    """Any write in the spool folder wakes the loop (our own reads never do: opens and
    closes are not asked for)."""

    def __init__(self, wake: Callable[[], None]):
        self.wake = wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        if not event.is_directory:
            self.wake()


def watch(folder: str, wake: Callable[[], None]) -> BaseObserver | None:
    """An inotify watch on the spool folder, or None (then the heartbeat polls)."""
    try:
        observer = Observer(timeout=IDLE_POLL)
        observer.schedule(_Wake(wake), folder, recursive=True, event_filter=WATCHED_EVENTS)
        observer.start()
    except OSError as err:
        log.warning("cannot watch %s with inotify (%s): polling it every heartbeat", folder, err)
        return None
    return observer


class ClaudeSessions:
    """The claude-sessions sentinel's work (see the module doc)."""

    def __init__(self, context: Context, clock: Callable[[], float] = time.time):
        settings = context.settings
        self.clock = clock
        self.folder = claude_events.events_dir(context.state_dir)
        paths.ensure_dir(self.folder)  # the writers may not have run yet: watch it anyway
        self.table = Table(
            settings["max_sessions"],
            settings["session_ttl"],
            settings["max_tools"],
            settings["max_projects"],
        )
        self.counts: Counter[str] = Counter()
        self.store = Store(context.state_dir)
        self.follower = Follower(self.folder, self.store.load(self.table, self.counts))
        self.snapshots = Snapshots(self.folder)
        self.save_gate = FailureGate(log, f"saving {self.store.path}")
        self.read_gate = FailureGate(log, f"reading {self.folder}")
        self.writers: dict[str, int] = {}  # counters.json as last read
        self.dirty = False
        self.saved_at = -SAVE_GAP
        self.observer = None if context.once else watch(str(self.folder), context.wake)
        log.info("following Claude Code hook events in %s", self.folder)

    def cycle(self, due: bool = True) -> Outcome:
        now = self.clock()
        try:
            lines, more = self.follower.read()
        except OSError as err:
            self.read_gate.failed(err)
            lines, more = [], False
        else:
            if self.follower.refused is not None:
                self.read_gate.failed(self.follower.refused)
            else:
                self.read_gate.succeeded()
        for line in lines:
            try:
                event = parse(line)
            except Rejected as err:
                self.counts[f"rejected.{err.reason}"] += 1
                continue
            self.table.apply(event, now)
            self.counts["read"] += 1
        counted = self._take_follower_counts()
        lost = self._account()
        counted = counted or lost > 0
        self._writer_news()
        before = len(self.table.sessions)
        self.table.expire(now)
        changed = bool(lines) or counted or len(self.table.sessions) != before
        self.dirty = self.dirty or changed
        changed = self.snapshots.refresh() or changed
        self._save(force=not more and due)
        if more:
            return Outcome(changed=changed, again_in=0.0)
        # a save put off by the gap is made soon, not only at the next heartbeat
        return Outcome(changed=changed, again_in=SAVE_GAP if self.dirty else None)

    def _take_follower_counts(self) -> bool:
        """Move the follower's counts into ours (saved with the position); whether any."""
        follower = self.follower
        found = follower.lost + follower.truncated + follower.too_long
        self.counts["lost"] += follower.lost
        self.counts["truncated"] += follower.truncated
        self.counts["rejected.too_long"] += follower.too_long
        follower.lost = follower.truncated = follower.too_long = 0
        return found > 0

    def _account(self) -> int:
        """Events deleted by rotation before they were read (dropped.json), counted exactly;
        one warning when there are any."""
        try:
            lost = account(self.folder, self.follower.position)
        except OSError as err:
            self.read_gate.failed(err)
            return 0
        if lost:
            self.counts["lost_events.rotated"] += lost
            log.warning(
                "%d hook events were rotated out of %s before they were read (the spool keeps "
                "%d files of %d MiB): counted in agentwatch_claude_events_lost_total",
                lost,
                self.folder,
                claude_events.KEEP_ROTATED + 1,
                claude_events.ROTATE_BYTES >> 20,
            )
        return lost

    def _writer_news(self) -> None:
        """counters.json again; one warning per reason that grew (the writers, which run
        inside Claude Code, cannot log; this is where their refusals are said)."""
        found = writer_failures(self.folder)
        for reason, value in sorted(found.items()):
            grew = value - self.writers.get(reason, 0)
            if grew > 0:
                log.warning(
                    "Claude Code's hook/statusline writers counted %d x %s in %s: %s",
                    grew,
                    reason,
                    self.folder / claude_events.COUNTERS,
                    WRITER_REASONS.get(reason, "see docs/metrics.md"),
                )
        self.writers = found

    def _save(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self.dirty or (not force and now - self.saved_at < SAVE_GAP):
            return
        try:
            self.store.save(self.table, self.counts, self.follower.position)
        except OSError as err:
            self.save_gate.failed(err)
            return
        self.save_gate.succeeded()
        self.dirty = False
        self.saved_at = now

    def families(self) -> Iterator[Metric]:
        return families(
            self.table,
            self.snapshots,
            self.counts,
            self.writers,
            self.store.rejected,
            self.read_gate.failing,
        )

    def close(self) -> None:
        if self.observer is not None:
            self.observer.stop()
            self.observer.join(timeout=1)
        self._save(force=True)
