"""The otel sentinel's families, built from the fold at each spool write.

Two kinds: the shared families the token ledger writes too (tokens, cost, responses, API
errors, spend), with `source="otel"` and only the sessions that wrote no transcript, so a sum
over a family counts every session once; and `agentwatch_otel_*`, Claude Code's own view of
every session (latency, errors by status code, tools, activity) and the receiver's health.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from agentwatch.core import session_families as shared
from agentwatch.core.claude import AGENT
from agentwatch.sentinels.otel.fold import (
    DURATION_BUCKETS,
    HEADLESS,
    NO_TRANSCRIPT,
    PENDING,
    TRANSCRIPT,
    TTFT_BUCKETS,
    Fold,
)

SOURCE = "otel"
REJECT_REASONS = (
    "content_type", "encoding", "no_length", "too_large", "truncated", "bad_gzip", "malformed",
    "not_found", "method", "unsupported_metric", "bad_value", "internal",
)  # fmt: skip
SIGNALS = ("metrics", "logs")
ERROR_KINDS = ("rate_limit", "overloaded", "server_error", "other")
# otel family -> (served name without _total, help, label names)
OTEL_COUNTERS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "tokens": ("agentwatch_otel_tokens", "Tokens Claude Code reported (every session).",
               ("model", "type")),
    "cost": ("agentwatch_otel_cost_usd", "Cost in USD Claude Code reported (every session).",
             ("model",)),
    "api_requests": ("agentwatch_otel_api_requests", "API requests Claude Code reported.",
                     ("model",)),
    "api_errors": ("agentwatch_otel_api_errors",
                   "API errors Claude Code reported, by HTTP status code and attempt.",
                   ("model", "status_code", "attempt")),
    "tool_results": ("agentwatch_otel_tool_results", "Tool runs by tool and success.",
                     ("tool", "success")),
    "tool_decisions": ("agentwatch_otel_tool_decisions",
                       "Permission decisions on tool use, by tool, decision and source.",
                       ("tool", "decision", "source")),
    "code_edit_decisions": ("agentwatch_otel_code_edit_decisions",
                            "Decisions on code edits (Edit, Write, NotebookEdit).",
                            ("tool", "decision")),
    "active_seconds": ("agentwatch_otel_active_seconds", "Active time in seconds, by type.",
                       ("type",)),
    "lines_of_code": ("agentwatch_otel_lines_of_code", "Lines of code changed, by type.",
                      ("type",)),
    "commits": ("agentwatch_otel_commits", "Git commits Claude Code made.", ()),
    "pull_requests": ("agentwatch_otel_pull_requests", "Pull requests Claude Code opened.", ()),
    "sessions_started": ("agentwatch_otel_sessions_started", "Sessions Claude Code started.", ()),
}  # fmt: skip
HISTOGRAMS = {
    "api_duration": ("agentwatch_otel_api_duration_seconds",
                     "API request duration (errors too), from Claude Code's events.",
                     DURATION_BUCKETS),
    "api_ttft": ("agentwatch_otel_api_ttft_seconds",
                 "Time to the first token of API responses, from Claude Code's events.",
                 TTFT_BUCKETS),
}  # fmt: skip


def families(
    fold: Fold, spend: Mapping[str, float], ratios: Mapping[str, float]
) -> Iterator[Metric]:
    yield from _shared(fold, spend)
    for family, (name, documentation, labels) in OTEL_COUNTERS.items():
        metric = CounterMetricFamily(name, documentation, labels=list(labels))
        for (kind, values), value in sorted(fold.otel.items()):
            if kind == family:
                metric.add_metric(list(values), value)
        if not labels and not metric.samples:
            metric.add_metric([], 0.0)
        yield metric
    for family, (name, documentation, bounds) in HISTOGRAMS.items():
        histogram = HistogramMetricFamily(name, documentation, labels=["model"])
        for (kind, model), found in sorted(fold.histograms.items()):
            if kind != family:
                continue
            buckets = [(floatToGoString(b), n) for b, n in zip(bounds, found.buckets, strict=True)]
            histogram.add_metric([model], [*buckets, ("+Inf", found.count)], found.total)
        yield histogram
    yield from _health(fold, ratios)


def _shared(fold: Fold, spend: Mapping[str, float]) -> Iterator[Metric]:
    tokens, cost = shared.TOKENS.counter("source"), shared.COST.counter("source")
    responses, errors = shared.RESPONSES.counter("source"), shared.API_ERRORS.counter("source")
    base = [AGENT, NO_TRANSCRIPT]
    for (kind, values), value in sorted(fold.shared.items()):
        if kind == "tokens":
            tokens.add_metric([*base, *values, SOURCE], value)
        elif kind == "cost":
            cost.add_metric([*base, *values, SOURCE], value)
        elif kind == "responses":
            responses.add_metric([*base, *values, SOURCE], value)
    if fold.shared:  # pre-set once a session without a transcript counted: a first error
        for kind in ERROR_KINDS:  # shows as an increase
            found = fold.shared.get(("errors", (kind,)), 0.0)
            errors.add_metric([NO_TRANSCRIPT, kind, SOURCE], found)
    yield from (tokens, cost, responses, errors)
    spent = shared.SPEND.gauge("source")
    for period, value in sorted(spend.items()):
        spent.add_metric([AGENT, period, SOURCE], value)
    yield spent


def _health(fold: Fold, ratios: Mapping[str, float]) -> Iterator[Metric]:
    disagreement = GaugeMetricFamily(
        "agentwatch_otel_ledger_disagreement_ratio",
        "Per session with a transcript: |OTel tokens - ledger tokens| / the larger.",
        labels=["session"],
    )
    for session, value in sorted(ratios.items()):
        disagreement.add_metric([session], value)
    yield disagreement
    states = fold.states()
    sessions = GaugeMetricFamily(
        "agentwatch_otel_sessions", "Sessions in the receiver's table, by classification.",
        labels=["state"],
    )  # fmt: skip
    for state in (PENDING, TRANSCRIPT, HEADLESS):
        sessions.add_metric([state], states.get(state, 0))
    yield sessions
    counts = fold.counts
    requests = CounterMetricFamily(
        "agentwatch_otel_requests", "OTLP export requests accepted, by signal.", labels=["signal"]
    )
    for signal in SIGNALS:
        requests.add_metric([signal], counts.get(f"requests.{signal}", 0))
    yield requests
    rejected = CounterMetricFamily(
        "agentwatch_otel_rejected", "Requests or points refused, by reason.", labels=["reason"]
    )
    for reason in REJECT_REASONS:
        rejected.add_metric([reason], counts.get(f"rejected.{reason}", 0))
    yield rejected
    points = CounterMetricFamily(
        "agentwatch_otel_points", "Data points and events received, by outcome.",
        labels=["outcome"],
    )  # fmt: skip
    for outcome in ("metrics", "events", "ignored", "no_session"):
        points.add_metric([outcome], counts.get(f"points.{outcome}", 0))
    yield points
    evicted = CounterMetricFamily(
        "agentwatch_otel_sessions_evicted",
        "Sessions dropped from the table past max_sessions; `unclassified`: with usage not "
        "classified yet (not counted in the shared families).",
        labels=["state"],
    )
    evicted.add_metric(["any"], counts.get("evicted", 0))
    evicted.add_metric(["unclassified"], counts.get("evicted_unclassified", 0))
    yield evicted
