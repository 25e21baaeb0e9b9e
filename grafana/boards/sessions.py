"""The Sessions dashboard: burners and spenders, API errors, agent pane states and the
Claude Code sessions seen through their hooks and OpenTelemetry."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row

from agentwatch.grafana.panels import (
    PANE,
    SESSION,
    Panel,
    bargauge,
    counts_now_and_over_time,
    dashboard,
    label_variable,
    mapping,
    stat,
    state_timeline,
    table,
    timeseries,
)
from agentwatch.grafana.queries import (
    FRESH,
    PANE_STATES,
    PROJECT,
    Query,
    age,
    gauge_by,
    gauges_by,
    hourly,
    increase,
    legend_for,
    level,
    millis,
    per_host,
    rate,
    sel,
    sort_desc,
    target,
    topk,
    when,
)


def _pane_state_index() -> str:
    """Each pane's current state as its number in PANE_STATES (1-based), for a timeline."""
    parts = [
        sel("agentwatch_pane_state", f'state="{state}"') + f" * {number}"
        for number, state in enumerate(PANE_STATES, start=1)
    ]
    return f"sum by ({per_host(PANE)}) (" + " or ".join(parts) + ")"


def _time_in_state() -> str:
    """Seconds each pane not working has been in its state, labelled with that state."""
    since = age("agentwatch_pane_state_since_timestamp_seconds", by=PANE)
    current = gauge_by("agentwatch_pane_state", 'state!="working"', by=f"{PANE}, state")
    return f"({since}) * on ({per_host(PANE)}) group_left (state) ({current} == 1)"


# Claude Code session states of the claude-sessions sentinel (docs/metrics.md), numbered for
# the timeline like the pane states.
CLAUDE_STATES = {
    "working": "green",
    "waiting_for_permission": "yellow",
    "waiting_for_input": "blue",
    "idle": "light-blue",
    "compacting": "purple",
    "ended": "text",
    "failed": "red",
}
CLAUDE_SESSION = "session, project"  # a Claude Code session of the claude-sessions sentinel


def _claude_state_index() -> str:
    """Each Claude Code session's current state as its number in CLAUDE_STATES (1-based)."""
    parts = [
        sel("agentwatch_claude_session_state", f'state="{state}"') + f" * {number}"
        for number, state in enumerate(CLAUDE_STATES, start=1)
    ]
    return f"sum by ({per_host(CLAUDE_SESSION)}) (" + " or ".join(parts) + ")"


def _claude_time_in_state() -> str:
    """Seconds each Claude Code session has been in its hook state, labelled with that state."""
    since = age(
        "agentwatch_claude_session_state_since_timestamp_seconds", PROJECT, by=CLAUDE_SESSION
    )
    current = gauge_by("agentwatch_claude_session_state", PROJECT, by=f"{CLAUDE_SESSION}, state")
    return f"({since}) * on ({per_host(CLAUDE_SESSION)}) group_left (state) ({current} == 1)"


def _claude_pane_state() -> str:
    """What the pane of each Claude Code session in tmux shows (idle-error), as the pane
    state's number (mapped to its name in the table): the second source of its state."""
    info = gauge_by(
        "agentwatch_claude_session_info", PROJECT, 'mode="tmux"', by=f"{CLAUDE_SESSION}, pane"
    )
    joined = f"{info} * on ({per_host('pane')}) group_left () ({_pane_state_index()})"
    return f"max by ({per_host(CLAUDE_SESSION + ', pane')}) ({joined})"


def claude_sessions_panels() -> list[Panel]:
    """The Claude Code sessions as their own hooks and statusline report them."""
    numbers = {n: (state, color) for n, (state, color) in enumerate(CLAUDE_STATES.items(), 1)}
    pane_numbers = {n: (state, color) for n, (state, color) in enumerate(PANE_STATES.items(), 1)}
    session = gauges_by(PROJECT, by=CLAUDE_SESSION)
    return [
        *counts_now_and_over_time(
            level("agentwatch_claude_sessions", by="state", how="sum"),
            now=(
                "Claude Code sessions by state",
                "Recent Claude Code sessions (headless ones too) by the state their hooks report.",
            ),
            over_time=("Claude Code sessions by state over time", "Recent sessions per state."),
        ),
        state_timeline(
            "Claude Code session states",
            "Each recent Claude Code session's state over time, from its hook events.",
            target(_claude_state_index(), legend_for(CLAUDE_SESSION)),
            mapping(numbers),
        ),
        table(
            "Claude Code sessions: hooks and pane",
            "One row per recent session: the state its hooks report and for how long, what its "
            "tmux pane shows where it has one (the idle-error classifier: a stall there wins "
            "over the hooks, as in `agentwatch status`), and its statusline figures.",
            [
                (_claude_time_in_state(), "in hook state for", "s"),
                (_claude_pane_state(), "pane shows", "short"),
                (session("agentwatch_claude_session_cost_usd"), "cost (statusline)", "currencyUSD"),
                (
                    session("agentwatch_claude_session_context_used_ratio"),
                    "context used",
                    "percentunit",
                ),
                (
                    session("agentwatch_claude_session_cache_hit_ratio"),
                    "cache hits",
                    "percentunit",
                ),
            ],
            sort_by="in hook state for",
            mappings={"pane shows": mapping(pane_numbers)},
        ),
        timeseries(
            "Tool calls per hour by tool",
            "Tool calls of all recent Claude Code sessions (PostToolUse), by tool.",
            hourly("agentwatch_claude_session_tool_calls_total", PROJECT, by="tool"),
            bars=True,
        ),
        timeseries(
            "Tool failures per hour by tool",
            "Tool calls that failed, by tool.",
            hourly("agentwatch_claude_session_tool_failures_total", PROJECT, by="tool"),
            bars=True,
        ),
        timeseries(
            "Repeated tool calls per hour by session",
            "Tool calls with the tool and input of one of the session's previous 5 calls "
            "(PreToolUse; only the input's hash is kept): a retry loop repeats itself.",
            hourly("agentwatch_claude_session_tool_repeats_total", PROJECT, by=CLAUDE_SESSION),
            bars=True,
        ),
        bargauge(
            "Sessions repeating their tool calls over the range",
            "The ten sessions with the most repeated tool calls over the dashboard's range.",
            target(
                sort_desc(
                    topk(
                        increase(
                            "agentwatch_claude_session_tool_repeats_total",
                            PROJECT,
                            by=CLAUDE_SESSION,
                        )
                    )
                ),
                legend_for(CLAUDE_SESSION),
            ),
            w=12,
        ),
        bargauge(
            "Sessions ended without a commit over the range",
            "Sessions that ended normally with the git HEAD they started with, by project "
            "(an unknown HEAD is never counted); the info alert fires on each.",
            target(
                sort_desc(
                    increase("agentwatch_sessions_without_commit_total", PROJECT, by="project")
                ),
                "{{project}}",
            ),
            w=12,
        ),
        bargauge(
            "Official quota used by window",
            "Claude Code's own rate-limit windows (five_hour, seven_day, ...) from the freshest "
            "statusline of a subscription session; empty for API-key sessions.",
            level("agentwatch_quota_used_ratio", by="window"),
            "percentunit",
            w=6,
        ),
        stat(
            "Quota reading age",
            "How old the statusline reading the quota comes from is.",
            target(age("agentwatch_quota_reading_timestamp_seconds")),
            "s",
            w=6,
            h=8,
            no_value="no reading yet",
        ),
    ]


def otel_panels() -> list[Panel]:
    """Claude Code's own telemetry (the otel sentinel): latency, errors, tools, reconciliation."""

    def p95(metric: str) -> Query:
        buckets = rate(metric + "_bucket", by="model, le")
        return target(f"histogram_quantile(0.95, {buckets})", "{{model}} p95")

    return [
        timeseries(
            "API duration p95 by model (OTel)",
            "The 95th percentile of API request durations by model, from Claude Code's own "
            "api_request and api_error events (every session with telemetry on, headless too).",
            p95("agentwatch_otel_api_duration_seconds"),
            "s",
        ),
        timeseries(
            "Time to first token p95 by model (OTel)",
            "The 95th percentile of the time until the first token of each API response.",
            p95("agentwatch_otel_api_ttft_seconds"),
            "s",
        ),
        timeseries(
            "API errors by status code (OTel)",
            "API errors per hour by HTTP status code (429 rate limited, 529 overloaded), as "
            "Claude Code reports them; headless sessions included.",
            hourly("agentwatch_otel_api_errors_total", by="status_code"),
            bars=True,
            w=8,
        ),
        timeseries(
            "Tool results by tool (OTel)",
            "Tool runs per hour by tool and success, from Claude Code's tool_result events.",
            hourly("agentwatch_otel_tool_results_total", by="tool, success"),
            bars=True,
            w=8,
        ),
        timeseries(
            "Sessions by transcript (OTel)",
            "Sessions the OTel receiver tracks: with a transcript (counted by the token ledger), "
            "without one (headless, --no-session-persistence: counted from OTel with "
            'source="otel"), and not classified yet.',
            level("agentwatch_otel_sessions", by="state", how="sum"),
            w=8,
        ),
        timeseries(
            "OTel and ledger disagreement by session",
            "Per session with a transcript: how far Claude Code's own token count and the token "
            "ledger's are apart (0 = they agree; above 5 % for 15 minutes alerts).",
            level("agentwatch_otel_ledger_disagreement_ratio", by="session"),
            "percentunit",
            w=24,
        ),
    ]


def sessions() -> Dashboard:
    tokens = ("agentwatch_session_tokens_total", PROJECT, FRESH)
    cost = ("agentwatch_session_cost_usd_total", PROJECT)
    session = gauges_by(PROJECT, by=SESSION)
    burn = [
        bargauge(
            "Top burners: fresh tokens over the range",
            "The ten sessions with the most input, output and cache-creation tokens over the "
            "dashboard's time range.",
            target(topk(increase(*tokens, by=SESSION)), legend_for(SESSION)),
            w=12,
        ),
        bargauge(
            "Top spenders: cost over the range",
            "The ten sessions that cost the most over the dashboard's time range.",
            target(topk(increase(*cost, by=SESSION)), legend_for(SESSION)),
            "currencyUSD",
            w=12,
        ),
        timeseries(
            "Fresh tokens per hour by session",
            "Input, output and cache-creation token rate per session; the dashed line is the burn "
            "floor below which a session never pages (thresholds.burn_floor_tokens_per_hour).",
            hourly(*tokens, by=SESSION),
            limit=("burn_floor_tokens_per_hour", "burn floor"),
        ),
        timeseries(
            "Spend per hour by session",
            "Cost rate per recently active session.",
            hourly(*cost, by=SESSION),
            "currencyUSD",
        ),
        table(
            "Recently active sessions",
            "Sessions the ledger saw recently (series expire after token-ledger session_ttl), with "
            "what they used over the range.",
            [
                (
                    millis(session("agentwatch_session_last_activity_timestamp_seconds")),
                    "last activity",
                    "dateTimeFromNow",
                ),
                (
                    millis(session("agentwatch_session_first_activity_timestamp_seconds")),
                    "first activity",
                    "dateTimeFromNow",
                ),
                (increase(*tokens, by=SESSION), "fresh tokens (range)", "short"),
                (increase(*cost, by=SESSION), "cost (range)", "currencyUSD"),
            ],
            sort_by="cost (range)",
        ),
    ]
    errors = [
        timeseries(
            "API errors per hour by kind",
            "API error lines in transcripts (rate_limit, overloaded, usage_limit, server_error, "
            "other).",
            hourly("agentwatch_api_errors_total", PROJECT, by="kind"),
            bars=True,
        ),
        timeseries(
            "API error ratio by project",
            "API errors per API response over 10 minutes (the window of the alert); the dashed "
            "line is thresholds.error_ratio, above which concurrency shrinks.",
            target(
                rate("agentwatch_api_errors_total", PROJECT, by="project", window="10m")
                + " / "
                + rate("agentwatch_api_responses_total", PROJECT, by="project", window="10m"),
                "{{project}}",
            ),
            "percentunit",
            limit=("error_ratio", "shrink above"),
        ),
        bargauge(
            "API errors over the range by project and kind",
            "API error lines over the dashboard's time range.",
            target(
                sort_desc(increase("agentwatch_api_errors_total", PROJECT, by="project, kind")),
                "{{project}} {{kind}}",
            ),
            w=12,
        ),
        stat(
            "Last API error by kind",
            "When the newest API error of each kind was written; the breaker stays open "
            "thresholds.rate_limit_cooldown_seconds after a rate-limit or overload.",
            when("agentwatch_api_error_last_timestamp_seconds", by="kind"),
            "dateTimeFromNow",
            w=12,
            h=8,
            text_mode="value_and_name",
            no_value="no API error yet",
        ),
    ]
    state_numbers = {
        n: (state, color) for n, (state, color) in enumerate(PANE_STATES.items(), start=1)
    }
    panes = [
        *counts_now_and_over_time(
            level("agentwatch_panes", by="state", how="sum"),
            now=(
                "Agent panes by state",
                "Live agent panes in tmux by the state the idle-error sentinel reads from their "
                "screen.",
            ),
            over_time=("Agent panes by state over time", "Live agent panes per state."),
        ),
        state_timeline(
            "Pane states",
            "Each agent pane's state over time.",
            target(_pane_state_index(), legend_for(PANE)),
            mapping(state_numbers),
        ),
        table(
            "Panes not working",
            "Agent panes in any state but working, and for how long; a stall longer than "
            "thresholds.stall_seconds alerts (and may be nudged).",
            [(_time_in_state(), "in this state for", "s")],
            sort_by="in this state for",
        ),
    ]
    return dashboard(
        "agentwatch-sessions",
        "agentwatch / Sessions",
        "Which sessions burn tokens and money, API errors, what each agent pane is doing, and "
        "each Claude Code session's state from its own hooks.",
        [label_variable("project", "Project", "agentwatch_session_cost_usd_total")],
        [
            Row("Burners"),
            *burn,
            Row("API errors"),
            *errors,
            Row("Panes"),
            *panes,
            Row("Claude Code sessions (hooks)"),
            *claude_sessions_panels(),
            Row("Claude Code telemetry (OTel)"),
            *otel_panels(),
        ],
    )
