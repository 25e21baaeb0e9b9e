"""The cycles of `agentwatch sentinel agent-ledger` and the families it publishes.

A cycle scans every reader's roots (a stat per session file), then reads and commits the
changed files batch by batch: all of them with `--once` (in larger batches, as nothing is
published in between: ledger.ONCE_BATCH_FILES), else about a second's worth per cycle, so
partial totals are published as a long backfill goes. There is no inotify: the
agents' files are polled every `interval` (30 s), which is what a spend gauge needs.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from agentwatch.core import session_families as shared
from agentwatch.core.fold import OTHER, Fold
from agentwatch.core.loop import Outcome
from agentwatch.core.single import StateInUse
from agentwatch.core.spend import PERIODS, RunWatch, first_minute_after, period_starts
from agentwatch.sentinels.agent_ledger import readers
from agentwatch.sentinels.agent_ledger.base import TOKEN_TYPES
from agentwatch.sentinels.agent_ledger.ledger import (
    BATCH_ENTRIES,
    BATCH_FILES,
    COST,
    ONCE_BATCH_ENTRIES,
    ONCE_BATCH_FILES,
    REJECTED,
    RESPONSES,
    TOKENS,
    UNPRICED,
    Ledger,
    shown_labels,
)
from agentwatch.sentinels.agent_ledger.store import DATABASE_FILE, Store
from agentwatch.sentinels.contract import Context, SentinelError

log = logging.getLogger("agentwatch.agent-ledger")
SLICE = 1.0  # seconds of reading per cycle before partial totals are published

# name (without _total) -> (help, label names)
COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    # shared with the token ledger (core/session_families.py)
    TOKENS: (shared.TOKENS.help, shared.TOKENS.labels),
    COST: (shared.COST.help, shared.COST.labels),
    RESPONSES: (shared.RESPONSES.help, shared.RESPONSES.labels),
    UNPRICED: (
        "Tokens of an agent's models without a price (cost counted as 0).",
        ("agent", "model"),
    ),
    REJECTED: (
        "Records of agents' session files the reader rejected, by reason, once per file.",
        ("agent", "reason"),
    ),
}


def open_ledger(context: Context) -> Ledger:
    settings = context.settings
    plugs = readers.plugged()
    loaded = {}
    for agent in settings["agents"]:
        plug = plugs.get(agent)
        if plug is None:
            raise SentinelError(f"no reader for agent {agent!r} (known: {', '.join(plugs)})")
        try:
            loaded[agent] = (plug, plug.load())
        except (ImportError, ValueError) as err:
            raise SentinelError(f"agent {agent!r}: {err}") from err
    try:
        store = Store(context.state_dir / DATABASE_FILE)
    except StateInUse as err:
        raise SentinelError(str(err)) from err
    caps = {
        "project": settings["max_projects"],
        "model": settings["max_models"],
        "session": settings["max_sessions"],
    }
    batch = (ONCE_BATCH_FILES, ONCE_BATCH_ENTRIES) if context.once else (BATCH_FILES, BATCH_ENTRIES)
    return Ledger(store, loaded, settings["session_ttl"], caps, batch=batch)


class AgentLedger:
    """The agent ledger's work (see the module doc)."""

    def __init__(self, context: Context):
        self.ledger = open_ledger(context)
        self.once = context.once
        self.stopping = context.stopping
        self.run = RunWatch(context.state_dir, log)
        self._spend: tuple[tuple[float, ...], int, dict[str, dict[str, float]]] | None = None
        if not self.ledger.readers:
            log.warning("no agents to read (the agents key is empty)")
        for agent, (_plug, reader) in self.ledger.readers.items():
            found = reader.roots(self.ledger.env, self.ledger.home)
            where = ", ".join(str(root) for root in found) or "no folder of it exists (yet)"
            log.info("%s: reading session files under %s", agent, where)

    def cycle(self, due: bool = True) -> Outcome:
        ledger = self.ledger
        if not ledger.queue:
            ledger.scan()
        commits = ledger.commits
        deadline = time.monotonic() + SLICE
        while not self.stopping() and ledger.step():
            if not self.once and time.monotonic() >= deadline:
                break
        return Outcome(changed=ledger.commits > commits, again_in=0.0 if ledger.queue else None)

    # ---- the families
    def families(self) -> Iterator[Metric]:
        ledger = self.ledger
        ledger.expire_sessions()
        yield from self._counters()
        yield from self._sessions()
        yield self._spend_family()
        agents = sorted(ledger.readers)
        tracked = GaugeMetricFamily(
            "agentwatch_agent_ledger_files_tracked",
            "Session files of each agent the ledger follows.",
            labels=["agent"],
        )
        errors = CounterMetricFamily(
            "agentwatch_agent_ledger_read_errors",
            "Files that vanished or could not be read, and reader failures (the files are "
            "read again), since the sentinel started.",
            labels=["agent"],
        )
        for agent in agents:
            tracked.add_metric([agent], ledger.tracked(agent))
            errors.add_metric([agent], ledger.read_errors[agent])
        yield tracked
        yield errors

    def _fold(self, agent: str) -> Fold:
        return self.ledger.folds[agent]

    def _counters(self) -> Iterator[Metric]:
        shown: dict[str, dict[tuple[str, ...], float]] = {name: {} for name in COUNTERS}
        for (name, labels), value in self.ledger.counters.items():
            if name not in shown:
                continue
            key = shown_labels(self._fold(labels[0]), name, labels)
            shown[name][key] = shown[name].get(key, 0.0) + value
        for name, (documentation, label_names) in COUNTERS.items():
            family = CounterMetricFamily(name, documentation, labels=list(label_names))
            for labels, value in sorted(shown[name].items()):
                family.add_metric(list(labels), value)
            yield family

    def _sessions(self) -> Iterator[Metric]:
        tokens, cost = shared.SESSION_TOKENS.counter(), shared.SESSION_COST.counter()
        first, last = shared.SESSION_FIRST.gauge(), shared.SESSION_LAST.gauge()
        folded = GaugeMetricFamily(
            "agentwatch_agent_ledger_folded_series",
            'Distinct label values of each agent shown as "other" (past max_projects, '
            "max_models, max_sessions).",
            labels=["agent", "label"],
        )
        for agent in sorted(self.ledger.sessions):
            recent = self.ledger.sessions[agent]
            session_fold = self.ledger.session_folds[agent]
            fold = self._fold(agent)
            other = list(session_fold.retired)
            other_first, other_last, hidden = math.inf, -math.inf, 0
            for session, (project, first_ts, last_ts, *values) in sorted(recent.items()):
                if session not in session_fold.kept:
                    hidden += 1
                    for index, amount in enumerate(values[:5]):
                        other[index] += amount
                    other_first, other_last = min(other_first, first_ts), max(other_last, last_ts)
                    continue
                labels = [agent, fold.show("project", project), session]
                for kind, value in zip(TOKEN_TYPES, values[:4], strict=True):
                    tokens.add_metric([*labels, kind], value)
                cost.add_metric(labels, values[4])
                first.add_metric(labels, first_ts)
                last.add_metric(labels, last_ts)
            if hidden or any(other):  # once shown, "other" stays: a counter must not vanish
                for kind, value in zip(TOKEN_TYPES, other[:4], strict=True):
                    tokens.add_metric([agent, OTHER, OTHER, kind], value)
                cost.add_metric([agent, OTHER, OTHER], other[4])
            if hidden:
                first.add_metric([agent, OTHER, OTHER], other_first)
                last.add_metric([agent, OTHER, OTHER], other_last)
            folded.add_metric([agent, "project"], fold.folded("project"))
            folded.add_metric([agent, "model"], fold.folded("model"))
            folded.add_metric([agent, "session"], hidden)
        yield from (tokens, cost, first, last, folded)

    def _spend_family(self) -> Metric:
        """USD per agent since each period's start, from the stored rows (their first
        count's time), at minute resolution (core/spend.py)."""
        starts = period_starts(time.time())
        started = self.run.started_at()
        if started is not None:
            starts["run"] = started
        afters = {period: first_minute_after(start) * 60.0 for period, start in starts.items()}
        key = tuple(afters.values())
        if self._spend is None or self._spend[:2] != (key, self.ledger.commits):
            store = self.ledger.store
            spent = {period: store.cost_since(after) for period, after in afters.items()}
            self._spend = (key, self.ledger.commits, spent)
        spent = self._spend[2]
        family = shared.SPEND.gauge()
        for agent in sorted(self.ledger.counted_agents()):
            for period in (*PERIODS, "run"):
                if period in spent:
                    family.add_metric([agent, period], spent[period].get(agent, 0.0))
        return family

    def close(self) -> None:
        self.ledger.store.close()


def build(context: Context) -> AgentLedger:
    return AgentLedger(context)
