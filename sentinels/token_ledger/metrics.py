"""The token ledger's metric families, built fresh from the ledger state at each write."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from agentwatch.sentinels.token_ledger.ledger import TOKEN_TYPES, Ledger

ERROR_KINDS = ("rate_limit", "overloaded", "usage_limit", "server_error", "other")

# name (without _total) -> (help, label names); every persisted counter is declared here.
COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "agentwatch_tokens": (
        "Tokens used by Claude Code API responses, each response counted once.",
        ("project", "model", "type"),
    ),
    "agentwatch_cost_usd": (
        "Cost of those responses in USD (costUSD when the transcript has it, else priced).",
        ("project", "model"),
    ),
    "agentwatch_api_responses": ("API responses counted (after dedup).", ("project", "model")),
    "agentwatch_api_errors": (
        "API error messages in transcripts, by kind (rate_limit, overloaded, usage_limit, "
        "server_error, other).",
        ("project", "kind"),
    ),
    "agentwatch_ledger_lines_read": ("Complete transcript lines read.", ()),
    "agentwatch_ledger_bytes_read": ("Transcript bytes consumed.", ()),
    "agentwatch_ledger_lines_rejected": (
        "Lines with usage that the reference reader would skip, by reason.",
        ("reason",),
    ),
    "agentwatch_ledger_duplicate_copies": (
        "Extra copies of already counted responses, by how they were resolved.",
        ("kind",),
    ),
    "agentwatch_ledger_file_resets": (
        "Transcripts re-read from the start because they were truncated or replaced.",
        (),
    ),
    "agentwatch_ledger_unpriced_tokens": (
        "Tokens of models without a price (cost counted as 0).",
        ("model",),
    ),
}


def families(ledger: Ledger, database_bytes: int) -> Iterator[Metric]:
    grouped: dict[str, list[tuple[tuple[str, ...], float]]] = {name: [] for name in COUNTERS}
    for (name, labels), value in ledger.counters.items():
        if name in grouped:
            grouped[name].append((labels, value))
    ledger.expire_sessions()
    # Pre-initialise the error kinds of projects active now, so that a first error shows as
    # an increase; older projects keep only the kinds they ever had (bounded cardinality).
    projects = {row[0] for row in ledger.sessions.values()}
    present_errors = {labels for labels, _ in grouped["agentwatch_api_errors"]}
    for project in sorted(projects):
        for kind in ERROR_KINDS:
            if (project, kind) not in present_errors:
                grouped["agentwatch_api_errors"].append(((project, kind), 0.0))
    for name, (documentation, label_names) in COUNTERS.items():
        family = CounterMetricFamily(name, documentation, labels=list(label_names))
        for labels, value in sorted(grouped[name]):
            family.add_metric(list(labels), value)
        yield family

    last_error = GaugeMetricFamily(
        "agentwatch_api_error_last_timestamp_seconds",
        "Transcript time of the newest API error line of each kind.",
        labels=["kind"],
    )
    for key, value in sorted(ledger.gauges.items()):
        if key.startswith("api_error_last:"):
            last_error.add_metric([key.split(":", 1)[1]], value)
    yield last_error
    reset = GaugeMetricFamily(
        "agentwatch_usage_limit_reset_timestamp_seconds",
        "When the newest usage-limit message says the limit resets (absent if never stated).",
    )
    if "usage_limit_reset" in ledger.gauges:
        reset.add_metric([], ledger.gauges["usage_limit_reset"])
    yield reset

    yield from _session_families(ledger)

    read_errors = CounterMetricFamily(
        "agentwatch_ledger_read_errors",
        "Transcripts that vanished or could not be read, since the sentinel started.",
        labels=["reason"],
    )
    for reason in ("vanished", "unreadable"):
        read_errors.add_metric([reason], ledger.read_errors.get(reason, 0))
    yield read_errors
    for name, documentation, value in (
        ("agentwatch_ledger_files_tracked", "Transcript files being followed.", len(ledger.files)),
        ("agentwatch_ledger_unread_bytes", "Bytes written to transcripts but not yet read.",
         ledger.unread_bytes()),
        ("agentwatch_ledger_database_bytes", "Size of the ledger's SQLite files.", database_bytes),
        ("agentwatch_ledger_roots", "Transcript roots that exist.",
         sum(1 for root in ledger.roots if root.is_dir())),
    ):  # fmt: skip
        yield GaugeMetricFamily(name, documentation, value=value)


def _session_families(ledger: Ledger) -> Iterator[Metric]:
    tokens = CounterMetricFamily(
        "agentwatch_session_tokens",
        "Tokens per recently active session (series expire after session_ttl).",
        labels=["project", "session", "type"],
    )
    cost = CounterMetricFamily(
        "agentwatch_session_cost_usd",
        "Cost per recently active session in USD (expires after session_ttl).",
        labels=["project", "session"],
    )
    first = GaugeMetricFamily(
        "agentwatch_session_first_activity_timestamp_seconds",
        "Transcript time of a recent session's first counted line.",
        labels=["project", "session"],
    )
    last = GaugeMetricFamily(
        "agentwatch_session_last_activity_timestamp_seconds",
        "Transcript time of a recent session's newest counted line.",
        labels=["project", "session"],
    )
    for session, (project, first_ts, last_ts, *values) in sorted(ledger.sessions.items()):
        for kind, value in zip(TOKEN_TYPES, values[:4], strict=True):
            tokens.add_metric([project, session, kind], value)
        cost.add_metric([project, session], values[4])
        first.add_metric([project, session], first_ts)
        last.add_metric([project, session], last_ts)
    yield from (tokens, cost, first, last)
