"""The claude-sessions metric families, built fresh from the table and the snapshots.

Per-session series exist only for the sessions the table keeps (recent, bounded), so an
expired session leaves nothing behind. Labels carry the session id, the project name, the
tool name (bounded by the fold) and the tmux pane id: never any payload text.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from agentwatch.core import bounded, claude_events
from agentwatch.core.sanitize import label_value
from agentwatch.sentinels.claude_sessions.records import REJECT_REASONS
from agentwatch.sentinels.claude_sessions.sessions import STATES, Table
from agentwatch.sentinels.claude_sessions.snapshots import Snapshots

SESSION = ["session", "project"]
MAX_WRITER_REASONS = 20
LOST_REASONS = ("rotated",)


def writer_failures(folder: Path) -> dict[str, int]:
    """counters.json of the writers: what they could not do, by reason (best effort)."""
    try:
        raw = json.loads(
            bounded.read_bytes(folder / claude_events.COUNTERS, 64 * bounded.KiB, follow=False)
        )
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(raw, dict):
        return {}
    found: dict[str, int] = {}
    for reason, count in list(raw.items())[:MAX_WRITER_REASONS]:
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            found[label_value(str(reason), 64)] = count
    return found


def families(
    table: Table,
    snapshots: Snapshots,
    counts: Counter[str],
    writers: dict[str, int],
    state_rejected: int,
    failing: bool,
) -> Iterator[Metric]:
    yield from _session_families(table)
    yield from _snapshot_families(table, snapshots)
    yield from _totals(table, counts, writers, state_rejected)
    yield GaugeMetricFamily(
        "agentwatch_claude_spool_failing",
        "1 while the event spool cannot be read (unreadable, or not a regular file).",
        value=1 if failing else 0,
    )


def _session_families(table: Table) -> Iterator[Metric]:
    state = GaugeMetricFamily(
        "agentwatch_claude_session_state",
        "State of each recent Claude Code session from its hooks: 1 for its state, 0 for "
        "the others.",
        labels=[*SESSION, "state"],
    )
    since = GaugeMetricFamily(
        "agentwatch_claude_session_state_since_timestamp_seconds",
        "When the session entered its current state (hook event time).",
        labels=SESSION,
    )
    last = GaugeMetricFamily(
        "agentwatch_claude_session_last_event_timestamp_seconds",
        "Time of the session's newest hook event.",
        labels=SESSION,
    )
    failure = GaugeMetricFamily(
        "agentwatch_claude_session_failure_info",
        "The StopFailure kind of a failed session (always 1; only while failed).",
        labels=[*SESSION, "kind"],
    )
    info = GaugeMetricFamily(
        "agentwatch_claude_session_info",
        "How the session runs: mode headless (no tmux pane) or tmux, with its pane id.",
        labels=[*SESSION, "mode", "pane"],
    )
    tools = CounterMetricFamily(
        "agentwatch_claude_session_tool_calls",
        'Tool calls of the session by tool (names past max_tools show as "other").',
        labels=[*SESSION, "tool"],
    )
    tool_failures = CounterMetricFamily(
        "agentwatch_claude_session_tool_failures",
        "Tool calls of the session that failed, by tool.",
        labels=[*SESSION, "tool"],
    )
    repeats = CounterMetricFamily(
        "agentwatch_claude_session_tool_repeats",
        "Tool calls of the session (PreToolUse) with the tool name and input of one of its "
        "previous 5 calls: a retry loop repeats itself (only the input's hash is kept).",
        labels=SESSION,
    )
    subagents = CounterMetricFamily(
        "agentwatch_claude_session_subagents",
        "Sub-agents of the session that finished (SubagentStop).",
        labels=SESSION,
    )
    compactions = CounterMetricFamily(
        "agentwatch_claude_session_compactions",
        "Context compactions of the session (PreCompact).",
        labels=SESSION,
    )
    per_state = dict.fromkeys(STATES, 0)
    for key, item in sorted(table.sessions.items()):
        labels = [key, item.project]
        for name in STATES:
            state.add_metric([*labels, name], 1 if name == item.state else 0)
        since.add_metric(labels, item.since)
        last.add_metric(labels, item.last)
        if item.state == "failed":
            failure.add_metric([*labels, item.kind or "unknown"], 1)
        info.add_metric([*labels, "tmux" if item.pane else "headless", item.pane], 1)
        for tool, count in sorted(item.tools.items()):
            tools.add_metric([*labels, tool], count)
            tool_failures.add_metric([*labels, tool], item.tool_failures.get(tool, 0))
        repeats.add_metric(labels, item.repeats)
        subagents.add_metric(labels, item.subagents)
        compactions.add_metric(labels, item.compactions)
        per_state[item.state] += 1
    yield from (state, since, last, failure, info, tools, tool_failures, repeats)
    yield from (subagents, compactions)
    per_state_family = GaugeMetricFamily(
        "agentwatch_claude_sessions", "Recent Claude Code sessions per state.", labels=["state"]
    )
    for name, value in per_state.items():
        per_state_family.add_metric([name], value)
    yield per_state_family


def _snapshot_families(table: Table, snapshots: Snapshots) -> Iterator[Metric]:
    used = GaugeMetricFamily(
        "agentwatch_quota_used_ratio",
        "Share of each rate-limit window used (0-1), from the freshest statusline of any "
        "session (the windows are account-wide).",
        labels=["window"],
    )
    resets = GaugeMetricFamily(
        "agentwatch_quota_resets_timestamp_seconds",
        "When each rate-limit window resets, from the same statusline.",
        labels=["window"],
    )
    reading = GaugeMetricFamily(
        "agentwatch_quota_reading_timestamp_seconds",
        "When the statusline the quota comes from was taken (absent: no reading yet).",
        labels=[],
    )
    quota = snapshots.quota()
    if quota is not None:
        for window, (ratio, at) in sorted(quota.windows.items()):
            if ratio is not None:
                used.add_metric([window], ratio)
            if at is not None:
                resets.add_metric([window], at)
        reading.add_metric([], quota.taken)
    yield from (used, resets, reading)
    model_used = GaugeMetricFamily(
        "agentwatch_quota_model_used_ratio",
        "Share of each per-model weekly window used (0-1), by the model's display name, from "
        "the freshest statusline that has them (rate_limits.model_scoped; at most 8).",
        labels=["model"],
    )
    model_resets = GaugeMetricFamily(
        "agentwatch_quota_model_resets_timestamp_seconds",
        "When each per-model weekly window resets, from the same statusline.",
        labels=["model"],
    )
    models = snapshots.model_quota()
    if models is not None:
        for model, (ratio, at) in sorted(models.models.items()):
            if ratio is not None:
                model_used.add_metric([model], ratio)
            if at is not None:
                model_resets.add_metric([model], at)
    yield from (model_used, model_resets)
    cost = GaugeMetricFamily(
        "agentwatch_claude_session_cost_usd",
        "The session's cost so far as Claude Code's statusline reports it, in USD.",
        labels=SESSION,
    )
    context = GaugeMetricFamily(
        "agentwatch_claude_session_context_used_ratio",
        "Share of the context window the session uses (0-1), from its statusline.",
        labels=SESSION,
    )
    cache = GaugeMetricFamily(
        "agentwatch_claude_session_cache_hit_ratio",
        "Prompt-cache hit ratio of the session (0-1), from its statusline.",
        labels=SESSION,
    )
    cutoff = max((item.last for item in table.sessions.values()), default=0.0)
    cutoff -= table.session_ttl
    recent = sorted(snapshots.latest(), key=lambda item: item.taken, reverse=True)
    recent = [item for item in recent if item.taken >= cutoff][: table.max_sessions]
    for item in sorted(recent, key=lambda item: item.session):
        project = table.sessions[item.session].project if item.session in table.sessions else ""
        labels = [item.session, project or item.project]
        if item.cost_usd is not None:
            cost.add_metric(labels, item.cost_usd)
        if item.context_used_ratio is not None:
            context.add_metric(labels, item.context_used_ratio)
        if item.cache_hit_ratio is not None:
            cache.add_metric(labels, item.cache_hit_ratio)
    yield from (cost, context, cache)


def _totals(
    table: Table, counts: Counter[str], writer_counts: dict[str, int], state_rejected: int
) -> Iterator[Metric]:
    without = CounterMetricFamily(
        "agentwatch_sessions_without_commit",
        "Sessions that ended normally with the git HEAD they started with (no commit), by "
        "project; sessions with an unknown HEAD are not counted.",
        labels=["project"],
    )
    for project, value in sorted(table.without_commit.items()):
        without.add_metric([project], value)
    ended = CounterMetricFamily(
        "agentwatch_claude_sessions_ended",
        "Sessions that ended (SessionEnd), by project.",
        labels=["project"],
    )
    for project, value in sorted(table.ended.items()):
        ended.add_metric([project], value)
    events = CounterMetricFamily(
        "agentwatch_claude_events_read",
        "Hook events read from the spool and applied.",
        value=counts["read"],
    )
    rejected = CounterMetricFamily(
        "agentwatch_claude_events_rejected",
        "Spool lines that were not a valid event, by reason.",
        labels=["reason"],
    )
    for reason in REJECT_REASONS:
        rejected.add_metric([reason], counts[f"rejected.{reason}"])
    spool = CounterMetricFamily(
        "agentwatch_claude_spool_resets",
        "Times the spool was not where it was left: lost (rotated away twice before it was "
        "read to the end) or truncated.",
        labels=["reason"],
    )
    for reason in ("lost", "truncated"):
        spool.add_metric([reason], counts[reason])
    lost = CounterMetricFamily(
        "agentwatch_claude_events_lost",
        "Hook events written to the spool that the sentinel never read, exactly, by reason: "
        "rotated (deleted by the spool's size bound before they were read).",
        labels=["reason"],
    )
    for reason in LOST_REASONS:
        lost.add_metric([reason], counts[f"lost_events.{reason}"])
    writers = CounterMetricFamily(
        "agentwatch_claude_writer_failures",
        "What `agentwatch hook` and `agentwatch statusline` could not do, by reason (their "
        "counters.json).",
        labels=["reason"],
    )
    for reason, value in sorted(writer_counts.items()):
        writers.add_metric([reason], value)
    snapshots_bad = CounterMetricFamily(
        "agentwatch_claude_state_rejected",
        "Times the sentinel's state file was unusable and set aside.",
        value=state_rejected,
    )
    yield from (without, ended, events, rejected, spool, lost, writers, snapshots_bad)
