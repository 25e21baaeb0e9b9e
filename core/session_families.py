"""The metric families more than one sentinel writes, declared once: the token ledger writes
them for Claude Code, the agent ledger for the other agents, the OpenTelemetry receiver for
sessions without a transcript (with a `source` label added).

The exporter merges a family from every spool file that has it and keeps the HELP text of
the one it reads first, so two declarations would show whichever file came first (they had
already drifted apart). Each writer takes its family from here; docs/metrics.md documents
them once.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily

SESSION = ("agent", "project", "session")


@dataclass(frozen=True)
class Shared:
    """A family's name (a counter's without `_total`), HELP text and label names."""

    name: str
    help: str
    labels: tuple[str, ...]

    def counter(self, *extra: str) -> CounterMetricFamily:
        """A fresh, empty counter family; `extra` label names go after the shared ones."""
        return CounterMetricFamily(self.name, self.help, labels=[*self.labels, *extra])

    def gauge(self, *extra: str) -> GaugeMetricFamily:
        """A fresh, empty gauge family; `extra` label names go after the shared ones."""
        return GaugeMetricFamily(self.name, self.help, labels=[*self.labels, *extra])


TOKENS = Shared(
    "agentwatch_tokens",
    "Tokens used by API responses, each response counted once.",
    ("agent", "project", "model", "type"),
)
COST = Shared(
    "agentwatch_cost_usd",
    "Cost of API responses in USD (the cost the agent recorded when it did, else priced).",
    ("agent", "project", "model"),
)
RESPONSES = Shared(
    "agentwatch_api_responses",
    "API responses counted (after dedup).",
    ("agent", "project", "model"),
)
API_ERRORS = Shared(
    "agentwatch_api_errors",
    "API error messages, by kind (rate_limit, overloaded, usage_limit, server_error, other).",
    ("project", "kind"),
)
SPEND = Shared(
    "agentwatch_spend_usd",
    "Cost in USD since the start of the local day, ISO week (Monday), month, and the "
    "started run (agentwatch run-budget start; only while one is), at minute resolution.",
    ("agent", "period"),
)
SESSION_TOKENS = Shared(
    "agentwatch_session_tokens",
    "Tokens per recently active session (series expire after session_ttl).",
    (*SESSION, "type"),
)
SESSION_COST = Shared(
    "agentwatch_session_cost_usd",
    "Cost per recently active session in USD (series expire after session_ttl).",
    SESSION,
)
SESSION_FIRST = Shared(
    "agentwatch_session_first_activity_timestamp_seconds",
    "Recorded time of a recent session's first counted response.",
    SESSION,
)
SESSION_LAST = Shared(
    "agentwatch_session_last_activity_timestamp_seconds",
    "Recorded time of a recent session's newest counted response.",
    SESSION,
)
