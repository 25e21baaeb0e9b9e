"""The state machine of a Claude Code session, driven by its hook events, and the bounded
table of recent sessions.

    SessionStart                               -> idle  (records the git HEAD)
    UserPromptSubmit, PreToolUse, PostToolUse  -> working
    PermissionRequest                          -> waiting_for_permission  (as the dialog opens)
    Notification of a permission kind          -> waiting_for_permission  (6 s later)
    Notification of an idle kind               -> waiting_for_input
    Stop                                       -> idle
    PreCompact                                 -> compacting  (counts a compaction)
    StopFailure                                -> failed  (keeps the failure kind)
    SessionEnd                                 -> ended  (compares the git HEAD)
    SubagentStop                               -> no change  (counts a sub-agent)
PostToolUse counts a tool call (and a failure when `ok` is false; Claude Code's own
PostToolUseFailure counts the same) by tool name; tool names
past `max_tools` fold into "other". PreToolUse counts a repeat when its tool name and input hash
equal one of the session's previous REPEAT_WINDOW calls (a retry loop repeats itself); only a
digest of each recent call is kept, never its input, and a call without a hash fills its slot
but matches nothing. An event for an `ended` session other than SessionStart
changes nothing. A session is forgotten `session_ttl` after its newest event, and only the
`max_sessions` most recently active are kept.

Commit-completion: a session that ends with a reason that is not an error, not failed, and
with the same known HEAD as at its start is counted per project (no commit came of it). An
unknown HEAD on either side (no repository, no commit yet, or the start not seen) is never
counted.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from agentwatch.core.claude_events import INPUT_HASH
from agentwatch.core.sanitize import label_value

STATES = (
    "working",
    "waiting_for_permission",
    "waiting_for_input",
    "idle",
    "compacting",
    "ended",
    "failed",
)
WORKING_EVENTS = frozenset({"UserPromptSubmit", "PreToolUse", "PostToolUse"})
OTHER = "other"
MAX_KIND = 64  # characters of a failure kind in a label
REPEAT_WINDOW = 5  # a tool call repeats when it equals one of the session's previous 5


def notification_state(kind: str) -> str | None:
    """Claude Code's notification types: `permission_prompt` (and other permission asks),
    `idle_prompt` (waiting for the user); the rest do not change the state."""
    if "permission" in kind:
        return "waiting_for_permission"
    if "idle" in kind:
        return "waiting_for_input"
    return None


def call_digest(event: dict[str, Any]) -> str:
    """What identifies a tool call for the repeat count: tool name and input hash, as one
    short digest ("" when either is missing: such a call matches nothing)."""
    tool, digest = event.get("tool", ""), event.get(INPUT_HASH, "")
    if not tool or not digest:
        return ""
    return hashlib.sha256(f"{tool}\0{digest}".encode()).hexdigest()[:32]


def note_call(session: Session, digest: str) -> None:
    """Count a repeat when `digest` is among the session's previous calls, then remember it."""
    if digest and digest in session.recent:
        session.repeats += 1
    session.recent = [*session.recent, digest][-REPEAT_WINDOW:]


def abnormal_end(reason: str) -> bool:
    """A SessionEnd reason that says something went wrong (Claude Code's normal ones are
    clear, logout, prompt_input_exit and other)."""
    lowered = reason.lower()
    return "error" in lowered or "fail" in lowered or "crash" in lowered


@dataclass
class Session:
    """One Claude Code session as its hook events tell it."""

    project: str
    state: str
    since: float
    last: float
    pane: str = ""
    kind: str = ""  # the StopFailure kind, while failed
    start_head: str = ""
    tools: dict[str, int] = field(default_factory=dict)
    tool_failures: dict[str, int] = field(default_factory=dict)
    subagents: int = 0
    compactions: int = 0
    recent: list[str] = field(default_factory=list)  # digests of the last REPEAT_WINDOW calls
    repeats: int = 0


class Fold:
    """The first `limit` names seen keep series of their own; later ones show as "other"."""

    def __init__(self, limit: int, kept: list[str] | None = None):
        self.limit = limit
        self.kept: list[str] = list(kept or [])[:limit]
        self._set = set(self.kept)

    def show(self, name: str) -> str:
        if name in self._set:
            return name
        if len(self.kept) < self.limit and name != OTHER:
            self.kept.append(name)
            self._set.add(name)
            return name
        return OTHER


class Table:
    """Recent sessions and the counters that outlive them (by project)."""

    def __init__(self, max_sessions: int, session_ttl: float, max_tools: int, max_projects: int):
        self.max_sessions = max_sessions
        self.session_ttl = session_ttl
        self.sessions: dict[str, Session] = {}
        self.tools = Fold(max_tools)
        self.projects = Fold(max_projects)
        self.without_commit: Counter[str] = Counter()
        self.ended: Counter[str] = Counter()

    def apply(self, event: dict[str, Any], now: float) -> None:
        """One validated event (see records.parse)."""
        name, when = event["e"], min(float(event["t"]), now)
        if name == "PostToolUseFailure":  # the writers write it as PostToolUse, ok false
            name, event = "PostToolUse", {**event, "ok": False}
        session = self.sessions.get(event["s"])
        if session is None:
            project = event.get("p", "")
            session = Session(project=project, state="idle", since=when, last=when)
            self.sessions[event["s"]] = session
        elif session.state == "ended" and name != "SessionStart":
            return
        session.last = max(session.last, when)
        if event.get("p") and not session.project:
            session.project = event["p"]
        if event.get("pane"):
            session.pane = event["pane"]
        state = self._next_state(session, name, event)
        if state is not None and state != session.state:
            session.state, session.since = state, when
        if state != "failed" and state is not None:
            session.kind = ""

    def _next_state(self, session: Session, name: str, event: dict[str, Any]) -> str | None:
        if name == "SessionStart":
            session.start_head = event.get("head", "")
            # the project's series exists from 0 on, so a rule sees its first increase
            self.without_commit[self.projects.show(session.project or event.get("p", ""))] += 0
            return "idle"
        if name in WORKING_EVENTS:
            if name == "PreToolUse":
                note_call(session, call_digest(event))
            if name == "PostToolUse" and event.get("tool"):
                tool = self.tools.show(event["tool"])
                session.tools[tool] = session.tools.get(tool, 0) + 1
                if event.get("ok") is False:
                    session.tool_failures[tool] = session.tool_failures.get(tool, 0) + 1
            return "working"
        if name == "PermissionRequest":
            return "waiting_for_permission"
        if name == "Notification":
            return notification_state(event.get("kind", ""))
        if name == "Stop":
            return "idle"
        if name == "PreCompact":
            session.compactions += 1
            return "compacting"
        if name == "SubagentStop":
            session.subagents += 1
            return None
        if name == "StopFailure":
            session.kind = label_value(event.get("kind") or "unknown", MAX_KIND)
            return "failed"
        if name == "SessionEnd":
            self._ended(session, event)
            return "ended"
        return None

    def _ended(self, session: Session, event: dict[str, Any]) -> None:
        project = self.projects.show(session.project or event.get("p", ""))
        self.ended[project] += 1
        end_head = event.get("head", "")
        normal = session.state != "failed" and not abnormal_end(event.get("reason", ""))
        if normal and end_head and end_head == session.start_head:
            self.without_commit[project] += 1

    def expire(self, now: float) -> None:
        """Forget sessions idle past the ttl, then all but the most recently active."""
        cutoff = now - self.session_ttl
        live = {key: item for key, item in self.sessions.items() if item.last >= cutoff}
        if len(live) > self.max_sessions:
            newest = sorted(live, key=lambda key: live[key].last, reverse=True)
            live = {key: live[key] for key in newest[: self.max_sessions]}
        self.sessions = live

    # ---- the state file's part
    def dump(self) -> dict[str, Any]:
        return {
            "sessions": {key: asdict(item) for key, item in self.sessions.items()},
            "tools": self.tools.kept,
            "projects": self.projects.kept,
            "without_commit": dict(self.without_commit),
            "ended": dict(self.ended),
        }

    def load(self, raw: dict[str, Any]) -> None:
        """Restore a dump (raises KeyError, TypeError or ValueError when it is not one)."""
        sessions = {str(key): Session(**value) for key, value in raw["sessions"].items()}
        for item in sessions.values():
            if item.state not in STATES:
                raise ValueError(f"unknown state {item.state!r}")
            if not isinstance(item.recent, list):
                raise TypeError("recent calls are not a list")
            item.recent = [str(digest) for digest in item.recent][-REPEAT_WINDOW:]
            item.repeats = int(item.repeats)
            if item.repeats < 0:
                raise ValueError("a negative repeat count")
        self.sessions = sessions
        self.tools = Fold(self.tools.limit, [str(name) for name in raw["tools"]])
        self.projects = Fold(self.projects.limit, [str(name) for name in raw["projects"]])
        self.without_commit = Counter({str(k): int(v) for k, v in raw["without_commit"].items()})
        self.ended = Counter({str(k): int(v) for k, v in raw["ended"].items()})
