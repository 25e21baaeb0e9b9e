"""`agentwatch hook`: the one command for every Claude Code hook event.

Claude Code runs it with the event's JSON on stdin (on every tool call, twice); it appends
one compact line to the event spool (core/claude_events.py) and exits 0, always, printing
nothing (some events feed a hook's stdout back to Claude Code). Only names, kinds and ids are
kept: never the prompt, assistant text, tool input or tool output the payload carries (of a
PreToolUse's tool input only its sha256 salted with this install's secret, for the
sentinel's repeat count). What it
could not do is counted in counters.json. Imports stay minimal: the interpreter's start is most
of the time a call takes.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from agentwatch.core import claude_events

TYPE_CHECKING = False
if TYPE_CHECKING:  # without importing typing (3 ms of every hook's start)
    import argparse

_TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest")
_HEAD_EVENTS = ("SessionStart", "SessionEnd")


class Skipped(Exception):
    """A payload that gives no event line; `reason` is its counter."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def record(
    payload: dict[str, object], now: float, pane: str, salt: bytes | None = None
) -> dict[str, object]:
    """The event line for one hook payload (Skipped when it makes none); a PreToolUse's
    tool input is hashed with `salt`, and not at all without one."""
    from agentwatch.core.sanitize import label_value

    def text(key: str) -> str | None:
        value = payload.get(key)
        return label_value(value) if isinstance(value, str) and value else None

    session, event = text("session_id"), payload.get("hook_event_name")
    if session is None:
        raise Skipped(claude_events.NO_SESSION)
    if event in claude_events.IGNORED_EVENTS:
        raise Skipped("")  # known, and nothing the sentinel uses: neither a line nor a count
    if event not in claude_events.HOOK_EVENTS:
        raise Skipped(claude_events.UNKNOWN_EVENT)
    line: dict[str, object] = {"v": claude_events.VERSION, "t": round(now, 3), "s": session}
    line["e"] = "PostToolUse" if event == "PostToolUseFailure" else event
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        line["p"] = label_value(_project_name(cwd))
    if event in _TOOL_EVENTS and text("tool_name"):
        line["tool"] = text("tool_name")
    if event == "PreToolUse" and "tool_input" in payload and salt:
        import contextlib  # (already loaded by claude_events)

        with contextlib.suppress(ValueError, RecursionError):  # unhashable input: the event stays
            line[claude_events.INPUT_HASH] = claude_events.input_hash(payload["tool_input"], salt)
    if event == "PostToolUse":
        line["ok"] = True
    elif event == "PostToolUseFailure":
        line["ok"] = False
    kind = {"Notification": "notification_type", "StopFailure": "error"}.get(str(event))
    if kind and text(kind):
        line["kind"] = text(kind)
    if event in _HEAD_EVENTS and isinstance(cwd, str) and cwd:
        from agentwatch.cli.githead import head

        found = head(cwd)
        if found:
            line["head"] = found
    line["pane"] = label_value(pane)
    if event == "SessionEnd" and text("reason"):
        line["reason"] = text("reason")
    if event in ("SubagentStop", "SessionStart") and text("agent_type"):
        line["agent"] = text("agent_type")
    return line


def _project_name(cwd: str) -> str:
    """core.claude.project_name, without importing core.claude (its dataclasses and
    inspect double the hook's start time); tests/test_hook.py keeps the two equal."""
    name = os.path.basename(cwd.rstrip("/"))
    return name or "unknown"


def run(state: Path) -> None:
    from agentwatch.cli import payload as stdin

    data, problem = stdin.read_stdin()
    if problem is not None:
        claude_events.count(state, problem)
        if problem == claude_events.TOO_LARGE:
            return
    parsed, reason = stdin.parse(data)
    if parsed is None:
        claude_events.count(state, reason)
        return
    try:
        salt = claude_events.salt(state) if parsed.get("hook_event_name") == "PreToolUse" else None
        line = record(parsed, time.time(), os.environ.get("TMUX_PANE", ""), salt)
    except Skipped as skipped:
        if skipped.reason:
            claude_events.count(state, skipped.reason)
        return
    try:
        problem = claude_events.append_event(state, line)
    except (OSError, ValueError) as err:
        refused = getattr(err, "reason", "") in ("not_regular", "symlink")  # bounded.FileRefused
        claude_events.count(
            state, claude_events.SPOOL_REFUSED if refused else claude_events.SPOOL_UNWRITABLE
        )
        return
    if problem:
        claude_events.count(state, problem)


def main(argv: list[str]) -> int:
    """Exit 0 whatever happens: Claude Code must never see agentwatch fail."""
    try:
        from agentwatch.cli.payload import state_dir

        run(state_dir(argv))
    except BaseException:  # the hook must not fail Claude Code, ever (counted where it can)
        return 0
    return 0


def add(commands: argparse._SubParsersAction) -> None:
    """`agentwatch hook` in the full parser (for --help; calls go through cli/entry.py)."""
    parser = commands.add_parser(
        "hook",
        help="Claude Code's hook command: record one hook event (JSON on stdin)",
        description="Reads one Claude Code hook payload on stdin and appends one event line "
        "(session, event, project, tool, success, kinds, the tool input's salted sha256; never "
        "prompt, assistant text, tool input or output) to "
        "<state dir>/claude-events/events.jsonl. Always exits 0, silently.",
    )
    parser.add_argument("--state-dir", type=Path, help="state dir (default: the XDG one)")
