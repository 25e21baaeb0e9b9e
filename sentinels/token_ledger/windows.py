"""The time windows the quota and budget guards read: the active 5-hour block, its cap and
each session's share of it, and the spend per period (blocks.py, spend.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from agentwatch.core import claude
from agentwatch.core import session_families as shared
from agentwatch.core.fold import OTHER
from agentwatch.core.spend import PERIODS, RunWatch, period_starts
from agentwatch.sentinels.token_ledger import estimate
from agentwatch.sentinels.token_ledger.blocks import Block, BlockTracker, BucketDeltas
from agentwatch.sentinels.token_ledger.ledger import Ledger
from agentwatch.sentinels.token_ledger.spend import SpendTracker


class Windows:
    """Blocks and spend of one ledger, updated from its committed buckets at each render."""

    def __init__(
        self,
        ledger: Ledger,
        state_dir: Path,
        block_token_limit: int = 0,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        plan: str = "none",
        estimate: str = "p90",
    ):
        self.ledger = ledger
        self.clock = clock
        self.limit = block_token_limit
        self.plan, self.estimate = plan, estimate
        store = ledger.store
        self.blocks = BlockTracker(store.minutes, store.tokens_by_labels, monotonic)
        self.spend = SpendTracker(store.cost_since)
        self.run = RunWatch(state_dir, logging.getLogger("agentwatch.token-ledger"))
        ledger.on_commit.append(self._committed)  # from now on; the database has the rest
        self.started: float | None = None  # the active run's start

    def _committed(self, deltas: BucketDeltas) -> None:
        self.blocks.add(deltas)
        self.spend.add(deltas)

    def update(self, settle: bool = False) -> float:
        """Bring the windows to now; `settle`: blocks that need it are computed now, not
        later (the backfill is done). Returns the time the windows are for."""
        self.blocks.settle(force=settle)
        now = self.clock()
        starts = period_starts(now)
        self.started = self.run.started_at()
        if self.started is not None:
            starts["run"] = self.started
        self.spend.update(starts)
        return now

    def families(self, settle: bool = False) -> Iterator[Metric]:
        now = self.update(settle)
        yield from self._block_families(now)
        spend = shared.SPEND.gauge()
        for period in (*PERIODS, "run"):
            value = self.spend.spend(period)
            if value is not None:
                spend.add_metric([claude.AGENT, period], value)
        yield spend
        run = GaugeMetricFamily(
            "agentwatch_run_started_timestamp_seconds",
            "When the started run began (absent while no run is started).",
        )
        if self.started is not None:
            run.add_metric([], self.started)
        yield run

    def _block_families(self, now: float) -> Iterator[Metric]:
        active = self.blocks.active(now)
        names = (
            ("agentwatch_block_tokens", "Tokens of every type in the active 5-hour block "
             "(ccusage blocks; absent when none is active)."),
            ("agentwatch_block_start_timestamp_seconds", "Start of the active 5-hour block "
             "(its first message's time floored to the UTC hour)."),
            ("agentwatch_block_end_timestamp_seconds", "End of the active 5-hour block "
             "(start + 5 h)."),
        )  # fmt: skip
        values = (active.tokens, active.start_ms / 1000, active.end_ms / 1000) if active else None
        for index, (name, documentation) in enumerate(names):
            family = GaugeMetricFamily(name, documentation)
            if values is not None:
                family.add_metric([], values[index])
            yield family
        limit = GaugeMetricFamily(
            "agentwatch_block_limit_tokens",
            "Tokens a 5-hour block may use: block_token_limit (source=config), else the plan "
            "preset (source=plan), else the 90th percentile (source=p90_block) or the largest "
            "(source=max_block) of the completed blocks.",
            labels=["source"],
        )
        completed = [] if self.limit > 0 or self.plan != "none" else self.blocks.completed(now)
        found = estimate.block_limit(self.limit, self.plan, self.estimate, completed)
        if found is not None:
            limit.add_metric([found[1]], found[0])
        yield limit
        sessions = GaugeMetricFamily(
            "agentwatch_block_session_tokens",
            "Tokens of every type each session used in the active 5-hour block (sessions "
            'without a series of their own are in project="other", session="other").',
            labels=["project", "session"],
        )
        if active is not None:
            for labels, tokens in sorted(self._by_session(active).items()):
                sessions.add_metric(list(labels), tokens)
        yield sessions

    def _by_session(self, active: Block) -> dict[tuple[str, str], float]:
        """The block's tokens under the labels the per-session series use."""
        ledger = self.ledger
        kept, recent, fold = ledger.session_fold.kept, ledger.sessions, ledger.fold
        shown: dict[tuple[str, str], float] = {}
        for labelset, tokens in self.blocks.per_labels(active).items():
            _project, _model, session = ledger.store.labels_of(labelset)
            if session in kept and session in recent:
                key = (fold.show("project", recent[session][0]), session)
            else:
                key = (OTHER, OTHER)
            shown[key] = shown.get(key, 0.0) + tokens
        return shown
