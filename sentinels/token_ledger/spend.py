"""The token ledger's spend per budget period, kept up to date from its minute buckets.

The periods, their minute resolution and the started run are core/spend.py's (the agent ledger
counts against the same ones). Each period's total is read from the database when its start
changes (a new day, a new run) and otherwise kept up to date from the committed buckets:
nothing scans the month per cycle.
"""

from __future__ import annotations

from collections.abc import Callable

from agentwatch.core.spend import first_minute_after
from agentwatch.sentinels.token_ledger.blocks import BucketDeltas


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
