"""Claude Code transcript corpora for the ccusage conformance suite.

The token ledger promises the totals of the reference reader, `ccusage claude daily` 20.0.24,
on any set of transcripts. Its rules were found by experiment and are easy to get subtly
wrong, so this module writes transcript trees that exercise each rule, and a randomized tree
that mixes them the way real sessions do. The test module runs both readers on every tree.

Everything here is deterministic: a builder called with the same arguments writes the same
bytes (and the same file modification times, so the ledger reads files in the same order).

Vocabulary:
- a *line* is a dict (written as compact JSON, the way Claude Code writes it), a str (written
  as is, for hand-made malformed text) or bytes (for encodings JSON cannot express);
- a *corpus* is a CLAUDE_CONFIG_DIR value plus the HOME and working directory the readers
  must run with (only the discovery corpora need the last two);
- a *probe* is a line worth exactly 2**bit tokens of one class under ids of its own, so the
  token total of a corpus of probes says, bit by bit, which lines a reader counted.

Inputs on which the ledger differs from ccusage by design (docs/ledger-rules.md, "Known,
deliberate differences") are kept out of every corpus except where a test asks for them.
Corpora for differences that were found as bugs and fixed live in REGRESSION_CORPORA; each
docstring describes the difference as it was found.
"""

from __future__ import annotations

import copy
import json
import os
import random
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentwatch.core import claude
from agentwatch.demo.transcripts import (
    CWD,
    DELETE,
    SESSION,
    SONNET_45,
    SYNTHETIC,
    TIMESTAMP,
    Line,
    advisor,
    agent_progress,
    api_error,
    assistant,
    edit,
    encode,
    make_usage,
    sidechain_copy,
    snapshot,
    summary,
    tool_result,
    user_prompt,
)
from agentwatch.demo.transcripts import dumps as compact

from . import oracle

# ---------------------------------------------------------------------------------- constants

SONNET_4 = "claude-sonnet-4-20250514"
OPUS_46 = "claude-opus-4-6"
OPUS_45 = "claude-opus-4-5-20251101"
HAIKU_45 = "claude-haiku-4-5-20251001"
SLUG = claude.slug(CWD)

# Every file gets a distinct, fixed modification time: the ledger reads the newest file first,
# and a fixed order keeps any failure reproducible.
_BASE_MTIME = 1_795_000_000


def at(day: int, hour: int = 10, minute: int = 0, second: int = 0) -> str:
    """A timestamp in November 2026, in Claude Code's format (milliseconds, UTC)."""
    return f"2026-11-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.000Z"


def replace_once(text: str, old: str, new: str) -> str:
    """str.replace that insists the text is there, so a builder cannot silently do nothing."""
    if old not in text:
        raise ValueError(f"{old!r} not found in {text[:120]!r}…")
    return text.replace(old, new, 1)


# -------------------------------------------------------- lines (agentwatch.demo.transcripts)
# The shapes come from the shared line builder; these helpers only add what the edge cases
# vary: probes, progress wrappers with odd outer fields, Task results.

_PROBE_CLASS = {
    "input": "message.usage.input_tokens",
    "output": "message.usage.output_tokens",
    "cache_read": "message.usage.cache_read_input_tokens",
    "cache_creation": "message.usage.cache_creation_input_tokens",
}


def probe(
    bit: int,
    changes: Mapping[str, Any] | None = None,
    *,
    carrier: str = "input",
    tag: str = "",
    model: str = SONNET_45,
) -> dict[str, Any]:
    """A line worth 2**bit tokens of one class (`carrier`) and nothing else, ids of its own.

    Put the bit in another class than the one a case corrupts, so the total still tells
    which lines counted. `tag` keeps ids apart when a corpus has several probe series.
    """
    line = assistant(f"msg_p{tag}{bit}", f"req_p{tag}{bit}", model=model)
    line = edit(line, {_PROBE_CLASS[carrier]: 2**bit, "uuid": f"p{tag}-{bit}"})
    return edit(line, changes) if changes else line


# What the wrapper keeps of the sub-agent's line, in this order (isSidechain decides the
# sidechain rule for the copy).
_PROGRESS_KEEP = ("type", "timestamp", "requestId", "isSidechain", "uuid", "costUSD", "message")
_OUTER_FIELDS = ("parentUuid", "isSidechain", "userType", "cwd", "sessionId", "version",
                 "gitBranch", "uuid", "timestamp")  # fmt: skip


def progress(
    msg_id: str | None,
    request_id: str | None,
    *,
    input_tokens: int = 0,
    output_tokens: int = 0,
    model: str = SONNET_45,
    timestamp: str = TIMESTAMP,
    sidechain: bool = False,
    outer: bool = True,
    outer_timestamp: str | None = None,
    inner: Mapping[str, Any] | None = None,
    line_type: str | None = "progress",
    data_type: str | None = "agent_progress",
) -> dict[str, Any]:
    """A progress wrapper: a sub-agent's response copied into the parent session's file.

    Usage, id and model sit in data.message.message; timestamp, requestId and isSidechain in
    data.message (`inner` adds or overrides fields there). `outer=False` leaves out the
    session fields, uuid and timestamp of the wrapper; a None type or data type leaves the key
    out.
    """
    copied = assistant(
        msg_id, request_id, model=model, input_tokens=input_tokens, output_tokens=output_tokens,
        content=[], timestamp=timestamp, sidechain=sidechain, uuid=f"pw-{msg_id}-{request_id}",
    )  # fmt: skip
    line = agent_progress(
        copied, agent="task", keep=_PROGRESS_KEEP, parent_uuid="p-1",
        uuid=f"po-{msg_id}-{request_id}", timestamp=outer_timestamp or timestamp,
    )  # fmt: skip
    line["data"]["message"].update(inner or {})
    changes: dict[str, Any] = {}
    if not outer:
        changes.update(dict.fromkeys(_OUTER_FIELDS, DELETE))
    if line_type != "progress":
        changes["type"] = DELETE if line_type is None else line_type
    if data_type != "agent_progress":
        changes["data.type"] = DELETE if data_type is None else data_type
    return edit(line, changes) if changes else line


def task_result(content: str, usage: Mapping[str, int], **fields: Any) -> dict[str, Any]:
    """A finished Task's tool result: it reports its sub-agent's usage in toolUseResult.usage,
    which neither reader may count (it is not message.usage)."""
    result = {"status": "completed", "totalTokens": sum(usage.values()), "usage": dict(usage)}
    return tool_result(content, result=result, **fields)


# ------------------------------------------------------------------------------- file trees


@dataclass(frozen=True)
class Corpus:
    """Where a reader finds a corpus: the CLAUDE_CONFIG_DIR value (one folder or a comma
    list), and the HOME and working directory it must run in (None: any empty folder)."""

    config_dir: str
    home: Path | None = None
    cwd: Path | None = None
    # Requests priced by Anthropic's page where ccusage differs, each alone in its (day, model)
    # cell of the report: checked against oracle.py instead of ccusage (docs/ledger-rules.md).
    oracle: tuple[oracle.Request, ...] = ()


class Tree:
    """Writes transcript files under one base folder, newest-last modification times."""

    def __init__(self, base: Path):
        self.base = base
        self.base.mkdir(parents=True, exist_ok=True)
        self._written = 0

    def write(
        self,
        rel: str,
        lines: Iterable[Line],
        *,
        newline: bytes = b"\n",
        final_newline: bool = True,
        prefix: bytes = b"",
    ) -> Path:
        """Write one file: the lines joined by `newline`, optionally with a BOM-like prefix."""
        data = newline.join(encode(line) for line in lines)
        if final_newline and data:
            data += newline
        return self.write_bytes(rel, prefix + data)

    def write_bytes(self, rel: str, data: bytes) -> Path:
        path = self.base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self._written += 1
        stamp = _BASE_MTIME + self._written
        os.utime(path, (stamp, stamp))
        return path

    def session(
        self, lines: Iterable[Line], *, slug: str = SLUG, session: str = SESSION, **options: Any
    ) -> Path:
        """projects/<slug>/<session>.jsonl"""
        return self.write(f"projects/{slug}/{session}.jsonl", lines, **options)

    def subagent(
        self, lines: Iterable[Line], agent: str, *, slug: str = SLUG, session: str = SESSION
    ) -> Path:
        """projects/<slug>/<session>/subagents/agent-<id>.jsonl (counted under the parent)"""
        return self.write(f"projects/{slug}/{session}/subagents/agent-{agent}.jsonl", lines)

    def corpus(self, requests: Iterable[oracle.Request] = ()) -> Corpus:
        return Corpus(str(self.base), oracle=tuple(requests))


def _probes(root: Path, lines: Iterable[Line]) -> Corpus:
    tree = Tree(root / "claude")
    tree.session(lines)
    return tree.corpus()


# ------------------------------------------------------- §1 which lines are candidates


def candidates(root: Path) -> Corpus:
    """The raw `"usage":{` prefilter, where usage is read from, and which types count."""
    spaced_elsewhere = json.dumps(probe(4, {"meta": {"usage": {}}}))
    usage_first = probe(5)
    usage_first["message"] = {"usage": usage_first["message"].pop("usage"),
                              **usage_first["message"]}  # fmt: skip
    toplevel = probe(13)
    toplevel["usage"] = toplevel["message"].pop("usage")
    task = task_result("done", {"input_tokens": 2**14, "output_tokens": 0})
    task_with_ids = edit(
        task_result("done", {"input_tokens": 2**15, "output_tokens": 0}),
        {"toolUseResult.model": SONNET_45, "toolUseResult.id": "msg_x"},
    )
    advisor_spaced = replace_once(
        compact(probe(17, {"message.usage.iterations": [advisor(2**18)]})),
        '"type":"advisor_message"', '"type": "advisor_message"',
    )  # fmt: skip
    lines: list[Line] = [
        probe(0),  # control: counted
        json.dumps(probe(1)),  # `"usage": {` everywhere: not a candidate
        replace_once(compact(probe(2)), '"usage":{', '"usage" :{'),
        replace_once(compact(probe(3)), '"usage":{', '"usage":\t{'),
        replace_once(spaced_elsewhere, '"usage": {}', '"usage":{}'),  # passes on another key
        usage_first,
        json.dumps(probe(6, {"message.content": [{"type": "text", "text": '"usage":{'}]})),
        probe(7, {"type": "user"}),
        probe(8, {"type": DELETE}),
        probe(9, {"type": "summary"}),
        probe(10, {"type": "progress"}),
        probe(11, {"message.role": "user"}),
        probe(12, {"type": None}),
        toplevel,  # usage outside message: never counted
        task,
        task_with_ids,
        advisor_spaced,  # the advisor is found by its raw type string, spacing aside
    ]
    tree = Tree(root / "claude")
    tree.session(lines)
    tree.write(f"projects/{SLUG}/pretty.jsonl", [json.dumps(probe(16), indent=2)])
    return tree.corpus()


# ------------------------------------------------------------------------ §2 validation

_NULLABLE_FIELDS = [
    "message.id", "cwd", "message.model", "message.usage.speed", "speed", "costUSD", "version",
    "sessionId", "requestId", "isApiErrorMessage", "message.usage.cache_creation",
    "isSidechain", "uuid", "gitBranch", "message.usage.service_tier", "message.content",
    "parentUuid", "message.type", "message.role", "userType", "message.stop_reason",
    "message.usage.cache_creation.ephemeral_5m_input_tokens", "message.usage.server_tool_use",
    "message.usage.iterations", "isMeta", "agentId", "timestamp",
]  # fmt: skip

_NULL_CHECKED_KEYS = [
    "id", "cwd", "model", "speed", "costUSD", "version", "sessionId", "requestId",
    "isApiErrorMessage", "cache_creation_input_tokens", "cache_read_input_tokens",
]  # fmt: skip

_OTHER_KEYS = [
    "input_tokens", "output_tokens", "ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens",
    "timestamp", "foo", "uuid", "isSidechain", "content", "type", "usage", "message",
    "cache_creation", "iterations", "server_tool_use", "service_tier", "data", "parentUuid",
    "agentId", "gitBranch", "userType", "isMeta", "toolUseResult", "name", "input", "text",
    "slug", "leafUuid", "stop_reason", "isCompactSummary",
]  # fmt: skip


def null_fields(root: Path) -> Corpus:
    """A JSON null on one of eleven keys drops the line, at the field's place or nested."""
    return _probes(root, [probe(bit, {path: None}) for bit, path in enumerate(_NULLABLE_FIELDS)])


def nested_nulls(root: Path) -> Corpus:
    """The null check runs at any depth, on those eleven keys only."""
    keys = _NULL_CHECKED_KEYS + _OTHER_KEYS
    lines: list[Line] = [probe(bit, {"toolUseResult": {key: None}}) for bit, key in enumerate(keys)]
    return _probes(root, lines)


def spelled_nulls(root: Path) -> Corpus:
    """Nulls behind spacing or escapes count as nulls; "null" inside a string does not."""
    lines: list[Line] = []
    for bit, key in enumerate(_NULL_CHECKED_KEYS):  # nested, spaced: `"id": null`
        text = compact(probe(bit, {"toolUseResult": {key: None}}))
        lines.append(replace_once(text, f'"{key}":null', f'"{key}": null'))
    for bit, path in enumerate(["cwd", "sessionId", "version", "requestId", "costUSD", "speed",
                                "isApiErrorMessage"], start=11):  # fmt: skip
        text = compact(probe(bit, {path: None}))
        lines.append(replace_once(text, f'"{path}":null', f'"{path}": null'))
    lines += [
        replace_once(
            compact(probe(18, {"toolUseResult": {"x": None}})), '"x":null', '"\\u0063wd":null'
        ),
        replace_once(compact(probe(19)), '"text":"hi"', '"text":"\\"cwd\\":null"'),
        probe(20, {"toolUseResult": {"model": "null"}}),
        probe(21, {"toolUseResult": {"a": '"model":null'}}),
        probe(22, {"toolUseResult": {"model": 5, "id": 7, "cwd": [], "requestId": {}}}),
        probe(23, {"message.content": [{"type": "tool_use", "id": None, "name": "x"}]}),
        probe(24, {"toolUseResult": {"a": [{"b": {"model": None}}]}}),
    ]
    return _probes(root, lines)


_MISSING_FIELDS = [
    "cwd", "sessionId", "message.model", "requestId", "message.id", "version", "isSidechain",
    "uuid", "type", "timestamp", "message.usage.service_tier", "message.content",
    "message.role", "message.type", "parentUuid", "userType", "gitBranch",
]  # fmt: skip

_VERSIONS: list[Any] = [
    "2.0.14", "v2", "2.0", "2.0.x", "10.20.30-beta", "2", "2.0.14.5", "1.0.0", " 2.0.14",
    "2.0.1x", "abc", 2, 2.0, "2.0.14-rc.1+build", "",
]  # fmt: skip


def missing_and_empty(root: Path) -> Corpus:
    """Missing fields (only timestamp is required), empty ids, and the version prefix rule."""
    lines: list[Line] = [probe(bit, {path: DELETE}) for bit, path in enumerate(_MISSING_FIELDS)]
    empties = ["message.id", "requestId", "sessionId", "cwd", "message.model", "uuid"]
    lines += [probe(bit, {path: ""}, tag="e") for bit, path in enumerate(empties, start=17)]
    lines += [
        probe(bit, {"version": version}, tag="v")
        for bit, version in enumerate(_VERSIONS, start=17 + len(empties))
    ]
    return _probes(root, lines)


_WRONG_TYPES: list[tuple[str, Any]] = [
    ("message.id", 123), ("requestId", 123), ("sessionId", 123), ("cwd", 123),
    ("message.model", 123), ("isSidechain", "false"), ("isSidechain", 0), ("costUSD", "0.5"),
    ("isApiErrorMessage", "true"), ("timestamp", 1764324005), ("message.usage", []),
    ("message", "str"), ("message.usage.speed", "turbo"), ("message.usage.speed", 1),
    ("uuid", 5), ("type", 5), ("cwd", {"a": 1}), ("cwd", [1]), ("gitBranch", 5),
    ("isApiErrorMessage", 5), ("isApiErrorMessage", False), ("isApiErrorMessage", True),
    ("costUSD", 0), ("costUSD", 2), ("timestamp", 1764324005000),
]  # fmt: skip


def wrong_types(root: Path) -> Corpus:
    """Typed fields at their real place; unchecked ones (cwd, uuid, type, …) may be anything."""
    lines: list[Line] = [probe(bit, {path: v}) for bit, (path, v) in enumerate(_WRONG_TYPES)]
    base = len(_WRONG_TYPES)
    # Decoys before the message: nested ids, models and usage must not be taken for the real ones.
    decoy = {"toolUseResult": {"model": OPUS_46, "id": "zzz", "requestId": "qq",
                               "usage": {"input_tokens": 7, "output_tokens": 0}}}  # fmt: skip
    lines.append({**decoy, **probe(base)})
    lines.append({"toolUseResult": {"id": "d1", "requestId": "d1"}, **probe(base + 1)})
    return _probes(root, lines)


_BAD_COUNTS: list[tuple[str, Any]] = [
    ("float", 1.5), ("float_integral", 100.0), ("string", "100"), ("negative", -5),
    ("null", None), ("bool", True), ("above_u64", 2**64 + 5), ("u64_max", 2**64 - 1),
]  # fmt: skip


def token_values(root: Path) -> Corpus:
    """Token fields must be u64 integers; input and output are required, cache fields not."""
    lines: list[Line] = []
    bit = 0
    for field_name in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                       "cache_read_input_tokens"):  # fmt: skip
        carrier = "output" if field_name != "output_tokens" else "input"
        for _, value in _BAD_COUNTS:
            if value == 2**64 - 1:
                continue  # accepted, but a sum above 2**53 is known to differ (float64)
            lines.append(probe(bit, {f"message.usage.{field_name}": value}, carrier=carrier))
            bit += 1
        lines.append(probe(bit, {f"message.usage.{field_name}": DELETE}, carrier=carrier))
        bit += 1
    lines.append(probe(bit, {"message.usage.input_tokens": 2**33}, carrier="output"))
    lines.append(probe(bit + 1, {"message.usage": {}}, carrier="output"))
    exponent = compact(probe(bit + 2, {"message.usage.input_tokens": 1000}, carrier="output"))
    lines.append(replace_once(exponent, '"input_tokens":1000', '"input_tokens":1e3'))
    return _probes(root, lines)


def speed_values(root: Path) -> Corpus:
    """usage.speed may be missing, standard or fast; the other `speed` keys are not read."""
    cases: list[tuple[str, Any]] = [
        ("message.usage.speed", "standard"), ("message.usage.speed", "fast"),
        ("message.usage.speed", "priority"), ("message.usage.speed", ""),
        ("speed", "standard"), ("speed", "fast"), ("speed", "x"), ("message.speed", "fast"),
        ("message.speed", "x"),
    ]  # fmt: skip
    lines: list[Line] = [
        probe(bit, {path: value}, model=OPUS_46) for bit, (path, value) in enumerate(cases)
    ]
    return _probes(root, lines)


def duplicate_keys(root: Path) -> Corpus:
    """A key repeated anywhere in a line drops the line (Python's json keeps the last one)."""
    replacements = [
        ('"gitBranch":"main"', '"gitBranch":"main","gitBranch":"x"'),
        ('"uuid":"p-1"', '"uuid":"p-1","uuid":"b"'),
        ('"type":"text","text":"hi"', '"type":"text","text":"hi","text":"again"'),
        ('"isSidechain":false', '"isSidechain":false,"isSidechain":false'),
        (f'"model":"{SONNET_45}"', f'"model":"x","model":"{SONNET_45}"'),
        ('"service_tier":"standard"', '"service_tier":"standard","service_tier":"x"'),
        ('"userType":"external"', '"userType":"external","userType":"y"'),
        ('"version":"2.0.14"', '"version":"2.0.14","version":"2.0.15"'),
        ('"gitBranch":"main"', '"g\\"":1,"g\\u0022":2,"gitBranch":"main"'),  # same key, escaped
        ('"gitBranch":"main"', '"gitBranch":"ma\\":n"'),  # not a duplicate: `":` in a string
        ('"gitBranch":"main"', '"gitBranch":"\\u0022:"'),  # not a duplicate either
    ]
    lines: list[Line] = []
    for bit, (old, new) in enumerate(replacements):
        text = compact(probe(bit))  # holds "stop_reason":null, like every streamed copy
        if old.startswith('"uuid"'):
            old, new = old.replace("p-1", f"p-{bit}"), new.replace("p-1", f"p-{bit}")
        lines.append(replace_once(text, old, new))
    # Without any null in the line, a repeated key that ccusage reads still drops it.
    read_keys = [
        (f'"model":"{SONNET_45}"', f'"model":"{SONNET_45}","model":"{SONNET_45}"'),
        ('"version":"2.0.14"', '"version":"2.0.14","version":"2.0.14"'),
        ('"sessionId":"', '"sessionId":"x","sessionId":"'),
        ('"isSidechain":false', '"isSidechain":false,"isSidechain":false'),
        ('"output_tokens":0', '"output_tokens":0,"output_tokens":0'),
        ('"timestamp":"', f'"timestamp":"{TIMESTAMP}","timestamp":"'),
    ]
    for bit, (old, new) in enumerate(read_keys, start=len(replacements)):
        text = compact(probe(bit, {"message.stop_reason": "end_turn"}))
        lines.append(replace_once(text, old, new))
    text = compact(probe(20, {"message.stop_reason": "end_turn"}))
    lines.append(replace_once(text, '"requestId":"req_p20"',
                              '"requestId":"req_p20","requestId":"req_p20"'))  # fmt: skip
    text = compact(probe(21, {"message.stop_reason": "end_turn"}))
    lines.append(replace_once(text, '"id":"msg_p21"', '"id":"msg_p21","id":"msg_p21"'))
    return _probes(root, lines)


# ------------------------------------------------------------------------- §3 timestamps

_TIMESTAMPS = [
    "2026-11-28T10:00:05.000Z", "2026-11-28T10:00:05Z", "2026-11-28T10:00:05",
    "2026-11-28T10:00:05+02:00", "2026-11-28", "garbage", "2026-11-28T10:00:05.123456789Z",
    "2026-11-28 10:00:05Z", "2026-11-28T10:00:05.000+0200", "2026-11-28T23:30:00-05:00",
    "2026-11-28t10:00:05z", "2026-11-28T10:00Z", "", "20261128T100005Z",
    "Sat, 28 Nov 2026 10:00:05 GMT", "2026-11-28T10:00:05.000z", "2026-11-28T10:00:05.1Z",
    "2026-11-28T10:00:05.12Z", "2026-11-28T10:00:05.123Z", "2026-11-28T10:00:05.1234Z",
    "2026-11-28T10:00:05.123456Z", "2026-11-28T10:00:05+00:00", "2026-11-28T10:00:05.000+05:30",
    "2026-11-28T10:00:60Z", "2026-02-30T10:00:05Z", "2026-11-28T24:00:00Z",
    "2026-11-28T10:00:05.000Z ", "2026-11-28T10:00:05,000Z", "+2026-11-28T10:00:05Z",
    "2026-11-28T10:00:05+23:59", "2026-11-28T10:00:05+24:00", "2026-11-28T10:00:05-00:00",
    "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2024-02-29T10:00:00Z",
    "2026-02-29T10:00:00Z", "2026-11-28T10:00:05.000+99:00", "2026-13-01T00:00:00Z",
    "2026-00-10T00:00:00Z", "2026-11-00T00:00:00Z", "２026-11-28T10:00:05Z",
    "2026-11-28T1٠:00:05Z",
]  # fmt: skip


def timestamps(root: Path) -> Corpus:
    """Only YYYY-MM-DDTHH:MM:SS[.mmm](Z|±HH:MM) with a valid date and time is accepted."""
    lines: list[Line] = [probe(bit, {"timestamp": ts}) for bit, ts in enumerate(_TIMESTAMPS)]
    lines.append(probe(len(_TIMESTAMPS), {"timestamp": DELETE}))
    return _probes(root, lines)


# ------------------------------------------------------------------------------ §4 dedup


def _copy(key: str, request_id: str | None = "same", **usage: Any) -> dict[str, Any]:
    """One copy of response `key`: same message id (and requestId unless told otherwise)."""
    rid = f"req_{key}" if request_id == "same" else request_id
    changes = usage.pop("changes", None)
    return assistant(f"msg_{key}", rid, changes=changes, **usage)


def dedup(root: Path) -> Corpus:
    """Key = message.id + requestId; the largest total wins, then cost, then `speed`, then the
    first read. Only cases where the kept copy never shrinks a token class (see the docs)."""
    fast = {"message.usage.speed": "fast"}
    standard = {"message.usage.speed": "standard"}
    later = {"timestamp": at(29)}
    lines: list[Line] = [
        # a streamed response: output grows copy after copy
        _copy("stream", input_tokens=100, output_tokens=10),
        _copy("stream", input_tokens=100, output_tokens=500),
        _copy("stream", input_tokens=100, output_tokens=100),
        # cache read counts in the total: the first copy (1100) beats the costlier 500
        _copy("total4", input_tokens=100, cache_read=1000),
        _copy("total4", output_tokens=500),
        # equal totals: the costlier (output) copy first, kept
        _copy("tiecost", output_tokens=100),
        _copy("tiecost", input_tokens=100),
        # equal totals and cost, first one read (days differ)
        _copy("first", input_tokens=100),
        _copy("first", input_tokens=100, changes=later),
        _copy("firstrev", input_tokens=100, changes=later),
        _copy("firstrev", input_tokens=100),
        # fast (costlier on opus-4-6) first or last: the same tokens either way
        _copy("fastab", input_tokens=100, model=OPUS_46, changes=fast),
        _copy("fastab", input_tokens=100, model=OPUS_46),
        _copy("fastba", input_tokens=100, model=OPUS_46),
        _copy("fastba", input_tokens=100, model=OPUS_46, changes=fast),
        # the costlier copy first beats a later one that only has `speed`
        _copy("stdcost", output_tokens=100, model=OPUS_46),
        _copy("stdcost", input_tokens=100, model=OPUS_46, changes=standard),
        _copy("fastcheap", output_tokens=100, model=OPUS_46),
        _copy("fastcheap", cache_read=100, model=OPUS_46, changes=fast),
        # same cost (fast is x1 on sonnet): the copy with `speed` wins, same tokens
        _copy("samecost", input_tokens=100, changes={**fast, **later}),
        _copy("samecost", input_tokens=100),
        _copy("samecostrev", input_tokens=100),
        _copy("samecostrev", input_tokens=100, changes={**fast, **later}),
        _copy("stdsame", input_tokens=100),
        _copy("stdsame", input_tokens=100, changes={**standard, **later}),
        # costUSD decides ties and beats a calculated cost
        _copy("usd_a", input_tokens=100, changes={"costUSD": 0.9, "timestamp": at(1)}),
        _copy("usd_a", output_tokens=100, changes={"timestamp": at(2)}),
        _copy("usd_c", input_tokens=100, output_tokens=10, changes={"costUSD": 0.0}),
        _copy("usd_c", input_tokens=100, output_tokens=9, changes={"costUSD": 5.0}),
        # the kept copy's model prices the response (the cost grows here)
        _copy("model", input_tokens=100),
        _copy("model", input_tokens=100, output_tokens=1, model=OPUS_46),
        # no requestId: keyed by message id alone, apart from the same id with a requestId
        _copy("noreq", None, input_tokens=1),
        _copy("noreq", None, input_tokens=2),
        _copy("noreq2", None, input_tokens=4),
        _copy("noreq2", "req_noreq2", input_tokens=8),
        _copy("noreq3", "req_noreq3", input_tokens=16),
        _copy("noreq3", None, input_tokens=32),
        # no message id: never deduplicated
        assistant(None, "req_nomid", input_tokens=64),
        assistant(None, "req_nomid", input_tokens=128),
        assistant(None, None, input_tokens=256),
        assistant(None, None, input_tokens=256),
        # same requestId, different message ids: two responses
        assistant("msg_m1", "req_shared", input_tokens=512),
        assistant("msg_m2", "req_shared", input_tokens=1024),
        # same message id, different requestIds: two responses
        assistant("msg_twice", "req_r1", input_tokens=2048),
        assistant("msg_twice", "req_r2", input_tokens=4096),
    ]
    tree = Tree(root / "claude")
    tree.session(lines)
    # Dedup is global: across files, projects and sub-agent files (copies only grow).
    tree.session([_copy("files", input_tokens=100, output_tokens=10)], session="a")
    tree.session([_copy("files", input_tokens=100, output_tokens=500)], session="b")
    tree.session([_copy("projects", input_tokens=100, output_tokens=10)], slug="-home-bob-x")
    tree.session([_copy("projects", input_tokens=100, output_tokens=500)], slug="-home-carol-y")
    tree.session([_copy("subagent", input_tokens=100, output_tokens=10)], session="s1")
    tree.subagent([_copy("subagent", input_tokens=100, output_tokens=500)], "1", session="s1")
    return tree.corpus()


def dedup_across_config_dirs(root: Path) -> Corpus:
    """Copies of one response in two config folders of one CLAUDE_CONFIG_DIR list are one
    response (lines without message id are counted in each)."""
    first, second = Tree(root / "claude-a"), Tree(root / "claude-b")
    first.session([_copy("x", input_tokens=10, output_tokens=5), _copy("y", output_tokens=7),
                   assistant(None, "r", input_tokens=1000)])  # fmt: skip
    second.session(
        [
            _copy("x", input_tokens=10, output_tokens=50),
            _copy("y", output_tokens=7),
            assistant(None, "r", input_tokens=1000),
        ],
        slug="-home-alice-other",
    )
    return Corpus(f"{first.base},{second.base}")


# ------------------------------------------------------------------- §5 sidechain replays


def _side(key: str, request_id: str | None, input_tokens: int, *, sidechain: bool = True,
          **kwargs: Any) -> dict[str, Any]:  # fmt: skip
    return assistant(f"msg_{key}", request_id, input_tokens=input_tokens, sidechain=sidechain,
                     **kwargs)  # fmt: skip


def sidechains(root: Path) -> Corpus:
    """A main copy drops every sidechain copy of its message id; lone sidechain copies are
    deduplicated by message id. Replays come after their main copy, or repeat its usage."""
    lines: list[Line] = [
        _side("a", "r1", 1, sidechain=False),
        _side("a", "r2", 2),
        _side("b", "r1", 4, sidechain=False),
        _side("b", "r2", 1000),  # replay bigger: dropped
        _side("c", "r2", 8),  # lone
        _side("d", "r2", 16),
        _side("d", "r3", 32),  # lone pair: the larger one
        _side("e", "r3", 64),
        _side("e", "r2", 64),
        _side("f", "r1", 128, sidechain=False),
        _side("f", "r1", 256),  # same requestId
        _side("g", "r1", 512, sidechain=False),
        _side("g", "r2", 1),
        _side("g", "r3", 1),
        _side("h", "r1", 2048, sidechain=False),
        _side("h", None, 4096),
        _side("i", None, 8192, sidechain=False),
        _side("i", "r2", 1),
        _side("j", "r1", 2**14, sidechain=False),
        _side("j", "r2", 2**15, sidechain=False),
        _side("j", "r3", 2**16),
        _side("k", "r1", 1, sidechain=False, output_tokens=1),
        _side("k", "r1", 1, sidechain=False, output_tokens=5),
        _side("k", "r2", 2, output_tokens=9),
        _side("l", "r1", 2**17, sidechain=False),
        _side("l", "r2", 2**18, changes={"isSidechain": None}),
        _side("m", "r1", 2**19, sidechain=False, changes={"isSidechain": DELETE}),
        _side("m", "r2", 2**20),
        _side("n", "r1", 2**21, sidechain=False),
        _side("n", "r2", 3, model=OPUS_46),
        _side("o", "r1", 2**22, sidechain=False),
        _side("o", "r2", 5, timestamp=at(27)),
        # a replay first, with the usage of the main copy that follows
        _side("p", "r2", 2**23),
        _side("p", "r1", 2**23, sidechain=False),
    ]
    tree = Tree(root / "claude")
    tree.session(lines)
    # Other files and projects: replays repeat the main copy's usage, so order cannot matter.
    tree.session([_side("q", "r1", 2**24, sidechain=False)], session="main-q")
    tree.subagent([_side("q", "r2", 2**24)], "x", session="main-q")
    tree.session([_side("r", "r2", 2**25)], slug="-other", session="side-r")
    tree.session([_side("r", "r1", 2**25, sidechain=False)], session="main-r")
    return tree.corpus()


# ------------------------------------------------------------------ §6 synthetic / errors


def synthetic(root: Path) -> Corpus:
    """<synthetic> lines count tokens at cost 0 (or their costUSD); API errors of real models
    are priced normally."""
    overloaded = 'API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}'
    lines: list[Line] = [
        edit(api_error("m1", overloaded, request_id="r1", timestamp=at(1)),
             {"message.usage.input_tokens": 5, "message.usage.output_tokens": 7}),
        _copy("m2", input_tokens=11, model=SYNTHETIC, timestamp=at(2)),
        _copy("m3", input_tokens=13, output_tokens=1, timestamp=at(3),
              changes={"isApiErrorMessage": True}),
        _copy("m4", input_tokens=17, model=SYNTHETIC, timestamp=at(4), changes={"costUSD": 0.25}),
        edit(api_error("m5", "API Error: 429 rate_limit_error", timestamp=at(5)),
             {"message.usage.input_tokens": 19}),
        edit(api_error("m5", "API Error: 429 rate_limit_error", timestamp=at(5)),
             {"message.usage.input_tokens": 19}),
        api_error("m6", "Claude AI usage limit reached|1795840000", timestamp=at(6)),
        api_error("m7", "API Error: 500 api_error", timestamp=at(7)),
    ]  # fmt: skip
    return _probes(root, lines)


# --------------------------------------------------------------------- §7, §8 pricing

# Every model id of the experiments (b5.py) except the fuzzy-matched odd names that are a
# deliberate difference: sonnet, claude-opus, gpt-4, claude-opus-4-6@default, -4-8-fast.
PRICED_MODELS = [
    "claude-opus-4-5-20251101", "claude-opus-4-1-20250805", "claude-opus-4-20250514",
    "claude-sonnet-4-5-20250929", "claude-sonnet-4-20250514", "claude-sonnet-4-6",
    "claude-3-7-sonnet-20250219", "claude-haiku-4-5-20251001", "claude-3-5-haiku-20241022",
    "claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-sonnet-4-5",
    "claude-sonnet-4-5-20991231", "anthropic/claude-sonnet-4-5", "claude-sonnet-4-5@20250929",
    "claude-opus-5", "claude-sonnet-5", "claude-fable-5", "claude-mythos-5",
    "claude-3-haiku-20240307", "claude-3-opus-20240229", "claude-3-5-sonnet-20241022",
    "claude-opus-4-6-20260205", "claude-opus-4-7-20260416", "claude-opus-4-8-20261101",
    "claude-opus-4-1", "claude-haiku-4-5", "claude-4-sonnet-20250514",
    "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-opus-4-6-v1",
    "claude-opus-4-7-thinking", "claude-sonnet-4-5-latest", "claude-sonnet-4-5-20250929-v1:0",
    "openrouter/anthropic/claude-sonnet-4.5", "claude-sonnet-4.5", "claude-3.5-haiku",
    "claude-3-5-haiku", "claude-opus-4-6-fast", "claude-opus-4", "claude-sonnet-4",
    "claude-3-7-sonnet", "claude-3-7-sonnet-latest", "claude-opus-4-5",
    "claude-sonnet-4-6-20260101", "claude-haiku-4-5-20991231", "claude-opus-4-6-foo",
    SYNTHETIC, "claude-sonnet-4-5-x", "claude-3-haiku", "claude-3-sonnet-20240229",
    "anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-opus-4-1-20250805-thinking",
    "claude-sonnet-4-5[1m]", "claude-haiku-4-5@20251001", "claude-opus-4-1@20250805",
    "us.anthropic.claude-opus-4-6-v1", "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "claude-opus-4-6[1m]", "anthropic/claude-opus-4-6",
]  # fmt: skip

# Models ccusage leaves unpriced (cost 0; their tokens still count).
UNPRICED_MODELS = [
    "foo", "Claude-Sonnet-4-5", "claude-opus-4-0", "claude-sonnet-4-0", "claude-haiku-4",
    "claude-opus-4-9", "claude-sonnet-4-7", "claude-haiku-5", "claude-2.1",
]  # fmt: skip

_K = 100_000
_ONE_HOUR = "message.usage.cache_creation"
# day -> usage of one entry: each class alone, above 200k, at the tier border, 1-hour cache,
# fast mode, costUSD (also 0).
PRICING_DAYS: dict[int, dict[str, Any]] = {
    1: {"input_tokens": _K}, 2: {"output_tokens": _K}, 3: {"cache_creation": _K},
    4: {"cache_read": _K}, 5: {"input_tokens": 3 * _K}, 6: {"output_tokens": 3 * _K},
    7: {"cache_creation": 3 * _K}, 8: {"cache_read": 3 * _K},
    9: {"input_tokens": 150_000, "cache_read": 150_000}, 10: {"input_tokens": 200_000},
    11: {"input_tokens": 200_001},
    12: {"cache_creation": _K, "changes": {_ONE_HOUR: {"ephemeral_5m_input_tokens": 0,
                                                       "ephemeral_1h_input_tokens": _K}}},
    13: {"cache_creation": _K, "changes": {_ONE_HOUR: {"ephemeral_5m_input_tokens": _K,
                                                       "ephemeral_1h_input_tokens": 0}}},
    14: {"input_tokens": _K, "changes": {"message.usage.speed": "fast"}},
    15: {"output_tokens": _K, "changes": {"message.usage.speed": "fast"}},
    16: {"cache_creation": 3 * _K, "changes": {_ONE_HOUR: {"ephemeral_5m_input_tokens": 0,
                                                           "ephemeral_1h_input_tokens": 3 * _K}}},
    17: {"input_tokens": 3 * _K, "changes": {"message.usage.speed": "fast"}},
    18: {"input_tokens": 100, "output_tokens": 100, "cache_creation": 100, "cache_read": 100,
         "changes": {"costUSD": 0.5}},
    19: {"input_tokens": 100, "output_tokens": 100, "cache_creation": 100, "cache_read": 100,
         "changes": {"costUSD": 0}},
}  # fmt: skip


def pricing_lines(model: str, days: Mapping[int, Mapping[str, Any]] = PRICING_DAYS) -> list[Line]:
    """One line per pricing case for one model, under ids of its own."""
    lines: list[Line] = []
    for day, usage in days.items():
        usage = dict(usage)
        lines.append(assistant(f"msg_{model}_{day}", f"req_{model}_{day}", model=model,
                               timestamp=at(day), **usage))  # fmt: skip
    return lines


def pricing(root: Path) -> Corpus:
    """Prices, the 200k tier, the 1-hour cache, fast mode and costUSD for every model id."""
    tree = Tree(root / "claude")
    requests = []
    for number, model in enumerate(PRICED_MODELS + UNPRICED_MODELS):
        tree.session(pricing_lines(model), session=f"model-{number:03d}")
        for day, usage in PRICING_DAYS.items():
            requests.append(_request(at(day), model, usage))
    return tree.corpus(request for request in requests if oracle.differs(request))


def _request(timestamp: str, model: str, usage: Mapping[str, Any]) -> oracle.Request:
    """The oracle's view of one line written by `assistant(model=model, **usage)`."""
    cache = usage.get("cache_creation", 0)
    split = usage.get("changes", {}).get(_ONE_HOUR)
    five, hour = (
        (cache, 0)
        if split is None
        else (split.get("ephemeral_5m_input_tokens", 0), split.get("ephemeral_1h_input_tokens", 0))
    )
    return oracle.Request(
        timestamp[:10], model, usage.get("input_tokens", 0), usage.get("output_tokens", 0),
        usage.get("cache_read", 0), five, hour,
    )  # fmt: skip


def long_context(root: Path) -> Corpus:
    """The tier is marginal, per entry and per token class, for the sonnet-4 family only."""
    lines: list[Line] = []
    cases: list[tuple[str, dict[str, Any]]] = [
        (SONNET_45, {"input_tokens": 250_000, "output_tokens": 210_000, "cache_read": 400_000,
                     "cache_creation": 300_000}),
        (SONNET_4, {"input_tokens": 199_999, "cache_read": 200_001}),
        (SONNET_45, {"input_tokens": 120_000, "cache_read": 120_000, "cache_creation": 120_000}),
        (SONNET_45, {"cache_creation": 500_000, "changes": {_ONE_HOUR: {
            "ephemeral_5m_input_tokens": 250_000, "ephemeral_1h_input_tokens": 250_000}}}),
        (SONNET_45, {"input_tokens": 300_000, "changes": {"message.usage.speed": "fast"}}),
        ("claude-sonnet-4-5@20250929", {"input_tokens": 300_000}),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", {"output_tokens": 300_000}),
        (OPUS_46, {"input_tokens": 300_000, "changes": {"message.usage.speed": "fast"}}),
        ("claude-sonnet-4-6", {"input_tokens": 300_000}),
        (HAIKU_45, {"cache_read": 900_000}),
    ]  # fmt: skip
    for number, (model, usage) in enumerate(cases):
        timestamp = at(number + 1)  # one request per day: the oracle checks each alone
        lines.append(assistant(f"msg_lc{number}", f"req_lc{number}", model=model,
                               timestamp=timestamp, **usage))  # fmt: skip
    tree = Tree(root / "claude")
    tree.session(lines)
    requests = (_request(at(n + 1), model, usage) for n, (model, usage) in enumerate(cases))
    return tree.corpus(request for request in requests if oracle.differs(request))


# ----------------------------------------------------------------------- §9 cache_creation


def cache_creation(root: Path) -> Corpus:
    """A cache_creation object replaces cache_creation_input_tokens; 1h writes cost 2 x input."""

    def entry(day: int, total: Any, parts: Any, model: str = SONNET_45) -> dict[str, Any]:
        changes: dict[str, Any] = {}
        if parts is not None:
            changes[_ONE_HOUR] = parts
        if total is DELETE:
            changes["message.usage.cache_creation_input_tokens"] = DELETE
            total = 0
        return assistant(f"msg_cc{day}", f"req_cc{day}", model=model, cache_creation=total,
                         timestamp=at(day), changes=changes)  # fmt: skip

    def parts(five: Any = DELETE, hour: Any = DELETE, **extra: Any) -> dict[str, Any]:
        found = {"ephemeral_5m_input_tokens": five, "ephemeral_1h_input_tokens": hour, **extra}
        return {key: value for key, value in found.items() if value is not DELETE}

    lines: list[Line] = [
        entry(1, 100_000, parts(30_000, 70_000)),
        entry(2, 100_000, parts(10_000, 20_000)),  # the object wins: 30000
        entry(3, 0, parts(50_000, 50_000)),
        entry(4, 100_000, parts(hour=40_000)),
        entry(5, 100_000, parts(five=40_000)),
        entry(6, 100_000, {}),  # present but empty: 0
        entry(7, DELETE, parts(30_000, 70_000)),
        entry(8, 300_000, parts(150_000, 150_000)),
        entry(9, 300_000, parts(0, 300_000)),
        entry(10, 300_000, parts(250_000, 50_000)),
        entry(11, 100_000, parts(300_000, 0)),
        entry(12, 100_000, parts(0, 0)),
        entry(14, 100_000, parts("x", 70_000)),  # a non-integer part drops the line
        entry(15, 100_000, parts(30_000, 70_000, other=5)),
        entry(16, 100_000, parts(30_000, 70_000), model="foo"),
        entry(17, 100_000, None),
        entry(18, 100_000, parts(1.0, 70_000)),
        entry(19, 100_000, parts(30_000, -1)),
        assistant("msg_ccnull", "req_ccnull", cache_creation=4_000,
                  changes={_ONE_HOUR: None}),  # null object: the flat field counts
    ]  # fmt: skip
    tree = Tree(root / "claude")
    tree.session(lines)
    big = [(8, 150_000, 150_000), (9, 0, 300_000), (10, 250_000, 50_000), (11, 300_000, 0)]
    return tree.corpus(oracle.Request(at(day)[:10], SONNET_45, cache_5m=five, cache_1h=hour)
                       for day, five, hour in big)  # fmt: skip


# -------------------------------------------------------------------------- §10 speed


def fast_mode(root: Path) -> Corpus:
    """`fast` multiplies a whole entry's cost (x6 opus-4-6/4-7, x2 opus-4-8/5, x1 others)."""
    lines: list[Line] = []
    models = [
        OPUS_46,
        "claude-opus-4-7-20260416",
        "claude-opus-4-8",
        "claude-opus-5",
        "claude-opus-4-6-thinking",
        SONNET_45,
        HAIKU_45,
        OPUS_45,
        "claude-opus-4-1",
    ]
    for number, model in enumerate(models):
        for speed in ("fast", "standard"):
            lines.append(assistant(
                f"msg_f{number}{speed}", f"req_f{number}{speed}", model=model,
                input_tokens=1_000, output_tokens=2_000, cache_read=30_000, cache_creation=4_000,
                changes={"message.usage.speed": speed},
            ))  # fmt: skip
    lines.append(
        assistant(
            "msg_fusd",
            "req_fusd",
            model=OPUS_46,
            input_tokens=10,
            changes={"message.usage.speed": "fast", "costUSD": 0.125},
        )
    )
    return _probes(root, lines)


# ---------------------------------------------------------------------- §11 iterations


def _with_advisors(day: int, advisors: list[Any], mid: str | None, rid: str | None, *,
                   input_tokens: int = 100, output_tokens: int = 0, sidechain: bool = False,
                   changes: Mapping[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    return assistant(
        mid,
        rid,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        timestamp=at(day),
        sidechain=sidechain,
        changes={"message.usage.iterations": advisors, **(changes or {})},
    )


def iterations(root: Path) -> Corpus:
    """Advisor iterations are extra entries under their own model, deduplicated apart from the
    parent by (message id, requestId, index among the advisors)."""
    it = _with_advisors
    nested = {"type": "advisor_message", "model": OPUS_46,
              "usage": {"input_tokens": 1000, "output_tokens": 10}}  # fmt: skip
    lines: list[Line] = [
        it(1, [advisor(1000, output_tokens=10)], "m01", "r01"),
        it(2, [nested], "m02", "r02"),  # nested usage form: ignored
        it(3, [{"type": "message", "input_tokens": 1000, "output_tokens": 10}], "m03", "r03"),
        it(4, [advisor(1000, model=None)], "m04", "r04"),  # no model: ignored
        it(5, [advisor(1000, model="foo")], "m05", "r05"),
        it(6, [advisor(1000, cache_creation={"ephemeral_5m_input_tokens": 0,
                                             "ephemeral_1h_input_tokens": 2000},
                       cache_creation_input_tokens=5)], "m06", "r06"),
        it(7, [advisor(1000)], "m07", "r07"), it(7, [advisor(1000)], "m07", "r07"),
        it(8, [advisor(1000), advisor(7)], "m08", "r08"),
        it(9, [{"type": "compaction", "input_tokens": 1000, "output_tokens": 10}, advisor(3)],
           "m09", "r09"),
        it(10, [advisor(300_000, model=SONNET_45)], "m10", "r10"),
        it(11, [advisor(1000, model=SYNTHETIC)], "m11", "r11"),
        it(12, [advisor(None)], "m12", "r12"),  # parent still counts
        it(13, [advisor(1000, speed="fast")], "m13", "r13"),
        it(14, [advisor(64, speed="turbo")], "m14", "r14", input_tokens=128),
        it(15, [advisor(256, output_tokens=1.5)], "m15", "r15", input_tokens=512),
        it(16, [advisor(4096, isSidechain=True)], "m16", "r16"),
        it(17, [advisor(2**16, costUSD=5)], "m17", "r17"),  # the advisor is priced anyway
        it(18, [advisor(2**17)], "m18", "r18", changes={"costUSD": 0.5}),
        # dedup: copies of one response with different advisors (advisors only grow)
        it(19, [advisor(1)], "mA", "rA"), it(19, [advisor(2)], "mA", "rA", output_tokens=5),
        it(20, [advisor(1)], "mA2", "rA2", output_tokens=50),
        it(20, [advisor(2)], "mA2", "rA2", output_tokens=5),
        it(21, [advisor(4)], "mB", "rB"), it(21, [advisor(8)], "mB", "rB"),
        it(22, [advisor(16)], "mC", "rC1"), it(22, [advisor(16)], "mC", "rC2"),
        it(23, [advisor(32)], "mD", "rD1"), it(23, [advisor(32)], "mD", "rD2", sidechain=True),
        it(24, [advisor(64)], "mE", "rE", changes={"message.usage.input_tokens": None}),
        it(25, [advisor(128), advisor(128)], "mF", "rF"),
        assistant("mG", "rG", input_tokens=100, output_tokens=50, timestamp=at(26)),
        it(26, [advisor(256)], "mG", "rG", output_tokens=5),
        it(27, [advisor(512)], "mH1", "rH1"), it(27, [advisor(512)], "mH2", "rH2"),
        it(28, [advisor(1000)], "mI", "rI", changes={"message.usage.speed": "fast"}),
        # the index counts advisor entries only (a compaction entry does not shift it)
        it(29, [advisor(1), advisor(100)], "mJ", "rJ"), it(29, [advisor(100)], "mJ", "rJ"),
        it(30, [{"type": "compaction", "input_tokens": 5, "output_tokens": 0}, advisor(8)],
           "mK", "rK"),
        it(30, [advisor(8)], "mK", "rK"),
        it(30, [advisor(16)], "mL", None), it(30, [advisor(16)], "mL", None),
        it(30, [advisor(32)], None, None), it(30, [advisor(32)], None, None),
        # a sidechain replay's advisor counts when the main copy has none at that index
        assistant("mM", "rM1", input_tokens=100, timestamp=at(30)),
        it(30, [advisor(2**10)], "mM", "rM2", sidechain=True),
    ]  # fmt: skip
    return _probes(root, lines)


# ------------------------------------------------------------------------ §12 progress


def progress_wrappers(root: Path) -> Corpus:
    """data.message.message.usage counts whatever the outer type; timestamp, requestId and
    isSidechain come from data.message; dedup is shared with ordinary lines."""
    lines: list[Line] = [
        progress("mP1", "rP1", input_tokens=1, timestamp=at(1)),
        progress("mP2", "rP2", input_tokens=2, timestamp=at(2)),
        assistant("mP2", "rP2", input_tokens=2, output_tokens=3, timestamp=at(2)),
        progress("mP3", "rP3", input_tokens=4, timestamp=at(3), outer=False),
        edit(progress("mP4", "rP4", input_tokens=8, timestamp=at(4)),
             {"data.message.timestamp": DELETE}),  # the outer timestamp is not used
        progress("mP5", "rP5", input_tokens=16, timestamp=at(5), line_type="foo"),
        progress("mP6", "rP6", input_tokens=32, timestamp=at(6), line_type=None),
        assistant("mP7", "r7", input_tokens=64, timestamp=at(7)),
        progress("mP7", "rP7x", input_tokens=128, timestamp=at(7), sidechain=True),
        progress("mP8", "rP8", input_tokens=256, timestamp=at(8), data_type=None),
        progress("mP9", "rP9", input_tokens=512, timestamp=at(9), data_type="bash_progress"),
        progress("mP10", "rP10", input_tokens=1024, timestamp=at(10),
                 outer_timestamp=at(20)),  # the day is the inner one
        progress(None, "rP11", input_tokens=2048, timestamp=at(11)),
        progress(None, "rP11", input_tokens=2048, timestamp=at(11)),
        progress("mP12", None, input_tokens=4096, timestamp=at(12)),
        progress("mP12", None, input_tokens=4096, timestamp=at(12)),
        assistant("mP13", "rP13", input_tokens=8192, output_tokens=9, timestamp=at(13)),
        progress("mP13", "rP13", input_tokens=8192, timestamp=at(13)),
        progress("mP14", "rP14", input_tokens=2**14, timestamp=at(14), model=SYNTHETIC,
                 inner={"isApiErrorMessage": True}),
        progress("mP15", "rP15", input_tokens=2**15, timestamp=at(15), inner={"costUSD": 1.0}),
        edit(progress("mP16", "rP16", input_tokens=2**16, timestamp=at(16)), {"cwd": None}),
        edit(progress("mP17", "rP17", input_tokens=2**17, timestamp=at(17)),
             {"data.message.costUSD": "x"}),
        edit(progress("mP18", "rP18", input_tokens=2**18, timestamp=at(18)),
             {"data.message.requestId": ""}),
        edit(progress("mP19", "rP19", input_tokens=2**19, timestamp=at(19)), {"sessionId": ""}),
        edit(progress("mP20", "rP20", input_tokens=2**20, timestamp=at(20)),
             {"data.message.isSidechain": "x"}),
        edit(progress("mP21", "rP21", input_tokens=2**21, timestamp=at(21)),
             {"timestamp": "garbage", "costUSD": "x", "isSidechain": "x"}),
        {"type": "progress", "cwd": None, "data": {"message": {
            "timestamp": at(22), "requestId": "r", "isSidechain": False,
            "message": {"id": "m", "model": SONNET_45,
                        "usage": {"input_tokens": 2**22, "output_tokens": 0}}}}},
        # a sub-agent's copies: lone sidechain lines in its file, progress copies in the parent
        progress("mP23", "rP23", input_tokens=2**23, output_tokens=10, timestamp=at(23),
                 sidechain=True),
    ]  # fmt: skip
    tree = Tree(root / "claude")
    tree.session(lines)
    tree.subagent([assistant("mP23", "rP23", input_tokens=2**23, output_tokens=40,
                             sidechain=True, timestamp=at(23))], "task")  # fmt: skip
    return tree.corpus()


# ---------------------------------------------------------------------- §13 malformed


def malformed(root: Path) -> Corpus:
    """Only the bad line is dropped, never the file; a few framings are accepted."""

    def good(bit: int) -> bytes:
        return encode(probe(bit))

    tree = Tree(root / "claude")
    folder = f"projects/{SLUG}/"
    tree.write_bytes(folder + "a.jsonl", b"\n".join([
        good(0), b'{broken json "usage":{', good(1), b"", b"", b'[1,2,"usage":{]',
        b"[" + good(2) + b"]", good(3),  # no newline after the last line
    ]))  # fmt: skip
    invalid_utf8 = good(5).replace(b'"text":"hi"', b'"text":"h\xffi"')
    tree.write_bytes(folder + "b.jsonl", good(4) + b"\n" + invalid_utf8 + b"\n" + good(6) + b"\n")
    tree.write_bytes(folder + "c.jsonl", b"\xef\xbb\xbf" + good(7) + b"\n" + good(8) + b"\n")
    tree.write_bytes(folder + "d.jsonl", good(9) + b"\r\n" + good(10) + b"\r\n")
    truncated = good(12)[:-10]  # a line cut short in the middle of a file
    tree.write_bytes(folder + "e.jsonl", good(11) + b"\n" + truncated + b"\n" + good(13) + b"\n")
    tree.write_bytes(folder + "f.jsonl", good(14) + good(15) + b"\n")  # two objects, one line
    tree.write_bytes(folder + "g.jsonl", b"   " + good(16) + b"   \n\t" + good(17) + b"\n")
    tree.write_bytes(folder + "h.jsonl", good(18) + b"\n\x00\x00\x00\n" + good(19) + b"\n")
    tree.write_bytes(
        folder + "i.jsonl", good(20) + b"\n" + good(21) + b" x\n" + good(22)[:-1] + b",}\n"
    )
    tree.write_bytes(folder + "j.jsonl", good(23).replace(b'"hi"', b'"\\ud800"') + b"\n")
    tree.write_bytes(
        folder + "k.jsonl",
        good(24).replace(b'"cwd":"/home/alice/proj"', b'"cwd":"/home/alice/proj","cwd":"/x"')
        + b"\n",
    )
    tree.write_bytes(folder + "l.jsonl", good(25).replace(b'"hi"', b'"h\xc3"') + b"\n")
    tree.write_bytes(folder + "m.jsonl", good(26) + b"\n" + good(27)[:40])  # truncated last line
    tree.write_bytes(folder + "n.jsonl", good(28).replace(b'"hi"', b'"\xe2\x82\xac \\u00e9"')
                     + b"\n")  # fmt: skip
    tree.write_bytes(folder + "o.jsonl", b"\n".join([good(29), good(30)]) + b"\r")
    return tree.corpus()


# ---------------------------------------------------------------------- §14 discovery


def _discovery_line(bit: int) -> dict[str, Any]:
    """No message id: a line is counted once per file it is found in (no dedup)."""
    return probe(bit, {"message.id": DELETE})


def _discovery_tree(base: Path) -> dict[str, Path]:
    """The q14 layout: two config dirs, odd names and depths, symlinks, a home and an XDG dir."""

    def put(rel: str, bit: int) -> None:
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as handle:
            handle.write(encode(_discovery_line(bit)) + b"\n")

    put("c1/projects/-p/s.jsonl", 0)
    put("c1/projects/-p/sess/subagents/agent-x.jsonl", 1)
    put("c1/projects/-p/a/b/c/d/deep.jsonl", 2)
    put("c1/projects/top.jsonl", 3)
    put("c1/projects/-p/x.json", 4)
    put("c1/projects/-p/x.jsonl.bak", 5)
    put("c1/projects/-p/X.JSONL", 6)
    put("c1/projects/-p/.hidden.jsonl", 7)
    put("c1/projects/-p/.hd/h.jsonl", 8)
    put("c1/projects/-p/x.txt", 9)
    put("ext/linked.jsonl", 10)
    (base / "c1/projects/-p/link.jsonl").symlink_to(base / "ext/linked.jsonl")
    put("extdir/-q/l.jsonl", 11)
    (base / "c1/projects/-linkdir").symlink_to(base / "extdir/-q")
    put("c2/projects/-p/s.jsonl", 12)
    put("home/.claude/projects/-p/s.jsonl", 13)
    put("home/.config/claude/projects/-p/s.jsonl", 14)
    put("c1/s_root.jsonl", 16)  # outside projects/
    (base / "c4").mkdir()
    (base / "c4/projects").symlink_to(base / "extdir")  # projects/ itself may be a symlink
    return {name: base / name for name in ("c1", "c2", "c4", "home")}


def discovery_walk(root: Path) -> Corpus:
    """Recursive walk under projects/: any depth, hidden files, exact `.jsonl`, no symlinks."""
    dirs = _discovery_tree(root / "q14")
    return Corpus(str(dirs["c1"]))


def discovery_config_list(root: Path) -> Corpus:
    """A comma list: trimmed, missing entries skipped, each folder read once, projects/ or its
    parent accepted."""
    dirs = _discovery_tree(root / "q14")
    c1, c2, c4 = dirs["c1"], dirs["c2"], dirs["c4"]
    entries = [f" {c1} ", str(root / "nope"), str(c2), f"{c2}/projects", f"{c2}/", "", str(c4)]
    return Corpus(",".join(entries))


def discovery_home(root: Path) -> Corpus:
    """`~` is expanded against HOME."""
    dirs = _discovery_tree(root / "q14")
    return Corpus("~/.config/claude,~/.claude", home=dirs["home"])


def discovery_relative(root: Path) -> Corpus:
    """A relative entry is resolved against the working directory."""
    _discovery_tree(root / "q14")
    return Corpus("q14/c2", cwd=root)


# --------------------------------------------------------------------------- §15 sums


def sums(root: Path) -> Corpus:
    """Costs are float sums: large and tiny costUSD values, summed in any order."""
    lines: list[Line] = [
        _copy("x2", timestamp="2026-11-01T11:00:00.000Z", changes={"costUSD": 1.0}),
        _copy("x3", timestamp="2026-11-01T12:00:00.000Z", changes={"costUSD": 1.0}),
        _copy("x1", timestamp="2026-11-01T10:00:00.000Z", changes={"costUSD": 1e9}),
        _copy("y1", timestamp="2026-11-02T12:00:00.000Z", changes={"costUSD": 1e-9}),
        _copy("y2", timestamp="2026-11-02T12:00:00.000Z", changes={"costUSD": 0.1}),
        _copy("y3", timestamp="2026-11-02T12:00:00.000Z", changes={"costUSD": 0.2}),
    ]
    lines += [_copy(f"z{n}", input_tokens=n, output_tokens=3 * n) for n in range(1, 200)]
    return _probes(root, lines)


# ------------------------------------------------------------------------------- registry

Builder = Callable[[Path], Corpus]

EDGE_CORPORA: dict[str, Builder] = {
    "s01_candidates": candidates,
    "s02_null_fields": null_fields,
    "s02_nested_nulls": nested_nulls,
    "s02_spelled_nulls": spelled_nulls,
    "s02_missing_and_empty": missing_and_empty,
    "s02_wrong_types": wrong_types,
    "s02_token_values": token_values,
    "s02_speed_values": speed_values,
    "s02_duplicate_keys": duplicate_keys,
    "s03_timestamps": timestamps,
    "s04_dedup": dedup,
    "s04_dedup_across_config_dirs": dedup_across_config_dirs,
    "s05_sidechains": sidechains,
    "s06_synthetic": synthetic,
    "s07_pricing": pricing,
    "s08_long_context": long_context,
    "s09_cache_creation": cache_creation,
    "s10_fast_mode": fast_mode,
    "s11_iterations": iterations,
    "s12_progress": progress_wrappers,
    "s13_malformed": malformed,
    "s14_discovery_walk": discovery_walk,
    "s14_discovery_config_list": discovery_config_list,
    "s14_discovery_home": discovery_home,
    "s14_discovery_relative": discovery_relative,
    "s15_sums": sums,
}


# ------------------------------------------- regressions: differences found and fixed
# Each corpus isolates one difference that is not by design; the ledger fails it today.


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def regression_deep_nesting_counted(root: Path) -> Corpus:
    """ccusage drops a line nested 128 containers deep or more (serde_json's recursion limit);
    the ledger counts it. Depth here = the top object + toolUseResult's nested objects."""
    lines: list[Line] = [probe(bit, {"toolUseResult": _nested(120 + bit)}) for bit in range(12)]
    lines.append(replace_once(compact(probe(12)), '"text":"hi"',
                              '"text":"hi","z":' + "[" * 130 + "]" * 130))  # fmt: skip
    return _probes(root, lines)


def regression_deep_nesting_crash(root: Path) -> Corpus:
    """A line nested 255 to 1024 levels deep parses with orjson but cannot be re-serialised:
    records.parse raises TypeError, which nothing catches, and the sentinel dies."""
    text = replace_once(compact(probe(1)), '"text":"hi"', '"text":"hi","z":' + '{"a":' * 300
                        + "1" + "}" * 300)  # fmt: skip
    return _probes(root, [probe(0), text, probe(2)])


def regression_spaced_duplicate_keys(root: Path) -> Corpus:
    """A duplicate key written with a space before its colon is not detected (the ledger
    compares counts of `":` in the raw line and in its re-serialisation). The second case,
    a space after the colon, is detected and is here as a control."""
    cases = [
        ('"gitBranch":"main"', '"gitBranch" :"main","gitBranch":"x"'),
        ('"gitBranch":"main"', '"gitBranch": "main","gitBranch":"x"'),
        ('"gitBranch":"main"', '"gitBranch" :"main","gitBranch" :"x"'),
        ('"gitBranch":"main"', '"gitBranch" : "main" , "gitBranch" : "x"'),
        ('"type":"text","text":"hi"', '"type":"text","text":"hi", "text" :"x"'),
    ]
    lines: list[Line] = [probe(0)]
    lines += [replace_once(compact(probe(bit)), old, new) for bit, (old, new) in
              enumerate(cases, start=1)]  # fmt: skip
    return _probes(root, lines)


def regression_version_unicode_digits(root: Path) -> Corpus:
    """`version` must start with ASCII digits; Python's str `\\d` also matches Arabic-Indic
    or fullwidth digits."""
    versions = ["2.0.14", "٢.0.14", "2.0.１4", "２.0.14"]
    return _probes(root, [probe(bit, {"version": v}) for bit, v in enumerate(versions)])


def regression_timestamp_offset_minutes(root: Path) -> Corpus:
    """An offset with 60..99 minutes (+05:60) is invalid; ccusage drops it, Python accepts it."""
    stamps = ["2026-11-28T10:00:05+05:30", "2026-11-28T10:00:05+05:60",
              "2026-11-28T10:00:05.000-01:75", "2026-11-28T10:00:05+00:99"]  # fmt: skip
    return _probes(root, [probe(bit, {"timestamp": ts}) for bit, ts in enumerate(stamps)])


def regression_timestamp_year_zero(root: Path) -> Corpus:
    """Year 0000 is a valid RFC 3339 year that ccusage accepts; Python's datetime cannot hold
    it, so the ledger drops the line as a bad timestamp."""
    stamps = ["0001-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "0000-12-31T23:59:59.999Z",
              "0000-01-01T00:00:00+01:00"]  # fmt: skip
    return _probes(root, [probe(bit, {"timestamp": ts}) for bit, ts in enumerate(stamps)])


def regression_advisor_index_skips_invalid(root: Path) -> Corpus:
    """ccusage numbers only the advisors it keeps (a string model, integer tokens); the ledger
    numbers every advisor_message, so one invalid advisor shifts the dedup key of the rest
    and copies of one response are counted twice."""
    it = _with_advisors
    lines: list[Line] = [
        it(1, [advisor(1, model=None), advisor(2)], "mA", "rA"), it(1, [advisor(2)], "mA", "rA"),
        it(2, [advisor(4, model=5), advisor(8)], "mB", "rB"), it(2, [advisor(8)], "mB", "rB"),
        it(3, [advisor(None), advisor(32)], "mC", "rC"),
        it(3, [advisor(32)], "mC", "rC"),
    ]  # fmt: skip
    return _probes(root, lines)


def regression_advisor_empty_model(root: Path) -> Corpus:
    """An advisor whose model is "" is ignored by ccusage (as an empty message.model drops a
    line); the ledger counts it as an unpriced model named ""."""
    it = _with_advisors
    return _probes(root, [it(1, [advisor(2**14, model="")], "mI", "rI", input_tokens=1)])


def regression_progress_outer_fields(root: Path) -> Corpus:
    """ccusage falls back to the progress payload when the outer message is not a usable
    object, and does not check the outer version of a progress line; the ledger drops these."""
    lines: list[Line] = [
        progress("m0", "r0", input_tokens=1),
        edit(progress("m1", "r1", input_tokens=2), {"version": "v2"}),
        edit(progress("m2", "r2", input_tokens=4), {"message": "str"}),
        edit(progress("m3", "r3", input_tokens=8), {"message": []}),
        edit(progress("m4", "r4", input_tokens=16), {"message": {"usage": 5}}),
    ]
    return _probes(root, lines)


def regression_fast_dotted_model(root: Path) -> Corpus:
    """claude-opus-4.6 is priced as claude-opus-4-6 but its fast multiplier (x6) is looked up
    on the dotted name and missed."""
    lines: list[Line] = [
        assistant(f"m{n}", f"r{n}", model=model, input_tokens=100_000,
                  changes={"message.usage.speed": "fast"})
        for n, model in enumerate(["claude-opus-4.6", "anthropic/claude-opus-4.6",
                                   "claude-opus-4.8"])
    ]  # fmt: skip
    return _probes(root, lines)


def regression_vertex_sonnet_4_tier(root: Path) -> Corpus:
    """ccusage prices Vertex's claude-sonnet-4@20250514 with the 200k tier (only
    claude-sonnet-4-5@… is untiered); the ledger drops the tier for every `@` id."""
    lines: list[Line] = [assistant("m1", "r1", model="claude-sonnet-4@20250514",
                                   input_tokens=300_000, output_tokens=300_000)]  # fmt: skip
    return _probes(root, lines)


def regression_no_request_id_key_includes_timestamp(root: Path) -> Corpus:
    """Copies without a requestId are deduplicated by ccusage on message id *and* timestamp
    (the instant: .000Z, Z and +02:00 spellings of it are one key); the ledger uses the
    message id alone, so it counts one copy where ccusage counts one per timestamp. Old
    transcripts without requestIds stream copies a few milliseconds apart."""
    lines: list[Line] = [
        assistant("mA", None, input_tokens=1, output_tokens=10, timestamp=at(22, 13, 19, 7)),
        assistant("mA", None, input_tokens=1, output_tokens=20, timestamp=at(22, 13, 19, 7)),
        assistant("mA", None, input_tokens=1, output_tokens=40,
                  timestamp="2026-11-22T13:19:07.001Z"),
        assistant("mA", None, input_tokens=1, output_tokens=80, timestamp=at(23)),
        assistant("mB", None, input_tokens=2, timestamp="2026-11-22T15:19:07+02:00"),
        assistant("mB", None, input_tokens=2, timestamp="2026-11-22T13:19:07Z"),
    ]  # fmt: skip
    return _probes(root, lines)


def regression_duplicate_keys_without_null(root: Path) -> Corpus:
    """ccusage drops a line with a repeated key only when the key is one it reads (id, model,
    version, requestId, timestamp, token counts, …) or when the raw line holds `null`
    anywhere; a repeated gitBranch, uuid, cwd, userType, type, role, text or service_tier in a
    line without `null` is accepted. The ledger drops every line with a repeated key.
    (Claude Code never writes repeated keys, and its lines nearly always hold a null.)"""
    cases = [
        ('"gitBranch":"main"', '"gitBranch":"main","gitBranch":"x"'),
        ('"uuid":"p-{bit}"', '"uuid":"p-{bit}","uuid":"b"'),
        ('"type":"text","text":"hi"', '"type":"text","text":"hi","text":"again"'),
        ('"service_tier":"standard"', '"service_tier":"standard","service_tier":"x"'),
        ('"cwd":"/home/alice/proj"', '"cwd":"/x","cwd":"/home/alice/proj"'),
        ('"userType":"external"', '"userType":"external","userType":"y"'),
        ('"type":"assistant"', '"type":"assistant","type":"user"'),
        ('"role":"assistant"', '"role":"assistant","role":"x"'),
    ]
    lines: list[Line] = []
    for bit, (old, new) in enumerate(cases):
        text = compact(probe(bit, {"message.stop_reason": "end_turn"}))
        lines.append(replace_once(text, old.format(bit=bit), new.format(bit=bit)))
    return _probes(root, lines)


def regression_progress_advisor_counted(root: Path) -> Corpus:
    """ccusage reads no advisor iterations from a progress wrapper's usage; the ledger counts
    them. The response itself counts in both (as a lone sidechain copy here, as in real
    sub-agent progress)."""
    its = {"iterations": [{"type": "message", "input_tokens": 10, "output_tokens": 20},
                          advisor(2**10, output_tokens=3)]}  # fmt: skip
    lines: list[Line] = []
    for number, sidechain in enumerate((False, True)):
        line = progress(f"m{number}", f"r{number}", input_tokens=number + 1, sidechain=sidechain)
        line["data"]["message"]["message"]["usage"].update(copy.deepcopy(its))
        lines.append(line)
    return _probes(root, lines)


REGRESSION_CORPORA: dict[str, Builder] = {
    "regression_progress_advisor_counted": regression_progress_advisor_counted,
    "regression_no_request_id_key": regression_no_request_id_key_includes_timestamp,
    "regression_duplicate_keys_without_null": regression_duplicate_keys_without_null,
    "regression_deep_nesting_counted": regression_deep_nesting_counted,
    "regression_deep_nesting_crash": regression_deep_nesting_crash,
    "regression_spaced_duplicate_keys": regression_spaced_duplicate_keys,
    "regression_version_unicode_digits": regression_version_unicode_digits,
    "regression_timestamp_offset_minutes": regression_timestamp_offset_minutes,
    "regression_timestamp_year_zero": regression_timestamp_year_zero,
    "regression_advisor_index_skips_invalid": regression_advisor_index_skips_invalid,
    "regression_advisor_empty_model": regression_advisor_empty_model,
    "regression_progress_outer_fields": regression_progress_outer_fields,
    "regression_fast_dotted_model": regression_fast_dotted_model,
    "regression_vertex_sonnet_4_tier": regression_vertex_sonnet_4_tier,
}


def label_separator(root: Path) -> Corpus:
    """A model name and a cwd holding U+001F, the ledger's label separator in its database.
    Used by a restart test: the first run is right, the second reads the labels back split."""
    lines: list[Line] = [
        assistant("m1", "r1", model="foo\x1fbar", input_tokens=5, output_tokens=1),
        assistant("m2", "r2", cwd="/home/alice/pr\x1foj", input_tokens=7, output_tokens=2),
    ]  # fmt: skip
    return _probes(root, lines)


# -------------------------------------------------------------------------- random corpus

# (model, weight): real ids only, none of the deliberate pricing differences.
_RANDOM_MODELS: list[tuple[str, int]] = [
    (SONNET_45, 30), (OPUS_46, 14), (OPUS_45, 8), (HAIKU_45, 10), (SONNET_4, 5),
    ("claude-opus-4-1-20250805", 4), ("claude-opus-4-7", 4), ("claude-opus-4-8", 3),
    ("claude-sonnet-4-6", 4), ("claude-3-7-sonnet-20250219", 2),
    ("claude-3-5-haiku-20241022", 2), ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 2),
    ("claude-sonnet-4-5@20250929", 1), ("claude-sonnet-4-5[1m]", 1),
    ("claude-opus-4-9", 1), ("foo-model", 1),
]  # fmt: skip

_ERRORS = [
    'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}',
    "Claude AI usage limit reached|{reset}",
    'API Error: 500 {"type":"error","error":{"type":"api_error","message":"Internal"}}',
    "API Error: Request timed out.",
]

_WORDS = [
    "alpha", "beta", "gamma", "delta", "fix", "test", "build", "ledger", "token", "usage",
    "cost", "parse", "file", "line", "error", "retry", "commit", "branch", "merge", "deploy",
]  # fmt: skip


def _fit_prompt(tokens: dict[str, Any], limit: int) -> None:
    """Shrink cache reads, then writes, then input until the prompt is at most `limit`."""
    for key in ("cache_read", "cache_creation", "input_tokens"):
        others = sum(tokens[k] for k in ("input_tokens", "cache_creation", "cache_read")
                     if k != key)  # fmt: skip
        tokens[key] = max(0, min(tokens[key], limit - others))
    if "cache_1h" in tokens:
        tokens["cache_1h"] = min(tokens["cache_1h"], tokens["cache_creation"])


@dataclass
class _Response:
    """The copies of one API response as written (a streamed response has several)."""

    copies: list[dict[str, Any]]


@dataclass
class _Session:
    slug: str
    cwd: str
    session_id: str
    rel: str
    model: str
    legacy_cost: bool
    fast: bool
    clock: datetime
    newline: bytes = b"\n"
    prefix: bytes = b""
    final_newline: bool = True
    lines: list[Line] = field(default_factory=list)
    responses: list[_Response] = field(default_factory=list)
    subagents: dict[str, list[Line]] = field(default_factory=dict)


class _RandomWriter:
    """Builds sessions the way Claude Code writes them, with the mess real files contain."""

    def __init__(self, rng: random.Random, big_lines: int):
        self.rng = rng
        self.big_lines = big_lines
        self.sessions: list[_Session] = []
        self.serial = 0
        self.cwds = [f"/home/alice/{name}" for name in ("ledger", "web-app", "infra", "notes")]

    # -- helpers
    def _next(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial:06d}"

    def _words(self, low: int, high: int) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(low, high)))

    def _stamp(self, session: _Session, seconds: float) -> str:
        """Advance the session clock; mostly Claude Code's format, sometimes other valid ones."""
        session.clock += timedelta(seconds=seconds)
        moment = session.clock
        roll = self.rng.random()
        if roll < 0.04:
            return (moment + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S") + "+02:00"
        if roll < 0.08:
            return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

    def _session(self, cwd: str | None = None) -> _Session:
        rng = self.rng
        cwd = cwd or rng.choice(self.cwds)
        slug = claude.slug(cwd)
        session_id = self._next("sess-")
        layout = rng.random()
        rel = (f"projects/{slug}/{session_id}/legacy.jsonl" if layout < 0.03
               else f"projects/{slug}/{session_id}.jsonl")  # fmt: skip
        model = rng.choices([m for m, _ in _RANDOM_MODELS], [w for _, w in _RANDOM_MODELS])[0]
        start = datetime(2026, 11, 20, tzinfo=UTC) + timedelta(seconds=rng.randint(0, 7 * 86400))
        session = _Session(
            slug=slug, cwd=cwd, session_id=session_id, rel=rel, model=model,
            legacy_cost=rng.random() < 0.15, fast=rng.random() < 0.2, clock=start,
            newline=b"\r\n" if rng.random() < 0.03 else b"\n",
            prefix=b"\xef\xbb\xbf" if rng.random() < 0.02 else b"",
            final_newline=rng.random() > 0.1,
        )  # fmt: skip
        self.sessions.append(session)
        return session

    def line_count(self) -> int:
        return sum(len(s.lines) + sum(len(v) for v in s.subagents.values()) for s in self.sessions)

    # -- responses
    def _usage(self, session: _Session, model: str) -> tuple[dict[str, Any], int]:
        """The `make_usage` keywords a response's copies share (all but the output), and its
        final output count."""
        rng = self.rng
        tokens: dict[str, Any] = {
            "input_tokens": rng.choice([1, 2, 3, 4, 5, 8, 10, 12]) if rng.random() < 0.8
            else rng.randint(20, 60_000),
            "cache_creation": rng.randint(0, 30_000) if rng.random() < 0.6 else 0,
            "cache_read": rng.randint(0, 180_000),
        }  # fmt: skip
        roll = rng.random()
        if roll < 0.02:
            tokens["input_tokens"] = rng.randint(200_001, 600_000)
        elif roll < 0.04:
            tokens["cache_read"] = rng.randint(190_000, 900_000)
        elif roll < 0.05:
            tokens["cache_creation"] = rng.randint(150_000, 500_000)
        if rng.random() < 0.25:  # newer lines split the cache writes by lifetime
            total = tokens["cache_creation"]
            tokens["cache_1h"] = rng.randint(0, total) if rng.random() < 0.5 else 0
        if session.fast and "opus-4" in model:
            tokens["speed"] = "fast"
        elif rng.random() < 0.4:
            tokens["speed"] = "standard"
        final = rng.randint(1, 3_000) if rng.random() < 0.97 else rng.randint(150_000, 260_000)
        if oracle.governed(model):  # no deliberate long-context difference (oracle.py)
            final = min(final, 180_000)
            _fit_prompt(tokens, oracle.THRESHOLD)
        return tokens, final

    def _legacy_cost(self, usage: Mapping[str, Any]) -> float:
        """A costUSD that grows with output, like the costs older Claude Code wrote."""
        return round(
            3e-6 * usage["input_tokens"] + 15e-6 * usage["output_tokens"]
            + 3.75e-6 * usage["cache_creation_input_tokens"]
            + 0.3e-6 * usage["cache_read_input_tokens"],
            8,
        )  # fmt: skip

    def response(
        self,
        session: _Session,
        *,
        sidechain: bool = False,
        model: str | None = None,
        agent: str | None = None,
    ) -> _Response:
        """A response as streamed copies: same ids and input, output growing copy by copy."""
        rng = self.rng
        model = model or (session.model if rng.random() < 0.9 else
                          rng.choices([m for m, _ in _RANDOM_MODELS],
                                      [w for _, w in _RANDOM_MODELS])[0])  # fmt: skip
        msg_id = self._next("msg_01")
        rid = self._next("req_011") if rng.random() > 0.03 else None
        tokens, final = self._usage(session, model)
        advisors = None
        if rng.random() < 0.04:
            advisors = [
                {"type": "message", "input_tokens": 10, "output_tokens": 20},
                advisor(rng.randint(100, 9_000), output_tokens=rng.randint(1, 900),
                        model=rng.choice([OPUS_46, SONNET_45])),
            ]  # fmt: skip
        count = rng.choices([1, 2, 3, 4], [35, 30, 25, 10])[0]
        outputs = [*sorted(rng.randint(1, final) for _ in range(count - 1)), final]
        copies: list[dict[str, Any]] = []
        kinds = ["thinking", "text", "tool_use"]
        # Without a requestId, copies are keyed by message id and timestamp: like streamed
        # copies, they share one timestamp here.
        shared = self._stamp(session, rng.uniform(0.05, 3)) if rid is None else None
        for number, output in enumerate(outputs):
            stamp = shared or self._stamp(session, rng.uniform(0.05, 3))
            content: list[dict[str, Any]] = [{"type": "text", "text": self._words(1, 12)}]
            kind = kinds[number % 3]
            if kind == "tool_use":
                content = [{"type": "tool_use", "id": self._next("toolu_"), "name": "Bash",
                            "input": {"command": "ls"}}]  # fmt: skip
            elif kind == "thinking":
                content = [{"type": "thinking", "thinking": self._words(3, 30),
                            "signature": "sig"}]  # fmt: skip
            usage = make_usage(output_tokens=output, iterations=copy.deepcopy(advisors), **tokens)
            last = number == len(outputs) - 1
            copies.append(assistant(
                msg_id, rid, model=model, usage=usage, content=content, timestamp=stamp,
                stop_reason=rng.choice(["end_turn", "tool_use"]) if last else None,
                cost_usd=self._legacy_cost(usage) if session.legacy_cost else None,
                uuid=self._next("a-"), sidechain=sidechain, agent_id=agent, cwd=session.cwd,
                session=session.session_id,
            ))  # fmt: skip
        if rng.random() < 0.01 and not sidechain:  # no message id (older writers)
            for line in copies:
                del line["message"]["id"]
        return _Response(copies)

    # -- events
    def turn(self, session: _Session) -> None:
        rng = self.rng
        session.lines.append(
            user_prompt(
                self._words(2, 20),
                timestamp=self._stamp(session, 5),
                cwd=session.cwd,
                session=session.session_id,
            )
        )
        for _ in range(rng.randint(1, 3)):
            response = self.response(session)
            session.lines.extend(response.copies)
            session.responses.append(response)
            if rng.random() < 0.02:  # a retry: same message id under a new requestId
                retry = self.response(session)
                request_id = self._next("req_011")  # retries always carry one
                for line in retry.copies:
                    line["requestId"] = request_id
                    if "id" in response.copies[0]["message"]:
                        line["message"]["id"] = response.copies[0]["message"]["id"]
                session.lines.extend(retry.copies)
            if rng.random() < 0.6:
                size = rng.randint(20, 4_000) if rng.random() < 0.995 else rng.randint(10**5, 10**6)
                session.lines.append(tool_result(
                    "x" * size, timestamp=self._stamp(session, 1), cwd=session.cwd,
                    session=session.session_id))  # fmt: skip

    def task(self, session: _Session) -> None:
        """A sub-agent: lone sidechain responses in its own file, progress copies in the parent."""
        rng = self.rng
        agent = self._next("")
        lines = session.subagents.setdefault(agent, [])
        model = HAIKU_45 if rng.random() < 0.5 else session.model
        total = 0
        for _ in range(rng.randint(1, 4)):
            response = self.response(session, sidechain=True, model=model, agent=agent)
            for line in response.copies:
                lines.append(line)
                if rng.random() < 0.5:
                    session.lines.append(agent_progress(
                        line, agent=agent, keep=_PROGRESS_KEEP, tool_use_id="toolu_1",
                        parent_tool_use_id="toolu_1", uuid=self._next("pr-"),
                        timestamp=line["timestamp"], cwd=session.cwd, session=session.session_id,
                    ))  # fmt: skip
            total += response.copies[-1]["message"]["usage"]["output_tokens"]
        session.lines.append(task_result(
            "task done", {"input_tokens": 10, "output_tokens": total},
            timestamp=self._stamp(session, 1), cwd=session.cwd, session=session.session_id,
        ))  # fmt: skip

    def btw(self, session: _Session) -> None:
        """/btw: replay earlier responses as sidechain lines, after their main copies."""
        rng = self.rng
        recent = session.responses[-6:]
        if not recent:
            return
        for response in rng.sample(recent, rng.randint(1, len(recent))):
            original = rng.choice(response.copies)
            changes = {"uuid": self._next("b-"), "timestamp": self._stamp(session, 0.5)}
            choice = rng.random()
            if choice < 0.6:
                changes["requestId"] = self._next("req_btw")
            elif choice < 0.8:
                changes["requestId"] = DELETE
            session.lines.append(sidechain_copy(original, changes))
        if rng.random() < 0.3:  # a replay of a final copy in another file: order is free
            final = rng.choice(recent).copies[-1]
            replay = sidechain_copy(final, {"requestId": self._next("req_btw")})
            session.subagents.setdefault(self._next("btw"), []).append(replay)

    def error(self, session: _Session) -> None:
        rng = self.rng
        text = rng.choice(_ERRORS).replace("{reset}", str(1_795_000_000 + rng.randint(0, 10**6)))
        line = api_error(self._next("err-"), text, timestamp=self._stamp(session, 2),
                         cwd=session.cwd, session=session.session_id)  # fmt: skip
        if rng.random() < 0.2:
            line["message"]["model"] = session.model  # a real model with zero usage
        session.lines.append(line)

    def filler(self, session: _Session) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.3:
            session.lines.append(summary(self._words(3, 10)))
        elif roll < 0.6:
            files = {f"/src/{self._words(1, 1)}.py": self._words(10, 200) for _ in range(3)}
            stamp = self._stamp(session, 0)
            backups = {name: {"backupFileName": f"{zlib.crc32(name.encode()):08x}@v1",
                              "version": 1, "backupTime": stamp, "content": body}
                       for name, body in files.items()}  # fmt: skip
            session.lines.append(snapshot("u-1", stamp, backups))
        elif roll < 0.8:
            session.lines.append({"type": "system", "subtype": "compact_boundary",
                                  "content": "Conversation compacted",
                                  "timestamp": self._stamp(session, 0)})  # fmt: skip
        else:
            session.lines.append(
                user_prompt(
                    self._words(1, 400),
                    timestamp=self._stamp(session, 1),
                    cwd=session.cwd,
                    session=session.session_id,
                )
            )

    def bad(self, session: _Session) -> None:
        """A line both readers must drop; often a copy of a real response, made larger."""
        rng = self.rng
        if session.responses and rng.random() < 0.6:
            base = copy.deepcopy(rng.choice(session.responses[-5:]).copies[-1])
            base["message"]["usage"]["output_tokens"] += rng.randint(1, 10_000)
        else:
            base = self.response(session).copies[-1]
        text = compact(base)
        kind = rng.randrange(16)
        line: Line
        if kind == 0:
            line = text[: rng.randint(1, len(text) - 2)]  # truncated mid-file
        elif kind == 1:
            line = '{"type":"assistant","message":{"usage":{"input_tokens":5'
        elif kind == 2:
            line = edit(
                base,
                {
                    rng.choice(
                        [
                            "cwd",
                            "requestId",
                            "version",
                            "sessionId",
                            "message.model",
                            "costUSD",
                            "message.id",
                        ]
                    ): None
                },
            )
        elif kind == 3:
            line = edit(base, {"version": rng.choice(["v2", "2.0", "", "2.x.1"])})
        elif kind == 4:
            line = edit(
                base,
                {
                    "timestamp": rng.choice(
                        ["2026-11-28T10:00:05.123456Z", "2026-11-28T10:00:05", "yesterday"]
                    )
                },
            )
        elif kind == 5:
            # a key ccusage reads: dropped whether or not the line holds a null (see the bug
            # corpus on duplicate keys for the others)
            line = replace_once(text, '"version":"2.0.14"', '"version":"2.0.14","version":"2.0.1"')
        elif kind == 6:
            line = edit(base, {"message.usage.output_tokens": 100.0})
        elif kind == 7:
            line = edit(base, {"message.usage.input_tokens": "12"})
        elif kind == 8:
            line = edit(base, {"message.usage.speed": "priority"})
        elif kind == 9:
            line = json.dumps(base)  # spaced usage: not even a candidate
        elif kind == 10:
            line = "[" + text + "]"
        elif kind == 11:
            line = text.encode().replace(b'"type":"assistant"', b'"type":"assistant\xff"')
        elif kind == 12:
            line = replace_once(text, '"type":"assistant"', '"type":"\\ud800"')
        elif kind == 13:
            line = edit(base, {"isSidechain": "false"})
        elif kind == 14:
            line = edit(base, {"costUSD": "0.01"})
        else:
            line = text + "}"
        session.lines.append(line)

    def resume(self, session: _Session) -> _Session:
        """A resumed session: a new file that starts with a copy of the old one's tail."""
        resumed = self._session(session.cwd)
        resumed.model, resumed.legacy_cost, resumed.fast = session.model, False, session.fast
        resumed.clock = session.clock
        tail = session.lines[-self.rng.randint(1, 25) :]
        resumed.lines.extend(copy.deepcopy(line) for line in tail)
        resumed.responses = list(session.responses[-5:])
        return resumed

    def run(self, n_lines: int) -> None:
        rng = self.rng
        # Multi-MB tool output, spread over three files: lines span read chunks and ledger
        # steps, and enough of it (64 MB) makes the ledger parse in worker processes.
        big = [self._session() for _ in range(min(3, self.big_lines))]
        for number in range(self.big_lines):
            session = big[number % len(big)]
            session.lines.append(tool_result("y" * rng.randint(3 * 2**20, 5 * 2**20),
                                             timestamp=self._stamp(session, 1)))  # fmt: skip
            self.turn(session)
        current = big[-1] if big else self._session()
        events: list[tuple[Callable[[_Session], Any], int]] = [
            (self.turn, 60), (self.task, 8), (self.btw, 5), (self.error, 5), (self.bad, 8),
            (self.filler, 10), (self.resume, 2),
        ]  # fmt: skip
        actions, weights = zip(*events, strict=True)
        while self.line_count() < n_lines:
            if rng.random() < 0.08:
                current = self._session()
            elif rng.random() < 0.3:
                current = rng.choice(self.sessions)
            result = rng.choices(actions, weights)[0](current)
            if isinstance(result, _Session):
                current = result

    def write(self, tree: Tree) -> None:
        for session in self.sessions:
            if session.lines:
                tree.write(
                    session.rel,
                    session.lines,
                    newline=session.newline,
                    final_newline=session.final_newline,
                    prefix=session.prefix,
                )
            for agent, lines in session.subagents.items():
                tree.subagent(lines, agent, slug=session.slug, session=session.session_id)


def random_corpus(root: Path, seed: int, n_lines: int, *, big_lines: int = 0) -> Corpus:
    """A randomized CLAUDE_CONFIG_DIR of about `n_lines` lines mixing every edge case above.

    Streams of copies with growing output, retries, sub-agents with progress copies in the
    parent, /btw sidechain replays after their main copies, resumed sessions repeating lines of
    another file, advisors, fast mode, 1-hour cache, >200k entries, legacy costUSD, API errors,
    filler lines, and bad lines that are often enlarged copies of real ones. `big_lines` adds
    that many 3-5 MB tool results, so files span several read chunks and ledger steps (20 of
    them pass the 64 MB above which the ledger parses a backfill in worker processes).
    """
    writer = _RandomWriter(random.Random(seed), big_lines)
    writer.run(n_lines)
    tree = Tree(root / "claude")
    writer.write(tree)
    return tree.corpus()
