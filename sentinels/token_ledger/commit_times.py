"""How long the ledger's SQLite commits take: a slow disk shows here before the ledger falls
behind (the `ledger_commit_seconds` alert reads it)."""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from prometheus_client.metrics_core import GaugeMetricFamily

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

    def families(self) -> Iterator[GaugeMetricFamily]:
        """The histogram's three series as the spool serves them today (see docs/metrics.md:
        the exporter's spool reader takes counters and gauges only), with the histogram's
        names and `le` labels, so histogram_quantile and rate work on them unchanged."""
        buckets = GaugeMetricFamily(
            NAME + "_bucket",
            "Ledger SQLite commits (batch write and COMMIT) that took at most `le` seconds, "
            "since the sentinel started (a histogram's buckets).",
            labels=["le"],
        )
        for bound, count in self.cumulative():
            buckets.add_metric([bound], count)
        yield buckets
        yield GaugeMetricFamily(
            NAME + "_sum", "Seconds spent in ledger SQLite commits since the start.", self.total
        )
        yield GaugeMetricFamily(
            NAME + "_count", "Ledger SQLite commits since the start.", sum(self.counts)
        )
