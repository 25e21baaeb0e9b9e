"""The stand-in's HTTP server: Claude Code's requests in, scripted steps out.

Plain stdlib threading server (one thread per connection, HTTP/1.1 keep-alive as the SDK
uses it), bound to 127.0.0.1 by default: a hanging step must hold only its own connection.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentwatch.core.listen import parse_listen
from agentwatch.demo.anthropic_api import messages
from agentwatch.demo.anthropic_api.script import Script, SessionScript, Step, Usage
from agentwatch.demo.anthropic_api.served import ServedLog

MAX_BODY = 64 << 20  # Claude Code sends the whole conversation on every request
SIDE_STEP = Step(kind="answer", text="Working on it", usage=Usage(input_tokens=40, output_tokens=8))


class Sessions:
    """Which script each Claude Code session follows, and how far it got."""

    def __init__(self, script: Script):
        self.script = script
        self._lock = threading.Lock()
        self._chosen: dict[str, SessionScript] = {}
        self._position: dict[str, int] = {}

    def add(self, scripted: SessionScript) -> None:
        """Script one more session while serving (the demo adds each session it starts)."""
        with self._lock:
            self.script = replace(self.script, sessions=(*self.script.sessions, scripted))

    def next_step(self, session: str, first_prompt: str) -> Step:
        with self._lock:
            chosen = self._chosen.get(session)
            if chosen is None:
                chosen = self._chosen[session] = self.script.choose(session, first_prompt)
            position = self._position.get(session, 0)
            self._position[session] = position + 1
        steps = chosen.steps
        if position < len(steps):
            return steps[position]
        if chosen.then == "cycle":
            return steps[position % len(steps)]
        if chosen.then == "default":
            default = self.script.default
            return default[min(position - len(steps), len(default) - 1)]
        return steps[-1]


def session_of(headers: Any, body: dict[str, Any]) -> str:
    """Claude Code names its session in a header, and in metadata.user_id (JSON text)."""
    named = headers.get("X-Claude-Code-Session-Id")
    if named:
        return str(named)
    try:
        return str(json.loads(body["metadata"]["user_id"])["session_id"])
    except (KeyError, TypeError, ValueError):
        return "unknown"


def first_prompt(body: dict[str, Any]) -> str:
    """The text of the first user message (only matched against, never stored)."""
    for item in body.get("messages") or []:
        if isinstance(item, dict) and item.get("role") == "user":
            text = item.get("content")
            if isinstance(text, str):
                return text
            if isinstance(text, list):
                return "\n".join(
                    str(block.get("text", "")) for block in text if isinstance(block, dict)
                )
    return ""


class StandIn:
    """The server, its sessions and its served log; `with StandIn(...) as api: api.url`."""

    def __init__(self, script: Script, served: ServedLog, listen: str = "127.0.0.1:0"):
        self.sessions = Sessions(script)
        self.served = served
        self.stopping = threading.Event()
        self.server = ThreadingHTTPServer(parse_listen(listen, any_port=True), _handler(self))
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> StandIn:
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def _handler(api: StandIn) -> type[BaseHTTPRequestHandler]:
    class MessagesHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                self._error(400, "invalid_request_error", "expected a JSON body")
                return
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                self._error(400, "invalid_request_error", "the body is not JSON")
                return
            path = self.path.split("?", 1)[0]
            if path == "/v1/messages/count_tokens":
                self._json(200, {"input_tokens": max(1, length // 4)})
            elif path == "/v1/messages" and isinstance(body, dict):
                self._messages(body)
            else:
                self._error(404, "not_found_error", f"no route {path}")

        def do_GET(self) -> None:
            self._error(404, "not_found_error", "the stand-in serves POST /v1/messages only")

        def _messages(self, body: dict[str, Any]) -> None:
            session = session_of(self.headers, body)
            main_loop = bool(body.get("tools"))
            step = api.sessions.next_step(session, first_prompt(body)) if main_loop else SIDE_STEP
            if step.delay and api.stopping.wait(step.delay):
                return
            model = step.model or str(body.get("model") or "claude-sonnet-4-5")
            record: dict[str, Any] = {"session": session, "step": step.kind, "main_loop": main_loop}
            if step.kind == "hang":
                api.served.add(**record, status=None)
                api.stopping.wait()
                self.close_connection = True
                return
            if step.kind == "drop" or (step.kind == "cut" and not body.get("stream")):
                api.served.add(**record, status=None)
                self._drop()
                return
            if step.kind == "error":
                api.served.add(**record, status=step.status, error=step.error_type)
                self._error(step.status, step.error_type, step.message, step.headers)
                return
            message_id = messages.new_id("msg_01")
            usage = step.usage.as_api()
            api.served.add(**record, status=200, id=message_id, model=model, usage=usage)
            if not body.get("stream"):
                self._json(200, messages.message(step, message_id, model))
                return
            self._stream(step, message_id, model)

        def _stream(self, step: Step, message_id: str, model: str) -> None:
            self.send_response(200)
            self._common_headers({"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for count, event in enumerate(messages.events(step, message_id, model)):
                if step.kind == "cut" and count >= step.after_events:
                    self._drop()
                    return
                self.wfile.write(event)
                self.wfile.flush()

        def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self._common_headers({"Content-Type": "application/json", **(headers or {})})
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(
            self, status: int, kind: str, message: str, headers: dict[str, str] | None = None
        ) -> None:
            data = messages.error_body(kind, message)
            self.send_response(status)
            self._common_headers({"Content-Type": "application/json", **(headers or {})})
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _common_headers(self, extra: dict[str, str]) -> None:
            for name, value in {
                "request-id": messages.new_id("req_011"),
                "anthropic-organization-id": "00000000-0000-0000-0000-000000000000",
                **api.sessions.script.headers,
                **extra,
            }.items():
                self.send_header(name, value)

        def _drop(self) -> None:
            """Close the connection with nothing more: a gateway that went away."""
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

        def log_message(self, format: str, *args: object) -> None:
            pass  # the served log is the record; request lines would only repeat it

    return MessagesHandler
