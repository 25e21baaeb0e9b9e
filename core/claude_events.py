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
     "tool": <tool name (Pre/PostToolUse, PermissionRequest)>, "ok": true|false,
     "kind": <notification or failure kind>,
     "head": <git HEAD at SessionStart/SessionEnd>, "pane": <$TMUX_PANE or "">,
     "reason": <SessionEnd reason>, "agent": <sub-agent type>,
     "input_sha256": <sha256 of the canonical tool_input JSON (PreToolUse only)>}
Only `v`, `t`, `s`, `e` are always present (the hook writes `pane` on every line too, "" when
headless). Claude Code 2.1.328 reports a failed tool call as its own event, PostToolUseFailure:
the hook writes it as `"e": "PostToolUse", "ok": false`. Every string passes
`sanitize.label_value`; no prompt, assistant text, tool input or tool output is ever written:
of the tool input only its hash (`input_hash`), so the sentinel can tell a call that repeats
one of the session's last few (a retry loop) without ever holding the input.

A statusline snapshot:
    {"v": 1, "t": <epoch seconds>, "s": <session>, "p": <project>, "model": <model id>,
     "cost_usd": <float>, "context_used_ratio": <0..1>, "cache_hit_ratio": <0..1>,
     "rate_limits": {<window>: {"used_ratio": <0..1>, "resets_at": <epoch seconds>}}}
`window` is Claude Code's own name (`five_hour`, `seven_day`, `seven_day_opus`, …).
"""

from __future__ import annotations

import contextlib
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
    "PostToolUseFailure",  # 2.1.328 reports a failed tool here; written as PostToolUse, ok=false
    "PermissionRequest",  # the permission dialog opens (Notification follows only 6 s later)
    "Notification",
    "Stop",
    "StopFailure",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
)
INPUT_HASH = "input_sha256"  # the event key of the tool input's hash
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


def status_dir(state: Path) -> Path:
    return events_dir(state) / STATUS


# Why a writer could not do its job, as counted in counters.json (the sentinel exports them).
BAD_JSON = "bad_json"  # stdin was not one JSON object
TOO_LARGE = "too_large"  # stdin passed STDIN_LIMIT
STDIN_TIMEOUT = "stdin_timeout"  # stdin stayed open past STDIN_SECONDS
NO_SESSION = "no_session"  # a payload without a session id
UNKNOWN_EVENT = "unknown_event"  # a hook event not in HOOK_EVENTS
SPOOL_UNWRITABLE = "spool_unwritable"  # events.jsonl could not be appended (full disk, rights)
STATUS_UNWRITABLE = "status_unwritable"  # a statusline snapshot could not be written
CHAIN_FAILED = "chain_failed"  # the chained statusLine command failed or timed out
COUNTER_REASONS = (
    BAD_JSON,
    TOO_LARGE,
    STDIN_TIMEOUT,
    NO_SESSION,
    UNKNOWN_EVENT,
    SPOOL_UNWRITABLE,
    STATUS_UNWRITABLE,
    CHAIN_FAILED,
)
STDIN_LIMIT = 1 << 20  # the writers read at most this much of a payload
STDIN_SECONDS = 1.0  # and stop waiting for stdin to close after this long


# The writers' side. Each call is one short process: no locks held for long, no retries that
# could make Claude Code wait; a failure raises OSError for the caller to count.


def encode(record: dict[str, object]) -> bytes:
    """One event line, at most MAX_LINE bytes: optional keys are dropped (last first) until
    it fits, so a line is always whole and always below PIPE_BUF."""
    import json

    fields = dict(record)
    while True:
        line = json.dumps(fields, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = line.encode("utf-8", "backslashreplace")
        optional = [key for key in fields if key not in ("v", "t", "s", "e")]
        if len(data) <= MAX_LINE:
            return data
        if not optional:
            raise ValueError(f"an event line of {len(data)} bytes, over {MAX_LINE}")
        del fields[optional[-1]]


def input_hash(value: object) -> str:
    """The sha256 (hex) of `value` as canonical JSON (sorted keys, no spaces, ASCII): the same
    tool input gives the same hash whatever order its keys came in. Raises ValueError or
    RecursionError for a value JSON cannot write back."""
    import json

    try:  # the builtin module: a quarter of hashlib's import time (its OpenSSL load)
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # Python 3.12 renamed it
        from hashlib import sha256
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(sha256(text.encode("ascii")).hexdigest())


def append_event(state: Path, record: dict[str, object]) -> None:
    """Append one event line with a single O_APPEND write, rotating the spool first when it
    has passed ROTATE_BYTES."""
    data = encode(record)
    folder = events_dir(state)
    path = folder / EVENTS
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        size = 0
    if size >= ROTATE_BYTES:
        _rotate(folder)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        written = os.write(descriptor, data)
    finally:
        os.close(descriptor)
    if written != len(data):  # a full disk can take part of a write
        raise OSError(f"short write to {path}: {written} of {len(data)} bytes")


def _rotate(folder: Path) -> None:
    """events.jsonl -> events.jsonl.1, by one writer: the others skip it (a non-blocking lock)
    and the size is checked again under the lock, so a fresh file is never rotated away."""
    import fcntl

    descriptor = os.open(folder / ".rotate.lock", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another writer is rotating right now
        try:
            if os.stat(folder / EVENTS).st_size >= ROTATE_BYTES:
                os.replace(folder / EVENTS, folder / ROTATED)
        except FileNotFoundError:
            pass
    finally:
        os.close(descriptor)  # releases the lock


def status_name(session: str) -> str:
    """A session id as a file name: ids are UUIDs; anything else is hashed, never a path."""
    if session and len(session) <= 128 and all(c.isalnum() or c in "-_" for c in session):
        return session
    import hashlib

    return "h-" + hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def write_status(state: Path, snapshot: dict[str, object]) -> None:
    """Replace the session's statusline snapshot atomically; keep at most MAX_STATUS_FILES."""
    import json

    from agentwatch.core.files import write_atomic

    folder = status_dir(state)
    path = folder / f"{status_name(str(snapshot['s']))}.json"
    fresh = not path.exists()
    write_atomic(path, json.dumps(snapshot, separators=(",", ":")), mode=0o600)
    if fresh:
        _prune(folder)


def _prune(folder: Path) -> None:
    """Remove the oldest snapshots past MAX_STATUS_FILES (checked only when a new session
    appears, so a render of a known session costs no directory scan)."""
    entries = []
    with os.scandir(folder) as found:
        for entry in found:
            if entry.name.endswith(".json") and not entry.name.startswith("."):
                try:
                    entries.append((entry.stat(follow_symlinks=False).st_mtime, entry.path))
                except FileNotFoundError:
                    continue
    if len(entries) <= MAX_STATUS_FILES:
        return
    entries.sort()
    for _, path in entries[: len(entries) - MAX_STATUS_FILES]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def count(state: Path, reason: str) -> None:
    """Add one to `reason` in counters.json; best effort (a failure here is dropped: there is
    nowhere left to report it, and Claude Code must not see it)."""
    import json

    from agentwatch.core import bounded
    from agentwatch.core.files import write_atomic

    try:
        folder = events_dir(state)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = os.open(folder / ".counters.lock", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if not _lock(lock):
                return
            path = folder / COUNTERS
            try:
                counters = json.loads(bounded.read_bytes(path, 64 * 1024))
            except (OSError, ValueError):
                counters = {}
            if not isinstance(counters, dict):
                counters = {}
            previous = counters.get(reason)
            counters[reason] = (previous if isinstance(previous, int) else 0) + 1
            write_atomic(path, json.dumps(counters, sort_keys=True), mode=0o600)
        finally:
            os.close(lock)
    except OSError:
        pass


def _lock(descriptor: int, seconds: float = 0.1) -> bool:
    """flock within `seconds` (others hold it for one small read and write), else False: a
    writer never waits long, whoever holds the lock."""
    import fcntl
    import time

    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)


def read_counters(state: Path) -> dict[str, int]:
    """counters.json as {reason: count} (empty when missing or unreadable), for the reader."""
    import json

    from agentwatch.core import bounded

    try:
        counters = json.loads(bounded.read_bytes(events_dir(state) / COUNTERS, 64 * 1024))
    except (OSError, ValueError):
        return {}
    if not isinstance(counters, dict):
        return {}
    return {str(k): v for k, v in counters.items() if isinstance(v, int) and v >= 0}
