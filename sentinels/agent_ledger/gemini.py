"""Gemini CLI's session files read the way `ccusage gemini daily` 20.0.24 reads them.

Gemini CLI (0.61) appends one JSON record per line to
`~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`, writing a message again (same id)
when its token counts arrive; older versions rewrote a whole `session-*.json` with a
`messages` array. Each `type: "gemini"` record with a `tokens` object is one API response.
The rules (docs/agents/gemini.md has them with their ccusage source) in short: cached input is
taken out of `input` when the record's total says it is inside, `tool` tokens are input,
`thoughts` (and any total beyond the parts) are priced and counted as output, a jsonl
message seen again under the same id replaces the earlier copy, nothing is deduplicated across
files, and the 200k tier applies to the whole response once its prompt exceeds 200,000 tokens.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import itertools
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import Any

import orjson

from .base import AgentUsage, ReadResult, usage

AGENT = "gemini"
DATA_DIR_ENV = "GEMINI_DATA_DIR"
DEFAULT_MODEL = "unknown"
TIER_THRESHOLD = 200_000
U64_MAX = 2**64 - 1
PRICES_FILE = Path(__file__).with_name("gemini_prices.json")
# What Rust's str::trim removes (Unicode White_Space); Python's strip() also takes \x1c-\x1f.
RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)

# Top-level fields ccusage reads into a typed record: a line (or .json file) naming one of
# them twice is dropped whole by its parser (serde's "duplicate field").
RECORD_FIELDS = frozenset(
    ("sessionId", "session_id", "startTime", "lastUpdated", "messages", "type", "id",
     "model", "tokens", "timestamp", "created_at", "stats", "result")
)  # fmt: skip
_FIELD_NAMES = re.compile(b'"(' + b"|".join(map(str.encode, sorted(RECORD_FIELDS))) + b')"')
# A line that names none of these cannot count or set what later lines inherit (a JSON
# escape could spell them otherwise, so a line with one is always read; \\u stays last).
_NEEDLES = (b'"gemini"', b'"stats"', b'"result"', b'"model"', b'"sessionId"', b'"session_id"',
            b"\\u")  # fmt: skip


# ----------------------------------------------------------------------------- where


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """GEMINI_DATA_DIR (a comma-separated list) when set, else ~/.gemini/tmp; only folders
    that exist, each once (ccusage's paths.rs)."""
    if DATA_DIR_ENV in env:
        found: list[Path] = []
        for raw in env[DATA_DIR_ENV].split(","):
            path = Path(raw.strip())
            if raw.strip() and path.is_dir() and path not in found:
                found.append(path)
        return found
    default = home / ".gemini" / "tmp"
    return [default] if default.is_dir() else []


def files(root: Path) -> list[Path]:
    """Every *.json and *.jsonl below root, symlinks not followed (as ccusage walks)."""
    found: list[Path] = []
    _walk(root, found)
    return sorted(found)


def _walk(folder: Path, found: list[Path]) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_file(follow_symlinks=False):
                if Path(entry.name).suffix in (".json", ".jsonl"):
                    found.append(Path(entry.path))
            elif entry.is_dir(follow_symlinks=False):
                _walk(Path(entry.path), found)
        except OSError:
            continue


# ----------------------------------------------------------------------------- numbers


@dataclass(slots=True)  # not frozen: a frozen init costs a call per field
class Tokens:
    """A `tokens` (or `stats`) object as ccusage reads it: first spelling present wins."""

    input: int
    output: int
    cached: int
    thoughts: int
    tool: int
    total: int | None


def _u64(value: Any) -> int | None:
    """A JSON number as ccusage's value_u64: via f64, negatives 0, fractions cut."""
    if type(value) is int and 0 <= value <= 2**53:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    if not math.isfinite(number):
        return None
    return min(int(max(number, 0.0)), U64_MAX)


def _first(record: Mapping[str, Any], keys: tuple[str, ...]) -> int:
    for key in keys:
        value = record.get(key)
        if type(value) is int and 0 <= value <= 9_007_199_254_740_992:  # _u64's first case
            return value
        number = _u64(value)
        if number is not None:
            return number
    return 0


def parse_tokens(value: Any) -> Tokens | None:
    """The token counts of an object, None when it is not one."""
    if not isinstance(value, dict):
        return None
    total = _u64(value["total"]) if "total" in value else _u64(value.get("total_tokens"))
    return Tokens(
        input=_first(value, ("input", "prompt", "input_tokens", "prompt_tokens")),
        output=_first(value, ("output", "candidates", "output_tokens", "candidates_tokens")),
        cached=_first(value, ("cached", "cached_tokens")),
        thoughts=_first(value, ("thoughts", "reasoning", "thoughts_tokens", "reasoning_tokens")),
        tool=_first(value, ("tool", "tool_tokens")),
        total=total,
    )


def _subtract_cached(tokens: Tokens) -> tuple[int, int]:
    """Stats objects: cached input is always inside input."""
    return tokens.input - min(tokens.input, tokens.cached), tokens.cached


def _session_input(tokens: Tokens) -> tuple[int, int]:
    """Messages: cached input is inside input only when the total says so (the total equals
    the parts without cached, and not the parts with it)."""
    inclusive = tokens.input + tokens.output + tokens.thoughts + tokens.tool
    if (
        tokens.cached > 0
        and tokens.total == inclusive
        and tokens.total != inclusive + tokens.cached
    ):
        return _subtract_cached(tokens)
    return tokens.input, tokens.cached


@dataclass(slots=True)
class Counted:
    """One response's ledger tokens: output already holds the reasoning ccusage prices."""

    input: int
    output: int
    cache_read: int


def _beyond_parts(output: int, reasoning: int, missing: int) -> tuple[int, int]:
    """(output, reasoning) with a total's tokens beyond the parts added: they are output
    when no output is known, else reasoning (both count paths use this one rule)."""
    return (missing, reasoning) if output == 0 else (output, reasoning + missing)


def count(tokens: Tokens, session_rule: bool) -> Counted | None:
    """ccusage's build_event: None for a response worth nothing."""
    fresh, cache_read = _session_input(tokens) if session_rule else _subtract_cached(tokens)
    fresh += tokens.tool
    output = tokens.output
    total = tokens.total
    if total is None:
        total = fresh + output + cache_read + tokens.thoughts
    reasoning = tokens.thoughts
    missing = total - (fresh + output + cache_read + reasoning)
    if missing > 0:
        output, reasoning = _beyond_parts(output, reasoning, missing)
    if fresh == 0 and output == 0 and cache_read == 0 and reasoning == 0:
        return None
    return Counted(fresh, output + reasoning, cache_read)


# ----------------------------------------------------------------------------- timestamps

_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _digits(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() else None


def _days_from_civil(year: int, month: int, day: int) -> int:
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def _offset_minutes(text: str) -> int | None:
    if text == "Z":
        return 0
    if len(text) != 6 or text[0] not in "+-" or text[3] != ":":
        return None
    hours, minutes = _digits(text[1:3]), _digits(text[4:6])
    if hours is None or minutes is None or hours > 23 or minutes > 59:
        return None
    return (hours * 60 + minutes) * (1 if text[0] == "+" else -1)


_STAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{3}))?(Z|[+-]\d{2}:\d{2})", re.ASCII
)


@functools.lru_cache(maxsize=1024)
def _day_ms(date: str) -> int | None:
    """Epoch milliseconds of a valid YYYY-MM-DD day (ASCII digits), else None."""
    year, month, day = int(date[:4]), int(date[5:7]), int(date[8:10])
    if not 1 <= month <= 12:
        return None
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if day == 0 or day > _DAYS[month - 1] + (month == 2 and leap):
        return None
    return _days_from_civil(year, month, day) * 86_400_000


# YYYY-MM-DDTHH:MM:SS.mmmZ in ASCII digits, the form Gemini CLI writes: read by slicing,
# with the day and the hour and minute looked up (the regex's answer, faster).
_UTC_FORM = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", re.ASCII)


@functools.lru_cache(maxsize=2048)
def _clock_ms(clock: str) -> int | None:
    """Milliseconds of a valid HH:MM (ASCII digits), else None."""
    hour, minute = int(clock[:2]), int(clock[3:])
    return None if hour > 23 or minute > 59 else (hour * 60 + minute) * 60_000


def _utc_ms_py(value: object) -> int | EllipsisType | None:
    """Epoch milliseconds of a str in _UTC_FORM, None when its date or time is not valid,
    Ellipsis for anything else. _geminiscan.utc_ms is the same in C."""
    if not isinstance(value, str) or _UTC_FORM.fullmatch(value) is None:
        return ...
    day, clock = _day_ms(value[:10]), _clock_ms(value[11:16])
    millis = int(value[17:19] + value[20:23])  # seconds and their fraction
    if day is None or clock is None or millis >= 60_000:
        return None
    return day + clock + millis


try:  # built from _geminiscan.c with the package; without a compiler, the slices above
    from agentwatch.sentinels.agent_ledger._geminiscan import utc_ms as _utc_ms
except ImportError:  # pragma: no cover - the conformance tests require it
    _utc_ms = _utc_ms_py


def parse_timestamp(value: Any) -> int | None:
    """Epoch milliseconds of ccusage's strict RFC 3339 form: seconds, optional exactly three
    fraction digits, then Z or +HH:MM (at most 23:59); anything else is None."""
    if not isinstance(value, str):
        return None
    stamp = _utc_ms(value)  # Gemini CLI's own form, else the regex below
    if stamp is not ...:
        return stamp
    match = _STAMP.fullmatch(value)
    if match is None:
        return None
    year, month, day, hour, minute, second = map(int, match.group(1, 2, 3, 4, 5, 6))
    offset = _offset_minutes(match.group(8))
    if offset is None or hour > 23 or minute > 59 or second > 59 or not 1 <= month <= 12:
        return None
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if day == 0 or day > _DAYS[month - 1] + (month == 2 and leap):
        return None
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    return seconds * 1000 + int(match.group(7) or 0) - offset * 60_000


# ----------------------------------------------------------------------------- records


def _text(record: Mapping[str, Any], key: str) -> str | None:
    """A non-empty string field, trimmed (ccusage's non_empty_json_string)."""
    value = record.get(key)
    if isinstance(value, str):
        value = value.strip(RUST_WHITESPACE)
        return value or None
    return None


def _time(record: Mapping[str, Any], key: str) -> int | None:
    return parse_timestamp(record.get(key))


def _first_time(record: Mapping[str, Any], keys: tuple[str, ...], fallback: int) -> int:
    """The first of these fields that parses (the epoch itself included), else fallback."""
    for key in keys:
        stamp = _time(record, key)
        if stamp is not None:
            return stamp
    return fallback


def _stats_of(record: Mapping[str, Any]) -> Any:
    """`stats`, else `result.stats`; a present null still counts as present."""
    if "stats" in record:
        return record["stats"]
    result = record.get("result")
    return result.get("stats") if isinstance(result, dict) else None


class _Duplicated(dict[str, Any]):
    """An object that named one of ccusage's record fields twice (last value kept)."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    duplicated = False
    for key, value in pairs:
        if key in record and key in RECORD_FIELDS:
            duplicated = True
        record[key] = value
    return _Duplicated(record) if duplicated else record


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


_PLAIN = json.JSONDecoder(parse_constant=_reject_constant)
_CHECKED = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_pairs)


def _may_repeat(raw: bytes) -> bool:
    """Could a field ccusage reads appear twice? (Then the slow, checking parse runs.)"""
    if b"\\u" in raw:  # an escaped name could repeat a field unseen
        return True
    names = _FIELD_NAMES.findall(raw)
    return len(names) != len(set(names))


def _no_repeat(raw: bytes, value: Any) -> bool:
    """Is no field name of `raw` repeated anywhere in it? Every quoted "name" in `raw` is a
    key, a string value, or part of a longer string (a name is letters: an escaped quote
    before it); `value` (orjson's, which keeps one key of a repeat) holds a key or string
    for each of the first two. So equal counts mean no key was dropped: nothing repeated."""
    counts = collections.Counter(_FIELD_NAMES.findall(raw))
    wanted = {name.decode(): count for name, count in counts.items() if count > 1}
    if type(value) is not dict:
        return False
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            for key in node:
                if key in wanted:
                    wanted[key] -= 1
            node = node.values()
        for item in node:
            if type(item) is str:
                if item in wanted:
                    wanted[item] -= 1
            elif type(item) is dict or type(item) is list:
                stack.append(item)
    return not any(wanted.values())


def load_record(text: str | None, raw: bytes) -> Any:
    """A JSON value as serde_json reads it into ccusage's record; raises ValueError where it
    would fail (bad JSON, NaN, a record field named twice at the top). `text` is `raw`
    decoded, None to decode it only when needed."""
    if not _may_repeat(raw):
        try:  # orjson reads what _PLAIN reads (numbers past 64 bits as floats, the same
            return orjson.loads(raw)  # to _u64); what it refuses, _PLAIN decides
        except orjson.JSONDecodeError:
            return _PLAIN.decode(raw.decode("utf-8") if text is None else text)
    if b"\\u" not in raw:  # a name repeated, maybe in a nested object (a tool call's id)
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            if _no_repeat(raw, value):
                return value
    value = _CHECKED.decode(raw.decode("utf-8") if text is None else text)
    if isinstance(value, _Duplicated):
        raise ValueError("duplicate field")
    return value


# One counted response before it becomes an AgentUsage: its key parts, its time (epoch ms, or
# the message whose timestamp is read once it is kept), session, model, input, output and
# cache read. A tuple: hundreds of thousands are made per corpus.
Event = tuple[tuple[str, ...], Any, str, str, int, int, int]
_BAD = object()  # a line load_record refuses
PLAIN_LIMIT = 1 << 53  # below it a JSON integer is its own u64 (_u64's first case)
_PLAIN_FIELDS = ("input", "output", "cached", "thoughts", "tool", "total")


def generic_counts(tokens: Any, session_rule: bool = True) -> tuple[int, int, int] | None:
    """(input, output, cache read) of a `tokens` object by the spelled-out rules."""
    parsed = parse_tokens(tokens)
    counted = count(parsed, session_rule) if parsed is not None else None
    return None if counted is None else (counted.input, counted.output, counted.cache_read)


def message_counts(tokens: dict[str, Any]) -> tuple[int, int, int] | None:
    """generic_counts(tokens) of a message, with the shape Gemini CLI writes (the six fields
    input, output, cached, thoughts, tool and total, integers below 2**53) worked out here
    in place of through Tokens and count: the same rules, for a fraction of the calls.
    tests/agents/test_gemini_conformance.py holds the two equal."""
    i, o, c, th, tl, total = map(tokens.get, _PLAIN_FIELDS)
    if not (
        type(i) is int and type(o) is int and type(c) is int and type(th) is int
        and type(tl) is int and type(total) is int
        and 0 <= (i | o | c | th | tl | total) < PLAIN_LIMIT
    ):  # fmt: skip
        return generic_counts(tokens)
    inclusive = i + o + th + tl
    if c > 0 and total == inclusive and total != inclusive + c:  # _session_input
        i -= min(i, c)
    i += tl  # tool tokens are input
    missing = total - (i + o + c + th)
    if missing > 0:
        o, th = _beyond_parts(o, th, missing)
    if i == 0 and o == 0 and c == 0 and th == 0:
        return None
    return i, o + th, c


def _direct(
    record: Mapping[str, Any], hint: str | None, session: str, fallback_ms: int,
    key: tuple[str, ...], result: ReadResult,
) -> Event | None:  # fmt: skip
    """A `type: gemini` message; None (and a reject when it is malformed) when not counted."""
    if "tokens" not in record or record["tokens"] is None:
        return None  # a message recorded before its tokens arrived: not bad input
    tokens = record["tokens"]
    if not isinstance(tokens, dict):
        result.reject("bad_tokens")
        return None
    model = _text(record, "model") or hint
    if model is None:
        result.reject("no_model")
        return None
    counts = message_counts(tokens)
    if counts is None:
        return None
    stamp = _first_time(record, ("timestamp", "created_at"), fallback_ms)
    return (key, stamp, session, model, *counts)


def _stats(
    stats: Any, hint: str | None, session: str, stamp: int, key: tuple[str, ...]
) -> list[Event]:
    """A stats object: one event per model under `models`, else the object itself."""
    if not isinstance(stats, dict):
        return []
    models = stats.get("models")
    if isinstance(models, dict):
        events: list[Event] = []
        for model, data in models.items():
            counts = generic_counts(data.get("tokens"), False) if isinstance(data, dict) else None
            if counts is not None and model.strip():
                events.append(((*key, "model", model), stamp, session, model, *counts))
        if events:
            return events
    counts = generic_counts(stats, False)
    if counts is None:
        return []
    return [((*key, "flat"), stamp, session, hint or DEFAULT_MODEL, *counts)]


def _mtime_ms(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns // 1_000_000
    except OSError:
        return 0


def kept_keys(raws: list[bytes], values: list[Any], quotes: int | None = None) -> bool:
    """Did orjson keep every key of these texts (none holding a \\u escape)? It keeps one of a
    repeated name without a word. Without \\u, each string is written with quotes that are
    `"` or `\\"` both in a text and in orjson's own text of its value, so orjson's text has
    as many `"` as the input only if no key (with its value) was dropped; and never more,
    so equal sums over many texts mean equal counts in each. `quotes`: that sum, when the
    caller counted it already."""
    written = _quotes(values)
    if written < 0:
        return False
    if quotes is None:
        quotes = sum(map(bytes.count, raws, itertools.repeat(b'"')))
    return quotes == written


def _quotes_py(value: Any) -> int:
    """The `"` in orjson's text of value, -1 when orjson cannot write it.
    _geminiscan.quotes counts the same without writing the text."""
    try:
        return orjson.dumps(value).count(b'"')
    except TypeError:  # orjson.JSONEncodeError: nothing orjson.loads made should raise it
        return -1


try:  # built from _geminiscan.c with the package; without a compiler, orjson.dumps
    from agentwatch.sentinels.agent_ledger._geminiscan import quotes as _quotes
except ImportError:  # pragma: no cover - the conformance tests require it
    _quotes = _quotes_py


def _load(text: str | None, raw: bytes) -> Any:
    """load_record(text, raw), by orjson alone when no escape can hide a name and no key
    was dropped (then the stdlib's checking parse finds no repeated field either)."""
    if b"\\u" not in raw:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            if kept_keys([raw], [value]):
                return value
    return load_record(text, raw)


def _load_or_bad(raw: bytes) -> Any:
    try:
        return _load(None, raw)
    except (ValueError, RecursionError):  # RecursionError: the stdlib on deep nesting
        return _BAD


@functools.cache
def _relevant(escaped: bool) -> re.Pattern[bytes]:
    """Does a line name one of _NEEDLES? (\\u only matters in a file that has one; the
    pattern without it is searched several times faster.)"""
    names = b"|".join(needle[1:-1] for needle in _NEEDLES[:-1])
    return re.compile(b'"(?:' + names + b')"' + (rb"|\\u" if escaped else b""))


def _records(raw: bytes) -> list[Any]:
    """The value of every line that names one of _NEEDLES, in order (_BAD for a line
    load_record refuses), a plain `type: gemini` line as _geminiscan.scan reads it (a
    tuple: see Plain). The lines are picked and the plain ones read by one C loop; the
    others parsed by orjson all at once, then one kept_keys; load_record decides a line
    orjson refuses, and every line of a file with a \\u escape or a repeated key."""
    escaped = b"\\" in raw and b"\\u" in raw
    if b"\r" in raw:
        chosen = list(filter(_relevant(escaped).search, _lines(raw)))
        return _values(chosen, escaped, None)
    chosen, places, quotes = _scan(raw, escaped)
    if len(places) == len(chosen):
        return _values(chosen, escaped, quotes)
    values = _values([chosen[place] for place in places], escaped, quotes)
    for place, value in zip(places, values, strict=True):
        chosen[place] = value
    return chosen


def _values(chosen: list[bytes], escaped: bool, quotes: int | None) -> list[Any]:
    """The value of each line (_BAD for one load_record refuses); `quotes`: the `"` in
    them, when counted already."""
    if escaped:
        return list(map(_load_or_bad, chosen))
    try:
        values = read = list(map(orjson.loads, chosen))
        lines_read = chosen
    except orjson.JSONDecodeError:  # a torn last line, say: the others still checked at once
        values = list(map(_orjson_or_refused, chosen))
        pairs = [
            (line, value) for line, value in zip(chosen, values, strict=True) if value is not _BAD
        ]
        lines_read, read = [line for line, _ in pairs], [value for _, value in pairs]
        quotes = None
    if not kept_keys(lines_read, read, quotes):
        return list(map(_load_or_bad, chosen))
    if read is values:
        return values
    return [
        _load_or_bad(line) if value is _BAD else value
        for line, value in zip(chosen, values, strict=True)
    ]


def _pick_py(raw: bytes, escaped: bool) -> tuple[list[bytes], int]:
    """The lines of raw (split at \\n) that name one of _NEEDLES, and the number of `"` in
    them. _geminiscan.pick is the same in C; this runs without it."""
    chosen = list(filter(_relevant(escaped).search, raw.split(b"\n")))
    return chosen, sum(map(bytes.count, chosen, itertools.repeat(b'"')))


try:  # built from _geminiscan.c with the package; without a compiler, the regex in Python
    from agentwatch.sentinels.agent_ledger._geminiscan import pick as _pick
except ImportError:  # pragma: no cover - the conformance tests require it
    _pick = _pick_py


# A plain `type: gemini` line as _geminiscan.scan reads it: (model, name, millis, counts),
# model and name trimmed (None when absent or blank), millis the timestamp's, counts None
# without tokens, () for a response worth nothing, else message_counts's (input, output,
# cache read).
Plain = tuple[str | None, str | None, int, tuple[int, ...] | None]


def _scan_py(raw: bytes, escaped: bool) -> tuple[list[Any], Sequence[int], int]:
    """_pick(raw, escaped)'s lines, the places of those orjson reads (here: all of them;
    _geminiscan.scan reads plain lines itself) and the `"` in those."""
    chosen, quotes = _pick(raw, escaped)
    return chosen, range(len(chosen)), quotes


try:  # built from _geminiscan.c with the package; without a compiler, every line by orjson
    from agentwatch.sentinels.agent_ledger._geminiscan import scan as _scan
except ImportError:  # pragma: no cover - the conformance tests require it
    _scan = _scan_py


def _orjson_or_refused(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return _BAD


def parse_json_file(
    path: Path, text: str | None, raw: bytes, fallback: int, result: ReadResult
) -> list[Event]:
    """A whole-file session (older Gemini CLI) or a single record / stats object."""
    plain = _plain_file(raw)
    if plain is not None:  # _geminiscan.plain_file's reading: the rules below, in short
        session, read = plain
        events: list[Event] = []
        seen: dict[str, int] = {}
        for model, name, stamp, counts in read:
            seen[name] = nth = seen.get(name, 0) + 1
            if counts:
                events.append((("json", name, str(nth)), stamp, session, model, *counts))
        return events
    try:
        record = _load(text, raw)
    except (ValueError, RecursionError):
        result.reject("bad_json")
        return []
    if not isinstance(record, dict):
        result.reject("not_object")
        return []
    session = _text(record, "sessionId") or _text(record, "session_id") or path.stem
    started = _first_time(record, ("startTime", "lastUpdated"), fallback)
    messages = record.get("messages")
    if isinstance(messages, list):
        events = []
        seen = {}
        for message in messages:
            if not (isinstance(message, dict) and message.get("type") == "gemini"):
                continue
            name = _text(message, "id") or ""
            seen[name] = nth = seen.get(name, 0) + 1  # no dedup inside a .json: own key
            tokens = message.get("tokens")  # then _direct's rules, inline
            if tokens is None:
                continue  # a message recorded before its tokens arrived: not bad input
            if not isinstance(tokens, dict):
                result.reject("bad_tokens")
                continue
            model = _text(message, "model")
            if model is None:
                result.reject("no_model")
                continue
            counts = message_counts(tokens)
            if counts is not None:
                stamp = _first_time(message, ("timestamp", "created_at"), started)
                events.append((("json", name, str(nth)), stamp, session, model, *counts))
        return events
    if record.get("type") == "gemini":
        event = _direct(record, None, session, fallback, ("single",), result)
        return [event] if event else []
    stamp = _first_time(record, ("timestamp",), fallback)
    return _stats(_stats_of(record), _text(record, "model"), session, stamp, ("stats", "0"))


def _no_plain_file(raw: bytes) -> tuple[str, list[Plain]] | None:
    """_geminiscan.plain_file's place without it: every file read by orjson and the rules."""
    return None


try:  # built from _geminiscan.c with the package; without a compiler, orjson and the rules
    from agentwatch.sentinels.agent_ledger._geminiscan import plain_file as _plain_file
except ImportError:  # pragma: no cover - the conformance tests require it
    _plain_file = _no_plain_file


def _lines(raw: bytes) -> Iterator[bytes]:
    """Rust's str::lines: split at \\n, one trailing \\r dropped, no final empty line."""
    for line in raw.split(b"\n"):
        yield line[:-1] if line.endswith(b"\r") else line


def keep(events: list[Event], by_id: dict[str, int], name: str | None, event: Event) -> None:
    """A message seen again under its id takes the first copy's place (ccusage keeps the
    last copy with usable tokens); messages without an id each count."""
    if name is None:
        events.append(event)
    elif name in by_id:
        events[by_id[name]] = event
    else:
        by_id[name] = len(events)
        events.append(event)


def parse_jsonl_file(
    path: Path, text: str | None, raw: bytes, fallback: int, result: ReadResult
) -> list[Event]:
    """An append-only session: a message written again under its id replaces the earlier
    copy in place; lines without an id each count. A message's time is read only for the
    copy kept (its Event holds the message until then)."""
    session = path.stem
    hint: str | None = None
    events: list[Event] = []
    by_id: dict[str, int] = {}
    anonymous = stats_seen = 0
    for record in _records(raw):
        if type(record) is tuple:  # a plain line (Plain): the rules below, in short
            model, name, stamp, counts = record
            if model is not None:
                hint = model
            if name is None:
                anonymous += 1
                key: tuple[str, ...] = ("anon", str(anonymous))
            else:
                key = ("id", name)
            if counts is None:
                continue
            if hint is None:
                result.reject("no_model")
            elif counts:
                keep(events, by_id, name, (key, stamp, session, hint, *counts))
            continue
        if type(record) is not dict:
            result.reject("bad_line" if record is _BAD else "not_object")
            continue
        if "sessionId" in record or "session_id" in record:
            session = _text(record, "sessionId") or _text(record, "session_id") or session
        model = record.get("model")
        if type(model) is str and model != hint:  # _text, inline (a model equal to the
            hint = model.strip(RUST_WHITESPACE) or hint  # hint is trimmed already)
        if record.get("type") == "gemini":
            name = record.get("id")
            name = name.strip(RUST_WHITESPACE) or None if type(name) is str else None
            if name is None:
                anonymous += 1
                key = ("anon", str(anonymous))
            else:
                key = ("id", name)
            tokens = record.get("tokens")
            if tokens is None:
                continue  # a message recorded before its tokens arrived: not bad input
            if type(tokens) is not dict:
                result.reject("bad_tokens")
                continue
            if hint is None:  # the message's own model, else the last one named
                result.reject("no_model")
                continue
            counts = message_counts(tokens)
            if counts is not None:
                keep(events, by_id, name, (key, record, session, hint, *counts))
            continue
        stats = _stats_of(record)
        if stats is not None:
            stats_seen += 1
            stamp = _first_time(record, ("timestamp",), fallback)
            events.extend(_stats(stats, hint, session, stamp, ("stats", str(stats_seen))))
    return events


# ----------------------------------------------------------------------------- the reader


@functools.lru_cache(maxsize=4096)
def _project_of(folder: Path) -> str:
    """The project a chats folder belongs to: the last component of the path in the nearest
    `.project_root` Gemini CLI keeps in tmp/<project>/ ("" when none)."""
    for candidate in (folder, *list(folder.parents)[:3]):
        try:
            named = (candidate / ".project_root").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        return Path(named).name if named else ""
    return ""


def read_file(path: Path, result: ReadResult) -> None:
    """Append one file's responses to result; a file that cannot be read is one reject."""
    try:
        raw = path.read_bytes()
        # UTF-8 checked here (an ASCII file is; isascii is many times faster than a decode);
        # the text itself is only wanted when a line or file falls to the stdlib's parse
        text = None if raw.isascii() else raw.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        result.reject("unreadable")
        return
    parse = parse_jsonl_file if path.suffix == ".jsonl" else parse_json_file
    project = _project_of(path.parent)
    fallback = _mtime_ms(path)
    append = result.entries.append
    events = parse(path, text, raw, fallback, result)
    keys = _keys(f"{AGENT}:", os.fsencode(path), events)
    for (_, when, session, model, fresh, output, cache_read), key in zip(events, keys, strict=True):
        if type(when) is not int:  # the kept copy of a message: its time now
            stamp = parse_timestamp(when.get("timestamp"))
            when = _first_time(when, ("created_at",), fallback) if stamp is None else stamp
        append(usage(
            AGENT, key, when / 1000, session, project, model, fresh, output, cache_read, 0,
        ))  # fmt: skip


def _keys_py(label: str, path: bytes, events: list[Event]) -> list[str]:
    """Each event's key: stable across re-reads, the file's path and the response's place
    in it, never text (label, then blake2b of the path and a NUL before each key part).
    _geminiscan.keys makes the same in C, in one call per file."""
    base = hashlib.blake2b(digest_size=16)
    base.update(path)
    keys = []
    for event in events:
        digest = base.copy()
        digest.update(("\0" + "\0".join(event[0])).encode("utf-8", "surrogatepass"))
        keys.append(label + digest.hexdigest())
    return keys


try:  # built from _geminiscan.c with the package; without a compiler, hashlib
    from agentwatch.sentinels.agent_ledger._geminiscan import keys as _keys
except ImportError:  # pragma: no cover - the conformance tests require it
    _keys = _keys_py


def read_files(paths: Iterable[Path]) -> ReadResult:
    """Every counted response of these files; never raises on bad input."""
    result = ReadResult()
    seen: set[Path] = set()
    for path in map(Path, paths):
        if path not in seen:  # overlapping roots name a file twice; ccusage reads it once
            seen.add(path)
            read_file(path, result)
    return result


# ----------------------------------------------------------------------------- prices


@functools.cache
def _prices() -> dict[str, dict[str, Any]]:
    table = json.loads(PRICES_FILE.read_text(encoding="utf-8"))
    return {name: entry for name, entry in table["models"].items()}


def _rate(entry: Mapping[str, Any], name: str, above: bool) -> float:
    if above and f"{name}_above_200k" in entry:
        return float(entry[f"{name}_above_200k"])
    return float(entry[name])


Rates = tuple[float, float, float]  # USD per million input, output and cache read tokens


@functools.cache
def _rates() -> dict[str, tuple[Rates, Rates]]:
    """Each model's rates up to and above the 200k tier, worked out once (price runs for
    every response)."""

    def rates(entry: Mapping[str, Any], above: bool) -> Rates:
        return (_rate(entry, "input", above), _rate(entry, "output", above),
                _rate(entry, "cache_read", above))  # fmt: skip

    return {model: (rates(entry, False), rates(entry, True)) for model, entry in _prices().items()}


def price(entry: AgentUsage) -> float | None:
    """USD of one response, None for a model the table does not hold. Once the prompt
    (fresh plus cached input) exceeds 200,000 tokens every class is charged at its
    above-200k rate, as ccusage 20.0.24 charges it (and as Google's page reads)."""
    rates = _rates().get(entry.model)
    if rates is None:
        return None
    fresh, output, cache_read = entry.input, entry.output, entry.cache_read
    above = fresh + cache_read + entry.cache_creation > TIER_THRESHOLD
    input_rate, output_rate, cache_rate = rates[above]
    usd_per_million = fresh * input_rate + output * output_rate + cache_read * cache_rate
    return usd_per_million / 1_000_000
