"""Spend per budget period, from the ledger's minute buckets.

The budget guard needs no orchestrator: it compares the ledger's spend since the start of the
current local day, ISO week (Monday 00:00), month, or started run (`agentwatch run-budget
start`, core/run_budget.py) with the configured cap. A bucket counts for a period when it ends
after the period's start, so spend has minute resolution: a run started at 10:00:30 includes
the cost of 10:00:00-10:00:30, and an entry at exactly 00:00:00.000 counts for the day before.

Each period's total is read from the database when its start changes (a new day, a new run)
and otherwise kept up to date from the committed buckets: nothing scans the month per cycle.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path

from agentwatch.core import run_budget
from agentwatch.core.run_budget import period_starts
from agentwatch.sentinels.token_ledger.blocks import BucketDeltas

log = logging.getLogger("agentwatch.token-ledger")

PERIODS = ("day", "week", "month")
__all__ = ["PERIODS", "RunWatch", "SpendTracker", "first_minute_after", "period_starts"]


def first_minute_after(start: float) -> int:
    """Buckets with a minute above this end after `start` (see blocks.minute_of)."""
    return math.floor(start / 60)


class SpendTracker:
    """USD per period; `cost_since(minute)` sums the buckets of later minutes (see Store)."""

    def __init__(self, cost_since: Callable[[int], float]):
        self._cost_since = cost_since
        self.totals: dict[str, tuple[int, float]] = {}  # period -> (after minute, USD)

    def add(self, deltas: BucketDeltas) -> None:
        if not self.totals:
            return
        for values in deltas.values():
            minute, cost = values[0], values[7]
            if not cost:
                continue
            for period, (after, total) in self.totals.items():
                if minute > after:
                    self.totals[period] = (after, total + cost)

    def update(self, starts: dict[str, float]) -> None:
        """Follow the periods' current starts: a period whose start moved is summed again."""
        for period in [p for p in self.totals if p not in starts]:
            del self.totals[period]
        for period, start in starts.items():
            after = first_minute_after(start)
            known = self.totals.get(period)
            if known is None or known[0] != after:
                self.totals[period] = (after, self._cost_since(after))

    def spend(self, period: str) -> float | None:
        found = self.totals.get(period)
        return None if found is None else found[1]


class RunWatch:
    """The started run of `agentwatch run-budget start`; an unusable file is said once (until
    it changes or is fixed) and counts as no run: no spend is attributed to a run then."""

    def __init__(self, state_dir: Path):
        self.state_dir = state_dir
        self._problem: str | None = None

    def started_at(self) -> float | None:
        run = run_budget.read(self.state_dir)
        if run.problem != self._problem:
            if run.problem is not None:
                log.warning(
                    "%s is %s: no run spend is published until it is fixed "
                    "(agentwatch run-budget start writes a good one)",
                    run_budget.path(self.state_dir),
                    run.problem,
                )
            else:
                log.info("%s: the problem is gone", run_budget.path(self.state_dir))
            self._problem = run.problem
        return run.started_at
