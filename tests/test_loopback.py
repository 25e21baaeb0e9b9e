"""`up`'s GETs to its own stack (cli/loopback.py), against real HTTP servers: the JSON, the
redirect left unfollowed (how `up` tells Debian's Prometheus pages apart), and None for a
service that does not answer or answers garbage."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentwatch.cli import loopback
from tests.conftest import free_port


class _Stack(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/":
            self.send_response(302)
            self.send_header("Location", "/classic/graph")
            self.end_headers()
            return
        if self.path.startswith("/api/v1/query?query="):
            body = b'{"data": {"result": [{"value": [0, "0.5"]}]}}'
        elif self.path == "/garbage":
            body = b"<html>not json"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stack() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stack)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_a_query_with_parameters_gets_json(stack: str) -> None:
    reply = loopback.get(f"{stack}/api/v1/query", params={"query": "max(x{a='b'})"})
    assert reply is not None and reply.ok
    assert reply.json()["data"]["result"][0]["value"][1] == "0.5"


def test_a_redirect_is_reported_not_followed(stack: str) -> None:
    reply = loopback.get(f"{stack}/")
    assert reply is not None and reply.status == 302 and reply.location == "/classic/graph"


def test_garbage_and_errors_and_silence(stack: str) -> None:
    garbage = loopback.get(f"{stack}/garbage")
    assert garbage is not None and garbage.ok
    with pytest.raises(ValueError):
        garbage.json()
    missing = loopback.get(f"{stack}/nothing")
    assert missing is not None and not missing.ok
    assert loopback.get(f"http://127.0.0.1:{free_port()}/", timeout=0.5) is None
