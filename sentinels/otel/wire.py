"""The protobuf side of decoding: OTLP request bodies, in protobuf or protobuf's JSON mapping,
read with the maintained definitions (`opentelemetry-proto`). Imported by decode.parse on the
first request only, so an idle receiver does not pay for protobuf."""

from __future__ import annotations

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
from agentwatch.sentinels.otel.decode import (
    KEPT,
    SESSION_LENGTH,
    TEXT_LENGTH,
    Batch,
    Event,
    Point,
    Rejected,
)

SIGNALS: dict[str, tuple[type[Message], type[Message]]] = {
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
    "/v1/logs": (ExportLogsServiceRequest, ExportLogsServiceResponse),
}
DELTA = AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
CUMULATIVE = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE


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
