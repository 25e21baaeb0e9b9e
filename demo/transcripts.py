"""Claude Code transcript lines, in the shapes Claude Code writes them.

The project's one line builder: the demo agent, the benchmark corpus (bench/generators/corpus.py),
the conformance suite and the unit tests all write their lines with it, so each shape is defined
once. A builder returns a line as a dict with the keys in Claude Code's order; `dumps` and
`encode` make the compact JSON Claude Code writes.

Defaults are those of the reference line the ledger's counting rules were worked out on (cwd
/home/alice/proj, version 2.0.14, a sonnet-4-5 reply at 2026-11-28T10:00:05.000Z), so a test
names only what it varies. The default parents tell one small story: a prompt has none, the
reply answers the prompt `u-1`, a tool result or progress line follows the reply `a-1`.
"""

from __future__ import annotations

import copy
import json
import random
import string
import time
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict, Unpack

SONNET_45 = "claude-sonnet-4-5-20250929"
SYNTHETIC = "<synthetic>"  # the model of the lines Claude Code writes itself (API errors)

CWD = "/home/alice/proj"
SESSION = "6f1c2b9e-3d41-4a8e-9c57-0d2f8a1b7e64"
TIMESTAMP = "2026-11-28T10:00:05.000Z"
VERSION = "2.0.14"

# A line to write: a dict (compact JSON), a str (as is, for hand-made malformed text; it may
# hold lone surrogates) or bytes (for encodings JSON cannot express).
Line = Mapping[str, Any] | str | bytes

_B62 = string.ascii_letters + string.digits
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


# ------------------------------------------------------------------------------- encoding


def dumps(line: Mapping[str, Any]) -> str:
    """Compact JSON the way Claude Code (JSON.stringify) writes it: no spaces, UTF-8 text."""
    return _ENCODE(line)


def encode(line: Line) -> bytes:
    """The bytes of one line, without its newline."""
    if isinstance(line, bytes):
        return line
    if isinstance(line, str):
        return line.encode("utf-8", "surrogatepass")
    return dumps(line).encode("utf-8")


def encode_lines(lines: Iterable[Line]) -> bytes:
    """Lines as a transcript holds them: each one followed by a newline."""
    return b"".join(encode(line) + b"\n" for line in lines)


# ---------------------------------------------------------------------- values in lines


def iso_ms(ms: int) -> str:
    """A Unix time in milliseconds as Claude Code writes timestamps (UTC, three fraction
    digits, Z): the only fraction ccusage accepts."""
    sec, milli = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + f".{milli:03d}Z"


def now() -> str:
    """The current time as a transcript timestamp."""
    return iso_ms(time.time_ns() // 1_000_000)


def b62(rng: random.Random, n: int) -> str:
    """`n` random letters and digits (the alphabet of Anthropic's ids)."""
    return "".join(rng.choices(_B62, k=n))


def new_uuid(rng: random.Random) -> str:
    """A version-4 UUID drawn from `rng` (reproducible, unlike uuid.uuid4)."""
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:32]}"


def new_message_id(rng: random.Random) -> str:
    return "msg_01" + b62(rng, 22)


def new_request_id(rng: random.Random) -> str:
    return "req_011C" + b62(rng, 20)


class _Delete:
    """Marker for `edit`: remove the key instead of setting it."""

    def __repr__(self) -> str:
        return "DELETE"


DELETE = _Delete()


def edit(line: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of `line` with dotted paths set (missing levels are created) or DELETEd:
    how a test turns a well-formed line into the odd one it needs."""
    result: dict[str, Any] = copy.deepcopy(dict(line))
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = result
        for part in parents:
            node = node.setdefault(part, {})
        if value is DELETE:
            node.pop(last, None)
        else:
            node[last] = copy.deepcopy(value)
    return result


# ---------------------------------------------------------------------------- the parts


class Fields(TypedDict, total=False):
    """The session fields a line starts with, as keywords of every line builder (see
    `header`); each builder has its own default parent, after the reference story."""

    cwd: str | None
    session: str
    parent_uuid: str | None
    sidechain: bool
    version: str
    git_branch: str
    agent_id: str | None


def header(
    cwd: str | None = CWD,
    session: str = SESSION,
    *,
    parent_uuid: str | None = None,
    sidechain: bool = False,
    version: str = VERSION,
    git_branch: str = "main",
    agent_id: str | None = None,
) -> dict[str, Any]:
    """The fields every line of a session starts with (a sub-agent's lines add its agentId).
    A None cwd writes a null, which makes the readers drop a line with usage."""
    fields: dict[str, Any] = {
        "parentUuid": parent_uuid,
        "isSidechain": sidechain,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session,
        "version": version,
        "gitBranch": git_branch,
    }
    if agent_id is not None:
        fields["agentId"] = agent_id
    return fields


def make_usage(
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_creation: int = 0,
    cache_read: int = 0,
    *,
    cache_1h: int | None = None,
    speed: str | None = None,
    iterations: list[Any] | None = None,
) -> dict[str, Any]:
    """message.usage. `cache_creation` is the whole cache write; giving `cache_1h` (its
    1-hour part) adds the `cache_creation` breakdown newer versions write, which then
    replaces the flat count for both readers."""
    usage: dict[str, Any] = {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": cache_creation,
        "cache_read_input_tokens": cache_read,
    }
    if cache_1h is not None:
        usage["cache_creation"] = {
            "ephemeral_5m_input_tokens": cache_creation - cache_1h,
            "ephemeral_1h_input_tokens": cache_1h,
        }
    usage["output_tokens"] = output_tokens
    usage["service_tier"] = "standard"
    if speed is not None:
        usage["speed"] = speed
    if iterations is not None:
        usage["iterations"] = iterations
    return usage


def advisor(
    input_tokens: Any, *, output_tokens: Any = 0, model: Any = "claude-opus-4-6", **extra: Any
) -> dict[str, Any]:
    """One `usage.iterations` entry of type advisor_message: another model consulted within a
    response, with flat usage fields, counted as an entry of its own. Any value may be given,
    valid or not (tests vary what the readers accept), and model=None leaves the model out."""
    entry: dict[str, Any] = {"type": "advisor_message", "model": model}
    entry.update(input_tokens=input_tokens, output_tokens=output_tokens)
    entry.update(cache_read_input_tokens=0, cache_creation_input_tokens=0)
    entry.update(extra)
    if model is None:
        del entry["model"]
    return entry


def synthetic_usage() -> dict[str, Any]:
    """The all-zero usage Claude Code puts on the `<synthetic>` lines it writes itself, with
    the fields newer versions add (a null service_tier, an empty cache breakdown)."""
    return {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": None,
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
    }


def message(
    message_id: str | None,
    *,
    model: str,
    content: list[dict[str, Any]],
    usage: dict[str, Any],
    stop_reason: str | None = None,
    stop_sequence: bool = False,
) -> dict[str, Any]:
    """An assistant message. Two key orders are in use: the reference line's (id first), and
    the benchmark corpus's (`stop_sequence=True`: model first, and a null stop_sequence, so
    every line carries a null as real streamed copies do). A None id leaves the key out, as
    older writers did."""
    found: dict[str, Any]
    if stop_sequence:
        found = {"model": model, "id": message_id, "type": "message", "role": "assistant"}
        found.update(content=content, stop_reason=stop_reason, stop_sequence=None, usage=usage)
    else:
        found = {"id": message_id, "type": "message", "role": "assistant", "model": model}
        found.update(content=content, stop_reason=stop_reason, usage=usage)
    if message_id is None:
        del found["id"]
    return found


# -------------------------------------------------------------------------------- lines


def assistant(
    message_id: str | None = "msg_A",
    request_id: str | None = "req_A",
    *,
    model: str = SONNET_45,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_creation: int = 0,
    cache_read: int = 0,
    usage: dict[str, Any] | None = None,
    text: str = "hi",
    content: list[dict[str, Any]] | None = None,
    timestamp: str = TIMESTAMP,
    uuid: str | None = None,
    stop_reason: str | None = None,
    stop_sequence: bool = False,
    cost_usd: float | None = None,
    api_error: bool = False,
    changes: Mapping[str, Any] | None = None,
    **fields: Unpack[Fields],
) -> dict[str, Any]:
    """One assistant line: one content block of an API response (a response is written as
    several such copies sharing message id and requestId). Parent: the prompt `u-1`.

    Usage is the four token counts unless a whole `usage` object is given; content is one
    text block unless `content` is. A None requestId leaves the key out (older transcripts
    have none). `changes` is applied last with `edit`, so any field can be overridden,
    nulled or deleted.
    """
    fields.setdefault("parent_uuid", "u-1")
    line = header(**fields)
    if usage is None:
        usage = make_usage(input_tokens, output_tokens, cache_creation, cache_read)
    line["message"] = message(
        message_id,
        model=model,
        content=[{"type": "text", "text": text}] if content is None else content,
        usage=usage,
        stop_reason=stop_reason,
        stop_sequence=stop_sequence,
    )
    if request_id is not None:
        line["requestId"] = request_id
    line["type"] = "assistant"
    line["uuid"] = f"a-{message_id}-{request_id}" if uuid is None else uuid
    line["timestamp"] = timestamp
    if cost_usd is not None:
        line["costUSD"] = cost_usd
    if api_error:
        line["isApiErrorMessage"] = True
    return edit(line, changes) if changes else line


def api_error(
    message_id: str,
    text: str,
    *,
    request_id: str | None = None,
    model: str = SYNTHETIC,
    **keywords: Any,
) -> dict[str, Any]:
    """An API error as Claude Code records it: an assistant line flagged isApiErrorMessage,
    the `<synthetic>` model, zero usage (`usage=synthetic_usage()` for the newer fields) and
    the error as its text, e.g. `API Error: 529 {…overloaded_error…}` or `Claude AI usage
    limit reached|<reset>`. Other keywords are those of `assistant`."""
    return assistant(
        message_id,
        request_id,
        model=model,
        text=text,
        stop_reason="stop_sequence",
        api_error=True,
        **keywords,
    )


def user_prompt(
    text: str,
    *,
    timestamp: str = TIMESTAMP,
    uuid: str | None = None,
    permission_mode: str | None = None,
    **fields: Unpack[Fields],
) -> dict[str, Any]:
    """A prompt typed by the user (never counted: no usage); no parent, the first line of the
    story. A `permission_mode` adds the settings Claude Code records with a prompt of the
    main chain."""
    line = header(**fields)
    line["type"] = "user"
    line["message"] = {"role": "user", "content": text}
    line["uuid"] = f"u-{timestamp}" if uuid is None else uuid
    line["timestamp"] = timestamp
    if permission_mode is not None:
        line["thinkingMetadata"] = {"level": "high", "disabled": False, "triggers": []}
        line["permissionMode"] = permission_mode
    return line


def tool_result(
    content: Any,
    *,
    tool_use_id: str = "toolu_01",
    is_error: bool | None = None,
    result: Mapping[str, Any] | None = None,
    timestamp: str = TIMESTAMP,
    uuid: str | None = None,
    **fields: Unpack[Fields],
) -> dict[str, Any]:
    """A user line carrying a tool's output (the bulk of real transcripts: up to megabytes),
    after the reply `a-1` that called the tool. `result` is the toolUseResult Claude Code
    keeps beside it (the output again, or for a finished Task its sub-agent's usage, which
    passes the raw `"usage":{` prefilter but never counts: it is not message.usage)."""
    block: dict[str, Any] = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    fields.setdefault("parent_uuid", "a-1")
    line = header(**fields)
    line["type"] = "user"
    line["message"] = {"role": "user", "content": [block]}
    line["uuid"] = f"t-{timestamp}" if uuid is None else uuid
    line["timestamp"] = timestamp
    if result is not None:
        line["toolUseResult"] = dict(result)
    return line


def summary(text: str, leaf_uuid: str = "a-1") -> dict[str, Any]:
    """A session summary line (no session fields)."""
    return {"type": "summary", "summary": text, "leafUuid": leaf_uuid}


def snapshot(
    message_id: str, timestamp: str, backups: Mapping[str, Any], *, update: bool = False
) -> dict[str, Any]:
    """A file-history-snapshot line: one entry per tracked file (real ones reach hundreds of
    MB in one line)."""
    return {
        "type": "file-history-snapshot",
        "messageId": message_id,
        "snapshot": {
            "messageId": message_id,
            "trackedFileBackups": dict(backups),
            "timestamp": timestamp,
        },
        "isSnapshotUpdate": update,
    }


def hook_progress(
    tool_use_id: str,
    tool: str,
    *,
    timestamp: str = TIMESTAMP,
    uuid: str = "h-1",
    **fields: Unpack[Fields],
) -> dict[str, Any]:
    """A progress line of a PostToolUse hook run after `tool` (no usage)."""
    fields.setdefault("parent_uuid", "a-1")
    line = header(**fields)
    line["type"] = "progress"
    line["data"] = {
        "type": "hook_progress",
        "hookEvent": "PostToolUse",
        "hookName": f"PostToolUse:{tool}",
        "command": "~/.claude/hooks/format.sh",
    }
    line.update(parentToolUseID=tool_use_id, toolUseID=tool_use_id)
    line.update(timestamp=timestamp, uuid=uuid)
    return line


# The fields of a sub-agent's line that its progress copy keeps in data.message.
PROGRESS_FIELDS = ("type", "message", "requestId", "uuid", "timestamp")


def agent_progress(
    line: Mapping[str, Any],
    *,
    agent: str,
    keep: Iterable[str] = PROGRESS_FIELDS,
    prompt: str = "",
    tool_use_id: str = "toolu_01",
    parent_tool_use_id: str = "toolu_01",
    uuid: str = "p-1",
    timestamp: str = TIMESTAMP,
    **fields: Unpack[Fields],
) -> dict[str, Any]:
    """A line of sub-agent `agent` as the parent session's file repeats it while the agent
    runs: the `keep` fields of it in data.message, so its usage sits in
    data.message.message.usage, which both readers count (and deduplicate with the
    sub-agent's own copy)."""
    inner = {key: copy.deepcopy(line[key]) for key in keep if key in line}
    fields.setdefault("parent_uuid", "a-1")
    wrapper = header(**fields)
    wrapper["type"] = "progress"
    wrapper["data"] = {
        "message": inner,
        "normalizedMessages": [],
        "type": "agent_progress",
        "prompt": prompt,
        "agentId": agent,
    }
    wrapper.update(toolUseID=tool_use_id, parentToolUseID=parent_tool_use_id)
    wrapper.update(uuid=uuid, timestamp=timestamp)
    return wrapper


def sidechain_copy(line: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A `/btw` replay of an earlier line: the same message again with isSidechain true, plus
    `changes` (usually a new requestId and uuid). A duplicate both readers must drop while
    the main copy exists."""
    return edit(line, {"isSidechain": True, **changes})
