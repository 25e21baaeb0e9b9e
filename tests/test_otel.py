"""The otel sentinel's receiver over real HTTP, with the request bodies the real Claude Code
2.1.328 sent (tests/fixtures/otel): JSON, protobuf and gzip; the classification that counts a
session without a transcript exactly once; the saved state; cumulative temporality."""

from __future__ import annotations

import json
import os
from datetime import UTC
from pathlib import Path

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality

from tests.conftest import samples
from tests.otel_support import (
    JSON,
    PROTOBUF,
    exposition,
    fixture,
    gzipped,
    port,
    post,
    receiver,
)

CUMULATIVE = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
SESSION_JSON = "f7ab2a09-3e20-44fc-834d-24a88b9362db"  # in the .json fixtures
SESSION_PB = "880a4b2d-6d55-451b-b782-0be2238769d4"  # in the .pb fixtures
MODEL = "claude-sonnet-4-5"


class Clock:
    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def value(text: str, name: str, **labels: str) -> float:
    return sum(
        found
        for (sample, pairs), found in samples(text).items()
        if sample == name and labels.items() <= dict(pairs).items()
    )


def test_json_protobuf_and_gzip_are_decoded_alike(tmp_path: Path) -> None:
    with receiver(tmp_path) as work:
        status, body = post(work, "/v1/metrics", fixture("claude-2.1.328-metrics.json"), JSON)
        assert (status, json.loads(body)) == (200, {})
        status, _ = post(work, "/v1/logs", fixture("claude-2.1.328-logs-api-request.json"), JSON)
        assert status == 200
        pb = fixture("claude-2.1.328-logs-api-error-529.pb")
        assert post(work, "/v1/logs", pb) == (200, b"")
        metrics_pb = gzipped(fixture("claude-2.1.328-metrics-session.pb"))
        status, _ = post(work, "/v1/metrics", metrics_pb, PROTOBUF, {"Content-Encoding": "gzip"})
        assert status == 200
        text = exposition(work)
    # the served usage of that run: 7 input and 2 output tokens
    assert value(text, "agentwatch_otel_tokens_total", type="input", model=MODEL) == 7
    assert value(text, "agentwatch_otel_tokens_total", type="output", model=MODEL) == 2
    assert value(text, "agentwatch_otel_api_requests_total", model=MODEL) == 1
    assert value(text, "agentwatch_otel_api_errors_total", status_code="529", attempt="1") == 1
    assert value(text, "agentwatch_otel_api_ttft_seconds_count", model=MODEL) == 1
    assert value(text, "agentwatch_otel_api_ttft_seconds_sum", model=MODEL) == 0.018
    assert value(text, "agentwatch_otel_api_duration_seconds_count", model=MODEL) == 2
    assert value(text, "agentwatch_otel_sessions_started_total") == 1  # the .pb run's
    assert value(text, "agentwatch_otel_requests_total", signal="logs") == 2
    # no user.id, no prompt, no session in any label (the disagreement ratio is for sessions
    # with a transcript only)
    assert "user" not in text and "REDACTED" not in text and SESSION_JSON not in text


def test_a_session_without_a_transcript_is_counted_once_after_the_grace(
    tmp_path: Path, monkeypatch
) -> None:
    config = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    (config / "projects" / "-work-app").mkdir(parents=True)
    # the protobuf run's session has a transcript where the ledger reads; the JSON one none
    (config / "projects" / "-work-app" / f"{SESSION_PB}.jsonl").write_text("")
    clock = Clock()
    with receiver(tmp_path, clock) as work:
        post(work, "/v1/metrics", fixture("claude-2.1.328-metrics.json"), JSON)
        post(work, "/v1/logs", fixture("claude-2.1.328-logs-api-request.json"), JSON)
        post(work, "/v1/logs", fixture("claude-2.1.328-logs-api-error-529.pb"))
        work.cycle(True)
        pending = exposition(work)
        clock.now += 61
        work.cycle(True)
        counted = exposition(work)
        post(work, "/v1/metrics", fixture("claude-2.1.328-metrics.json"), JSON)  # more usage
        work.cycle(True)
        more = exposition(work)
    assert value(pending, "agentwatch_tokens_total") == 0
    assert value(pending, "agentwatch_otel_sessions", state="pending") == 2
    shared = {"source": "otel", "project": "no_transcript", "agent": "claude-code"}
    assert value(counted, "agentwatch_tokens_total", type="input", **shared) == 7
    assert value(counted, "agentwatch_tokens_total", type="output", **shared) == 2
    assert value(counted, "agentwatch_api_responses_total", **shared) == 1
    assert abs(value(counted, "agentwatch_cost_usd_total", **shared) - 0.000051) < 1e-12
    assert abs(value(counted, "agentwatch_spend_usd", period="day") - 0.000051) < 1e-12
    # the 529 came from the session with a transcript: the ledger counts it, not this
    assert value(counted, "agentwatch_api_errors_total", source="otel") == 0
    assert value(counted, "agentwatch_otel_sessions", state="transcript") == 1
    assert value(counted, "agentwatch_otel_sessions", state="no_transcript") == 1
    assert value(more, "agentwatch_tokens_total", type="input", **shared) == 14


def test_a_restart_goes_on_from_the_saved_totals(tmp_path: Path) -> None:
    clock = Clock()
    with receiver(tmp_path, clock) as work:
        post(work, "/v1/metrics", fixture("claude-2.1.328-metrics.json"), JSON)
        clock.now += 61
        work.cycle(True)
    with receiver(tmp_path, clock) as again:
        before = exposition(again)
        post(again, "/v1/metrics", fixture("claude-2.1.328-metrics.json"), JSON)
        after = exposition(again)
    assert value(before, "agentwatch_tokens_total", type="input", source="otel") == 7
    assert value(after, "agentwatch_tokens_total", type="input", source="otel") == 14
    assert value(after, "agentwatch_otel_tokens_total", type="input") == 14


def test_cumulative_points_add_only_their_growth(tmp_path: Path) -> None:
    message = ExportMetricsServiceRequest()
    message.ParseFromString(
        ExportMetricsServiceRequest.FromString(
            json_to_pb(fixture("claude-2.1.328-metrics.json"))
        ).SerializeToString()
    )
    for metric in message.resource_metrics[0].scope_metrics[0].metrics:
        metric.sum.aggregation_temporality = CUMULATIVE
    first = message.SerializeToString()
    for metric in message.resource_metrics[0].scope_metrics[0].metrics:
        for point in metric.sum.data_points:
            point.as_double *= 3  # the same series, grown
    grown = message.SerializeToString()
    with receiver(tmp_path) as work:
        for body in (first, first, grown):
            assert post(work, "/v1/metrics", body)[0] == 200
        text = exposition(work)
    assert value(text, "agentwatch_otel_tokens_total", type="input") == 21  # 7, +0, +14


def json_to_pb(body: bytes) -> bytes:
    from google.protobuf import json_format

    return json_format.Parse(body.decode(), ExportMetricsServiceRequest()).SerializeToString()


def test_wrong_paths_and_methods_are_answered_and_counted(tmp_path: Path) -> None:
    import http.client

    with receiver(tmp_path) as work:
        assert post(work, "/v1/traces", b"")[0] == 404
        connection = http.client.HTTPConnection("127.0.0.1", port(work))
        connection.request("GET", "/v1/metrics")
        assert connection.getresponse().status == 405
        connection.close()
        text = exposition(work)
    assert value(text, "agentwatch_otel_rejected_total", reason="not_found") == 1
    assert value(text, "agentwatch_otel_rejected_total", reason="method") == 1


def test_a_session_with_a_transcript_is_reconciled_with_the_ledger(
    tmp_path: Path, monkeypatch
) -> None:
    from datetime import datetime

    from tests.conftest import run_cli
    from tests.transcripts import assistant, encode, transcript

    config = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    # the ledger read 5 input and 2 output tokens where Claude Code reported 7 and 2
    line = assistant(input_tokens=5, output_tokens=2, model=MODEL, timestamp=now)
    transcript(config, session=SESSION_JSON).write_bytes(encode(line))
    ledger = run_cli(
        "sentinel", "token-ledger", "--once", "--spool-dir", str(tmp_path / "spool"),
        "--state-dir", str(tmp_path / "ledger-state"), env={"CLAUDE_CONFIG_DIR": str(config)},
    )  # fmt: skip
    assert ledger.returncode == 0, ledger.stderr
    clock = Clock()
    with receiver(tmp_path, clock) as work:
        post(work, "/v1/metrics", fixture("claude-2.1.328-metrics.json"), JSON)
        clock.now += 61
        work.cycle(True)
        text = exposition(work)
    ratio = value(text, "agentwatch_otel_ledger_disagreement_ratio", session=SESSION_JSON)
    assert ratio == pytest.approx(2 / 9)
    assert value(text, "agentwatch_tokens_total", source="otel") == 0  # the ledger's to count


def test_the_sentinel_process_publishes_and_a_restart_does_not_count_twice(
    tmp_path: Path, processes: list
) -> None:
    import signal
    import subprocess

    from tests.conftest import CLI, free_port
    from tests.otel_support import wait_for

    listen = f"127.0.0.1:{free_port()}"
    config = tmp_path / "config.yaml"
    config.write_text(f"sentinels:\n  otel:\n    listen: '{listen}'\n    grace: 1\n")
    spool, state = tmp_path / "spool", tmp_path / "state"
    argv = [*CLI, "--config", str(config), "sentinel", "otel",
            "--spool-dir", str(spool), "--state-dir", str(state)]  # fmt: skip
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path)}
    prom = spool / "otel.prom"

    def tokens() -> float:
        text = prom.read_text() if prom.exists() else ""
        return value(text, "agentwatch_tokens_total", type="input", source="otel") if text else -1

    for expected in (7, 14):  # a second life adds only what it receives itself
        process = subprocess.Popen(argv, env={**os.environ, **env}, stderr=subprocess.PIPE)
        processes.append(process)
        wait_for(lambda: _listening(listen), 60, "the receiver")
        body = fixture("claude-2.1.328-metrics.json")
        assert post(int(listen.rsplit(":", 1)[1]), "/v1/metrics", body, JSON)[0] == 200
        wait_for(lambda expected=expected: tokens() == expected, 60, f"{expected} tokens")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert b"Traceback" not in process.stderr.read()  # type: ignore[union-attr]


def _listening(listen: str) -> bool:
    import socket

    host, port = listen.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except OSError:
        return False
    return True
