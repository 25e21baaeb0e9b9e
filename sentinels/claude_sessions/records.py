"""What an event line of the spool may be (core/claude_events.py), checked before it counts.

The spool is in the state dir, which anything running as the user can write to: a line is
accepted only with the contract's version, a known event name and fields of the right type,
and every string is made a safe label value again (the writers already do; a forged line
must not get around it). The tool input's hash must be 64 lowercase hex digits.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from agentwatch.core import claude_events
from agentwatch.core.sanitize import label_value

REJECT_REASONS = ("bad_json", "bad_version", "bad_field", "unknown_event", "too_long")
_STRINGS = ("p", "tool", "kind", "head", "pane", "reason", "agent")
_HASH = re.compile(r"[0-9a-f]{64}")  # the tool input's sha256, as the hook writes it
MAX_ID = 128  # a session id is a UUID; a longer one is cut with its hash (sanitize)


class Rejected(ValueError):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def parse(line: bytes) -> dict[str, Any]:
    """The event of one spool line, or Rejected with the reason."""
    if len(line) > claude_events.MAX_LINE:
        raise Rejected("too_long")
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):  # 2 KiB of `[` is past the parser's depth
        raise Rejected("bad_json") from None
    if not isinstance(raw, dict):
        raise Rejected("bad_json")
    if raw.get("v") != claude_events.VERSION:
        raise Rejected("bad_version")
    name, when, session = raw.get("e"), raw.get("t"), raw.get("s")
    if name not in claude_events.HOOK_EVENTS and name != "PostToolUseFailure":
        raise Rejected("unknown_event")
    if (
        isinstance(when, bool)
        or not isinstance(when, int | float)
        or not math.isfinite(when)
        or when < 0
        or not isinstance(session, str)
        or not session
    ):
        raise Rejected("bad_field")
    event: dict[str, Any] = {"e": name, "t": float(when), "s": label_value(session, MAX_ID)}
    for key in _STRINGS:
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise Rejected("bad_field")
        if value:
            event[key] = label_value(value)
    digest = raw.get(claude_events.INPUT_HASH)
    if digest is not None:
        if not isinstance(digest, str) or not _HASH.fullmatch(digest):
            raise Rejected("bad_field")
        event[claude_events.INPUT_HASH] = digest
    ok = raw.get("ok")
    if ok is not None:
        if not isinstance(ok, bool):
            raise Rejected("bad_field")
        event["ok"] = ok
    return event
