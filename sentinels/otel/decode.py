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

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality

from agentwatch.core.sanitize import label_value

MAX_BODY = 4 * 1024 * 1024  # bytes after decompression; Claude Code's batches are a few KiB
SESSION_LENGTH = 128  # as the hook's and the ledger's session labels
TEXT_LENGTH = 64  # a model or tool name; longer is cut with a hash (sanitize.label_value)
PROTOBUF = frozenset({"application/x-protobuf", "application/protobuf"})
JSON = frozenset({"application/json"})
SIGNALS: dict[str, tuple[type[Message], type[Message]]] = {
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
    "/v1/logs": (ExportLogsServiceRequest, ExportLogsServiceResponse),
}
# The attributes read, besides session.id; every other one is dropped unread.
KEPT = frozenset(
    {
        "model", "type", "tool_name", "success", "decision", "source", "status_code", "attempt",
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
        "cost_usd", "duration_ms", "ttft_ms", "event.name",
    }
)  # fmt: skip
DELTA = AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
CUMULATIVE = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE


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


def parse(path: str, body: bytes, protobuf: bool) -> tuple[Message, bytes, Batch]:
    """The request as a Batch, plus the success answer's body in the request's encoding."""
    request_type, response_type = SIGNALS[path]
    message = request_type()
    try:
        if protobuf:
            message.ParseFromString(body)
        else:
            json_format.Parse(body.decode("utf-8"), message, ignore_unknown_fields=True)
    except (DecodeError, json_format.ParseError, UnicodeDecodeError, RecursionError, ValueError):
        raise Rejected("malformed", 400) from None
    answer = response_type()
    reply = answer.SerializeToString() if protobuf else json_format.MessageToJson(answer).encode()
    batch = Batch()
    if isinstance(message, ExportMetricsServiceRequest):
        _metrics(message, batch)
    else:
        _logs(message, batch)
    return message, reply, batch


def _metrics(message: ExportMetricsServiceRequest, batch: Batch) -> None:
    for resource in message.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.WhichOneof("data") != "sum" or not metric.sum.is_monotonic:
                    batch.unsupported += 1
                    continue
                cumulative = metric.sum.aggregation_temporality == CUMULATIVE
                for point in metric.sum.data_points:
                    kind = point.WhichOneof("value")
                    value = float(point.as_int) if kind == "as_int" else point.as_double
                    session, attributes = _attributes(point.attributes)
                    batch.points.append(
                        Point(
                            metric.name[:TEXT_LENGTH], session, attributes, value, cumulative,
                            point.start_time_unix_nano, point.time_unix_nano,
                        )
                    )  # fmt: skip


def _logs(message: ExportLogsServiceRequest, batch: Batch) -> None:
    for resource in message.resource_logs:
        for scope in resource.scope_logs:
            for record in scope.log_records:
                session, attributes = _attributes(record.attributes)
                name = attributes.pop("event.name", None)
                if not isinstance(name, str) and record.body.WhichOneof("value") == "string_value":
                    name = record.body.string_value.removeprefix("claude_code.")
                if isinstance(name, str):
                    time_ns = record.time_unix_nano or record.observed_time_unix_nano
                    batch.events.append(Event(name[:TEXT_LENGTH], session, attributes, time_ns))


def _attributes(pairs: Any) -> tuple[str | None, dict[str, str | float]]:
    """session.id and the kept attributes: numbers as floats, text as safe label values."""
    session: str | None = None
    kept: dict[str, str | float] = {}
    for pair in pairs:
        key = pair.key
        if key == "session.id":
            text = _value(pair)
            if isinstance(text, str) and text:
                session = label_value(text, SESSION_LENGTH)
        elif key in KEPT:
            value = _value(pair)
            if value is not None:
                kept[key] = value
    return session, kept


def _value(pair: KeyValue) -> str | float | None:
    value = pair.value
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return label_value(value.string_value, TEXT_LENGTH)
    if kind == "int_value":
        return float(value.int_value)
    if kind == "double_value":
        return value.double_value
    if kind == "bool_value":
        return "true" if value.bool_value else "false"
    return None  # arrays, maps and bytes: nothing agentwatch exports
