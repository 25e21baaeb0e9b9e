"""The webhook sink `up` serves in its own loop (cli/up_sink.py): it answers as the standalone
sink does, and no client can hold `up`'s supervision for longer than the deadline."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from pathlib import Path

import pytest

from agentwatch.cli import up_sink

# The webhook body Alertmanager documents (prometheus.io/docs/alerting/latest/configuration/
# #webhook_config), trimmed to what the sink reads, with one of our alerts firing.
PAYLOAD = {
    "version": "4",
    "status": "firing",
    "receiver": "local",
    "groupKey": '{}:{alertname="AgentwatchSessionStalled"}',
    "alerts": [
        {
            "status": "firing",
            "labels": {"alertname": "AgentwatchSessionStalled", "severity": "warning"},
            "annotations": {"summary": "a session stopped making progress"},
        }
    ],
}


@pytest.fixture
def sink(tmp_path: Path):
    served = up_sink.Sink("127.0.0.1:0", tmp_path / "stack" / "alerts.jsonl")
    stop = threading.Event()

    def loop() -> None:  # as `up`'s loop: wait, then its other work
        while not stop.is_set():
            served.wait(0.2)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield served
    stop.set()
    thread.join(10)
    served.close()


def request(sink: up_sink.Sink, method: str, body: bytes | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection(*sink.address, timeout=30)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, "/", body=body, headers=headers)
        reply = conn.getresponse()
        return reply.status, reply.read().decode()
    finally:
        conn.close()


def test_a_webhook_is_logged_and_printed(sink: up_sink.Sink, capsys) -> None:
    assert request(sink, "GET")[0] == 200
    assert request(sink, "POST", json.dumps(PAYLOAD).encode()) == (200, "ok\n")
    records = [json.loads(line) for line in sink.out.read_text().splitlines()]
    assert [record["payload"] for record in records] == [PAYLOAD]
    assert "[FIRING] AgentwatchSessionStalled (warning)" in capsys.readouterr().out


@pytest.mark.parametrize("body", [b"not json", b'{"alerts": 3}', b'{"status": "firing"}', b"[]"])
def test_a_body_that_is_not_a_webhook_is_refused(sink: up_sink.Sink, body: bytes) -> None:
    assert request(sink, "POST", body)[0] == 400
    assert not sink.out.exists()


def test_a_silent_client_is_cut_at_the_deadline_and_the_next_answered(
    sink: up_sink.Sink,
) -> None:
    silent = socket.create_connection(sink.address, timeout=30)
    try:
        silent.sendall(b"POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")  # and no more
        began = time.monotonic()
        reply = silent.recv(4096)
        waited = time.monotonic() - began
    finally:
        silent.close()
    assert reply.startswith(b"HTTP/1.1 408"), reply
    assert waited < up_sink.DEADLINE + 5  # generous on a busy machine; never unbounded
    assert request(sink, "POST", json.dumps(PAYLOAD).encode())[0] == 200


def test_wait_returns_after_its_timeout_when_nobody_calls(tmp_path: Path) -> None:
    served = up_sink.Sink("127.0.0.1:0", tmp_path / "alerts.jsonl")
    try:
        began = time.monotonic()
        served.wait(0.3)
        assert 0.25 <= time.monotonic() - began < 5
    finally:
        served.close()


def test_a_flood_of_silent_clients_holds_wait_no_longer_than_one_deadline(
    tmp_path: Path,
) -> None:
    """`up`'s loop supervises its children between waits: clients that connect and say
    nothing, one after another, cannot keep it from coming back."""
    served = up_sink.Sink("127.0.0.1:0", tmp_path / "alerts.jsonl")
    silent = [socket.create_connection(served.address, timeout=30) for _ in range(4)]
    try:
        began = time.monotonic()
        served.wait(0.1)
        took = time.monotonic() - began
    finally:
        for sock in silent:
            sock.close()
        served.close()
    assert took < 0.1 + up_sink.DEADLINE + 1.5  # one silent client's deadline, not four
