"""An OTLP/HTTP request body made into the few plain facts the fold needs.

Decoding uses the maintained OpenTelemetry protobuf definitions (`opentelemetry-proto`), and
protobuf's own JSON mapping for `application/json`, rather than a hand-written parser. The body
is decompressed under a cap checked while it inflates (a gzip bomb stops at the cap). Only the
attributes agentwatch exports are kept, each made a safe, bounded label value: `user.id`, the
prompt, the response and every other text attribute never leave this module.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

MAX_BODY = 4 * 1024 * 1024  # bytes after decompression; Claude Code's batches are a few KiB
SESSION_LENGTH = 128  # as the hook's and the ledger's session labels
TEXT_LENGTH = 64  # a model or tool name; longer is cut with a hash (sanitize.label_value)
PROTOBUF = frozenset({"application/x-protobuf", "application/protobuf"})
JSON = frozenset({"application/json"})
# The two signals Claude Code exports (sentinels/otel/wire.py decodes their bodies).
PATHS = frozenset({"/v1/metrics", "/v1/logs"})
# The attributes read, besides session.id; every other one is dropped unread.
KEPT = frozenset(
    {
        "model", "type", "tool_name", "success", "decision", "source", "status_code", "attempt",
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
        "cost_usd", "duration_ms", "ttft_ms", "event.name",
    }
)  # fmt: skip


class Rejected(Exception):
    """A request refused whole: `reason` for agentwatch_otel_rejected_total, `status` to answer."""

    def __init__(self, reason: str, status: int):
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass(frozen=True)
class Point:
    """One data point of a monotonic sum (Claude Code's counters)."""

    name: str
    session: str | None
    attributes: dict[str, str | float]
    value: float
    cumulative: bool
    start_ns: int
    time_ns: int


@dataclass(frozen=True)
class Event:
    """One log record of Claude Code's events (`claude_code.api_request`, ...)."""

    name: str
    session: str | None
    attributes: dict[str, str | float]
    time_ns: int


@dataclass
class Batch:
    """The points and events of one OTLP request."""

    points: list[Point] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    unsupported: int = 0  # metrics of a type agentwatch does not fold (gauge, histogram, ...)


def media_type(header: str | None) -> str:
    return (header or "").split(";", 1)[0].strip().lower()


def check_type(header: str | None) -> bool:
    """True for protobuf, False for JSON; Rejected (415) otherwise."""
    kind = media_type(header)
    if kind in PROTOBUF:
        return True
    if kind in JSON:
        return False
    raise Rejected("content_type", 415)


def inflate(body: bytes, encoding: str | None, limit: int = MAX_BODY) -> bytes:
    """The body decompressed (gzip) or as sent, never more than `limit` bytes."""
    coding = (encoding or "identity").strip().lower()
    if coding == "identity":
        if len(body) > limit:
            raise Rejected("too_large", 413)
        return body
    if coding != "gzip":
        raise Rejected("encoding", 415)
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error:
        raise Rejected("bad_gzip", 400) from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise Rejected("too_large", 413)
    if not inflater.eof:
        raise Rejected("bad_gzip", 400)
    return out


def parse(path: str, body: bytes, protobuf: bool) -> tuple[Any, bytes, Batch]:
    """The request as a Batch, plus the success answer's body in the request's encoding.
    The protobuf definitions load with the first request (sentinels/otel/wire.py): an idle
    receiver does not hold them."""
    from agentwatch.sentinels.otel import wire

    return wire.parse(path, body, protobuf)
