"""Hostile clients against the shared HTTP server (real sockets, the real Server): a trickled
request head is cut off at a total deadline, a client gone mid-answer is counted and logged
once without a traceback, and past the connection cap new ones are closed, not threaded."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from agentwatch.core.http import ConnectionStats, Handler, Server, make_server

BIG = b"x" * (32 * 1024 * 1024)  # more than any socket buffer holds


class Answers(Handler):
    def do_GET(self) -> None:
        if self.path == "/big":
            self.send(200, "application/octet-stream", BIG)
        elif self.path == "/boom":
            raise RuntimeError("a bug in a handler")
        else:
            self.send_text(200, "hello\n")


@pytest.fixture
def serving(request: pytest.FixtureRequest) -> Iterator[Server]:
    options = getattr(request, "param", {})
    server = Server(("127.0.0.1", 0), Answers, **options)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _connect(server: Server) -> socket.socket:
    return socket.create_connection(server.server_address[:2], timeout=10)


def _get(server: Server, path: str = "/") -> bytes:
    with _connect(server) as sock:
        sock.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _closed_by_peer(sock: socket.socket, wait: float) -> bool:
    sock.settimeout(wait)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def _until(condition: object, limit: float = 10.0) -> None:
    """Wait for the server's threads to get there (not a timing assertion: a bound)."""
    deadline = time.monotonic() + limit
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


def _warnings(caplog: pytest.LogCaptureFixture, needle: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING and needle in r.message]


@pytest.mark.parametrize("serving", [{"header_deadline": 1.5}], indirect=True)
def test_a_trickled_request_head_is_cut_off_at_a_total_deadline(
    serving: Server, caplog: pytest.LogCaptureFixture
) -> None:
    """One header line every 0.5 s never lets a per-recv timeout fire; the total must."""
    with _connect(serving) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\n")
        sent = 0
        while sent < 40 and not _closed_by_peer(sock, 0.5):
            try:
                sock.sendall(f"X-Trickle-{sent}: 1\r\n".encode())
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += 1
    assert sent < 40  # cut off long before the client gave up (20 s)
    assert serving.stats.dropped["header_timeout"] == 1
    assert len(_warnings(caplog, "did not send its request within 2 s")) == 1
    assert _get(serving).endswith(b"hello\n")  # and the server still answers


def test_disconnects_mid_answer_are_counted_and_logged_once(
    serving: Server, caplog: pytest.LogCaptureFixture
) -> None:
    for _ in range(5):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(serving.server_address[:2])
        sock.sendall(b"GET /big HTTP/1.0\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.0 200")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # a reset, with most of the answer unsent
    _until(lambda: serving.stats.disconnects == 5)
    assert serving.stats.disconnects == 5
    assert len(_warnings(caplog, "disconnected before its answer was sent")) == 1
    assert not [r for r in caplog.records if r.exc_info]  # no traceback at all
    assert _get(serving).endswith(b"hello\n")


def test_a_failing_handler_is_one_logged_traceback_not_a_dead_server(
    serving: Server, caplog: pytest.LogCaptureFixture
) -> None:
    for _ in range(3):
        _get(serving, "/boom")
    _until(lambda: len(caplog.records) >= 1)
    assert len([r for r in caplog.records if r.exc_info]) == 1
    assert _get(serving).endswith(b"hello\n")


@pytest.mark.parametrize("serving", [{"max_connections": 2, "header_deadline": 60}], indirect=True)
def test_past_the_connection_cap_new_connections_are_closed(
    serving: Server, caplog: pytest.LogCaptureFixture
) -> None:
    silent = [_connect(serving), _connect(serving)]
    _until(lambda: serving._open == 2)
    with _connect(serving) as third:
        assert _closed_by_peer(third, 10)
    assert serving.stats.dropped["overloaded"] == 1
    assert len(_warnings(caplog, "2 connections open")) == 1
    silent.pop().close()  # one slot free again: answered as usual
    _until(lambda: serving._open == 1)
    assert _get(serving).endswith(b"hello\n")
    silent.pop().close()


def test_the_thread_count_is_fixed_whatever_the_clients_do() -> None:
    stats = ConnectionStats()
    server = make_server("127.0.0.1:0", Answers, stats=stats)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    before = threading.active_count()
    slow = [_connect(server) for _ in range(100)]
    try:
        for sock in slow:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        _until(lambda: server._open == 100)
        assert threading.active_count() == before
        assert _get(server).endswith(b"hello\n")
    finally:
        for sock in slow:
            sock.close()
        server.shutdown()
        server.server_close()
    assert server.request_queue_size >= 128  # a real listen backlog
