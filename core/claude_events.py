"""The contract between Claude Code's hook and statusline commands and the claude-sessions
sentinel: where events go, what one holds, how the spool stays bounded.

`agentwatch hook` (one call per Claude Code hook event) and `agentwatch statusline` (one call
per render) write here; the claude-sessions sentinel reads. Both sides import only this module,
so the writers stay fast (no yaml, no prometheus_client at import).

Layout, under `events_dir(state_dir)` (`<state_dir>/claude-events/`):
- `events.jsonl`: one JSON object per line, appended with a single O_APPEND write (a line is at
  most MAX_LINE bytes, below PIPE_BUF, so concurrent hooks never interleave). When it passes
  ROTATE_BYTES the writer renames it to `events.jsonl.1` (replacing the previous one): the
  spool holds at most about twice ROTATE_BYTES. A reader follows by (inode, offset) and finishes
  a rotated file from `events.jsonl.1` before going on.
- `statusline/<session>.json`: the latest statusline snapshot of each session, replaced
  atomically at every render; at most MAX_STATUS_FILES files (the oldest are removed).
- `counters.json`: what the writers could not do (bad JSON on stdin, an unwritable spool),
  counted by reason, for the sentinel to export; best effort.

An event line (keys short: hooks run on every tool call):
    {"v": 1, "t": <epoch seconds>, "s": <session id>, "e": <event name>, "p": <project>,
     "tool": <tool name>, "ok": true|false, "kind": <notification or failure kind>,
     "head": <git HEAD at SessionStart/SessionEnd>, "pane": <$TMUX_PANE or "">,
     "reason": <SessionEnd reason>, "agent": <sub-agent type>}
Only `v`, `t`, `s`, `e` are always present. Every string passes `sanitize.label_value`; no
prompt, assistant text, tool input or tool output is ever written.

A statusline snapshot:
    {"v": 1, "t": <epoch seconds>, "s": <session>, "p": <project>, "model": <model id>,
     "cost_usd": <float>, "context_used_ratio": <0..1>, "cache_hit_ratio": <0..1>,
     "rate_limits": {<window>: {"used_ratio": <0..1>, "resets_at": <epoch seconds>}}}
`window` is Claude Code's own name (`five_hour`, `seven_day`, `seven_day_opus`, …).
"""

from __future__ import annotations

import os
from pathlib import Path

from agentwatch.core import paths

VERSION = 1
EVENTS = "events.jsonl"
ROTATED = "events.jsonl.1"
STATUS = "statusline"
COUNTERS = "counters.json"
MAX_LINE = 2048
ROTATE_BYTES = 1 << 20
MAX_STATUS_FILES = 200
HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Notification",
    "Stop",
    "StopFailure",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
)
STATE_DIR_ENV = "AGENTWATCH_STATE_DIR"  # the writers' way to find the state dir without a config


def state_dir() -> Path:
    """The state dir the writers use: $AGENTWATCH_STATE_DIR, else the XDG default (the same
    default the config has; `agentwatch install` bakes a configured one into the command)."""
    override = os.environ.get(STATE_DIR_ENV, "")
    if override and os.path.isabs(override):
        return Path(override)
    return paths.default_state_dir()


def events_dir(state: Path) -> Path:
    return state / "claude-events"
