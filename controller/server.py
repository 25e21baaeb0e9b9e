"""GET /throttle: the current decision as JSON, for orchestrators that poll over HTTP.

Binds 127.0.0.1 unless configured otherwise. The body is the same JSON as the state file's
public fields; the loop swaps in a new pre-encoded body after each cycle, so a request never
sees a half-built decision and never waits for the loop.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from agentwatch.core.http import Handler, Server, make_server
from agentwatch.core.webconfig import Authenticator, WebConfig, load_for

log = logging.getLogger("agentwatch.controller")


class Board:
    """Holds the latest encoded decision for the request threads."""

    def __init__(self) -> None:
        self._current: tuple[bool, bytes] = (False, b'{"error": "no decision yet"}\n')

    def publish(self, public: dict[str, Any]) -> None:
        body = json.dumps(public, indent=2, sort_keys=True).encode() + b"\n"
        self._current = (True, body)  # one assignment: readers see the old or the new pair

    def read(self) -> tuple[bool, bytes]:
        return self._current


def make_handler(board: Board, auth: Authenticator | None = None) -> type[Handler]:
    """Routes /throttle and /healthz; with basic auth configured both need it."""

    class ThrottleHandler(Handler):
        server_version = "agentwatch-controller"
        logger = log
        extra_headers: ClassVar[Mapping[str, str]] = {"Cache-Control": "no-store"}

        def do_GET(self) -> None:
            if not self.authorized():
                return
            route = urlsplit(self.path).path
            if route == "/throttle":
                ready, body = board.read()
                self.send(200 if ready else 503, "application/json", body)
            elif route == "/healthz":
                ready, _ = board.read()
                self.send(200 if ready else 503, "text/plain; charset=utf-8", b"ok\n")
            else:
                self.send_text(404, "not found: try /throttle\n")

    ThrottleHandler.auth = auth
    return ThrottleHandler


def start(board: Board, listen: str, web_config_file: Path | None = None) -> Server:
    """Bind and serve in a daemon thread; the caller shuts it down.

    `web_config_file` (controller.web_config_file) adds TLS and/or basic auth; a broken one
    raises WebConfigError (a ValueError) so the controller refuses to start."""
    web: WebConfig | None = load_for(web_config_file, "controller")
    auth = Authenticator(web.users) if web is not None and web.users else None
    server = make_server(listen, make_handler(board, auth), web.context if web else None)
    threading.Thread(target=server.serve_forever, name="throttle-http", daemon=True).start()
    return server
