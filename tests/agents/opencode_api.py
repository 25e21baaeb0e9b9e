"""A scripted stand-in of an OpenAI-compatible chat-completions API, for the real OpenCode CLI.

OpenCode talks to a custom provider (`"npm": "@ai-sdk/openai-compatible"` in opencode.json)
with `POST {baseURL}/chat/completions`, `"stream": true` and `stream_options.include_usage`,
and reads the reply as server-sent events: content deltas, a chunk with `finish_reason`, a
chunk with `usage`, then `data: [DONE]`. Every request gets the next scripted `Reply`; the
last one repeats. The served log keeps only what a test compares: path, model, the usage
served and the reply id, never the prompt.

OpenCode also asks for a session title (a request without tools, whose usage it does not
store); those requests get `title` and are logged with kind "title", the agent's own turns
(with tools) get the scripted replies in order and kind "agent".

Run alone (`python -m tests.agents.opencode_api`) it prints its URL and serves fixed replies,
for capturing fixtures by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "standin-coder"


@dataclass(frozen=True)
class Reply:
    """One scripted answer and the usage numbers the API reports for it (OpenAI's names:
    prompt tokens include the cached ones, completion tokens include the reasoning ones)."""

    text: str = "Done."
    prompt_tokens: int = 100
    completion_tokens: int = 20
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    tool: str = ""  # when set, the reply calls this tool instead of answering
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def usage(self) -> dict[str, Any]:
        """The `usage` object of the final chunk."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
        }


@dataclass
class Served:
    """What the stand-in answered, in order (no request text)."""

    path: str
    kind: str  # "agent" (a turn with tools) or "title"
    model: str
    reply_id: str
    usage: dict[str, Any]


TITLE = Reply("Stand-in session", 40, 3)


@dataclass
class Script:
    replies: Sequence[Reply]
    title: Reply = TITLE
    served: list[Served] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, path: str, kind: str, model: str) -> tuple[str, Reply]:
        """The reply for the next request of its kind, recorded before it is sent."""
        with self.lock:
            turns = sum(1 for served in self.served if served.kind == "agent")
            if kind == "agent":
                reply = self.replies[min(turns, len(self.replies) - 1)]
            else:
                reply = self.title
            reply_id = f"chatcmpl-standin-{len(self.served):04d}"
            self.served.append(Served(path, kind, model, reply_id, reply.usage()))
            return reply_id, reply


def chunks(reply_id: str, model: str, reply: Reply) -> Iterator[dict[str, Any]]:
    """The SSE payloads of one streamed completion, in the order OpenAI sends them."""
    base = {"id": reply_id, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model}  # fmt: skip
    yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                "finish_reason": None}]}  # fmt: skip
    if reply.tool:
        call = {
            "index": 0,
            "id": f"call_{reply_id[-4:]}",
            "type": "function",
            "function": {"name": reply.tool, "arguments": json.dumps(reply.arguments)},
        }
        yield {**base, "choices": [{"index": 0, "delta": {"tool_calls": [call]},
                                    "finish_reason": None}]}  # fmt: skip
        yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    else:
        for word in reply.text.split(" "):
            yield {**base, "choices": [{"index": 0, "delta": {"content": word + " "},
                                        "finish_reason": None}]}  # fmt: skip
        yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    yield {**base, "choices": [], "usage": reply.usage()}


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output stays free of request lines."""

    def _send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        """`/models` (some clients list them); anything else is 404."""
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        """A chat completion, streamed when asked (OpenCode always asks)."""
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send_json(400, {"error": {"message": "bad json"}})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": "not found"}})
            return
        model = str(body.get("model") or MODEL)
        kind = "agent" if body.get("tools") else "title"
        reply_id, reply = self.server.script.next(self.path, kind, model)
        if not body.get("stream"):
            answer = {"role": "assistant", "content": reply.text}
            choice = {"index": 0, "finish_reason": "stop", "message": answer}
            self._send_json(200, {"id": reply_id, "object": "chat.completion", "model": model,
                                  "created": int(time.time()), "usage": reply.usage(),
                                  "choices": [choice]})  # fmt: skip
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for payload in chunks(reply_id, model, reply):
            self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    script: Script


class StandIn:
    """The stand-in on 127.0.0.1, on a free port, in a thread: `with StandIn(replies) as api`."""

    def __init__(self, replies: Sequence[Reply], title: Reply = TITLE) -> None:
        if not replies:
            raise ValueError("the stand-in needs at least one reply")
        self.script = Script(list(replies), title)
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.script = self.script
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The provider's baseURL (OpenAI style, with /v1)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def served(self) -> list[Served]:
        """Everything answered so far, in order."""
        with self.script.lock:
            return list(self.script.served)

    def turns(self) -> list[Served]:
        """The agent's own turns (the requests whose usage OpenCode stores)."""
        return [served for served in self.served if served.kind == "agent"]

    def __enter__(self) -> StandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def main() -> None:
    """Serve two fixed replies until interrupted (for capturing fixtures by hand)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.parse_args()
    replies = [Reply("Hello from the stand-in.", 1200, 30, 200, 7)]
    with StandIn(replies) as api:
        print(api.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
