"""The alerts `agentwatch mcp` answers from: Alertmanager's list, kept briefly.

An agent's question must not wait on Alertmanager (10-20 ms for a few hundred alerts, far more
on a loaded machine), and the list changes only when Prometheus evaluates its rules (every
15 s by default). So the server reads it once at start, answers from the last list while it is
younger than MAX_AGE, and has a list older than FRESH read again in the background; only with
no usable list does a question wait for a read. Each answer says how old its list is. When
every Alertmanager is down, the list ages out and the question becomes an error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from agentwatch.controller.alerts import AlertReader, Snapshot

FRESH = 5.0  # seconds: an older list is read again in the background
MAX_AGE = 30.0  # seconds: an older list is not used (two evaluation intervals)


class AlertCache:
    """The last snapshot every Alertmanager gave, and when it was read."""

    def __init__(self, reader: AlertReader, clock: Callable[[], float] = time.monotonic):
        self.reader = reader
        self.clock = clock
        self.lock = threading.Lock()
        self.snapshot: Snapshot | None = None
        self.read_at = 0.0
        self.refreshing = False

    def _refresh(self) -> Snapshot:
        snapshot = self.reader.read()
        with self.lock:
            if snapshot.alerts is not None or self.clock() - self.read_at > MAX_AGE:
                self.snapshot, self.read_at = snapshot, self.clock()
            self.refreshing = False
        return snapshot

    def _in_background(self) -> None:
        with self.lock:
            if self.refreshing:
                return
            self.refreshing = True
        threading.Thread(target=self._refresh, daemon=True, name="alerts-refresh").start()

    def start(self) -> None:
        """Read the list now, in the background: the first question finds it ready."""
        self._in_background()

    def get(self) -> tuple[Snapshot, float]:
        """(a usable snapshot, its age in seconds); a read is waited for only when none is."""
        with self.lock:
            snapshot, age = self.snapshot, self.clock() - self.read_at
        if snapshot is not None and snapshot.alerts is not None and age <= MAX_AGE:
            if age > FRESH:
                self._in_background()
            return snapshot, age
        return self._refresh(), 0.0
