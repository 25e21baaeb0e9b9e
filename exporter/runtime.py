"""The shared life cycle of a sentinel process: wake on events or timers, publish, stop cleanly."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from prometheus_client.metrics_core import Metric

from agentwatch.exporter import spool

log = logging.getLogger("agentwatch.runtime")


class Runner:
    """Owns the wake-up event, the stop flag and the spool write of one sentinel."""

    def __init__(
        self,
        name: str,
        interval: float,
        spool_dir: Path,
        families: Callable[[], Iterable[Metric | str]],
    ):
        self.name = name
        self.interval = interval
        self.spool_dir = spool_dir
        self.families = families
        self._wake = threading.Event()
        self._stop = threading.Event()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def wake(self) -> None:
        """Called from other threads (e.g. file-system events) to cut the wait short."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def wait(self, timeout: float) -> bool:
        """Sleep until woken, stopped or timed out; True when something woke us."""
        woke = self._wake.wait(timeout)
        self._wake.clear()
        return woke

    def publish(self) -> None:
        spool.write(self.spool_dir, self.name, self.interval, self.families)

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
