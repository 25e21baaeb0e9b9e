"""The shared life cycle of a sentinel process: wake on events or timers, publish, stop cleanly.

Under systemd (Type=notify, WatchdogSec=) the Runner also tells systemd the loop is alive: READY=1
after the first successful publish, WATCHDOG=1 from publish() and wait() — only on the loop's
own thread, so a loop stuck in its work stops pinging and systemd restarts the process.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from prometheus_client.metrics_core import Metric

from agentwatch.exporter import spool
from agentwatch.exporter.notify import Notifier

log = logging.getLogger("agentwatch.runtime")


class Runner:
    """Owns the wake-up event, the stop flag and the spool write of one sentinel."""

    def __init__(
        self,
        name: str,
        interval: float,
        spool_dir: Path,
        families: Callable[[], Iterable[Metric | str]],
        notifier: Notifier | None = None,
    ):
        self.name = name
        self.interval = interval
        self.spool_dir = spool_dir
        self.families = families
        self.notifier = Notifier() if notifier is None else notifier
        self._loop_thread = threading.get_ident()  # the loop runs where the Runner is built
        self._wake = threading.Event()
        self._stop = threading.Event()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def wake(self) -> None:
        """Called from other threads (e.g. file-system events) to cut the wait short."""
        self._wake.set()

    def stop(self) -> None:
        if not self._stop.is_set():
            self.notifier.stopping()
        self._stop.set()
        self._wake.set()

    def wait(self, timeout: float) -> bool:
        """Sleep until woken, stopped or timed out; True when something woke us.

        With a systemd watchdog the sleep is cut into slices of at most half its period, and
        the loop's thread pings between them: an idle loop is a live loop."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            self._alive()
            remaining = deadline - time.monotonic()
            ping_in = self.notifier.next_ping_in() if self._on_loop_thread() else None
            if ping_in is None or ping_in >= remaining:
                woke = self._wake.wait(max(remaining, 0.0))
                break
            if self._wake.wait(ping_in):
                woke = True
                break
        self._wake.clear()
        self._alive()
        return woke

    def publish(self) -> None:
        spool.write(self.spool_dir, self.name, self.interval, self.families)
        self.heartbeat()

    def heartbeat(self) -> None:
        """The loop did its work: READY=1 the first time, then WATCHDOG=1 when one is due.
        publish() calls it; a loop whose real work is not the spool write may call it too."""
        if self._on_loop_thread():
            self.notifier.ready(f"{self.name}: running")
        self._alive()

    def _on_loop_thread(self) -> bool:
        return threading.get_ident() == self._loop_thread

    def _alive(self) -> None:
        """A watchdog ping, only ever from the loop: a helper thread must not vouch for it."""
        if self._on_loop_thread():
            self.notifier.alive()

    def stop_on_signals(self) -> None:
        """SIGTERM/SIGINT end the loop after the current step, so state stays consistent."""

        def handle(signum: int, _frame: object) -> None:
            log.info("%s: received %s, stopping", self.name, signal.Signals(signum).name)
            self.stop()

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)


PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM, parent: int | None = None) -> None:
    """Ask the kernel to send `sig` to this process when its parent dies, however it dies
    (even SIGKILL): helpers of a component must never outlive it. Linux only."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
    if parent is not None and os.getppid() != parent:  # the parent died before we asked
        os.kill(os.getpid(), sig)
