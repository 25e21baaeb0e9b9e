"""Which transcript lines count, and what they say: the reference reader's acceptance rules.

The rules mirror `ccusage claude daily` 20.0.24 as found by experiment (docs/ledger.md has
the list). A rejected line is reported by reason, never by content.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

import orjson

try:  # built from _fastline.c with the package; without a compiler, the rules in Python
    from agentwatch.sentinels.token_ledger._fastline import scan as _scan
except ImportError:  # pragma: no cover - tests/test_fastline.py requires it
    _scan = None  # type: ignore[assignment]

# The largest token count one field may hold. The reference reader takes any u64 (and
# saturates its sums), but a counter is a float64, exact only up to 2**53, and SQLite's
# integers stop at 2**63 - 1: a line past this bound is rejected as `bad_token_count` instead
# of poisoning every total (no real response comes near it: context windows hold ~10**6).
MAX_TOKENS = 1 << 53
SYNTHETIC = "<synthetic>"

# Keys whose JSON null anywhere in a line makes the reference reader drop the line. Checked on
# the canonical re-serialisation, so spacing and \u-escaped keys cannot hide them.
_NULL_KEYS = frozenset(
    b'"' + key
    for key in (
        b"id", b"cwd", b"model", b"speed", b"costUSD", b"version", b"sessionId", b"requestId",
        b"isApiErrorMessage", b"cache_creation_input_tokens", b"cache_read_input_tokens",
    )
)  # fmt: skip
_NULL = b'":null'


_NULL_KEY_ENDS = tuple(_NULL_KEYS)


def _has_forbidden_null(canonical: bytes) -> bool:
    """True when one of _NULL_KEYS is a key with value null. Real lines hold one or two
    nulls of other keys: split at each `":null` and look at what precedes it; only a piece
    ending in one of the keys needs the exact look (a key, or the end of a string)."""
    pieces = canonical.split(_NULL)
    for index in range(len(pieces) - 1):
        if pieces[index].endswith(_NULL_KEY_ENDS):
            return _has_forbidden_null_exactly(canonical)
    return False


def _has_forbidden_null_exactly(canonical: bytes) -> bool:
    """True when one of _NULL_KEYS is a key with value null (a few finds, no regex)."""
    find, rfind = canonical.find, canonical.rfind
    at = find(_NULL)
    while at >= 0:
        start = rfind(b'"', 0, at)
        if canonical[start:at] in _NULL_KEYS and canonical[start - 1 : start] != b"\\":
            return True
        at = find(_NULL, at + 6)
    return False


_VERSION = re.compile(rb"[0-9]+\.[0-9]+\.[0-9]+")
_ADVISOR = b'"advisor_message"'
MAX_DEPTH = 128  # the reference reader's JSON parser refuses deeper nesting
# Keys the reference reader reads into typed fields: a repeated one drops the line.
_READ_KEYS = frozenset({
    "timestamp", "sessionId", "requestId", "version", "message", "costUSD", "isSidechain",
    "id", "model", "usage", "input_tokens", "output_tokens", "cache_creation_input_tokens",
    "cache_read_input_tokens", "cache_creation", "ephemeral_5m_input_tokens",
    "ephemeral_1h_input_tokens", "speed", "iterations", "data",
})  # fmt: skip


# A usage record as the reader takes it: these fields of an Entry, in this order (a tuple:
# a backfill makes one per line, and _fastline.scan builds it in C).
FIELDS = (
    "msg_id", "req_id", "model", "timestamp", "sidechain", "cost_usd", "cwd", "input", "output",
    "cache_read", "cache_5m", "cache_1h", "has_speed", "fast", "total", "api_error",
    "error_text",
)  # fmt: skip
Usage = tuple[
    str | None, str | None, str, float, bool, float | None, str | None, int, int, int, int,
    int, bool, bool, int, bool, str | None,
]  # fmt: skip


class Entry:
    """One usage record: an API response copy (or an advisor iteration inside one)."""

    __slots__ = (
        "api_error", "cache_1h", "cache_5m", "cache_read", "cost_usd", "cwd", "error_text",
        "fast", "has_speed", "input", "model", "msg_id", "output", "req_id", "sidechain",
        "timestamp",
    )  # fmt: skip

    def __init__(self) -> None:
        self.msg_id: str | None = None
        self.req_id: str | None = None
        self.sidechain = False
        self.timestamp = 0.0
        self.model = ""
        self.cwd: str | None = None
        self.input = 0
        self.output = 0
        self.cache_read = 0
        self.cache_5m = 0
        self.cache_1h = 0
        self.has_speed = False
        self.fast = False
        self.cost_usd: float | None = None
        self.api_error = False
        self.error_text: str | None = None

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_5m + self.cache_1h

    def usage(self) -> Usage:
        """The record as FIELDS."""
        return (
            self.msg_id, self.req_id, self.model, self.timestamp, self.sidechain,
            self.cost_usd, self.cwd, self.input, self.output, self.cache_read, self.cache_5m,
            self.cache_1h, self.has_speed, self.fast, self.total, self.api_error,
            self.error_text,
        )  # fmt: skip


class Rejected(Exception):
    """A candidate line the reference reader would skip; `reason` is a bounded label."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _u64(value: object) -> int:
    """A token count: an integer from 0 to MAX_TOKENS (bools, floats and strings are not)."""
    if type(value) is not int or not 0 <= value <= MAX_TOKENS:
        raise Rejected("bad_token_count")
    return value


def _optional_u64(container: dict, key: str) -> int:
    value = container.get(key)
    return 0 if value is None else _u64(value)


def _part(container: dict, key: str) -> int:
    """A missing part counts 0; a present one (even null) must be a count."""
    return _u64(container[key]) if key in container else 0


def _optional_text(container: dict, key: str) -> str | None:
    value = container.get(key)
    if value is None:
        return None
    if type(value) is not str or not value:
        raise Rejected("bad_id")
    return value


_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar, any year (even 0000)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


@lru_cache(maxsize=4096)
def _day(year: str, month: str, day: str) -> int | None:
    """Days since the epoch of a valid calendar date, else None (cached: lines share days)."""
    y, m, d = int(year), int(month), int(day)
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    if not 1 <= m <= 12 or not 1 <= d <= _DAYS_IN_MONTH[m] + (m == 2 and leap):
        return None
    return _days_from_civil(y, m, d)


_MINUTE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})\Z")
_SECONDS = re.compile(r":([0-9]{2})(?:\.([0-9]{3}))?(?:Z|([+-])([01][0-9]|2[0-3]):([0-5][0-9]))\Z")


@lru_cache(maxsize=16384)
def _minute(text: str) -> int | None:
    """Epoch seconds of a valid `YYYY-MM-DDTHH:MM`, else None (cached: lines share minutes)."""
    match = _MINUTE.match(text)
    if match is None:
        return None
    year, month, day, hour, minute = match.groups()
    days = _day(year, month, day)
    h, mi = int(hour), int(minute)
    if days is None or h > 23 or mi > 59:
        return None
    return days * 86400 + h * 3600 + mi * 60


def _seconds(text: str) -> tuple[int, float] | None:
    """Whole seconds into the minute (offset applied) and the fraction, of
    `:SS[.mmm](Z|±HH:MM)`, else None."""
    if (
        len(text) == 8 and text[0] == ":" and text[3] == "." and text[7] == "Z"
        and text.isascii() and text[1:3].isdigit() and text[4:7].isdigit()
    ):  # fmt: skip
        whole = int(text[1:3])  # `:SS.mmmZ`, as Claude Code writes it: no expression needed
        return None if whole > 59 else (whole, int(text[4:7]) / 1000)
    match = _SECONDS.match(text)
    if match is None:
        return None
    second, millis, sign, off_h, off_m = match.groups()
    seconds = int(second)
    if seconds > 59:
        return None
    if sign:
        offset = int(off_h) * 3600 + int(off_m) * 60
        seconds -= offset if sign == "+" else -offset
    return seconds, (int(millis) / 1000 if millis else 0.0)


def _timestamp(value: object) -> float:
    """Epoch seconds of an RFC 3339 time with 0 or 3 fraction digits, as the reference
    reader accepts them; anything else is rejected. Read as its minute and the rest, each
    cached: lines share minutes, and a regular expression's groups cost more than the line."""
    if type(value) is not str:
        raise Rejected("bad_timestamp")
    base = _minute(value[:16])
    rest = _seconds(value[16:]) if base is not None else None
    if base is None or rest is None:
        raise Rejected("bad_timestamp")
    return (base + rest[0]) + rest[1]


def _read_usage(entry: Entry, usage: object) -> None:
    if type(usage) is not dict:
        raise Rejected("bad_usage")
    get = usage.get
    # The counts inline (not through _u64): this runs for every line that counts.
    value = get("input_tokens")
    if type(value) is not int or not 0 <= value <= MAX_TOKENS:
        raise Rejected("bad_token_count")
    entry.input = value
    value = get("output_tokens")
    if type(value) is not int or not 0 <= value <= MAX_TOKENS:
        raise Rejected("bad_token_count")
    entry.output = value
    value = get("cache_read_input_tokens")
    if value is not None:
        if type(value) is not int or not 0 <= value <= MAX_TOKENS:
            raise Rejected("bad_token_count")
        entry.cache_read = value
    breakdown = get("cache_creation")
    if breakdown is None:
        entry.cache_5m = _optional_u64(usage, "cache_creation_input_tokens")
    elif type(breakdown) is dict:  # present: its parts replace cache_creation_input_tokens
        entry.cache_5m = _part(breakdown, "ephemeral_5m_input_tokens")
        entry.cache_1h = _part(breakdown, "ephemeral_1h_input_tokens")
    else:
        raise Rejected("bad_usage")
    if "speed" in usage:
        speed = usage["speed"]
        if speed not in ("standard", "fast"):
            raise Rejected("bad_speed")
        entry.has_speed = True
        entry.fast = speed == "fast"


def _error_text(message: dict) -> str | None:
    content = message.get("content")
    if type(content) is list:
        for block in content:
            if type(block) is dict and type(block.get("text")) is str:
                return block["text"]
    elif type(content) is str:
        return content
    return None


def is_whole_object(tail: bytes) -> bool:
    """An unterminated last line that already parses is complete: its writer just never
    ended it (nothing may follow a JSON object on a line but its newline)."""
    try:
        return type(orjson.loads(tail)) is dict
    except orjson.JSONDecodeError:
        return False


def _too_deep(obj: object) -> bool:
    """Nesting of MAX_DEPTH containers or more (the top object counts as 1)."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth >= MAX_DEPTH:
            return True
        children = value.values() if type(value) is dict else value
        stack.extend((child, depth + 1) for child in children if type(child) in (dict, list))
    return False


def _repeated_keys(line: bytes) -> set[str]:
    """Keys that occur twice in one object anywhere in the line (slow path, rarely taken)."""
    repeated: set[str] = set()

    def check(pairs: list[tuple[str, object]]) -> dict:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                repeated.add(key)
            seen.add(key)
        return dict(pairs)

    json.loads(line, object_pairs_hook=check)
    return repeated


def _usable_message(message: object) -> bool:
    return type(message) is dict and type(message.get("usage")) is dict


def scan(line: bytes) -> Usage | None:
    """An ordinary response line's usage record, read by the C fast path; None for anything
    it declines (the rules decide those: parse_by_rules), and always without the C part."""
    return None if _scan is None else _scan(line)


def parse_by_rules(line: bytes) -> list[Entry]:
    """parse() for every line, in Python: the reference rules the fast path must agree with."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        reason = "invalid_utf8" if "UTF-8" in str(err) else "malformed_json"
        raise Rejected(reason) from None
    if type(obj) is not dict:
        raise Rejected("not_an_object")
    if line.count(b"{") + line.count(b"[") >= MAX_DEPTH and _too_deep(obj):
        raise Rejected("too_deep")
    canonical = orjson.dumps(obj)
    # Lines as Claude Code writes them re-serialise byte for byte; only the others can hide
    # a repeated key (the parse keeps the last one), which the reference reader refuses when
    # it reads that key or when the line holds a null anywhere.
    if canonical != line:
        repeated = _repeated_keys(line)
        if repeated and (b"null" in line or repeated & _READ_KEYS):
            raise Rejected("duplicate_key")
    if _has_forbidden_null(canonical):
        raise Rejected("null_field")

    # Any: the shapes are checked with `type(x) is dict` (fast), which mypy does not narrow on.
    message: Any = obj.get("message")
    source: Any = obj  # where timestamp, requestId, isSidechain and costUSD live
    progress = False
    if not _usable_message(message):
        data = obj.get("data")
        wrapper = data.get("message") if type(data) is dict else None
        inner = wrapper.get("message") if type(wrapper) is dict else None
        if type(inner) is dict and "usage" in inner:
            source, message, progress = wrapper, inner, True
        elif message is not None and type(message) is not dict:
            raise Rejected("bad_message")
        elif message is None or "usage" not in message:
            raise Rejected("no_message_usage")

    entry = Entry()
    get = message.get
    entry.msg_id = _optional_text(message, "id")
    entry.req_id = _optional_text(source, "requestId")
    model = get("model")
    if model is None:
        entry.model = "unknown"
    elif type(model) is not str or not model:
        raise Rejected("bad_id")
    else:
        entry.model = model
    _optional_text(obj, "sessionId")
    if not progress:  # the reference reader does not check a progress line's outer version
        version = obj.get("version")
        if version is not None and (type(version) is not str or not _good_version(version)):
            raise Rejected("bad_version")
    entry.timestamp = _timestamp(source.get("timestamp"))
    sidechain = source.get("isSidechain")
    if sidechain is not None and type(sidechain) is not bool:
        raise Rejected("bad_sidechain")
    entry.sidechain = sidechain is True
    cost = source.get("costUSD")
    if cost is not None:
        if type(cost) not in (int, float):
            raise Rejected("bad_cost")
        entry.cost_usd = float(cost)
    cwd = obj.get("cwd")
    entry.cwd = cwd if type(cwd) is str else None
    usage = get("usage")
    _read_usage(entry, usage)
    if obj.get("isApiErrorMessage") is True:
        entry.api_error = True
        entry.error_text = _error_text(message)

    # Advisors live in usage.iterations: without that key the line is not searched for them.
    if not progress and "iterations" in usage and _ADVISOR in line:
        return [entry, *_advisors(entry, usage)]
    return [entry]


@lru_cache(maxsize=256)
def _good_version(version: str) -> bool:
    """Starts with ASCII digits.digits.digit (cached: a history has a few hundred versions)."""
    return _VERSION.match(version.encode()) is not None


def _advisors(parent: Entry, usage: dict) -> list[Entry]:
    """Advisor iterations priced under their own model; dedup key = parent key + index."""
    found: list[Entry] = []
    iterations = usage.get("iterations")
    if type(iterations) is not list:
        return found
    for item in iterations:
        if type(item) is not dict or item.get("type") != "advisor_message":
            continue
        model = item.get("model")
        if type(model) is not str or not model:
            continue
        advisor = Entry()
        try:
            _read_usage(advisor, item)
        except Rejected:
            continue
        position = len(found)  # numbered among the advisors that count
        advisor.msg_id = None if parent.msg_id is None else f"{parent.msg_id}#advisor{position}"
        advisor.req_id = parent.req_id
        advisor.sidechain = parent.sidechain
        advisor.timestamp = parent.timestamp
        advisor.model = model
        advisor.cwd = parent.cwd
        found.append(advisor)
    return found


_RESET = re.compile(r"\|(\d{9,11})\b")


def classify_error(text: str | None) -> tuple[str, float | None]:
    """Kind of an API error line (rate_limit, overloaded, usage_limit, server_error, other)
    and the usage-limit reset time when the line states one. Only the kind is exported."""
    if not text:
        return "other", None
    lowered = text.lower()
    if "usage limit" in lowered or "limit reached" in lowered or "hit your" in lowered:
        match = _RESET.search(text)
        return "usage_limit", float(match.group(1)) if match else None
    if "529" in lowered or "overloaded" in lowered:
        return "overloaded", None
    if "429" in lowered or "rate_limit" in lowered or "rate limit" in lowered:
        return "rate_limit", None
    if re.search(r"\b5\d\d\b", lowered) or "api_error" in lowered or "server error" in lowered:
        return "server_error", None
    return "other", None
