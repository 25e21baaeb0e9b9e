"""Claude-sessions: each Claude Code session's state, tools and quota, from its own hooks and
statusline (`agentwatch hook`, `agentwatch statusline`), also for headless runs without a pane."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentwatch.core.config import Key, duration, int_range
from agentwatch.sentinels.contract import Context, Sentinel

if TYPE_CHECKING:
    from agentwatch.core.loop import Work


def _build(context: Context) -> Work:
    from agentwatch.sentinels.claude_sessions.main import ClaudeSessions

    return ClaudeSessions(context)


SENTINEL = Sentinel(
    name="claude-sessions",
    summary="Claude Code sessions from their hook events and statusline: state, tools, "
    "commit-completion, official quota",
    interval=15.0,
    keys={
        "session_ttl": Key(7200.0, duration, "per-session series expire this long after activity"),
        "max_sessions": Key(
            100, int_range(1, 100_000), "recent sessions with series of their own (newest kept)"
        ),
        "max_tools": Key(
            40, int_range(1, 10_000), 'tool names with series of their own; the rest: "other"'
        ),
        "max_projects": Key(
            50, int_range(1, 100_000), 'projects with series of their own; the rest: "other"'
        ),
    },
    metrics=(
        "agentwatch_claude_session_state",
        "agentwatch_claude_session_state_since_timestamp_seconds",
        "agentwatch_claude_session_last_event_timestamp_seconds",
        "agentwatch_claude_session_failure_info",
        "agentwatch_claude_session_info",
        "agentwatch_claude_session_tool_calls_total",
        "agentwatch_claude_session_tool_failures_total",
        "agentwatch_claude_session_tool_repeats_total",
        "agentwatch_claude_session_subagents_total",
        "agentwatch_claude_session_compactions_total",
        "agentwatch_claude_sessions",
        "agentwatch_quota_used_ratio",
        "agentwatch_quota_resets_timestamp_seconds",
        "agentwatch_quota_reading_timestamp_seconds",
        "agentwatch_quota_model_used_ratio",
        "agentwatch_quota_model_resets_timestamp_seconds",
        "agentwatch_claude_session_cost_usd",
        "agentwatch_claude_session_context_used_ratio",
        "agentwatch_claude_session_cache_hit_ratio",
        "agentwatch_sessions_without_commit_total",
        "agentwatch_claude_sessions_ended_total",
        "agentwatch_claude_events_read_total",
        "agentwatch_claude_events_rejected_total",
        "agentwatch_claude_spool_resets_total",
        "agentwatch_claude_events_lost_total",
        "agentwatch_claude_writer_failures_total",
        "agentwatch_claude_state_rejected_total",
        "agentwatch_claude_spool_failing",
    ),
    build=_build,
)
