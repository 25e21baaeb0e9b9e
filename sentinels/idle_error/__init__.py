"""Idle-error: classify the live tail of each agent tmux pane (working, idle, stalled)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentwatch.core.config import Key, duration, positive_int
from agentwatch.sentinels.contract import Context, Sentinel

if TYPE_CHECKING:
    from agentwatch.core.loop import Work


def _build(context: Context) -> Work:
    from agentwatch.sentinels.idle_error.main import IdleError

    return IdleError(context)


SENTINEL = Sentinel(
    name="idle-error",
    summary="the state of each agent's tmux pane: working, idle, or stalled on an error or "
    "a prompt",
    interval=10.0,
    keys={
        "capture_rows": Key(45, positive_int, "rows of each pane's tail captured"),
        "window_lines": Key(20, positive_int, "last non-empty lines a stall may fire from"),
        "settle_time": Key(20.0, duration, "a throttle fires once the tail is unchanged this long"),
    },
    metrics=(
        "agentwatch_pane_state",
        "agentwatch_pane_state_since_timestamp_seconds",
        "agentwatch_pane_match_info",
        "agentwatch_pane_usage_limit_reset_timestamp_seconds",
        "agentwatch_panes",
        "agentwatch_pane_classifications_total",
        "agentwatch_pane_suppressed_total",
        "agentwatch_idle_error_capture_errors_total",
        "agentwatch_idle_error_state_rejected_total",
        "agentwatch_idle_error_tmux_failing",
    ),
    build=_build,
)
