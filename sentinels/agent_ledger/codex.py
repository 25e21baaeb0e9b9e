"""Codex CLI's token ledger: its JSONL rollouts, read the way `ccusage codex daily` 20.0.24 does.

Codex writes one rollout per session under `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`
(and moves old ones to `archived_sessions/`). Each API response leaves an `event_msg` line of
type `token_count` with the response's usage (`last_token_usage`) and the session's running
sum (`total_token_usage`). The rules below are ccusage's, file by file in docs/agents/codex.md;
this module is pure: files in, `AgentUsage` records and bounded reject counts out.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import orjson

from agentwatch.sentinels.agent_ledger.base import AgentUsage, ReadResult

AGENT = "codex"
PRICES_FILE = Path(__file__).with_name("codex_prices.json")
FALLBACK_MODEL = "gpt-5"  # ccusage's model for usage no turn_context names
AUTO_REVIEW_MODEL = "codex-auto-review"
# ccusage's embedded codex-auto-review snapshot (newest first): the model an auto-review
# event is priced as, by the event's date.
AUTO_REVIEW_FALLBACKS = (
    ("2026-07-30", "gpt-5.6-luna"),
    ("2026-03-05", "gpt-5.4"),
    ("2026-02-05", "gpt-5.3-codex"),
    ("2025-12-11", "gpt-5.2-codex"),
    ("2025-11-13", "gpt-5.1-codex"),
    ("2025-09-15", "gpt-5-codex"),
    ("2025-08-07", "gpt-5"),
)
BURST_PAUSE_MS = 1000  # longest pause inside a replayed burst (ccusage's constant)
FAST_TIERS = frozenset({"fast", "priority"})
STANDARD_TIERS = frozenset({"default", "standard"})
U64_MAX = 2**64 - 1

# ccusage's byte pre-filter: only lines holding these compact markers are parsed as rollout
# lines; everything else is headless `codex exec --json` output or skipped.
_TURN_CONTEXT = b'"type":"turn_context"'
_EVENT_MSG = b'"type":"event_msg"'
_TOKEN_COUNT = b'"type":"token_count"'
_SETTINGS = b'"type":"thread_settings_applied"'
_ANY_TYPE = b'"type":'


@dataclass(frozen=True, slots=True)
class CodexUsage(AgentUsage):
    """An AgentUsage that also carries the service tier Codex recorded for it: ccusage prices
    a fast (priority) turn at the model's fast multiplier, and base.AgentUsage has no field
    for it."""

    fast: bool = False


class Usage(NamedTuple):
    """One usage object normalised as ccusage does (cached and cache-write clamped). A tuple:
    two are made and compared per token_count line, and a tuple is the cheapest to make."""

    input: int = 0
    cached: int = 0
    cache_write: int = 0
    output: int = 0
    reasoning: int = 0
    total: int = 0

    def normalised(self) -> Usage:
        tokens_in, cached, write = self.input, self.cached, self.cache_write
        if cached <= tokens_in and write <= tokens_in - cached:
            return self  # already within bounds (what Codex writes)
        cached = min(cached, tokens_in)
        write = min(write, tokens_in - cached)
        return Usage(tokens_in, cached, write, self.output, self.reasoning, self.total)

    def minus(self, earlier: Usage | None) -> Usage:
        """The delta since `earlier` (saturating at zero, field by field)."""
        if earlier is None:
            return self.normalised()
        return Usage(
            max(self.input - earlier.input, 0),
            max(self.cached - earlier.cached, 0),
            max(self.cache_write - earlier.cache_write, 0),
            max(self.output - earlier.output, 0),
            max(self.reasoning - earlier.reasoning, 0),
            max(self.total - earlier.total, 0),
        ).normalised()

    def empty(self) -> bool:
        return not (self.input or self.cached or self.cache_write or self.output or self.reasoning)


class Event(NamedTuple):
    """One counted response before dedup: ccusage's CodexTokenUsageEvent."""

    timestamp: str  # as recorded (ccusage keeps the text and parses it when grouping)
    model: str
    usage: Usage
    fast: bool | None  # recorded tier; None: none recorded (config.toml decides)
    offset: int  # byte offset of the line (the key of an event timed by the file's mtime)
    mtime_stamped: bool = False  # headless output without a time of its own
    millis: int | None = None  # parse_timestamp_ms(timestamp), when already known


@dataclass
class Meta:
    """What a rollout's first line (session_meta) says about the session."""

    session_id: str = ""
    parent_id: str = ""
    forked_at: int | None = None  # epoch ms
    cwd: str = ""


@dataclass
class FileState:
    """The running state ccusage keeps while it walks one file."""

    previous_totals: Usage | None = None
    model: str | None = None
    tier: bool | None = None
    cwd: str = ""
    events: list[Event] = field(default_factory=list)
    usage_stamps: list[int] = field(default_factory=list)  # first two usage lines' times (ms)


# Counts bad input by a short reason from a fixed set (ReadResult.reject), never file text.
Rejects = Callable[[str], None]


# --- where the files are ------------------------------------------------------------------


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """Codex homes: CODEX_HOME (ccusage splits it on commas) or ~/.codex."""
    raw = env.get("CODEX_HOME")
    if raw is not None:
        homes = [Path(part.strip()) for part in raw.split(",") if part.strip()]
    else:
        homes = [home / ".codex"]
    unique: list[Path] = []
    for path in homes:
        if path not in unique:
            unique.append(path)
    return unique


def _sources(root: Path) -> list[Path]:
    """sessions/ and archived_sessions/ of a home; the home itself when it has neither."""
    found = [root / name for name in ("sessions", "archived_sessions") if (root / name).is_dir()]
    return found or [root]


def _jsonl_under(folder: str, below: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """(names below the start, path) of every *.jsonl below `folder`, symlinks not followed
    (ccusage uses the entry's own type). Strings, not Paths: a home holds thousands."""
    out: list[tuple[tuple[str, ...], str]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for entry in entries:
        try:
            if entry.is_file(follow_symlinks=False) and entry.name.endswith(".jsonl"):
                out.append(((*below, entry.name), entry.path))
            elif entry.is_dir(follow_symlinks=False):
                out.extend(_jsonl_under(entry.path, (*below, entry.name)))
        except OSError:
            continue
    return out


def _relative(path: str, folder: str) -> str:
    """The path below `folder`: the same in sessions/ and archived_sessions/ for one session."""
    inside = folder.rstrip(os.sep) + os.sep
    return path[len(inside) :] if path.startswith(inside) else path


def files(root: Path) -> list[Path]:
    """The rollouts under one Codex home, in ccusage's order (by path components); a file in
    archived_sessions/ with the same relative path as one in sessions/ is the same session
    and is left out."""
    seen: set[str] = set()
    out: list[Path] = []
    for source in _sources(root):
        folder = str(source)
        for _names, path in sorted(_jsonl_under(folder), key=itemgetter(0)):
            relative = _relative(path, folder)
            if relative not in seen:
                seen.add(relative)
                out.append(Path(path))
    return out


# --- small parsers, lenient the way ccusage's serde types are ------------------------------


def _u64(value: Any) -> int | None:
    """ccusage's lossy u64: a non-negative integer or a numeric string; anything else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= U64_MAX else None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("+"):
            text = text[1:]
        if text.isdigit() and text.isascii():
            number = int(text)
            return number if number <= U64_MAX else None
    return None


def _first(fields: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        number = _u64(fields.get(name))
        if number is not None:
            return number
    return None


USAGE_FIELDS = (
    "input_tokens",
    "prompt_tokens",
    "input",
    "cached_input_tokens",
    "cache_read_input_tokens",
    "cached_tokens",
    "cache_write_input_tokens",
    "cache_creation_input_tokens",
    "output_tokens",
    "completion_tokens",
    "output",
    "reasoning_output_tokens",
    "reasoning_tokens",
    "total_tokens",
)

_USAGE_FIELD_SET = frozenset(USAGE_FIELDS)
# The two name sets Codex itself writes (0.171.0 without cache writes; with them): a usage
# object of exactly one of them, every value an integer from 0 to U64_MAX, takes the short
# way through parse_usage, with the same numbers as the long way.
_CODEX_NAMES = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)
_CODEX_USAGE = frozenset(_CODEX_NAMES)
_WRITES_USAGE = _CODEX_USAGE | {"cache_write_input_tokens"}
_codex_numbers = itemgetter(*_CODEX_NAMES)
_writes_numbers = itemgetter("cache_write_input_tokens", *_CODEX_NAMES)
_CONTAINERS = (dict, list)


def usage_broken(value: Any) -> bool:
    """A usage object serde cannot read at all: a token field holding an object or a list
    (the lossy number reader takes anything else, as None when it is no number)."""
    if not isinstance(value, dict):
        return False
    for name, number in value.items():
        if isinstance(number, _CONTAINERS) and name in _USAGE_FIELD_SET:
            return True
    return False


def _plain(value: dict[str, Any]) -> Usage | None:
    """parse_usage's result for a usage object as Codex writes it; None for any other."""
    keys = value.keys()
    if keys == _CODEX_USAGE:
        write = 0
        tokens_in, cached, tokens_out, reasoning, total = _codex_numbers(value)
    elif keys == _WRITES_USAGE:
        write, tokens_in, cached, tokens_out, reasoning, total = _writes_numbers(value)
    else:
        return None
    numbers = (write, tokens_in, cached, tokens_out, reasoning, total)
    if not (
        int is type(write) is type(tokens_in) is type(cached) is type(tokens_out)
        and int is type(reasoning) is type(total)
        and min(numbers) >= 0
        and max(numbers) <= U64_MAX
    ):
        return None
    return _recorded((tokens_in, cached, write, tokens_out, reasoning, total))


def _recorded(numbers: tuple[int, int, int, int, int, int]) -> Usage:
    """A usage object of Codex's own names, as (input, cached, cache_write, output,
    reasoning, total) integers from 0 to U64_MAX, read as parse_usage reads it."""
    tokens_in, cached, write, tokens_out, reasoning, total = numbers
    if total == 0 and tokens_in + tokens_out != 0:
        numbers = (tokens_in, cached, write, tokens_out, reasoning, tokens_in + tokens_out)
    return _as_usage(Usage, numbers).normalised()


# Usage(*numbers) of six numbers in Usage's order, without NamedTuple's argument handling
# in Python (_recorded makes two per token_count line); so are _count's events made.
_as_usage = tuple.__new__


def parse_usage(value: Any) -> Usage | None:
    """A usage object with every alias ccusage accepts; total recomputed when absent or 0;
    cached input clamped to input and cache writes to the rest."""
    if not isinstance(value, dict):
        return None
    plain = _plain(value)  # no alias, nothing lossy: the rules below in short
    if plain is not None:
        return plain
    if usage_broken(value):
        return None
    tokens_in = _first(value, "input_tokens", "prompt_tokens", "input") or 0
    tokens_out = _first(value, "output_tokens", "completion_tokens", "output") or 0
    reasoning = _first(value, "reasoning_output_tokens", "reasoning_tokens") or 0
    cached = _first(value, "cached_input_tokens", "cache_read_input_tokens", "cached_tokens")
    write = _first(value, "cache_write_input_tokens", "cache_creation_input_tokens")
    total = _u64(value.get("total_tokens"))
    computed = tokens_in + tokens_out  # 20.0.24 (reasoning is inside output)
    if total is None or (total == 0 and computed != 0):
        total = computed
    # ccusage clamps at parse time, so a running total is clamped before deltas are taken
    return Usage(tokens_in, cached or 0, write or 0, tokens_out, reasoning, total).normalised()


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _model_of(fields: Any) -> str | None:
    """model, then model_name, then metadata.model (non-empty strings only)."""
    if not isinstance(fields, dict):
        return None
    model = fields.get("model")
    if isinstance(model, str) and (model := model.strip()):
        return model
    model = fields.get("model_name")
    if isinstance(model, str) and (model := model.strip()):
        return model
    metadata = fields.get("metadata")
    return _text(metadata.get("model")) if isinstance(metadata, dict) else None


# The form Codex writes (UTC, milliseconds): parse_timestamp_ms reads it by one match.
# The form Codex writes (UTC, milliseconds): parse_timestamp_ms reads it by one match and
# the day it starts with, looked up (validated once per day).
_ZULU_MS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
_DAYS: dict[str, int | None] = {}  # YYYY-MM-DD -> days since 1970-01-01 (None: no such day)
_EPOCH_DAY = dt.date(1970, 1, 1)
_UNSEEN = -(10**9)  # no day of years 1-9999 is this far from 1970


def _days(date: str) -> int | None:
    """Days since 1970-01-01 of a YYYY-MM-DD of ASCII digits; None for no real day."""
    days = _DAYS.get(date, _UNSEEN)
    if days == _UNSEEN:
        try:
            days = (dt.date(int(date[0:4]), int(date[5:7]), int(date[8:10])) - _EPOCH_DAY).days
        except ValueError:
            days = None
        if len(_DAYS) < 100_000:
            _DAYS[date] = days
    return days


def parse_timestamp_ms(text: str) -> int | None:
    """ccusage's strict RFC 3339 parser: YYYY-MM-DDTHH:MM:SS[.mmm](Z|±HH:MM), nothing else."""
    if len(text) == 24 and _ZULU_MS.fullmatch(text) is not None:  # what Codex writes
        days = _days(text[:10])
        hours, minutes, seconds = int(text[11:13]), int(text[14:16]), int(text[17:19])
        if days is None or hours > 23 or minutes > 59 or seconds > 59:
            return None
        return (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000 + int(text[20:23])
    size = len(text)
    if size in (20, 25) and text[19] in "Z+-":
        millis, zone = "000", text[19:]
    elif size in (24, 29) and text[19] == ".":
        millis, zone = text[20:23], text[23:]
    else:
        return None
    if not millis.isdigit() or not millis.isascii():
        return None
    if zone == "Z":
        offset = 0
    elif len(zone) == 6 and zone[0] in "+-" and zone[3] == ":" and _digits(zone[1:3] + zone[4:]):
        offset = int(zone[1:3]) * 60 + int(zone[4:6])
        offset = offset if zone[0] == "+" else -offset
    else:
        return None
    head = text[:19]
    if head[4] != "-" or head[7] != "-" or head[10] != "T" or head[13] != ":" or head[16] != ":":
        return None
    parts = (head[0:4], head[5:7], head[8:10], head[11:13], head[14:16], head[17:19])
    if not all(_digits(part) for part in parts):
        return None
    year, month, day, hour, minute, second = (int(part) for part in parts)
    if hour > 23 or minute > 59 or second > 59:
        return None
    try:
        date = dt.date(year, month, day)
    except ValueError:
        return None
    days = (date - dt.date(1970, 1, 1)).days
    return (((days * 24 + hour) * 60 + minute) * 60 + second) * 1000 + int(millis) - offset * 60000


def _digits(text: str) -> bool:
    return text.isdigit() and text.isascii()


MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: later times have no RFC 3339 form


def _format_ms(millis: int) -> str:
    """RFC 3339 with milliseconds; beyond year 9999 a text ccusage's parser (and ours) refuses."""
    if not 0 <= millis <= MAX_MS:
        return "out-of-range"
    moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=millis)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def _number_ms(raw: int) -> int:
    """Epoch seconds or milliseconds (ccusage: above 1e10 it is milliseconds)."""
    return raw if raw > 10_000_000_000 else raw * 1000


def _session_timestamp(value: Any) -> str | None:
    """A rollout line's timestamp as ccusage keeps it: the trimmed text, or a number normalised."""
    if isinstance(value, str):
        return value.strip() or None
    number = _u64(value) if isinstance(value, int) else None
    return _format_ms(_number_ms(number)) if number is not None else None


def _normalised_timestamp(value: Any) -> str | None:
    """A headless timestamp: parsed strictly and re-rendered, or a number normalised."""
    if isinstance(value, str):
        text = value.strip()
        millis = parse_timestamp_ms(text) if text else None
        if millis is None:
            return None
        if len(text) == 24 and text[23] == "Z" and 0 <= millis <= MAX_MS:
            return text  # Codex's own form, from 1970 on: _format_ms gives it back as it is
        return _format_ms(millis)
    number = _u64(value) if isinstance(value, int) else None
    return _format_ms(_number_ms(number)) if number is not None else None


def _calendar_date(text: str) -> str | None:
    """The YYYY-MM-DD prefix when it is a real date (ccusage's codex_timestamp_date)."""
    head = text[:10]
    if len(head) != 10 or head[4] != "-" or head[7] != "-":
        return None
    if not (_digits(head[0:4]) and _digits(head[5:7]) and _digits(head[8:10])):
        return None
    try:
        dt.date(int(head[0:4]), int(head[5:7]), int(head[8:10]))
    except ValueError:
        return None
    return head


# --- line classification (ccusage's byte pre-filter) ---------------------------------------


def _type_flags(line: bytes) -> tuple[bool, bool, bool, bool]:
    """turn_context / event_msg / token_count / thread_settings_applied as "type" values,
    whitespace around the colon allowed (ccusage's codex_line_type_flags)."""
    flags = [False, False, False, False]
    names = (b"turn_context", b"event_msg", b"token_count", b"thread_settings_applied")
    start = 0
    while (index := line.find(b'"type"', start)) >= 0:
        cursor = index + 6
        while cursor < len(line) and line[cursor] in b" \t\r\n":
            cursor += 1
        if cursor >= len(line) or line[cursor] != ord(":"):
            start = index + 6
            continue
        cursor += 1
        while cursor < len(line) and line[cursor] in b" \t\r\n":
            cursor += 1
        if cursor >= len(line) or line[cursor] != ord('"'):
            start = cursor + 1
            continue
        cursor += 1
        for position, name in enumerate(names):
            end = cursor + len(name)
            if line[cursor:end] == name and line[end : end + 1] == b'"':
                flags[position] = True
        if flags[0] or (flags[1] and (flags[2] or flags[3])):
            break
        start = cursor + 1
    return flags[0], flags[1], flags[2], flags[3]


def line_kind(line: bytes) -> str | None:
    """ "session", "headless" or None (skipped), decided on the raw bytes as ccusage does."""
    event_msg = _EVENT_MSG in line
    if _TURN_CONTEXT in line or (event_msg and (_TOKEN_COUNT in line or _SETTINGS in line)):
        return "session"
    compact = _ANY_TYPE in line
    short = not event_msg and compact and len(line) < 64 * 1024
    nested = short and (_TOKEN_COUNT in line or b"thread_settings_applied" in line)
    if event_msg or nested or not compact:
        turn_context, is_event, token_count, settings = _type_flags(line)
        if turn_context or (is_event and (token_count or settings)):
            return "session"
    if b'"usage":' in line or (b'_tokens":' in line and _token_markers(line)):
        return "headless"
    return None


def _token_markers(line: bytes) -> bool:
    """The two token-count markers of headless output (checked after the cheaper "_tokens\":")."""
    return b'"input_tokens":' in line or b'"prompt_tokens":' in line


# --- one file ------------------------------------------------------------------------------


_STRING_OR_NULL = (str, type(None))  # serde's Option<Cow<str>>


def _typed_string(value: Any) -> bool:
    """serde's Option<Cow<str>>: absent/null or a string; anything else fails the whole line."""
    return isinstance(value, _STRING_OR_NULL)


def _models_typed(holder: dict[str, Any]) -> bool:
    """model, model_name and metadata.model of a payload or info: absent, null or strings."""
    if not (isinstance(holder.get("model"), _STRING_OR_NULL)):
        return False
    if not isinstance(holder.get("model_name"), _STRING_OR_NULL):
        return False
    metadata = holder.get("metadata")
    return not isinstance(metadata, dict) or isinstance(metadata.get("model"), _STRING_OR_NULL)


def _session_line_ok(entry: dict[str, Any]) -> bool:
    """Whether ccusage's typed CodexSessionLogEntry would deserialize this line at all."""
    if not isinstance(entry.get("type"), _STRING_OR_NULL):
        return False
    stamp = entry.get("timestamp")
    if not (stamp is None or isinstance(stamp, str) or _u64_int(stamp)):
        return False
    payload = entry.get("payload")
    if not isinstance(payload, dict):
        return True
    if not (isinstance(payload.get("type"), _STRING_OR_NULL) and _models_typed(payload)):
        return False
    info = payload.get("info")
    if isinstance(info, dict):
        if usage_broken(info.get("last_token_usage")) or usage_broken(
            info.get("total_token_usage")
        ):
            return False
        if not _models_typed(info):
            return False
    settings = payload.get("thread_settings")
    return not (
        isinstance(settings, dict) and not isinstance(settings.get("service_tier"), _STRING_OR_NULL)
    )


def _u64_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= U64_MAX


def _resolve_model(state: FileState, parsed: str | None, timestamp: str) -> str:
    """ccusage's resolve_codex_usage_model: the event's own model, else the session's, else
    gpt-5; codex-auto-review priced as the newest model released by the event's date."""
    if parsed is not None:
        state.model = parsed
    model = parsed or state.model
    if model is None:
        state.model = model = FALLBACK_MODEL
    if model != AUTO_REVIEW_MODEL:
        return model
    date = _calendar_date(timestamp)
    if date is None:
        return FALLBACK_MODEL
    return next((name for since, name in AUTO_REVIEW_FALLBACKS if date >= since), FALLBACK_MODEL)


def turn_usage(previous: Usage | None, last: Usage | None, total: Usage | None) -> Usage | None:
    """This response's usage: last_token_usage, unless the running total did not move (a
    repeated snapshot); else the total's delta from the previous total (ccusage's rule)."""
    advanced = total is None or previous != total
    if last is not None and advanced:
        return last.normalised()
    if total is not None:
        return total.minus(previous)
    return None


def _session_line(entry: dict[str, Any], state: FileState, offset: int) -> None:
    """A turn_context, thread_settings_applied or token_count line."""
    payload = entry.get("payload")
    if not isinstance(payload, dict):
        payload = None
    kind = entry.get("type")
    if kind == "turn_context":
        model = _model_of(payload)
        if model is not None:
            state.model = model
        if payload is not None and isinstance(payload.get("cwd"), str):
            state.cwd = payload["cwd"]
        return
    if kind != "event_msg" or payload is None:
        return
    timestamp = _session_timestamp(entry.get("timestamp"))
    if timestamp is None:
        return
    payload_type = payload.get("type")
    if payload_type == "thread_settings_applied":
        settings = payload.get("thread_settings")
        tier = settings.get("service_tier") if isinstance(settings, dict) else None
        if isinstance(tier, str):
            state.tier = True if tier in FAST_TIERS else False if tier in STANDARD_TIERS else None
        return
    if payload_type != "token_count":
        return
    info = payload.get("info")
    if not isinstance(info, dict):
        info = {}
    total = parse_usage(info.get("total_token_usage"))
    last = parse_usage(info.get("last_token_usage"))
    if (total is not None or last is not None) and len(state.usage_stamps) < 2:
        millis = parse_timestamp_ms(timestamp)
        if millis is not None:
            state.usage_stamps.append(millis)
    usage = turn_usage(state.previous_totals, last, total)
    if total is not None:
        state.previous_totals = total
    if usage is None or usage.empty():
        return
    model = _resolve_model(state, _model_of(payload) or _model_of(info), timestamp)
    state.events.append(Event(timestamp, model, usage, state.tier, offset))


# Names the rules read besides a token_count's usage: a payload or info holding none of
# them (what Codex writes) leaves nothing to check but the types of the rest.
_PAYLOAD_RULED = frozenset(("model", "model_name", "metadata", "thread_settings"))
_INFO_RULED = frozenset(("model", "model_name", "metadata"))


def _token_count_line(entry: dict[str, Any], state: FileState, offset: int) -> bool:
    """A token_count line as Codex writes it (a string timestamp, no model or settings
    field, two usage objects parse_usage reads): _session_line_ok and _session_line for
    it, less what that shape rules out (a usage object parse_usage reads is no broken one).
    False, having changed nothing, for any other line."""
    if entry.get("type") != "event_msg":
        return False
    payload, timestamp = entry.get("payload"), entry.get("timestamp")
    if type(payload) is not dict or type(timestamp) is not str:
        return False
    if payload.get("type") != "token_count" or not payload.keys().isdisjoint(_PAYLOAD_RULED):
        return False
    info = payload.get("info")
    if type(info) is not dict or not info.keys().isdisjoint(_INFO_RULED):
        return False
    total = parse_usage(info.get("total_token_usage"))
    last = parse_usage(info.get("last_token_usage"))
    timestamp = timestamp.strip()
    if total is None or last is None or not timestamp:
        return False
    _count(state, timestamp, total, last, offset)
    return True


def _plain_line_read(found: tuple[Any, ...], state: FileState, offset: int) -> bool:
    """What _codexscan.plain read of a plain line, taken as the rules take its object: a
    token_count's (timestamp, total, last) as _token_count_line, a turn_context's (model,
    cwd) as _session_line. False, having changed nothing, for a token_count whose timestamp
    is blank (the rules in Python then decide)."""
    if len(found) == 2:
        model, cwd = found
        if model is not None and (model := model.strip()):
            state.model = model
        if cwd is not None:
            state.cwd = cwd
        return True
    timestamp = found[0].strip()
    if not timestamp:
        return False
    _count(state, timestamp, _recorded(found[1]), _recorded(found[2]), offset, found[3])
    return True


def _count(
    state: FileState,
    timestamp: str,
    total: Usage,
    last: Usage,
    offset: int,
    millis: int | None = None,
) -> None:
    """A token_count's response with both usage objects read (_token_count_line's tail);
    `millis`: parse_timestamp_ms(timestamp) when the caller knows it (None: not known)."""
    if len(state.usage_stamps) < 2:
        stamp = millis if millis is not None else parse_timestamp_ms(timestamp)
        if stamp is not None:
            state.usage_stamps.append(stamp)
    usage = turn_usage(state.previous_totals, last, total)
    state.previous_totals = total
    if usage is not None and not usage.empty():
        model = _resolve_model(state, None, timestamp)
        event = (timestamp, model, usage, state.tier, offset, False, millis)
        state.events.append(_as_usage(Event, event))  # Event(*event), as _as_usage makes one


_HEADLESS_HOLDERS = ("data", "result", "response")


def _headless_line(entry: dict[str, Any], state: FileState, offset: int, mtime: str) -> None:
    """Saved `codex exec --json` output: a usage object at the top or under data/result/response."""
    holders = [entry] + [entry.get(name) for name in _HEADLESS_HOLDERS]
    objects = [holder for holder in holders if isinstance(holder, dict)]
    usage = next((u for h in objects if (u := parse_usage(h.get("usage"))) is not None), None)
    if usage is None:
        return
    if usage.empty() and usage.total == 0:
        return
    stamps = [h.get(key) for h in objects for key in ("timestamp", "created_at", "createdAt")]
    event_time = next((t for s in stamps if (t := _normalised_timestamp(s))), None)
    model_time = next((t for s in stamps if (t := _raw_or_normalised(s))), mtime)
    parsed = next((m for h in objects if (m := _model_of(h)) is not None), None)
    model = _resolve_model(state, parsed, model_time)
    stamped = event_time is not None
    state.events.append(Event(event_time or mtime, model, usage, None, offset, not stamped))


def _raw_or_normalised(value: Any) -> str | None:
    """ccusage's model-date timestamp: the text itself when it starts with a real date."""
    if isinstance(value, str) and value.strip() and _calendar_date(value.strip()):
        return value.strip()
    return _normalised_timestamp(value)


def _mtime(path: Path) -> str:
    try:
        return _format_ms(int(path.stat().st_mtime * 1000))
    except OSError:
        return _format_ms(0)


# Every line line_kind does not skip holds one of these (a session line's quoted "type"
# value; a headless line's "usage" or token key): one C-level search finds them, so the
# rest of a rollout (messages, tool output, instructions: most of its bytes) costs no
# Python work. line_kind then decides on each line found, as before.
_CANDIDATE = re.compile(
    rb'"(?:t(?:urn_context"|oken_count"|hread_settings_applied")|usage":|input_tokens":|prompt_tokens":)'
)
CHUNK = 1 << 20  # bytes read at a time: memory is a chunk plus the longest line


def _candidates_py(data: bytes, stop: int, base: int) -> list[tuple[int, bytes]]:
    """(base + start, line) of each line of data[:stop] holding a _CANDIDATE string, its
    newline kept. _codexscan.collect is the same in C; this runs without it."""
    search = _CANDIDATE.search
    out: list[tuple[int, bytes]] = []
    pos = 0
    while (found := search(data, pos, stop)) is not None:
        start = data.rfind(b"\n", pos, found.start()) + 1 or pos
        pos = data.find(b"\n", found.end(), stop) + 1 or stop
        out.append((base + start, data[start:pos]))
    return out


def _no_plain_line(line: bytes) -> None:
    """_codexscan.plain's stand-in without the extension: every line takes the rules."""
    return None


_Advance = Callable[..., tuple[int, int, bytes] | None]
_advance: _Advance | None = None
try:  # built from _codexscan.c with the package; without a compiler, the rules in Python
    from agentwatch.sentinels.agent_ledger import _codexscan
    from agentwatch.sentinels.agent_ledger._codexscan import collect as _collect
    from agentwatch.sentinels.agent_ledger._codexscan import plain as _plain_line

    _advance = _codexscan.advance
    _meta_line: Callable[[bytes], tuple[str, str, int | None, str] | None] | None
    _meta_line = _codexscan.meta
except ImportError:  # pragma: no cover - the conformance tests require it
    _collect, _plain_line, _meta_line = _candidates_py, _no_plain_line, None


def _candidate_lines(
    handle: BinaryIO, state: FileState | None = None, fast: tuple[Any, ...] | None = None
) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of each line that may be a session or headless line, newline kept,
    read in chunks of whole lines. With `fast` (_fast_rules()), _codexscan.advance takes
    the plain lines into `state` itself, and only the others are given."""
    collect = _collect
    base, rest, size = 0, b"", CHUNK
    while True:
        chunk = handle.read(size)
        data = rest + chunk if rest else chunk
        end = data.rfind(b"\n") + 1 if chunk else len(data)
        if chunk and end == 0:  # no whole line yet: read on, twice as much each time
            rest, size = data, max(CHUNK, len(data))
            continue
        if fast is None or _advance is None:
            yield from collect(data, end, base)
        else:
            pos = 0
            while (found := _advance(data, end, base, pos, state, *fast)) is not None:
                pos, offset, line = found
                yield offset, line
        if not chunk:
            return
        rest, base, size = data[end:], base + end, CHUNK


def _rules() -> tuple[Any, ...]:
    """The rules _codexscan.advance repeats in C, as this module holds them now."""
    return (
        _plain_line, _plain_line_read, _count, _recorded, turn_usage, _resolve_model,
        parse_timestamp_ms, Usage.normalised, Usage.minus, Usage.empty, _collect,
    )  # fmt: skip


_OWN_RULES = _rules()


def _fast_rules() -> tuple[Any, ...] | None:
    """_codexscan.advance's arguments when every rule it repeats is this module's own; None
    when one was replaced (a knock-out test does), so that the rules in Python run."""
    if _advance is None:
        return None
    if _rules() != _OWN_RULES:  # functions compare by identity
        return None
    return (Usage, Event, FALLBACK_MODEL, AUTO_REVIEW_MODEL)


# Nesting this deep may pass orjson (its limit is 1024) and still exhaust the stdlib
# parser's recursion: such a line goes to the stdlib, which decided it before. (A line
# nested this deep that orjson reads holds 2 * _DEEP brackets: shorter ones are not counted.)
_DEEP = 512


def _loads(line: bytes) -> Any:
    """json.loads's value, by orjson when it agrees: what orjson refuses (NaN, numbers past
    64 bits, lone surrogates, a BOM) and very deep nesting go to the stdlib, whose errors
    (ValueError, RecursionError) are the caller's. Where orjson reads a number past 64 bits
    as a float, the stdlib's int is past u64 too: both are "no u64" to every rule here."""
    if len(line) >= 2 * _DEEP and line.count(b"[") + line.count(b"{") >= _DEEP:
        return _stdlib_loads(line)
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return _stdlib_loads(line)


# What a string holding a lone surrogate (which only the stdlib parser lets through)
# becomes: no string, so a typed field holding one fails its line as serde fails it, and
# none reaches a key, a label or the database (which cannot encode it).
NOT_TEXT = float("nan")


def _no_surrogates(fields: dict[str, Any]) -> dict[str, Any]:
    for name, value in fields.items():
        if type(value) is str and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                fields[name] = NOT_TEXT
    return fields


def _stdlib_loads(line: bytes) -> Any:
    """json.loads, with object values holding a lone surrogate replaced by NOT_TEXT."""
    return json.loads(line, object_hook=_no_surrogates)


def parse_file(path: Path, rejects: Rejects) -> FileState:
    """Every usage event of one rollout, in file order, before replay filtering and dedup;
    an unreadable file counts once (and what was read before the error stays)."""
    state = FileState()
    mtime = ""
    kind_of, loads, line_ok, session_line = line_kind, _loads, _session_line_ok, _session_line
    token_count_line, plain_line, plain_read = _token_count_line, _plain_line, _plain_line_read
    fast = _fast_rules()
    try:
        with open(path, "rb", buffering=0) as handle:  # whole chunks: no buffer
            for offset, line in _candidate_lines(handle, state, fast):
                # a plain line (a session line to line_kind: its types are compact) is
                # read in one pass in C
                found = plain_line(line)
                if found is not None and plain_read(found, state, offset):
                    continue
                kind = kind_of(line)
                if kind is None:
                    continue
                try:
                    entry = loads(line)
                except (ValueError, RecursionError):
                    rejects("bad_json")
                    continue
                if type(entry) is not dict:
                    rejects("not_an_object")
                    continue
                if kind == "session":
                    if token_count_line(entry, state, offset):
                        continue
                    if line_ok(entry):
                        session_line(entry, state, offset)
                    else:
                        rejects("bad_field_type")
                else:
                    mtime = mtime or _mtime(path)
                    _headless_line(entry, state, offset, mtime)
    except OSError:
        rejects("unreadable_file")
    return state


def read_meta(path: Path) -> Meta:
    """The session_meta first line: id, parent (fork or spawned sub-agent), fork time, cwd."""
    parts: list[bytes] = []
    try:  # readline's line, in whole reads of the file descriptor (no file object)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return Meta()
    try:
        while chunk := os.read(fd, META_READ):
            cut = chunk.find(b"\n") + 1
            if cut:
                parts.append(chunk[:cut])
                break
            parts.append(chunk)
    except OSError:
        return Meta()
    finally:
        os.close(fd)
    return _meta_of(b"".join(parts))


META_READ = 1 << 15  # bytes read at a time for a first line (Codex's are about 10-30 KB)


def _meta_of(first: bytes) -> Meta:
    """The Meta of a first line: _codexscan.meta reads a plain one (most of a Codex line is
    its instructions, which no rule reads) without building it; _meta_of_py any other, or
    every one while parse_timestamp_ms is not this module's own (a knock-out test)."""
    if _meta_line is not None and parse_timestamp_ms is _OWN_RULES[6]:
        found = _meta_line(first)
        if found is not None:
            session_id, parent_id, forked_at, cwd = found
            return Meta(session_id, parent_id, forked_at, cwd)
    return _meta_of_py(first)


def _meta_of_py(first: bytes) -> Meta:
    """The Meta of a first line, by the rules: json's object, its fields read leniently."""
    meta = Meta()
    try:
        entry = _loads(first)
    except (ValueError, RecursionError):
        return meta
    if not isinstance(entry, dict):
        return meta
    stamp = _normalised_timestamp(entry.get("timestamp"))
    meta.forked_at = parse_timestamp_ms(stamp) if stamp else None
    payload = entry.get("payload")
    if entry.get("type") != "session_meta" or not isinstance(payload, dict):
        return meta
    meta.session_id = payload["id"] if isinstance(payload.get("id"), str) else ""
    meta.cwd = payload["cwd"] if isinstance(payload.get("cwd"), str) else ""
    parent = payload.get("forked_from_id")
    if not isinstance(parent, str):
        parent = _dig(payload, "source", "subagent", "thread_spawn", "parent_thread_id")
    meta.parent_id = parent if isinstance(parent, str) else ""
    return meta


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


# --- forks: usage a child copied from its parent is not counted again ----------------------


def _burst_start(stamps: list[int]) -> int | None:
    """When a rollout opens with two usage lines at most a second apart, it replayed a history
    it did not spend (ccusage's detect_rewritten_burst); the first one's time."""
    if len(stamps) < 2:
        return None
    return stamps[0] if 0 <= stamps[1] - stamps[0] <= BURST_PAUSE_MS else None


def drop_replay(events: list[Event], stamps: list[int], prefix: list[Usage] | None) -> list[Event]:
    """The child's own events: leading ones equal to the parent's usage (up to the fork) are
    replay; with no parent to match, the leading dense burst is."""
    if prefix is None:
        return events
    index = 0
    while index < len(events) and index < len(prefix) and events[index].usage == prefix[index]:
        index += 1
    if index > 0:
        return events[index:]
    start = _burst_start(stamps)
    if start is None:
        return events
    previous = start
    while index < len(events):
        stamp = parse_timestamp_ms(events[index].timestamp)
        if stamp is None or not 0 <= stamp - previous <= BURST_PAUSE_MS:
            break
        previous = stamp
        index += 1
    return events[index:]


def _replay_prefix(parent: list[Event], forked_at: int | None) -> list[Usage]:
    """The parent's usage up to its first event after the fork time."""
    usage: list[Usage] = []
    for event in parent:
        stamp = parse_timestamp_ms(event.timestamp)
        if forked_at is not None and stamp is not None and stamp > forked_at:
            break
        usage.append(event.usage)
    return usage


# --- config.toml: the service tier when the rollout records none ---------------------------


def _config_requests_fast(config: Path) -> bool:
    """ccusage's rule: a `service_tier = "fast"|"priority"` line in the home's config.toml."""
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        setting = line.split("#", 1)[0].strip()
        key, sep, value = setting.partition("=")
        if sep and key.strip() == "service_tier" and value.strip().strip("\"'") in FAST_TIERS:
            return True
    return False


def _home_of(path: Path) -> Path | None:
    """The Codex home a rollout belongs to: the folder above sessions/ or archived_sessions/."""
    parts = path.parts  # the nearest such folder, found on the parts (no Path per parent)
    for index in range(len(parts) - 2, -1, -1):
        if parts[index] in ("sessions", "archived_sessions"):
            return Path(*parts[:index])
    return None


def _default_fast(path: Path, known: dict[Path, bool] | None = None) -> bool:
    """The tier of a rollout's turns that record none: its home's config.toml (read once per
    home and call, so an edited config counts from the next read on)."""
    home = _home_of(path)
    if home is None:
        return False
    known = {} if known is None else known
    if home not in known:
        known[home] = _config_requests_fast(home / "config.toml")
    return known[home]


# --- all files -----------------------------------------------------------------------------


def _key_py(event: Event, millis: int) -> str:
    """ccusage's dedup identity (time, model, every token count), hashed: the same response
    copied into two rollouts, or read again after an append or a rewrite, keeps its key.
    _codexscan.key is the same in C (_key is that one when it is built)."""
    tokens_in, cached, write, tokens_out, reasoning, total = event.usage
    ident = f"{millis}|{event.model}|{tokens_in}|{cached}|{write}|{tokens_out}|{reasoning}|{total}"
    # the first 16 bytes of the digest in hex: the first 32 hex digits of hexdigest()
    return "codex:" + hashlib.sha256(ident.encode()).digest()[:16].hex()


_key: Callable[[Event, int], str] = _key_py
# CodexUsage(*fields), the same object: _codexscan.record sets each field as the frozen
# dataclass's __init__ does (object.__setattr__), without a Python call per field.
_record: Callable[..., CodexUsage] = CodexUsage
try:  # built from _codexscan.c with the package; without it, the two above
    from agentwatch.sentinels.agent_ledger import _codexscan

    _codexscan.record_class(CodexUsage, tuple(f.name for f in dataclasses.fields(CodexUsage)))
    _key, _record = _codexscan.key, _codexscan.record
    # read_files's loop in C, while _key and _record are these (a knock-out replaces _key)
    _assemble: Callable[..., int | None] | None = _codexscan.assemble
except ImportError:  # pragma: no cover - the conformance tests require it
    _assemble = None
_C_KEY_AND_RECORD = (_key, _record)


def _place_key(event: Event, path: Path) -> str:
    """The key of headless output timed only by the file's mtime, which moves on every write:
    where the line is (file and byte offset) and what it says, so a re-read after an append
    or a rewrite finds the same key."""
    usage = event.usage
    ident = (
        f"{path}|{event.offset}|{event.model}|{usage.input}|{usage.cached}|{usage.cache_write}|"
        f"{usage.output}|{usage.reasoning}|{usage.total}"
    )
    # a file name that is no UTF-8 holds surrogate escapes: its own bytes go in the hash
    return "codex:" + hashlib.sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _project(cwd: str, known: dict[str, str]) -> str:
    """The working directory's last component (once per directory)."""
    name = known.get(cwd)
    if name is None:
        name = known[cwd] = Path(cwd).name if cwd else ""
    return name


def read_files(paths: Iterable[Path]) -> ReadResult:
    """Every counted response in `paths` (give them in `files()` order), forks' replayed
    history and cross-file duplicates left out as ccusage leaves them out."""
    result = ReadResult()
    rejects = result.reject
    ordered = list(dict.fromkeys(paths))
    metas = {path: read_meta(path) for path in ordered}
    by_id: dict[str, list[Path]] = {}
    for path in ordered:
        if metas[path].session_id:
            by_id.setdefault(metas[path].session_id, []).append(path)
    # A rollout's events are read in its turn (or earlier, when a fork before it needs them)
    # and dropped once no fork still to come needs them: memory holds few files' events.
    parents = {path: _parent_of(path, metas[path], by_id) for path in ordered}
    waiting: dict[Path, int] = {}
    for parent in parents.values():
        if parent is not None:
            waiting[parent] = waiting.get(parent, 0) + 1
    states: dict[Path, FileState] = {}
    done: set[Path] = set()

    def state_of(path: Path) -> FileState:
        state = states.get(path)
        if state is None:
            state = states[path] = parse_file(path, rejects)
        return state

    # ccusage's dedup identity -> [the record of its first copy, the best-ranked tier among
    # the copies, the tier config.toml gives the first copy's home]
    kept: dict[str, list[Any]] = {}
    configs: dict[Path, bool] = {}
    folders: dict[str, bool] = {}  # a rollout's folder -> _default_fast (its home's, so the same)
    projects: dict[str, str] = {}
    timestamp_ms, key_of, rank, make = parse_timestamp_ms, _key, _TIER_RANK, _record
    assemble = _assemble if (key_of, make) == _C_KEY_AND_RECORD else None
    for path in ordered:
        meta, state, parent = metas[path], state_of(path), parents[path]
        prefix: list[Usage] | None = None
        if meta.parent_id:
            prefix = (
                [] if parent is None else _replay_prefix(state_of(parent).events, meta.forked_at)
            )
        if parent is not None:
            waiting[parent] -= 1
            if not waiting[parent] and parent in done:
                del states[parent]
        done.add(path)
        if not waiting.get(path):
            del states[path]
        events = drop_replay(state.events, state.usage_stamps, prefix)
        if not events:
            continue
        folder = os.path.dirname(path)
        default_fast = folders.get(folder)
        if default_fast is None:
            default_fast = folders[folder] = _default_fast(path, configs)
        project = _project(meta.cwd or state.cwd, projects)
        session = meta.session_id
        index: int | None = 0
        while index is not None and index < len(events):
            if assemble is not None:  # the events C covers alone; it stops at another
                index = assemble(events, index, kept, AGENT, session, project, default_fast)
                if index is None:
                    break
            event = events[index]
            index += 1
            millis = event.millis
            if millis is None:
                millis = timestamp_ms(event.timestamp)
            if millis is None:
                rejects("bad_timestamp")
                continue
            ident = key_of(event, millis)
            first = kept.get(ident)
            if first is None:
                usage, tier = event.usage, event.fast
                entry = make(  # by position (agent, key, timestamp, session, project,
                    # model, input, output, cache_read, cache_creation, cost_usd, fast)
                    AGENT,
                    ident if not event.mtime_stamped else _place_key(event, path),
                    millis / 1000,
                    session,
                    project,
                    event.model,
                    usage.input - usage.cached - usage.cache_write,
                    usage.output,
                    usage.cached,
                    usage.cache_write,
                    None,
                    default_fast if tier is None else tier,
                )
                kept[ident] = [entry, tier, default_fast]
            elif rank[event.fast] > rank[first[1]]:  # a recorded tier: it decides
                first[1] = event.fast
                first[0] = dataclasses.replace(first[0], fast=event.fast)
    result.entries.extend(entry for entry, _tier, _default in kept.values())
    return result


def _parent_of(path: Path, meta: Meta, by_id: dict[str, list[Path]]) -> Path | None:
    """The rollout a fork replays (another file with its parent's session id), if read."""
    if not meta.parent_id:
        return None
    return next((p for p in by_id.get(meta.parent_id, []) if p != path), None)


# A response copied into several rollouts is counted once; when the copies recorded
# different service tiers, ccusage 20.0.24 prices it standard over fast over unrecorded
# (observed against the binary: the rule is not in the source we could read).
_TIER_RANK: dict[bool | None, int] = {None: 0, True: 1, False: 2}


# --- prices --------------------------------------------------------------------------------


@cache
def price_table() -> dict[str, Any]:
    """codex_prices.json: USD per million tokens per model, each with its source page."""
    table: dict[str, Any] = json.loads(PRICES_FILE.read_text(encoding="utf-8"))
    return table


def _rates(model: str) -> dict[str, Any] | None:
    models: dict[str, Any] = price_table()["models"]
    aliases: dict[str, str] = price_table().get("aliases", {})
    found = models.get(model)
    if found is None and model in aliases:
        found = models.get(aliases[model])
    return found


# model -> (the models and aliases tables it was made from, its rates as _priced makes
# them): the table is searched once per model, not once per response.
_PRICED: dict[str, tuple[Any, Any, Any]] = {}
_RATE_NAMES = ("input", "cached_input", "cache_write", "output")
_NO_ALIASES: dict[str, str] = {}  # a table without aliases (one object: the check above holds)


def _priced(model: str) -> tuple[tuple[float, ...], int | None, tuple[float, ...], float] | None:
    """(rates, long-context threshold or None, long-context rates, fast multiplier) of a
    model; None for one the table does not price. Made again when price_table() changed."""
    table = price_table()
    models, aliases = table["models"], table.get("aliases", _NO_ALIASES)
    hit = _PRICED.get(model)
    if hit is not None and hit[0] is models and hit[1] is aliases:
        made: Any = hit[2]
        return made
    rates = _rates(model)
    if rates is None:
        made = None
    else:
        base = tuple(rates[name] for name in _RATE_NAMES)
        long = rates.get("long_context")
        above, long_rates = None, base
        if long is not None:
            tier = {**rates, **{k: v for k, v in long.items() if k != "above_input_tokens"}}
            above, long_rates = long["above_input_tokens"], tuple(tier[n] for n in _RATE_NAMES)
        made = (base, above, long_rates, rates.get("fast_multiplier", 1.0))
    if len(_PRICED) < 10_000:
        _PRICED[model] = (models, aliases, made)
    return made


def price(entry: AgentUsage) -> float | None:
    """USD for one response as ccusage prices it: fresh input, cached input, cache writes and
    output (reasoning is inside output) at the model's rates; above the long-context threshold
    (on the request's whole input) the long rates; a fast-tier turn times the fast multiplier.
    None for a model the table does not price."""
    table = price_table()  # _priced's memo checked here first: this runs once per response
    hit = _PRICED.get(entry.model)
    aliases = table.get("aliases", _NO_ALIASES)
    if hit is not None and hit[0] is table["models"] and hit[1] is aliases:
        made = hit[2]
    else:
        made = _priced(entry.model)
    if made is None:
        return None
    base, above, long_rates, fast_multiplier = made
    rates = base
    if above is not None and entry.input + entry.cache_read + entry.cache_creation > above:
        rates = long_rates
    cost = (
        entry.input * rates[0]
        + entry.cache_read * rates[1]
        + entry.cache_creation * rates[2]
        + entry.output * rates[3]
    ) / 1_000_000
    if getattr(entry, "fast", False):
        cost *= fast_multiplier
    return cost
