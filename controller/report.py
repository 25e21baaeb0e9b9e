"""The controller's part of `agentwatch status`: the decision and why, from the state file."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from agentwatch.core.bounded import STATE_LIMIT, read_text

INTERNAL = "internal"


def read_decision(path: Path) -> dict[str, Any] | None:
    """The public decision fields, or None when there is no usable state file (a FIFO, a
    device or a huge file is refused unread; the controller itself sets it aside)."""
    try:
        raw = json.loads(read_text(path, STATE_LIMIT))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(raw, dict) or "max_agents" not in raw:
        return None
    return {key: value for key, value in raw.items() if key != INTERNAL}


def _why(decision: dict[str, Any]) -> str:
    actions = decision.get("actions")
    if not isinstance(actions, dict) or not actions:
        return "no actionable alerts"
    parts: list[str] = []
    for action, names in sorted(actions.items()):
        if isinstance(names, list):
            parts.extend(f"{name} ({action})" for name in names)
    return ", ".join(parts)


def lines(decision: dict[str, Any], path: Path, now: float | None = None) -> list[str]:
    """Human lines for the status table."""
    now = time.time() if now is None else now
    updated = decision.get("updated_at")
    age = f"{max(now - updated, 0.0):.0f}s ago" if isinstance(updated, int | float) else "unknown"
    gates = [
        word
        for word, on in (
            ("paused", decision.get("paused")),
            ("stopping", decision.get("should_stop")),
            (f"breaker {decision.get('breaker')}", decision.get("breaker") != "closed"),
        )
        if on
    ]
    deferred = decision.get("deferred_tiers") or []
    out = [
        f"controller: {path} (updated {age}, mode {decision.get('mode', '?')})",
        f"  max_agents {decision.get('max_agents')} of {decision.get('configured_max_agents')} "
        f"(floor {decision.get('min_agents')}), may run now: "
        f"{decision.get('effective_max_agents')}" + (f" ({', '.join(gates)})" if gates else ""),
        f"  deferred tiers: {', '.join(map(str, deferred)) or 'none'}; fail tasks: "
        f"{', '.join(map(str, decision.get('fail_tasks') or [])) or 'none'}",
        f"  because: {_why(decision)}",
    ]
    return out


def attach(items: list[dict[str, Any]], decision: dict[str, Any] | None) -> None:
    """Add the decision to the controller's entry of `status --json` (the list stays a list)."""
    if decision is None:
        return
    for item in items:
        if item.get("sentinel") == "controller":
            item["decision"] = decision
