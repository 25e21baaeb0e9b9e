"""How long the ledger's SQLite commits take: a slow disk shows here before the ledger falls
behind (the `ledger_commit_seconds` alert reads it)."""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client.metrics_core import HistogramMetricFamily

NAME = "agentwatch_ledger_commit_duration_seconds"
# 1 ms .. 10 s: a batch commit on a healthy disk takes a few ms, a stalled one seconds.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class CommitTimes:
    """A histogram of commit durations since the sentinel started."""

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)  # per bucket, not cumulative; the last: +Inf
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.total += seconds

    def cumulative(self) -> list[tuple[str, int]]:
        """(le, observations <= le) for every bound and +Inf."""
        out, running = [], 0
        for bound, count in zip((*map(repr, BUCKETS), "+Inf"), self.counts, strict=True):
            running += count
            out.append((bound, running))
        return out

    def family(self) -> HistogramMetricFamily:
        from prometheus_client.metrics_core import HistogramMetricFamily  # the ledger needs none

        return HistogramMetricFamily(
            NAME,
            "Ledger SQLite commits (a batch's writes and its COMMIT) by how long they took, "
            "since the sentinel started.",
            buckets=self.cumulative(),
            sum_value=self.total,
        )
