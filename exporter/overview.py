"""The front page's facts: the merged spool families boiled down to what a person reads.

Only figures and identifiers leave this module (costs, tokens, times, states, session ids,
project and model names as the sentinels already label them); no text of prompts or panes is
ever in the spool, so none can reach the page. Rendering is overview_html's job.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from prometheus_client.metrics_core import Metric

from agentwatch.exporter.collector import SentinelHealth
from agentwatch.exporter.remote import Remote

PERIODS = ("day", "week", "month", "run")
TOKEN_TYPES = ("input", "output", "cache_read", "cache_creation")
MAX_SESSIONS = 30  # rows of the sessions table (most recent activity first)

Labels = dict[str, str]


@dataclass
class Quota:
    """One quota window: how much is used and when it resets, and where that comes from."""

    window: str
    used: float | None  # 0-1, None when unknown
    resets: float | None
    source: str  # "official", "estimated" or "stated"
    detail: str
    read_at: float | None = None  # when the official reading was taken


@dataclass
class Session:
    """One session's row on the front page."""

    agent: str
    project: str
    session: str
    state: str = ""
    since: float | None = None
    last: float | None = None
    tokens: dict[str, float] = field(default_factory=dict)
    cost: float | None = None
    mode: str = ""


@dataclass
class Overview:
    """What the front page shows, read from the spool at one moment."""

    now: float
    spend: dict[str, dict[str, float]]  # agent -> period -> USD
    run_started: float | None
    models: list[tuple[str, str, float, float]]  # agent, model, USD, tokens (ledger totals)
    budget: tuple[float, float | None, str] | None  # limit, spent, period
    quotas: list[Quota]
    sessions: list[Session]
    panes: dict[str, float]  # tmux panes per state (idle-error)
    controller: dict[str, float]  # the controller's own gauges, when its file is there
    health: list[SentinelHealth]
    remote: Remote

    @property
    def spend_totals(self) -> dict[str, float]:
        totals: dict[str, float] = defaultdict(float)
        for periods in self.spend.values():
            for period, value in periods.items():
                totals[period] += value
        return dict(totals)


def series(families: Iterable[Metric]) -> dict[str, list[tuple[Labels, float]]]:
    """Every sample by its name (counters as `_total`), labels as a plain dict."""
    found: dict[str, list[tuple[Labels, float]]] = defaultdict(list)
    for family in families:
        for sample in family.samples:
            found[sample.name].append((dict(sample.labels), float(sample.value)))
    return found


def _one(found: dict[str, list[tuple[Labels, float]]], name: str) -> float | None:
    values = found.get(name)
    return values[0][1] if values else None


def build(
    families: Iterable[Metric], health: list[SentinelHealth], remote: Remote, now: float
) -> Overview:
    found = series(families)
    spend: dict[str, dict[str, float]] = defaultdict(dict)
    for labels, value in found.get("agentwatch_spend_usd", []):
        spend[labels.get("agent", "claude")][labels.get("period", "")] = value
    return Overview(
        now=now,
        spend=dict(sorted(spend.items())),
        run_started=_one(found, "agentwatch_run_started_timestamp_seconds"),
        models=_models(found),
        budget=_budget(found),
        quotas=_quotas(found),
        sessions=_sessions(found),
        panes={
            labels.get("state", ""): value for labels, value in found.get("agentwatch_panes", [])
        },
        controller=_controller(found),
        health=health,
        remote=remote,
    )


def _models(found: dict[str, list[tuple[Labels, float]]]) -> list[tuple[str, str, float, float]]:
    cost: dict[tuple[str, str], float] = defaultdict(float)
    tokens: dict[tuple[str, str], float] = defaultdict(float)
    for labels, value in found.get("agentwatch_cost_usd_total", []):
        cost[(labels.get("agent", ""), labels.get("model", ""))] += value
    for labels, value in found.get("agentwatch_tokens_total", []):
        tokens[(labels.get("agent", ""), labels.get("model", ""))] += value
    keys = sorted(set(cost) | set(tokens), key=lambda key: (-cost.get(key, 0.0), key))
    return [
        (agent, model, cost.get((agent, model), 0.0), tokens[(agent, model)])
        for agent, model in keys
    ]


def _budget(found: dict[str, list[tuple[Labels, float]]]) -> tuple[float, float | None, str] | None:
    limits = found.get("agentwatch_budget_limit_usd")
    if not limits:
        return None
    spent = found.get("agentwatch_budget_spent_usd", [])
    period = spent[0][0].get("period", "") if spent else ""
    return limits[0][1], spent[0][1] if spent else None, period


def _quotas(found: dict[str, list[tuple[Labels, float]]]) -> list[Quota]:
    """Claude Code's own windows first (official), then what agentwatch estimates or a
    message states."""
    quotas = []
    resets = {
        labels.get("window", ""): value
        for labels, value in found.get("agentwatch_quota_resets_timestamp_seconds", [])
    }
    reading = _one(found, "agentwatch_quota_reading_timestamp_seconds")
    detail = "Claude Code's statusline"
    for labels, value in sorted(found.get("agentwatch_quota_used_ratio", []), key=_by("window")):
        window = labels.get("window", "")
        quotas.append(Quota(window, value, resets.get(window), "official", detail, reading))
    model_resets = {
        labels.get("model", ""): value
        for labels, value in found.get("agentwatch_quota_model_resets_timestamp_seconds", [])
    }
    for labels, value in sorted(
        found.get("agentwatch_quota_model_used_ratio", []), key=_by("model")
    ):
        model = labels.get("model", "")
        reset = model_resets.get(model)
        quotas.append(Quota(f"weekly {model}", value, reset, "official", detail, reading))
    block_end = _one(found, "agentwatch_block_end_timestamp_seconds")
    block_tokens = _one(found, "agentwatch_block_tokens")
    if block_end is not None and block_tokens is not None:
        limits = found.get("agentwatch_block_limit_tokens", [])
        used = block_tokens / limits[0][1] if limits and limits[0][1] > 0 else None
        source = limits[0][0].get("source", "") if limits else ""
        how = {"config": "of the configured limit", "max_block": "of the largest past block"}
        detail = f"{block_tokens:,.0f} tokens in the 5-hour block"
        if source in how:
            detail += f", {how[source]}"
        quotas.append(Quota("5-hour block", used, block_end, "estimated", detail))
    stated = _one(found, "agentwatch_usage_limit_reset_timestamp_seconds")
    if stated is not None:
        quotas.append(Quota("usage limit", None, stated, "stated", "a usage-limit message"))
    return quotas


def _by(name: str) -> Callable[[tuple[Labels, float]], str]:
    return lambda item: item[0].get(name, "")


def _sessions(found: dict[str, list[tuple[Labels, float]]]) -> list[Session]:
    """Ledger sessions (tokens, cost, activity) joined with Claude Code's hook states."""
    sessions: dict[tuple[str, str], Session] = {}

    def get(labels: Labels, agent: str = "claude") -> Session:
        key = (labels.get("project", ""), labels.get("session", ""))
        if key not in sessions:
            sessions[key] = Session(labels.get("agent", agent), key[0], key[1])
        return sessions[key]

    for labels, value in found.get("agentwatch_session_tokens_total", []):
        entry = get(labels)
        kind = labels.get("type", "")
        entry.tokens[kind] = entry.tokens.get(kind, 0.0) + value
    for labels, value in found.get("agentwatch_session_cost_usd_total", []):
        get(labels).cost = value
    for labels, value in found.get("agentwatch_session_last_activity_timestamp_seconds", []):
        get(labels).last = value
    for labels, value in found.get("agentwatch_claude_session_state", []):
        if value == 1:
            get(labels).state = labels.get("state", "")
    for labels, value in found.get("agentwatch_claude_session_state_since_timestamp_seconds", []):
        get(labels).since = value
    for labels, value in found.get("agentwatch_claude_session_last_event_timestamp_seconds", []):
        entry = get(labels)
        entry.last = max(entry.last or 0.0, value)
    for labels, _ in found.get("agentwatch_claude_session_info", []):
        get(labels).mode = labels.get("mode", "")
    for labels, value in found.get("agentwatch_claude_session_cost_usd", []):
        entry = get(labels)
        if entry.cost is None:
            entry.cost = value  # Claude Code's own figure when the ledger has none
    ordered = sorted(sessions.values(), key=lambda s: (-(s.last or 0.0), s.session))
    return [s for s in ordered if s.session != "other"][:MAX_SESSIONS]


CONTROLLER_GAUGES = (
    "agentwatch_controller_effective_max_agents",
    "agentwatch_controller_max_agents",
    "agentwatch_controller_paused",
    "agentwatch_controller_should_stop",
)


def _controller(found: dict[str, list[tuple[Labels, float]]]) -> dict[str, float]:
    known = {name: _one(found, name) for name in CONTROLLER_GAUGES}
    return {
        name.removeprefix("agentwatch_controller_"): v for name, v in known.items() if v is not None
    }
