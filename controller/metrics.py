"""The controller's metric families (spool file `controller.prom`), built fresh per write.

Every family is always written (so its HELP/TYPE exist even before a value does); series of
things that are not known right now (no Alertmanager success yet, no orchestrator reading) are
left out rather than shown stale. Counters are read from the persisted memory, so they keep
counting across `controller --once` runs. Labels are bounded: configured Alertmanagers, fixed
state/tier/reason/result sets, at most 100 task ids of open tasks with a deadline and 100 of
tasks failed for theirs, and one series per throttled burn (labels of the alerts behind it).
The `bernstein_*` families repeat values under the names Bernstein's own docs use, for
dashboards built on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from agentwatch.controller.adapters import ADAPTERS, Reading
from agentwatch.controller.alerts import ACTIONS, Alert
from agentwatch.controller.budget import SOURCES
from agentwatch.controller.burn import Burn
from agentwatch.controller.continuation import REASONS as CONTINUATION_REASONS
from agentwatch.controller.nudge import RESULTS
from agentwatch.controller.policy import (
    BREAKER_STATES,
    DECISION_REASONS,
    MODES,
    TIERS,
    Settings,
)
from agentwatch.controller.spend import Spend
from agentwatch.controller.state import DISCARD_REASONS, Memory
from agentwatch.controller.web import REASONS

C = "agentwatch_controller_"
ORC = "agentwatch_orchestrator_"
ALERT_STATES = ("actionable", "silenced", "inhibited", "unknown_action")


@dataclass
class View:
    """Everything one write of controller.prom shows."""

    memory: Memory
    settings: Settings
    alertmanagers: dict[str, bool] = field(default_factory=dict)
    alerts: list[Alert] | None = None
    budget: tuple[float, str] = (0.0, "default")
    adapter: str | None = None
    adapter_failing: bool = False
    reading: Reading | None = None
    spent: Spend | None = None


def _gauge(name: str, doc: str, value: float | None = None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc)
    if value is not None:
        family.add_metric([], value)
    return family


def _labeled(name: str, doc: str, label: str, values: dict[str, float]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=[label])
    for key, value in values.items():
        family.add_metric([key], value)
    return family


def _counter(view: View, name: str, doc: str, label: str, known: tuple[str, ...]) -> Metric:
    family = CounterMetricFamily(C + name, doc, labels=[label])
    counted = view.memory.counters.get(name, {})
    for key in known:  # every known label value from the start, so rate() sees the first one
        family.add_metric([key], counted.get(key, 0.0))
    return family


def alert_states(alerts: list[Alert]) -> dict[str, float]:
    counts = dict.fromkeys(ALERT_STATES, 0.0)
    for alert in alerts:
        if alert.action is None:
            continue
        if alert.silenced:
            counts["silenced"] += 1
        elif alert.inhibited:
            counts["inhibited"] += 1
        elif alert.action not in ACTIONS:
            counts["unknown_action"] += 1
        else:
            counts["actionable"] += 1
    return counts


def families(view: View) -> Iterator[Metric]:
    state, settings = view.memory.policy, view.settings
    yield _gauge(C + "max_agents", "Concurrency level decided (shrink/grow).", state.level)
    yield _gauge(
        C + "effective_max_agents",
        "Agents the orchestrator may run now: 0 while paused, stopping or the breaker is open.",
        state.effective_max_agents,
    )
    yield _gauge(C + "configured_max_agents", "Configured maximum.", settings.max_agents)
    yield _gauge(C + "min_agents", "Configured floor of the level.", settings.min_agents)
    yield _gauge(C + "paused", "1 while spawning is paused.", int(state.paused))
    yield _gauge(
        C + "should_stop", "1 while the run is told to drain and stop.", int(state.should_stop)
    )
    yield _labeled(
        C + "breaker_state",
        "Circuit breaker state set: 1 for the current state.",
        "state",
        {name: float(state.breaker == name) for name in BREAKER_STATES},
    )
    yield _labeled(
        C + "deferred_tier",
        "1 for each model tier deferred.",
        "tier",
        {tier: float(tier in state.deferred_tiers) for tier in TIERS},
    )
    yield _labeled(
        C + "mode",
        "Where the decision comes from: live alerts, holding the last one, or the fallback.",
        "mode",
        {mode: float(state.mode == mode) for mode in MODES},
    )
    yield _labeled(
        C + "alertmanager_up",
        "1 when the Alertmanager answered the last read with a valid alert list.",
        "alertmanager",
        {url: float(up) for url, up in view.alertmanagers.items()},
    )
    yield _labeled(
        C + "alerts",
        "Alerts carrying agentwatch_action in the last read, by state.",
        "state",
        alert_states(view.alerts) if view.alerts is not None else {},
    )
    yield _gauge(
        C + "last_success_timestamp_seconds",
        "Last cycle in which at least one Alertmanager answered.",
        state.last_success_at,
    )
    yield _counter(
        view, "decisions", "Changes of the decision by reason.", "reason", DECISION_REASONS
    )
    yield _counter(
        view, "adapter_errors", "Failed pushes to the orchestrator.", "adapter", ADAPTERS
    )
    yield _labeled(
        C + "adapter_failing",
        "1 while the configured adapter's last push failed (retried with backoff).",
        "adapter",
        {view.adapter: float(view.adapter_failing)} if view.adapter else {},
    )
    yield _counter(view, "nudges", "Nudge outcomes.", "result", RESULTS)
    yield _counter(
        view,
        "alertmanager_errors",
        "Alertmanager reads that gave no usable answer (counted as no answer), by reason.",
        "reason",
        REASONS,
    )
    yield _counter(
        view,
        "state_discarded",
        "State files that could not be read or parsed and were set aside for a fresh start.",
        "reason",
        DISCARD_REASONS,
    )
    yield _counter(
        view,
        "continuation_retries",
        "Bernstein's commit-completion retries (agent.retry_continuation events), by reason.",
        "reason",
        CONTINUATION_REASONS,
    )
    yield CounterMetricFamily(
        C + "continuation_malformed",
        "Lines of Bernstein's retry_continuation events file that were not such an event.",
        view.memory.counters.get("continuation_malformed", {}).get("", 0.0),
    )
    yield CounterMetricFamily(
        C + "malformed_alerts",
        "Alert list elements skipped because they were not well-formed.",
        view.memory.counters.get("malformed_alerts", {}).get("", 0.0),
    )
    limit, source = view.budget
    yield _labeled(
        "agentwatch_budget_limit_usd",
        "Resolved budget cap of the run in USD (0 = unlimited).",
        "source",
        {source if source in SOURCES else "default": limit},
    )
    yield from budget_families(view)
    yield from burn_families(view.memory.policy.burns, settings)
    yield from orchestrator_families(view.reading)


def orchestrator_families(reading: Reading | None) -> Iterator[Metric]:
    known = reading is not None and reading.up
    yield _gauge(
        ORC + "up",
        "1 when the orchestrator's status API answered.",
        None if reading is None else float(reading.up),
    )
    r = reading if reading is not None and known else Reading()
    yield _gauge(ORC + "cost_usd", "Spend of the orchestrator's current run in USD.", r.cost_usd)
    yield _gauge(
        ORC + "budget_usd", "Budget of the run as the orchestrator reports it.", r.budget_usd
    )
    yield _gauge(ORC + "agents", "Agents the orchestrator reports running.", r.agents)
    yield _gauge(ORC + "max_agents", "max_agents the orchestrator reports.", r.max_agents)
    yield _labeled(
        ORC + "tasks", "Tasks by status as the orchestrator reports them.", "status", r.tasks
    )
    yield _labeled(
        ORC + "task_deadline_timestamp_seconds",
        "Deadline of each open task that has one (at most 100, nearest first).",
        "task",
        r.deadlines,
    )


def budget_families(view: View) -> Iterator[Metric]:
    """Spend against the cap, and Bernstein's names for the same numbers."""
    limit, spent = view.budget[0], view.spent
    remaining = limit - spent.usd if spent is not None and limit > 0 else None
    yield _labeled(
        "agentwatch_budget_spent_usd",
        "Spend the budget counts in USD: the larger of the ledger's and the orchestrator's.",
        "period",
        {spent.period: spent.usd} if spent is not None else {},
    )
    yield _gauge(
        "agentwatch_budget_remaining_usd", "Budget cap minus spend (only while capped).", remaining
    )
    yield _gauge(
        "bernstein_parallelism_level",
        "Agents the orchestrator may run now (Bernstein's name for effective_max_agents).",
        view.memory.policy.effective_max_agents,
    )
    yield _gauge(
        "bernstein_run_cost_usd",
        "Spend the budget counts in USD (Bernstein's name).",
        spent.usd if spent is not None else None,
    )
    yield _gauge(
        "bernstein_run_budget_remaining_usd",
        "Budget cap minus spend (Bernstein's name; only while capped).",
        remaining,
    )
    for name in ("bernstein_task_deadline_exceeded", "agentwatch_task_deadline_exceeded"):
        family = CounterMetricFamily(
            name, "Tasks the controller failed for their deadline (last 100).", labels=["task"]
        )
        for task in sorted(view.memory.deadlines):
            family.add_metric([task], 1.0)
        yield family


BURN_LABELS = ["alertname", "project", "session"]


def burn_families(burns: tuple[Burn, ...], settings: Settings) -> Iterator[Metric]:
    """The burn runbook's throttles, for the verifier rule and the dashboards."""
    escalation = GaugeMetricFamily(
        C + "burn_escalation",
        "1 while the controller throttles for an unacknowledged burn, by step.",
        labels=[*BURN_LABELS, "step"],
    )
    pre = GaugeMetricFamily(
        C + "burn_pre_throttle_rate",
        "Fresh tokens per hour of the burn when its throttle began.",
        labels=BURN_LABELS,
    )
    due = GaugeMetricFamily(
        C + "burn_verify_due_timestamp_seconds",
        "When the throttle is judged: its start plus burn.verify_after.",
        labels=BURN_LABELS,
    )
    target = GaugeMetricFamily(
        C + "burn_target_rate",
        "The rate the burn must fall below: burn.verify_fraction of the pre-throttle rate.",
        labels=BURN_LABELS,
    )
    for burn in burns:
        labels = [burn.alertname, burn.project, burn.session]
        if burn.active:
            escalation.add_metric([*labels, burn.step], 1.0)
        due.add_metric(labels, burn.throttled_at + settings.verify_after)
        if burn.pre_rate is not None:
            pre.add_metric(labels, burn.pre_rate)
            target.add_metric(labels, settings.verify_fraction * burn.pre_rate)
    yield from (escalation, pre, due, target)
