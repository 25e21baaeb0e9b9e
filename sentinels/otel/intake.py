"""The OTLP/HTTP endpoint: `POST /v1/metrics` and `POST /v1/logs`, protobuf or JSON, gzip.

It binds through core/http.py like every agentwatch listener (127.0.0.1 by default, a fixed
number of worker threads, header deadlines). A body is refused before it is read when its
declared length passes the cap, and while it inflates when it decompresses past it. Every
refusal is answered with its status (400 malformed, 404, 405, 411, 413 too large, 415 wrong
type or encoding) and counted by reason; nothing a client sends raises out of the handler.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import ClassVar

from agentwatch.core.http import Handler, Server, make_server
from agentwatch.sentinels.otel.decode import (
    MAX_BODY,
    PATHS,
    Batch,
    Rejected,
    check_type,
    inflate,
    parse,
)

log = logging.getLogger("agentwatch.otel")
MAX_SENT = MAX_BODY  # a compressed body is never larger than what it inflates to, in practice

Fold = Callable[[str, Batch], None]  # (signal, batch) -> counted
Count = Callable[[str], None]  # a rejection reason


class Intake(Handler):
    """One request: check, read, decode, fold, answer."""

    logger = log
    fold: ClassVar[Fold]
    reject: ClassVar[Count]

    def do_POST(self) -> None:
        try:
            status, content_type, body = self._receive()
        except Rejected as err:
            self._refuse(err.reason, err.status)
            return
        except Exception:  # a bug of ours: counted and answered, the worker goes on
            log.debug("an OTLP request failed", exc_info=True)
            self._refuse("internal", 500)
            return
        self.send(status, content_type, body)

    def _receive(self) -> tuple[int, str, bytes]:
        if self.path not in PATHS:
            raise Rejected("not_found", 404)
        protobuf = check_type(self.headers.get("Content-Type"))
        if self.headers.get("Transfer-Encoding"):
            raise Rejected("no_length", 411)
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            raise Rejected("no_length", 411)
        if int(length) > MAX_SENT:
            raise Rejected("too_large", 413)
        sent = self.rfile.read(int(length))
        if len(sent) != int(length):
            raise Rejected("truncated", 400)
        body = inflate(sent, self.headers.get("Content-Encoding"))
        _, reply, batch = parse(self.path, body, protobuf)
        type(self).fold(self.path.rsplit("/", 1)[1], batch)
        kind = "application/x-protobuf" if protobuf else "application/json"
        return 200, kind, reply

    def _refuse(self, reason: str, status: int) -> None:
        type(self).reject(reason)
        self.close_connection = True  # the body may be unread: never parse it as a request
        self.send_text(status, f"{status} {reason}\n")

    def _refuse_method(self) -> None:
        type(self).reject("method")
        self.close_connection = True
        self.send_text(405, "405 only POST /v1/metrics and /v1/logs\n")

    do_GET = do_PUT = do_DELETE = do_PATCH = _refuse_method


def serve(listen: str, fold: Fold, reject: Count) -> tuple[Server, threading.Thread]:
    """Bind `listen` and answer on a daemon thread (ListenError/ValueError when it cannot)."""
    handler = type("OtelIntake", (Intake,), {"fold": staticmethod(fold),
                                             "reject": staticmethod(reject)})  # fmt: skip
    server = make_server(listen, handler)
    thread = threading.Thread(target=server.serve_forever, name="otel-receiver", daemon=True)
    thread.start()
    return server, thread
