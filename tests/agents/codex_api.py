"""A local scripted stand-in of the OpenAI Responses API, as Codex CLI calls it.

Codex streams `POST <base_url>/responses` as server-sent events and reads the turn's usage
from the final `response.completed` event. Each reply here is scripted: a fixed text and
the usage numbers the test chose, so what Codex writes into its rollout can be checked
against what was served. Listens on 127.0.0.1 only; every request is logged (path and
model only, never the prompt).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer: its text and the usage the API reports for it."""

    text: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def usage(self) -> dict[str, Any]:
        """The Responses API usage object (cached tokens are part of input_tokens)."""
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {
                "cached_tokens": self.cached_tokens,
                "cache_write_tokens": self.cache_write_tokens,
            },
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


@dataclass
class Served:
    """What the stand-in answered, in order (for the test's own bookkeeping)."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)


def _event(kind: str, body: dict[str, Any]) -> bytes:
    """One SSE frame, named the way the Responses API names it."""
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **body})}\n\n".encode()


def sse_body(reply: Reply, number: int, model: str) -> bytes:
    """The full event stream of one scripted response."""
    response_id = f"resp_standin_{number:04d}"
    item = {
        "type": "message",
        "id": f"msg_standin_{number:04d}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
    }
    head = {"id": response_id, "object": "response", "model": model, "status": "in_progress"}
    done = {**head, "status": "completed", "output": [item], "usage": reply.usage()}
    return b"".join(
        [
            _event("response.created", {"response": head}),
            _event("response.output_item.added", {"output_index": 0, "item": item}),
            _event(
                "response.output_text.delta",
                {"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": reply.text},
            ),
            _event("response.output_item.done", {"output_index": 0, "item": item}),
            _event("response.completed", {"response": done}),
        ]
    )


class StandIn:
    """The server: answers each POST .../responses with the next scripted reply (the last
    one repeats when the script runs out), anything else with an empty JSON object."""

    def __init__(self, replies: list[Reply]) -> None:
        if not replies:
            raise ValueError("the stand-in needs at least one scripted reply")
        self.script = list(replies)
        self.served = Served()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> StandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def next_reply(self, path: str, model: str) -> tuple[Reply, int]:
        """The reply for the next request, recorded in `served`."""
        with self._lock:
            number = len(self.served.replies)
            reply = self.script[min(number, len(self.script) - 1)]
            self.served.requests.append({"path": path, "model": model})
            self.served.replies.append(reply)
            return reply, number

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                """Quiet: the test reads `served`, not stderr."""

            def _reply(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._reply(200, b'{"object":"list","data":[],"models":[]}', "application/json")
                else:
                    self._reply(404, b"{}", "application/json")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if not self.path.rstrip("/").endswith("/responses"):
                    self._reply(404, b"{}", "application/json")
                    return
                try:
                    model = str(json.loads(raw or b"{}").get("model") or "")
                except ValueError:
                    model = ""
                reply, number = stand_in.next_reply(self.path, model)
                self._reply(200, sse_body(reply, number, model), "text/event-stream")

        return Handler
