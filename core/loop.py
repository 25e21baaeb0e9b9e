"""The one loop every sentinel runs (and the controller too): cycle, publish, wait, repeat.

A sentinel supplies the work — one `cycle()` and its metric `families()` — and the loop owns
everything around it, the same way for all of them:
- pacing without drift: a cycle is due every `interval` on a fixed schedule (the time a cycle
  takes is not added to the wait; a missed slot is skipped, not made up in a burst);
- wake-ups: another thread (inotify events) calls `wake()` for an early cycle, and a cycle may
  ask for the next one sooner (`Outcome.again_in`, e.g. while a backfill runs);
- the publish gate: the spool file is rewritten after every due cycle (the heartbeat the
  exporter judges staleness by) and after any cycle that changed something, but at most once
  per `publish_gap`, so a burst of events costs a bounded number of rewrites;
- failures: a cycle that raises, or a spool write that fails, is logged once, reminded every
  Nth time and once on recovery (FailureGate), counted as a metric, and the loop goes on;
- SIGTERM/SIGINT end the loop after the current cycle, with a last publish;
- systemd: READY=1 after the first cycle, WATCHDOG=1 from the loop's own thread only, between
  slices of every wait, so a loop stuck in its work stops pinging and is restarted.
"""

from __future__ import annotations

import gc
import logging
import math
import signal
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from prometheus_client.metrics_core import CounterMetricFamily, Metric

from agentwatch.core import spool
from agentwatch.core.log import FailureGate
from agentwatch.core.notify import Notifier

log = logging.getLogger("agentwatch.loop")

PUBLISH_GAP = 0.025  # at most 40 spool rewrites a second
RETRY_GAP = 1.0  # after a failed spool write, try again no sooner than this
CYCLE_FAILURES = "agentwatch_sentinel_cycle_failures"


@dataclass(frozen=True)
class Outcome:
    """What a cycle tells the loop: whether its metrics changed, and when to run again."""

    changed: bool = True
    again_in: float | None = None  # seconds until the next cycle at the latest (0: at once)


class Work(Protocol):
    """One sentinel's part of the loop."""

    def cycle(self, due: bool) -> Outcome | None:
        """Do one unit of work; None means Outcome() (changed, next cycle when due).
        `due`: the schedule's slot came (else the loop was woken or the cycle asked for)."""

    def families(self) -> Iterable[Metric | str]:
        """The metric families to publish now (a `str` is exposition text rendered earlier)."""

    def close(self) -> None:
        """Release what the work holds (threads, databases); called once at the end."""


class Loop:
    """Owns the wake-up event, the stop flag, the schedule and the spool write of one loop."""

    def __init__(
        self,
        name: str,
        interval: float,
        spool_dir: Path,
        notifier: Notifier | None = None,
        publish_gap: float = PUBLISH_GAP,
    ):
        self.name = name
        self.interval = interval
        self.spool_dir = spool_dir
        self.notifier = Notifier() if notifier is None else notifier
        self.publish_gap = publish_gap
        self.cycle_failures = 0
        self._loop_thread = threading.get_ident()  # the loop runs where it is built
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._cycle_gate = FailureGate(log, f"{name}: cycle")
        self._publish_gate = FailureGate(log, f"{name}: spool file in {spool_dir}")

    # ---- control, from any thread
    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def wake(self) -> None:
        """Cut the current wait short: the next cycle runs at once."""
        self._wake.set()

    def stop(self) -> None:
        if not self._stop.is_set():
            self.notifier.stopping()
        self._stop.set()
        self._wake.set()

    def stop_on_signals(self) -> None:
        """SIGTERM/SIGINT end the loop after the current cycle, so state stays consistent."""

        def handle(signum: int, _frame: object) -> None:
            log.info("%s: received %s, stopping", self.name, signal.Signals(signum).name)
            self.stop()

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)

    # ---- the loop
    def run(self, work: Work, once: bool = False) -> int:
        """Cycle until stopped (or once); always 0: failures are logged and counted, and
        the loop goes on."""
        gc.enable()  # off while the command started (cli/entry.py): the work begins here
        next_due = time.monotonic()
        publish_at = -math.inf  # the publish gate: the earliest time of the next spool write
        pending = False
        try:
            while True:
                due = time.monotonic() >= next_due
                outcome = self._cycle(work, due)
                pending = pending or outcome.changed or due
                now = time.monotonic()
                while next_due <= now:  # the fixed schedule: skip missed slots
                    next_due += self.interval
                if once or self.stopping:
                    self.publish(work)
                    return 0
                wake_at = next_due
                if outcome.again_in is not None:
                    wake_at = min(wake_at, now + outcome.again_in)
                pending, publish_at = self._idle(work, wake_at, pending, publish_at)
                if self.stopping:
                    self.publish(work)
                    return 0
        finally:
            work.close()

    def _idle(
        self, work: Work, wake_at: float, pending: bool, publish_at: float
    ) -> tuple[bool, float]:
        """Publish when the gate allows and wait until `wake_at` or a wake-up; returns whether
        a publish is still pending and when the gate opens next."""
        while not self.stopping:
            now = time.monotonic()
            if pending and now >= publish_at:
                written = self.publish(work)
                pending = not written
                publish_at = now + (self.publish_gap if written else RETRY_GAP)
            if now >= wake_at:
                break
            until = min(wake_at, publish_at) if pending else wake_at
            if self.wait(until - now) and not self.stopping:
                break
        return pending, publish_at

    def _cycle(self, work: Work, due: bool) -> Outcome:
        try:
            outcome = work.cycle(due) or Outcome()
        except Exception as err:  # a bug or a failing input: visible, and the loop goes on
            self.cycle_failures += 1
            log.debug("%s: cycle failed", self.name, exc_info=True)
            self._cycle_gate.failed(f"{type(err).__name__}: {err}")
            return Outcome()
        self._cycle_gate.succeeded()
        return outcome

    def families(self, work: Work) -> Iterable[Metric | str]:
        """The work's families plus the loop's own."""
        yield from work.families()
        failures = CounterMetricFamily(
            CYCLE_FAILURES,
            "Cycles of the sentinel that failed (logged once per episode) since it started.",
            labels=["sentinel"],
        )
        failures.add_metric([self.name], self.cycle_failures)
        yield failures

    def publish(self, work: Work) -> bool:
        """Rewrite the spool file; a failure is gated, never raised. Pings systemd either way:
        the loop is alive, and a full disk is no reason for a restart."""
        try:
            spool.write(self.spool_dir, self.name, self.interval, lambda: self.families(work))
        except OSError as err:
            self._publish_gate.failed(err)
            written = False
        else:
            self._publish_gate.succeeded()
            written = True
        self.heartbeat()
        return written

    def heartbeat(self) -> None:
        """READY=1 the first time, then WATCHDOG=1 when one is due (loop thread only)."""
        if self._on_loop_thread():
            self.notifier.ready(f"{self.name}: running")
        self._alive()

    def wait(self, timeout: float) -> bool:
        """Sleep until woken, stopped or timed out; True when something woke us. With a
        systemd watchdog the sleep is cut into slices of at most half its period, and the
        loop's thread pings between them: an idle loop is a live loop."""
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

    def _on_loop_thread(self) -> bool:
        return threading.get_ident() == self._loop_thread

    def _alive(self) -> None:
        """A watchdog ping, only ever from the loop: a helper thread must not vouch for it."""
        if self._on_loop_thread():
            self.notifier.alive()
