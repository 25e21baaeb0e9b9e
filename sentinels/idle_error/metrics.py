"""The idle-error metric families, built fresh from the latest cycle at each write.

Per-pane series exist only for live agent panes, so a closed pane leaves nothing behind.
Labels carry the tmux session name, the pane id and the agent name; the `pattern` label is a
class named by the shipped pattern file (bounded), never the text that matched.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from agentwatch.sentinels.idle_error.classify import SUPPRESSION_REASONS, Result
from agentwatch.sentinels.idle_error.memory import REJECT_REASONS, Memory
from agentwatch.sentinels.idle_error.panes import CAPTURE_ERROR_REASONS, AgentPane
from agentwatch.sentinels.idle_error.patterns import STALL_STATES, STATES

PANE_LABELS = ["tmux_session", "pane", "agent"]


@dataclass
class Cycle:
    """The outcome of the latest cycle: each live agent pane that could be captured."""

    panes: list[tuple[AgentPane, Result]] = field(default_factory=list)
    tmux_failing: int = 0


def families(cycle: Cycle, memory: Memory) -> Iterator[Metric]:
    state = GaugeMetricFamily(
        "agentwatch_pane_state",
        "State of each live agent pane: 1 for its current state, 0 for the others.",
        labels=[*PANE_LABELS, "state"],
    )
    since = GaugeMetricFamily(
        "agentwatch_pane_state_since_timestamp_seconds",
        "When the pane entered its current state.",
        labels=PANE_LABELS,
    )
    match = GaugeMetricFamily(
        "agentwatch_pane_match_info",
        "The pattern class that decided a pane's stall state (always 1).",
        labels=[*PANE_LABELS, "state", "pattern"],
    )
    reset = GaugeMetricFamily(
        "agentwatch_pane_usage_limit_reset_timestamp_seconds",
        "When the usage limit shown in the pane resets (only when the pane shows a time).",
        labels=PANE_LABELS,
    )
    per_state = dict.fromkeys(STATES, 0)
    for pane, result in cycle.panes:
        labels = list(pane.labels)
        for name in STATES:
            state.add_metric([*labels, name], 1 if name == result.state else 0)
        since.add_metric(labels, result.observation.since)
        if result.stalled:
            match.add_metric([*labels, result.state, result.pattern], 1)
        if result.reset_at is not None:
            reset.add_metric(labels, result.reset_at)
        per_state[result.state] += 1
    yield from (state, since, match, reset)

    panes = GaugeMetricFamily("agentwatch_panes", "Live agent panes per state.", labels=["state"])
    for name, count in per_state.items():
        panes.add_metric([name], count)
    yield panes
    yield _counter(
        "agentwatch_pane_classifications",
        "Times a pane changed into a stall state, by state.",
        "state",
        STALL_STATES,
        memory.fired,
    )
    yield _counter(
        "agentwatch_pane_suppressed",
        "Pattern matches that did not fire, by reason (counted once per changed capture).",
        "reason",
        SUPPRESSION_REASONS,
        memory.suppressed,
    )
    yield _counter(
        "agentwatch_idle_error_capture_errors",
        "Agent panes that could not be captured, by reason.",
        "reason",
        CAPTURE_ERROR_REASONS,
        memory.capture_errors,
    )
    yield _counter(
        "agentwatch_idle_error_state_rejected",
        "Times the state file was set aside and the sentinel started with an empty memory.",
        "reason",
        REJECT_REASONS,
        memory.state_rejected,
    )
    yield GaugeMetricFamily(
        "agentwatch_idle_error_tmux_failing",
        "tmux servers whose last pane listing failed (a server not running is not a failure).",
        value=cycle.tmux_failing,
    )


def _counter(
    name: str, doc: str, label: str, known: tuple[str, ...], counts: dict[str, int]
) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=[label])
    for key in known:
        family.add_metric([key], counts.get(key, 0))
    return family
