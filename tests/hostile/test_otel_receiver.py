"""The OTLP receiver against bad input: each case a counted rejection (or a bounded fold) with
its HTTP status, and the receiver still answers a good request afterwards."""

from __future__ import annotations

import gzip
import socket
import zlib
from pathlib import Path

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality

from tests.conftest import samples
from tests.otel_support import JSON, exposition, fixture, port, post, receiver

GOOD = "claude-2.1.328-metrics-session.pb"
MiB = 1024 * 1024


def rejected(text: str, reason: str) -> float:
    return samples(text)[("agentwatch_otel_rejected_total", (("reason", reason),))]


def still_answers(work) -> None:  # type: ignore[no-untyped-def]
    assert post(work, "/v1/metrics", fixture(GOOD))[0] == 200


def test_malformed_protobuf_json_and_gzip(tmp_path: Path) -> None:
    with receiver(tmp_path) as work:
        good = fixture(GOOD)
        assert post(work, "/v1/metrics", good[: len(good) // 2] + b"\xff\xff\xff")[0] == 400
        assert post(work, "/v1/logs", b"\x0a\xff\xff\xff\xff\x0f")[0] == 400
        assert post(work, "/v1/metrics", b'{"resourceMetrics": [', JSON)[0] == 400
        deep = b'{"resourceMetrics": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        assert post(work, "/v1/metrics", deep, JSON)[0] == 400
        assert post(work, "/v1/metrics", b"\xc3\x28", JSON)[0] == 400  # not UTF-8
        headers = {"Content-Encoding": "gzip"}
        assert post(work, "/v1/metrics", b"not gzip at all", headers=headers)[0] == 400
        cut = gzip.compress(good)[:-12]
        assert post(work, "/v1/metrics", cut, headers=headers)[0] == 400
        still_answers(work)
        text = exposition(work)
    assert rejected(text, "malformed") == 5
    assert rejected(text, "bad_gzip") == 2


def test_wrong_content_type_and_encoding(tmp_path: Path) -> None:
    with receiver(tmp_path) as work:
        assert post(work, "/v1/metrics", fixture(GOOD), "text/plain")[0] == 415
        assert post(work, "/v1/metrics", fixture(GOOD), "")[0] == 415
        br = {"Content-Encoding": "br"}
        assert post(work, "/v1/metrics", fixture(GOOD), headers=br)[0] == 415
        still_answers(work)
        text = exposition(work)
    assert rejected(text, "content_type") == 2
    assert rejected(text, "encoding") == 1


def test_a_100_mb_body_is_refused_before_it_is_read(tmp_path: Path) -> None:
    with receiver(tmp_path) as work:
        head = (
            "POST /v1/metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            f"Content-Length: {100 * MiB}\r\n\r\n"
        )
        assert raw_status(work, head.encode()) == 413  # answered before a byte of the body
        # 100 MB of zeros gzipped is 100 KB: refused while inflating, at the 4 MiB cap
        bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
        body = b"".join(bomb.compress(b"\0" * MiB) for _ in range(100)) + bomb.flush()
        assert len(body) < 200 * 1024
        status, _ = post(work, "/v1/metrics", body, headers={"Content-Encoding": "gzip"})
        assert status == 413
        # no length at all: chunked
        head = (
            "POST /v1/metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
        )
        assert raw_status(work, head.encode()) == 411
        still_answers(work)
        text = exposition(work)
    assert rejected(text, "too_large") == 2
    assert rejected(text, "no_length") == 1


def raw_status(work, head: bytes) -> int:  # type: ignore[no-untyped-def]
    """The status of an answer to a request head sent without its body."""
    with socket.create_connection(("127.0.0.1", port(work)), timeout=30) as sock:
        sock.sendall(head)
        answer = sock.makefile("rb").readline()
    return int(answer.split()[1])


def sessions_request(first: int, count: int) -> bytes:
    """One metrics request with a token.usage point for each of `count` distinct sessions."""
    message = ExportMetricsServiceRequest()
    message.ParseFromString(fixture(GOOD))
    metric = message.resource_metrics[0].scope_metrics[0].metrics.add()
    metric.name = "claude_code.token.usage"
    metric.sum.is_monotonic = True
    metric.sum.aggregation_temporality = AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
    for number in range(first, first + count):
        point = metric.sum.data_points.add()
        point.as_double = 1
        for key, text in (("session.id", f"s{number:06d}"), ("type", "input"), ("model", "m")):
            point.attributes.append(KeyValue(key=key))
            point.attributes[-1].value.string_value = text
    return message.SerializeToString()


@pytest.mark.slow
def test_100k_session_ids_fold_into_a_bounded_table(tmp_path: Path) -> None:
    with receiver(tmp_path, max_sessions=1000) as work:
        for first in range(0, 100_000, 20_000):
            status, _ = post(work, "/v1/metrics", sessions_request(first, 20_000), timeout=120)
            assert status == 200
        still_answers(work)
        text = exposition(work)
        state = work.fold.sessions
        assert len(state) == 1000
    assert samples(text)[("agentwatch_otel_tokens_total", (("model", "m"), ("type", "input")))] == (
        100_000
    )
    evicted = samples(text)[("agentwatch_otel_sessions_evicted_total", (("state", "any"),))]
    unclassified = ("agentwatch_otel_sessions_evicted_total", (("state", "unclassified"),))
    # the fixture's own session is evicted and seen again with each request
    assert evicted >= 99_001 and samples(text)[unclassified] == 99_001
    assert "s0" not in text  # no session label from these
    assert len(text) < 64 * 1024


def test_metric_types_it_does_not_know_are_counted(tmp_path: Path) -> None:
    message = ExportMetricsServiceRequest()
    message.ParseFromString(fixture(GOOD))
    metrics = message.resource_metrics[0].scope_metrics[0].metrics
    gauge = metrics.add()
    gauge.name = "claude_code.something.new"
    gauge.gauge.data_points.add().as_double = 3
    histogram = metrics.add()
    histogram.name = "claude_code.token.usage"  # a known name with an unknown shape
    histogram.histogram.data_points.add().count = 2
    metrics.add().name = "no.data.at.all"
    strange = metrics.add()
    strange.name = "x.sum.not.from.claude"
    strange.sum.is_monotonic = True
    strange.sum.data_points.add().as_double = float("nan")
    with receiver(tmp_path) as work:
        assert post(work, "/v1/metrics", message.SerializeToString())[0] == 200
        still_answers(work)
        text = exposition(work)
    assert rejected(text, "unsupported_metric") == 3
    assert rejected(text, "bad_value") == 1
