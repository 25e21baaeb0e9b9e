"""One state per Claude Code session for `agentwatch status`: the hooks' state
(claude-sessions) merged with the pane classifier's (idle-error) where the session has a pane.

Hooks are authoritative for what they see directly — a permission ask, a compaction, a failure,
the end. What they cannot see is a session stuck at its prompt on an API error or a usage
limit between two hook events: there, when the session's pane shows a stall, the pane's state
wins. Panes no hook session claims (hooks not installed, another agent CLI) are shown on their
own. Each row says where its state came from.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentwatch.core import spool_readers

# The two spool files merged here, named where every outside reader finds them.
HOOK_SENTINEL, PANE_SENTINEL = spool_readers.CLAUDE_SESSIONS, spool_readers.IDLE_ERROR
PANE_CALM = frozenset({"working", "idle"})  # the pane states that are not stalls
HOOK_DIRECT = frozenset({"waiting_for_permission", "compacting", "failed", "ended"})


Samples = spool_readers.Samples


@dataclass(frozen=True)
class Row:
    session: str  # Claude Code's session id, or the tmux session name of a pane without one
    project: str
    state: str
    source: str  # "hooks", "pane", or "hooks+pane" (the pane's stall over the hooks' state)
    since: float | None
    pane: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _states(
    samples: Samples, family: str, key: tuple[str, ...]
) -> dict[tuple[str, ...], list[Any]]:
    """{key labels: [state, since, labels]} from a state set and its since gauge."""
    found: dict[tuple[str, ...], list[Any]] = {}
    for name, labels, value in samples:
        ident = tuple(labels.get(part, "") for part in key)
        if name == family and value == 1:
            found.setdefault(ident, [None, None, labels])[0] = labels["state"]
        elif name == family + spool_readers.SINCE:
            found.setdefault(ident, [None, None, labels])[1] = value
    return {ident: item for ident, item in found.items() if item[0] is not None}


def merged(spool_dir: Path) -> list[Row]:
    hook_samples = spool_readers.samples(spool_dir, HOOK_SENTINEL)
    hooks = _states(hook_samples, spool_readers.CLAUDE_SESSION_STATE, ("session", "project"))
    panes_of = {
        (labels["session"], labels["project"]): labels.get("pane", "")
        for name, labels, _ in hook_samples
        if name == spool_readers.CLAUDE_SESSION_INFO
    }
    panes = _states(
        spool_readers.samples(spool_dir, PANE_SENTINEL),
        spool_readers.PANE_STATE,
        ("tmux_session", "pane"),
    )
    by_pane = {ident[1]: item for ident, item in panes.items()}
    rows: list[Row] = []
    claimed: set[str] = set()
    for (session, project), (state, since, _) in sorted(hooks.items()):
        pane = panes_of.get((session, project), "")
        seen = by_pane.get(pane) if pane else None
        if seen is None:
            rows.append(Row(session, project, state, "hooks", since, pane))
            continue
        claimed.add(pane)
        pane_state, pane_since = seen[0], seen[1]
        if pane_state not in PANE_CALM and state not in HOOK_DIRECT:
            rows.append(Row(session, project, pane_state, "hooks+pane", pane_since, pane))
        else:
            rows.append(Row(session, project, state, "hooks", since, pane))
    for (tmux_session, pane), (state, since, _) in sorted(panes.items()):
        if pane not in claimed:
            rows.append(Row(tmux_session, "", state, "pane", since, pane))
    return rows
