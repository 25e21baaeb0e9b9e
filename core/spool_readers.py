"""The one place outside a sentinel that names its spool file: which file holds which family.

docs/ARCHITECTURE.md: the controller knows the sentinels only through their metrics. A
sentinel declares the families it writes (`SENTINEL.metrics`, docs/metrics.md); this module is
the readers' half of that contract: the spool files other components read (the controller's
budget guard and nudge, `agentwatch status` and `mcp`, the otel sentinel's reconciliation), the
families they read from each (`READS`), and the reads themselves. Outside this module and the
sentinel's own package no module names a sentinel's spool file, and every family read here is
one its sentinel declares: tests/test_layers.py checks both.

Reading the files (not Prometheus) keeps the guard and the nudge working while Prometheus is
down; the files are what the exporter serves, in the format of `core/spool.py`.
"""

from __future__ import annotations

from pathlib import Path

from agentwatch.core import bounded, spool

# The spool files read outside their writer, by the writer's name (`<name>.prom`).
TOKEN_LEDGER = "token-ledger"  # what Claude Code spent, its 5-hour block, its sessions
AGENT_LEDGER = "agent-ledger"  # what the other agent CLIs spent (optional)
OTEL = "otel"  # Claude Code sessions that wrote no transcript (optional; never counted twice)
IDLE_ERROR = "idle-error"  # what each tmux pane does now
CLAUDE_SESSIONS = "claude-sessions"  # the hooks' state of each session, the quota reading
RESOURCES = "resources"  # the agent sessions running
CONTROLLER = "controller"  # the controller's own file (not a sentinel): its tasks' deadlines

SPEND = "agentwatch_spend_usd"  # {period}, in each of SPEND_FILES
SPEND_FILES = (TOKEN_LEDGER, AGENT_LEDGER, OTEL)
SESSION_TOKENS = "agentwatch_session_tokens_total"
PANE_STATE = "agentwatch_pane_state"  # a state set: {tmux_session, pane, state} = 1
CLAUDE_SESSION_STATE = "agentwatch_claude_session_state"  # a state set: {session, project}
CLAUDE_SESSION_INFO = "agentwatch_claude_session_info"  # {session, project, pane}
SINCE = "_since_timestamp_seconds"  # a state set's companion: when the state began

# What is read from each sentinel's file (names as served), so a renamed or dropped family
# fails tests/test_layers.py instead of silently reading nothing.
READS: dict[str, tuple[str, ...]] = {
    TOKEN_LEDGER: (
        SPEND, SESSION_TOKENS, "agentwatch_block_tokens", "agentwatch_block_limit_tokens",
        "agentwatch_block_start_timestamp_seconds", "agentwatch_block_end_timestamp_seconds",
        "agentwatch_session_cost_usd_total", "agentwatch_session_deadline_timestamp_seconds",
        "agentwatch_session_first_activity_timestamp_seconds",
        "agentwatch_session_last_activity_timestamp_seconds",
    ),
    AGENT_LEDGER: (SPEND,),
    OTEL: (SPEND,),
    IDLE_ERROR: (PANE_STATE, PANE_STATE + SINCE),
    CLAUDE_SESSIONS: (
        CLAUDE_SESSION_STATE, CLAUDE_SESSION_STATE + SINCE, CLAUDE_SESSION_INFO,
        "agentwatch_quota_used_ratio", "agentwatch_quota_resets_timestamp_seconds",
        "agentwatch_quota_reading_timestamp_seconds",
    ),
    RESOURCES: ("agentwatch_agent_sessions",),
}  # fmt: skip

Samples = list[tuple[str, dict[str, str], float]]


def path(spool_dir: Path, sentinel: str) -> Path:
    """Where `sentinel` (one of the names above) writes its file."""
    return spool.spool_path(spool_dir, sentinel)


def read_text(spool_dir: Path, sentinel: str) -> str:
    """The file's text through core.bounded. FileNotFoundError, bounded.FileRefused, OSError
    and UnicodeDecodeError are the caller's to judge (a missing optional file is no news)."""
    return bounded.read_text(path(spool_dir, sentinel), bounded.SPOOL_LIMIT)


def samples(spool_dir: Path, sentinel: str) -> Samples:
    """Every sample of the file as (name, labels, value); none when it is missing or unusable."""
    try:
        text = spool.decode(bounded.read_bytes(path(spool_dir, sentinel), bounded.SPOOL_LIMIT))
        families = spool.parse_text(text)
    except (OSError, ValueError):
        return []
    return [(s.name, dict(s.labels), s.value) for family in families for s in family.samples]


def spend_usd(text: str, period: str) -> float | None:
    """agentwatch_spend_usd{period} of one of SPEND_FILES, summed over its agents; None when
    the file lacks it. Raises SpoolParseError when the text is not a valid exposition."""
    values = [
        float(sample.value)
        for family in spool.parse_text(text)
        if family.name == SPEND
        for sample in family.samples
        if sample.labels.get("period") == period and sample.value >= 0
    ]
    return sum(values) if values else None


def session_tokens(text: str, agent: str) -> dict[str, float]:
    """The token ledger's tokens per session of `agent`, summed over models and types.
    Raises SpoolParseError when the text is not a valid exposition."""
    family_name = SESSION_TOKENS.removesuffix("_total")
    totals: dict[str, float] = {}
    for family in spool.parse_text(text):
        if family.name != family_name:
            continue
        for sample in family.samples:
            if sample.labels.get("agent") == agent:
                session = sample.labels.get("session", "")
                totals[session] = totals.get(session, 0.0) + sample.value
    return totals


def pane_state(
    spool_dir: Path, session: str, pane: str, now: float, fresh_for: float
) -> str | None:
    """The pane's state as the idle-error sentinel last wrote it; None when unknown (no file,
    an unusable one, or one older than `fresh_for` seconds: it says nothing about now)."""
    where = path(spool_dir, IDLE_ERROR)
    try:
        if now - where.stat().st_mtime > fresh_for:
            return None
        families = spool.parse_text(bounded.read_text(where, bounded.SPOOL_LIMIT))
    except (OSError, UnicodeDecodeError, spool.SpoolParseError):
        return None
    wanted = {"pane": pane, "tmux_session": session}
    for family in families:
        for sample in family.samples:
            labels = sample.labels
            ours = all(labels.get(key) == value for key, value in wanted.items())
            if sample.name == PANE_STATE and sample.value == 1 and ours:
                return labels.get("state")
    return None
