"""A scripted stand-in of the Gemini API (generativelanguage v1beta) for the real Gemini CLI.

Gemini CLI 0.61 with `GOOGLE_GEMINI_BASE_URL` and an API key posts
`/v1beta/models/<model>:streamGenerateContent?alt=sse` for every turn of the chat (the
replies it records in its session file) and `:generateContent` for side questions answered
as JSON (model routing, next-speaker checks; not recorded). Chat turns get the scripted
replies in order: text (and optionally a thought part and a function call) streamed over SSE
in a few chunks, the usage numbers in the last one as the real API sends them. Side questions
get a minimal JSON object of their schema. Every reply is logged in `served` with its usage,
so a test can check what the CLI wrote against what it was sent. Listens on 127.0.0.1 only;
no prompt text is logged.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE_FIELDS = (
    "promptTokenCount",
    "candidatesTokenCount",
    "cachedContentTokenCount",
    "thoughtsTokenCount",
    "toolUsePromptTokenCount",
)


@dataclass(frozen=True)
class Reply:
    """One scripted chat turn. usage uses the API's names; promptTokenCount includes the
    cached part, and totalTokenCount is prompt + candidates + thoughts + tool use as the
    real API reports it, unless given."""

    text: str = "Scripted answer."
    usage: dict[str, int] = field(default_factory=dict)
    thought: str | None = None
    function_call: dict[str, Any] | None = None
    chunks: int = 2

    def usage_metadata(self) -> dict[str, int]:
        usage = {name: int(self.usage.get(name, 0)) for name in USAGE_FIELDS}
        usage = {name: value for name, value in usage.items() if value}
        if "totalTokenCount" in self.usage:
            usage["totalTokenCount"] = int(self.usage["totalTokenCount"])
        else:
            usage["totalTokenCount"] = sum(
                usage.get(name, 0)
                for name in (
                    "promptTokenCount",
                    "candidatesTokenCount",
                    "thoughtsTokenCount",
                    "toolUsePromptTokenCount",
                )
            )
        return usage


def _schema_value(schema: Any) -> Any:
    """The smallest value of a JSON schema (Gemini's OBJECT/STRING/... spelling)."""
    if not isinstance(schema, dict):
        return None
    kind = str(schema.get("type", "OBJECT")).upper()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "OBJECT":
        properties = schema.get("properties") or {}
        wanted = schema.get("required") or list(properties)
        return {name: _schema_value(properties.get(name)) for name in wanted}
    return {"STRING": "scripted", "INTEGER": 1, "NUMBER": 1, "BOOLEAN": False, "ARRAY": []}.get(
        kind
    )


class GeminiStandIn:
    """The stand-in server; use as a context manager, then read `url` and `served`."""

    def __init__(self, replies: list[Reply], default: Reply | None = None):
        self.replies = list(replies)
        self.default = default or Reply()
        self.served: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> GeminiStandIn:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def chat_served(self) -> list[dict[str, Any]]:
        """The served chat turns (those the CLI records), in order."""
        return [entry for entry in self.served if entry["kind"] == "chat"]

    def _next_reply(self, model: str, kind: str) -> tuple[Reply, str]:
        with self._lock:
            reply = self.replies.pop(0) if kind == "chat" and self.replies else self.default
            response_id = f"standin-{next(self._ids):04d}"
            self.served.append(
                {"kind": kind, "model": model, "responseId": response_id,
                 "usage": reply.usage_metadata()}
            )  # fmt: skip
        return reply, response_id

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:  # no request lines, no prompt text
                pass

            def do_GET(self) -> None:
                self._send_json(404, {"error": {"code": 404, "message": "not scripted"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?", 1)[0]
                model = path.rsplit("/", 1)[-1].split(":", 1)[0]
                if path.endswith(":countTokens"):
                    self._send_json(200, {"totalTokens": 1})
                elif path.endswith(":streamGenerateContent"):
                    self._stream(model, body)
                elif path.endswith(":generateContent"):
                    self._side_answer(model, body)
                else:
                    self._send_json(404, {"error": {"code": 404, "message": "not scripted"}})

            def _stream(self, model: str, body: dict[str, Any]) -> None:
                schema = (body.get("generationConfig") or {}).get("responseJsonSchema")
                kind = "json" if schema else "chat"
                reply, response_id = standin._next_reply(model, kind)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in _chunks(reply, model, response_id, schema):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n")
                    self.wfile.flush()
                self.close_connection = True

            def _side_answer(self, model: str, body: dict[str, Any]) -> None:
                schema = (body.get("generationConfig") or {}).get("responseJsonSchema")
                reply, response_id = standin._next_reply(model, "json" if schema else "chat")
                text = json.dumps(_schema_value(schema)) if schema else reply.text
                parts = [{"text": text}]
                self._send_json(200, _response(parts, model, response_id, reply.usage_metadata()))

            def _send_json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _response(
    parts: list[dict[str, Any]], model: str, response_id: str, usage: dict[str, int] | None,
    finish: bool = True,
) -> dict[str, Any]:  # fmt: skip
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    reply: dict[str, Any] = {"candidates": [candidate], "modelVersion": model,
                             "responseId": response_id}  # fmt: skip
    if usage:
        reply["usageMetadata"] = usage
    return reply


def _chunks(reply: Reply, model: str, response_id: str, schema: Any) -> Iterator[dict[str, Any]]:
    """The SSE chunks of one reply: thought first, the text in pieces, then any function
    call; the full usage rides on the last chunk (earlier ones carry only the prompt)."""
    parts: list[dict[str, Any]] = []
    if reply.thought:
        parts.append({"text": reply.thought, "thought": True})
    text = json.dumps(_schema_value(schema)) if schema else reply.text
    if text:
        size = max(1, -(-len(text) // max(1, reply.chunks)))
        parts.extend({"text": text[at : at + size]} for at in range(0, len(text), size))
    if reply.function_call and not schema:
        parts.append({"functionCall": reply.function_call})
    usage = reply.usage_metadata()
    early = {"promptTokenCount": usage.get("promptTokenCount", 0)}
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        yield _response([part], model, response_id, usage if last else early, finish=last)
