"""Token ledgers of agent CLIs other than Claude Code (one reader each, see readers.py).

Each reader turns one agent's session files into `AgentUsage` records, one per API response,
in the Claude ledger's four token types; see `base`. The `agent-ledger` sentinel declared here
counts them once per response key in its own database (ledger.py, store.py) and publishes the
token ledger's families with an `agent` label (main.py); readers are plugged in in readers.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentwatch.core.config import Key, duration, int_range, string_list
from agentwatch.sentinels.agent_ledger.readers import READERS, plugged
from agentwatch.sentinels.contract import Context, Sentinel

if TYPE_CHECKING:
    from agentwatch.core.loop import Work


def agent_names(value: Any) -> list[str]:
    """Agents whose readers exist, each once."""
    names = string_list(value)
    known = plugged()
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"no reader for {', '.join(unknown)} (known: {', '.join(known)})")
    return list(dict.fromkeys(names))


def _build(context: Context) -> Work:
    from agentwatch.sentinels.agent_ledger.main import build

    return build(context)


SENTINEL = Sentinel(
    name="agent-ledger",
    summary="tokens and cost of the other agent CLIs (docs/agents) from their session files",
    interval=30.0,
    keys={
        "agents": Key(
            [plug.agent for plug in READERS], agent_names, "agents whose session files are read"
        ),
        "session_ttl": Key(7200.0, duration, "per-session series expire this long after activity"),
        "max_projects": Key(
            50,
            int_range(1, 1_000_000),
            "projects per agent with series of their own; the rest show as other",
        ),
        "max_models": Key(
            25,
            int_range(1, 1_000_000),
            "models per agent with series of their own; the rest show as other",
        ),
        "max_sessions": Key(
            100,
            int_range(1, 1_000_000),
            "recent sessions per agent with series of their own (the rest: other)",
        ),
    },
    metrics=(
        "agentwatch_tokens_total",
        "agentwatch_cost_usd_total",
        "agentwatch_api_responses_total",
        "agentwatch_session_tokens_total",
        "agentwatch_session_cost_usd_total",
        "agentwatch_session_first_activity_timestamp_seconds",
        "agentwatch_session_last_activity_timestamp_seconds",
        "agentwatch_spend_usd",
        "agentwatch_agent_ledger_files_tracked",
        "agentwatch_agent_ledger_records_rejected_total",
        "agentwatch_agent_ledger_unpriced_tokens_total",
        "agentwatch_agent_ledger_read_errors_total",
        "agentwatch_agent_ledger_folded_series",
    ),
    build=_build,
)
