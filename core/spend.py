"""Spend per budget period, as both ledgers publish it (`agentwatch_spend_usd`).

The budget guard needs no orchestrator: it compares the ledgers' spend since the start of the
current local day, ISO week (Monday 00:00), month, or started run (`agentwatch run-budget
start`, core/run_budget.py) with the configured cap. Both ledgers keep their counts per
minute, and a minute counts for a period when it ends after the period's start, so spend has
minute resolution: a run started at 10:00:30 includes the cost of 10:00:00-10:00:30, and an
entry at exactly 00:00:00.000 counts for the day before. One definition here, so the two
ledgers' periods cannot drift apart.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

from agentwatch.core import run_budget
from agentwatch.core.run_budget import period_starts

PERIODS = ("day", "week", "month")
__all__ = ["PERIODS", "RunWatch", "first_minute_after", "period_starts"]


def first_minute_after(start: float) -> int:
    """Minutes above this one end after `start` (a minute m holds ((m-1)*60, m*60])."""
    return math.floor(start / 60)


class RunWatch:
    """The started run of `agentwatch run-budget start`; an unusable file is said once (until
    it changes or is fixed), in the ledger's own log, and counts as no run: no spend is
    attributed to a run then."""

    def __init__(self, state_dir: Path, log: logging.Logger):
        self.state_dir = state_dir
        self.log = log
        self._problem: str | None = None

    def started_at(self) -> float | None:
        run = run_budget.read(self.state_dir)
        if run.problem != self._problem:
            if run.problem is not None:
                self.log.warning(
                    "%s is %s: no run spend is published until it is fixed "
                    "(agentwatch run-budget start writes a good one)",
                    run_budget.path(self.state_dir),
                    run.problem,
                )
            else:
                self.log.info("%s: the problem is gone", run_budget.path(self.state_dir))
            self._problem = run.problem
        return run.started_at
