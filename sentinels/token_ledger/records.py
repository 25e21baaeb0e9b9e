"""Which transcript lines count, and what they say: the reference reader's acceptance rules.

The rules mirror `ccusage claude daily` 20.0.24 as found by experiment (docs/ledger.md has
the list). A rejected line is reported by reason, never by content.
"""

from __future__ import annotations

import re
from datetime import datetime

import orjson

U64 = 1 << 64
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


def _has_forbidden_null(canonical: bytes) -> bool:
    """True when one of _NULL_KEYS is a key with value null (a few finds, no regex)."""
    find, rfind = canonical.find, canonical.rfind
    at = find(_NULL)
    while at >= 0:
        start = rfind(b'"', 0, at)
        if canonical[start:at] in _NULL_KEYS and canonical[start - 1 : start] != b"\\":
            return True
        at = find(_NULL, at + 6)
    return False


_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{3})?(?:Z|[+-]\d{2}:\d{2})\Z")
_VERSION = re.compile(r"\d+\.\d+\.\d+")
_ADVISOR = b'"advisor_message"'


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
    def cache_creation(self) -> int:
        return self.cache_5m + self.cache_1h

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_5m + self.cache_1h


class Rejected(Exception):
    """A candidate line the reference reader would skip; `reason` is a bounded label."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _u64(value: object) -> int:
    if type(value) is not int or not 0 <= value < U64:
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


def _timestamp(value: object) -> float:
    if type(value) is not str or not _TIMESTAMP.match(value):
        raise Rejected("bad_timestamp")
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError as err:  # e.g. Feb 30, 24:00
        raise Rejected("bad_timestamp") from err


def _read_usage(entry: Entry, usage: object) -> None:
    if type(usage) is not dict:
        raise Rejected("bad_usage")
    entry.input = _u64(usage.get("input_tokens"))
    entry.output = _u64(usage.get("output_tokens"))
    entry.cache_read = _optional_u64(usage, "cache_read_input_tokens")
    breakdown = usage.get("cache_creation")
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


def parse(line: bytes) -> list[Entry]:
    """The usage entries of one candidate line (the response, then any advisors).

    Raises Rejected with a reason when the reference reader would drop the line.
    """
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        reason = "invalid_utf8" if "UTF-8" in str(err) else "malformed_json"
        raise Rejected(reason) from None
    if type(obj) is not dict:
        raise Rejected("not_an_object")
    canonical = orjson.dumps(obj)
    # A duplicate key collapses on parse: the line then holds more keys than its parse. Lines
    # as Claude Code writes them re-serialise byte for byte, so counting is rarely needed.
    if canonical != line:
        raw_keys = line.count(b'":')
        if raw_keys > canonical.count(b'":') and (
            raw_keys - line.count(b'\\":') > canonical.count(b'":') - canonical.count(b'\\":')
        ):
            raise Rejected("duplicate_key")
    if _has_forbidden_null(canonical):
        raise Rejected("null_field")

    message = obj.get("message")
    source = obj  # where timestamp, requestId, isSidechain and costUSD live
    if message is not None and type(message) is not dict:
        raise Rejected("bad_message")
    if message is None or "usage" not in message:
        data = obj.get("data")
        wrapper = data.get("message") if type(data) is dict else None
        inner = wrapper.get("message") if type(wrapper) is dict else None
        if type(inner) is not dict or "usage" not in inner:
            raise Rejected("no_message_usage")
        source, message = wrapper, inner

    entry = Entry()
    entry.msg_id = _optional_text(message, "id")
    entry.req_id = _optional_text(source, "requestId")
    _optional_text(obj, "sessionId")
    model = _optional_text(message, "model")
    entry.model = model if model is not None else "unknown"
    version = obj.get("version")
    if version is not None and (type(version) is not str or not _VERSION.match(version)):
        raise Rejected("bad_version")
    entry.timestamp = _timestamp(source.get("timestamp"))
    sidechain = source.get("isSidechain")
    if sidechain is not None and type(sidechain) is not bool:
        raise Rejected("bad_sidechain")
    entry.sidechain = bool(sidechain)
    cost = source.get("costUSD")
    if cost is not None:
        if type(cost) not in (int, float):
            raise Rejected("bad_cost")
        entry.cost_usd = float(cost)
    cwd = obj.get("cwd")
    entry.cwd = cwd if type(cwd) is str else None
    usage = message.get("usage")
    _read_usage(entry, usage)
    if obj.get("isApiErrorMessage") is True:
        entry.api_error = True
        entry.error_text = _error_text(message)

    entries = [entry]
    if _ADVISOR in line:
        entries.extend(_advisors(entry, usage))
    return entries


def _advisors(parent: Entry, usage: dict) -> list[Entry]:
    """Advisor iterations priced under their own model; dedup key = parent key + index."""
    found: list[Entry] = []
    iterations = usage.get("iterations")
    if type(iterations) is not list:
        return found
    index = 0
    for item in iterations:
        if type(item) is not dict or item.get("type") != "advisor_message":
            continue
        position = index
        index += 1
        model = item.get("model")
        if type(model) is not str:
            continue
        advisor = Entry()
        try:
            _read_usage(advisor, item)
        except Rejected:
            continue
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
