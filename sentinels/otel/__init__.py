"""OTel: Claude Code's own OpenTelemetry export (metrics and events over OTLP/HTTP), received
on 127.0.0.1, folded into bounded families and reconciled with the token ledger; it counts the
sessions that write no transcript (headless, `--no-session-persistence`) exactly once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentwatch.core.config import Key, duration, int_range, listen_address
from agentwatch.sentinels.contract import Context, Sentinel

if TYPE_CHECKING:
    from agentwatch.core.loop import Work

DEFAULT_LISTEN = "127.0.0.1:9853"


def _build(context: Context) -> Work:
    from agentwatch.sentinels.otel.main import Otel

    return Otel(context)


SENTINEL = Sentinel(
    name="otel",
    summary="Claude Code's own OpenTelemetry export: latency, API errors by status, tools, "
    "and the sessions without a transcript",
    interval=15.0,
    keys={
        "listen": Key(DEFAULT_LISTEN, listen_address, "OTLP/HTTP receiver address (HOST:PORT)"),
        "grace": Key(
            60.0, duration, "seconds after a session's first usage before it is classified"
        ),
        "session_ttl": Key(7200.0, duration, "sessions are forgotten this long after activity"),
        "max_sessions": Key(
            1000, int_range(1, 1_000_000), "sessions tracked at once (the least recent evicted)"
        ),
        "max_shown_sessions": Key(
            100, int_range(1, 100_000), "sessions with a disagreement ratio series of their own"
        ),
        "max_models": Key(25, int_range(1, 10_000), 'models with series; the rest: "other"'),
        "max_tools": Key(40, int_range(1, 10_000), 'tool names with series; the rest: "other"'),
    },
    metrics=(
        "agentwatch_tokens_total",
        "agentwatch_cost_usd_total",
        "agentwatch_api_responses_total",
        "agentwatch_api_errors_total",
        "agentwatch_spend_usd",
        "agentwatch_otel_tokens_total",
        "agentwatch_otel_cost_usd_total",
        "agentwatch_otel_api_requests_total",
        "agentwatch_otel_api_errors_total",
        "agentwatch_otel_tool_results_total",
        "agentwatch_otel_tool_decisions_total",
        "agentwatch_otel_code_edit_decisions_total",
        "agentwatch_otel_active_seconds_total",
        "agentwatch_otel_lines_of_code_total",
        "agentwatch_otel_commits_total",
        "agentwatch_otel_pull_requests_total",
        "agentwatch_otel_sessions_started_total",
        "agentwatch_otel_api_duration_seconds",
        "agentwatch_otel_api_ttft_seconds",
        "agentwatch_otel_ledger_disagreement_ratio",
        "agentwatch_otel_sessions",
        "agentwatch_otel_requests_total",
        "agentwatch_otel_rejected_total",
        "agentwatch_otel_points_total",
        "agentwatch_otel_sessions_evicted_total",
    ),
    build=_build,
)
