"""The contract between Claude Code's hook and statusline commands and the claude-sessions
sentinel: where events go, what one holds, how the spool stays bounded.

`agentwatch hook` (one call per Claude Code hook event) and `agentwatch statusline` (one call
per render) write here; the claude-sessions sentinel reads. Both sides import only this module,
so the writers stay fast (no yaml, no prometheus_client at import).

Layout, under `events_dir(state_dir)` (`<state_dir>/claude-events/`):
- `events.jsonl`: one JSON object per line, appended with a single O_APPEND write (a line is at
  most MAX_LINE bytes, below PIPE_BUF, so concurrent hooks never interleave). When it passes
  ROTATE_BYTES the writer shifts the rotated files (`events.jsonl.1` -> `.2` ... up to
  `.KEEP_ROTATED`) and renames it to `events.jsonl.1`: the spool holds at most about
  (KEEP_ROTATED + 1) x ROTATE_BYTES. A reader follows by (inode, offset) and finishes a
  rotated file wherever it has moved before going on to the next.
- `dropped.json`: the rotated files the writers deleted to keep that bound, each with its line
  count (counted just before it was deleted), and the totals: a reader that was too far
  behind learns exactly how many events it never read.
- `statusline/<session>.json`: the latest statusline snapshot of each session, replaced
  atomically at every render; at most MAX_STATUS_FILES files (the oldest are removed).
- `counters.json`: what the writers could not do (bad JSON on stdin, an unwritable spool),
  counted by reason, for the sentinel to export; best effort.

Every file here is opened by core/bounded.py's rule: non-blocking, no-follow, regular files
only (a FIFO or a symlink put in place of one is refused and counted, never waited on or
written through).

An event line (keys short: hooks run on every tool call):
    {"v": 1, "t": <epoch seconds>, "s": <session id>, "e": <event name>, "p": <project>,
     "tool": <tool name (Pre/PostToolUse, PermissionRequest)>, "ok": true|false,
     "kind": <notification or failure kind>,
     "head": <git HEAD at SessionStart/SessionEnd>, "pane": <$TMUX_PANE or "">,
     "reason": <SessionEnd reason>, "agent": <sub-agent type>,
     "input_sha256": <sha256 of this install's salt and the canonical tool_input JSON
                      (PreToolUse only)>}
Only `v`, `t`, `s`, `e` are always present (the hook writes `pane` on every line too, "" when
headless). Claude Code 2.1.328 reports a failed tool call as its own event, PostToolUseFailure:
the hook writes it as `"e": "PostToolUse", "ok": false`. Every string passes
`sanitize.label_value`; no prompt, assistant text, tool input or tool output is ever written:
of the tool input only its hash (`input_hash`), so the sentinel can tell a call that repeats
one of the session's last few (a retry loop) without ever holding the input. The hash is
salted with a secret of this install (`claude-events/.salt`, 0600, made on first use): a short
input (`ls`) cannot be found again by hashing candidates without the salt.

A statusline snapshot:
    {"v": 1, "t": <epoch seconds>, "s": <session>, "p": <project>, "model": <model id>,
     "cost_usd": <float>, "context_used_ratio": <0..1>, "cache_hit_ratio": <0..1>,
     "rate_limits": {<window>: {"used_ratio": <0..1>, "resets_at": <epoch seconds>}},
     "model_windows": {<model display name>: {"used_ratio": <0..1>, "resets_at": <epoch s>}}}
`window` is Claude Code's own name (`five_hour`, `seven_day`, `seven_day_opus`, …);
`model_windows` are the per-model weekly windows of `rate_limits.model_scoped`.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from agentwatch.core import paths

TYPE_CHECKING = False
if TYPE_CHECKING:  # without importing typing at run time (the hook's start)
    from typing import Any

VERSION = 1
EVENTS = "events.jsonl"
ROTATED = "events.jsonl.1"  # the newest rotated file
STATUS = "statusline"
COUNTERS = "counters.json"
MAX_LINE = 2048
DROPPED = "dropped.json"
ROTATE_BYTES = 4 << 20  # about 24,000 of the real hook's lines (112-214 bytes each)
KEEP_ROTATED = 4  # with events.jsonl 20 MiB: 4.6 h of a busy fleet (bench/bench_spool_bound.py)
MAX_DROPPED_RECORDS = 64  # dropped files listed one by one in dropped.json (totals: all)
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
# Events 2.1.328 sends to a hook configured for them that tell nothing the sentinel uses (a
# message shown; the end of a batch of tool calls, whose calls have their own events):
# accepted and dropped, without a line and without counting them as unknown.
IGNORED_EVENTS = ("MessageDisplay", "PostToolBatch")
INPUT_HASH = "input_sha256"  # the event key of the tool input's hash
SALT = ".salt"  # in events_dir: this install's secret the tool input's hash is salted with
SALT_BYTES = 32
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
TOO_DEEP = "too_deep"  # a payload nested deeper than the JSON parser goes (RecursionError)
SPOOL_REFUSED = "spool_refused"  # events.jsonl (or a rotated file) is a FIFO, symlink, device
LOCK_REFUSED = "lock_refused"  # .counters.lock or .rotate.lock is not a regular file
STATUS_REFUSED = "status_refused"  # a statusline snapshot's place is not a regular file
OUT_OF_RANGE = "out_of_range"  # a statusline number past its bound (cost, percentage, time)
COUNTER_REASONS = (
    BAD_JSON,
    TOO_LARGE,
    STDIN_TIMEOUT,
    NO_SESSION,
    UNKNOWN_EVENT,
    SPOOL_UNWRITABLE,
    STATUS_UNWRITABLE,
    CHAIN_FAILED,
    TOO_DEEP,
    SPOOL_REFUSED,
    LOCK_REFUSED,
    STATUS_REFUSED,
    OUT_OF_RANGE,
)
# The statusline's bounds: a number past them is not exported (and counted, OUT_OF_RANGE).
# A session's cost: the dearest sessions reported publicly cost hundreds to a few thousand
# USD; 100,000 USD is 1.3 billion Opus output tokens at $75/M, far past any real session,
# while 1e308, inf, NaN or a negative cost is poison.
MAX_COST_USD = 100_000.0
MAX_PERCENT = 1000.0  # 2.1.328 caps 5h/7d at 100; spend_limit may pass it: 10x is absurd
MAX_EPOCH = 10_000_000_000.0  # resets_at past the year 2286 is not a time
MAX_MODEL_WINDOWS = 8  # rate_limits.model_scoped entries kept (2.1.328 names one or two)
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


def salt(state: Path) -> bytes | None:
    """This install's salt of the tool input's hash, made (0600, random) on first use; None
    when it can be neither read nor made: then no hash is written at all, since an unsalted
    one of a short input can be reversed by trying candidates."""
    from agentwatch.core import bounded

    path = events_dir(state) / SALT
    for _ in range(2):
        try:
            data = bounded.read_bytes(path, 4 * SALT_BYTES, follow=False)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                _make_salt(path)
            continue
        except OSError:
            return None
        return data if len(data) >= SALT_BYTES else None
    return None


def _make_salt(path: Path) -> None:
    """Write a salt beside `path` and link it in place: whole or not at all, and the first of
    two racing hooks wins (the other's link fails and it reads the winner's)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f"{SALT}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(temporary, flags, 0o600)
    try:
        os.write(descriptor, os.urandom(SALT_BYTES).hex().encode("ascii"))
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(temporary)


def input_hash(value: object, salt: bytes = b"") -> str:
    """The sha256 (hex) of `salt` and `value` as canonical JSON (sorted keys, no spaces,
    ASCII): the same tool input gives the same hash whatever order its keys came in. Raises
    ValueError or RecursionError for a value JSON cannot write back."""
    import json

    try:  # the builtin module: a quarter of hashlib's import time (its OpenSSL load)
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # Python 3.12 renamed it
        from hashlib import sha256
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(sha256(salt + text.encode("ascii")).hexdigest())


def append_event(state: Path, record: dict[str, object]) -> str | None:
    """Append one event line with a single O_APPEND write, rotating the spool first when it
    has passed ROTATE_BYTES. A spool file that is not a regular file is a FileRefused; a
    rotate lock that is not one does not keep the line out: the reason to count is returned
    (None when all went well)."""
    from agentwatch.core import bounded

    data = encode(record)
    folder = events_dir(state)
    path = folder / EVENTS
    try:
        size = os.lstat(path).st_size
    except FileNotFoundError:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        size = 0
    problem = None
    if size >= ROTATE_BYTES:
        try:
            rotate(folder)
        except bounded.FileRefused:
            problem = LOCK_REFUSED
    descriptor = bounded.open_write(path)
    try:
        written = os.write(descriptor, data)
    finally:
        os.close(descriptor)
    if written != len(data):  # a full disk can take part of a write
        raise OSError(f"short write to {path}: {written} of {len(data)} bytes")
    return problem


def rotated(folder: Path, number: int) -> Path:
    """The rotated file `number` (1: the newest) of the spool in `folder`."""
    return folder / f"{EVENTS}.{number}"


def rotate(folder: Path, force: bool = False) -> None:
    """events.jsonl -> events.jsonl.1 (the older ones shifted up, the oldest past
    KEEP_ROTATED counted in dropped.json and deleted), by one writer: the others skip it (a
    non-blocking lock) and the size is checked again under the lock, so a fresh file is
    never rotated away. A lock file that is not a regular file is a FileRefused (the spool
    then grows until it is fixed: counted, never waited on)."""
    import fcntl

    from agentwatch.core import bounded

    descriptor = bounded.open_lock(folder / ".rotate.lock")
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another writer is rotating right now
        try:
            if not force and os.lstat(folder / EVENTS).st_size < ROTATE_BYTES:
                return
        except FileNotFoundError:
            return
        _drop(folder, rotated(folder, KEEP_ROTATED))
        for number in range(KEEP_ROTATED - 1, 0, -1):
            with contextlib.suppress(FileNotFoundError):
                os.replace(rotated(folder, number), rotated(folder, number + 1))
        os.replace(folder / EVENTS, rotated(folder, 1))
    finally:
        os.close(descriptor)  # releases the lock


MARK = 256  # bytes of a file's start that identify it with its inode (the reader's fingerprint)
_DROP_LIMIT = 64 << 20  # a rotated file larger than this is not counted (not the writers')


def _drop(folder: Path, path: Path) -> None:
    """Delete the oldest rotated file (under the rotate lock): its lines counted, the file
    deleted, then the count added to dropped.json (a reader that finds the file gone before
    the record is there counts it at its next look). Its identity (inode and a hash of its
    first MARK bytes) lets a reader that read part of it subtract what it did read. A writer
    killed between the delete and the record loses that count: the one gap, a SIGKILL to a
    hook inside a few microseconds once per ROTATE_BYTES."""
    import hashlib
    import json

    from agentwatch.core import bounded
    from agentwatch.core.files import write_atomic

    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    try:
        data = bounded.read_bytes(path, _DROP_LIMIT, follow=False)
    except OSError:  # not a regular file, or too large: deleted without a count
        data = None
    os.unlink(path)
    if data is None:
        return
    lines = sum(1 for line in data.split(b"\n") if line)
    head = data[:MARK]
    entry = {
        "inode": info.st_ino,
        "mark_length": len(head),
        "mark": hashlib.sha256(head).hexdigest(),
        "lines": lines,
    }
    totals = read_dropped(folder)
    recent = [*totals["recent"], entry][-MAX_DROPPED_RECORDS:]
    document = {
        "v": VERSION,
        "files": totals["files"] + 1,
        "lines": totals["lines"] + lines,
        "recent": recent,
    }
    write_atomic(folder / DROPPED, json.dumps(document, separators=(",", ":")), mode=0o600)


def read_dropped(folder: Path) -> dict[str, Any]:
    """dropped.json as {"files": n, "lines": n, "recent": [entries]} (zeros when missing or
    unusable; a reader then counts what it cannot verify as it would a fresh start)."""
    import json

    from agentwatch.core import bounded

    empty: dict[str, Any] = {"files": 0, "lines": 0, "recent": []}
    try:
        raw = json.loads(bounded.read_bytes(folder / DROPPED, 64 * 1024, follow=False))
    except (OSError, ValueError, RecursionError):
        return empty
    if not isinstance(raw, dict):
        return empty
    files, lines, recent = raw.get("files"), raw.get("lines"), raw.get("recent")
    if not (_count(files) and _count(lines) and isinstance(recent, list)):
        return empty
    entries = [
        entry
        for entry in recent[-MAX_DROPPED_RECORDS:]
        if isinstance(entry, dict)
        and isinstance(entry.get("inode"), int)
        and not isinstance(entry.get("inode"), bool)
        and _count(entry.get("mark_length"))
        and isinstance(entry.get("mark"), str)
        and _count(entry.get("lines"))
    ]
    return {"files": files, "lines": lines, "recent": entries}


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 53


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
    fresh = not os.path.lexists(path)
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


def count(state: Path, *reasons: str) -> None:
    """Add one to each reason in counters.json; best effort (a failure here is dropped: there
    is nowhere left to report it, and Claude Code must not see it). A lock file that is not a
    regular file is counted too (`lock_refused`), and the count made without the lock: a
    lost update between two racing writers is less bad than a refusal never seen."""
    import json

    from agentwatch.core import bounded
    from agentwatch.core.files import write_atomic

    try:
        folder = events_dir(state)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            lock: int | None = bounded.open_lock(folder / ".counters.lock")
        except bounded.FileRefused:
            lock, reasons = None, (*reasons, LOCK_REFUSED)
        try:
            if lock is not None and not _lock(lock):
                return
            path = folder / COUNTERS
            try:
                counters = json.loads(bounded.read_bytes(path, 64 * 1024, follow=False))
            except (OSError, ValueError, RecursionError):
                counters = {}
            if not isinstance(counters, dict):
                counters = {}
            for reason in reasons:
                previous = counters.get(reason)
                counters[reason] = (previous if isinstance(previous, int) else 0) + 1
            write_atomic(path, json.dumps(counters, sort_keys=True), mode=0o600)
        finally:
            if lock is not None:
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
        counters = json.loads(
            bounded.read_bytes(events_dir(state) / COUNTERS, 64 * 1024, follow=False)
        )
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(counters, dict):
        return {}
    return {str(k): v for k, v in counters.items() if isinstance(v, int) and v >= 0}
