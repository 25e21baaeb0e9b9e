"""The base of every agentwatch HTTP listener: address parsing, the server, the handler.

The exporter, the controller's /throttle, the demo orchestrator and the webhook sink all bind
through `make_server` and answer through `Handler.send`, so TLS, basic auth, timeouts, IPv6
and quiet logging behave the same everywhere. Listeners bind 127.0.0.1 unless configured.
"""

from __future__ import annotations

import json
import logging
import socket
import ssl
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from agentwatch.core.webconfig import Authenticator

log = logging.getLogger("agentwatch.http")

HANDSHAKE_TIMEOUT = 10.0  # a silent client cannot hold a thread forever
REALM = "agentwatch"


def parse_listen(text: str, any_port: bool = False) -> tuple[str, int]:
    """(host, port) of `HOST:PORT`; IPv6 hosts in brackets (`[::1]:9847`). ValueError
    explains the expected form. Port 0 (the kernel picks one) only with `any_port`."""
    host, sep, port = text.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        bracketed = True
    else:
        bracketed = False
    lowest = 0 if any_port else 1
    valid = bool(sep and host and port.isdigit() and lowest <= int(port) < 65536)
    if valid and ":" in host and not bracketed:  # "::1:9847" is ambiguous
        valid = False
    if not valid:
        raise ValueError(f"{text!r} is not HOST:PORT, e.g. 127.0.0.1:9847 or [::1]:9847")
    return host, int(port)


class Server(ThreadingHTTPServer):
    """A threading HTTP server that does the TLS handshake in the request's own thread, so a
    slow or broken client never blocks the accept loop. IPv4 or IPv6 by the host given."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        context: ssl.SSLContext | None = None,
    ):
        self.tls_context = context
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)

    @property
    def scheme(self) -> str:
        return "https" if self.tls_context is not None else "http"

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(HANDSHAKE_TIMEOUT)
        if self.tls_context is None:
            super().finish_request(request, client_address)
            return
        try:
            secure = self.tls_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as err:
            log.debug("TLS handshake with %s failed: %s", client_address[0], err)
            return
        try:
            self.RequestHandlerClass(secure, client_address, self)  # type: ignore[arg-type]
        finally:
            secure.close()


def make_server(
    listen: str, handler: type[BaseHTTPRequestHandler], context: ssl.SSLContext | None = None
) -> Server:
    """Bind `HOST:PORT` (ValueError for a bad address, OSError when it cannot bind)."""
    return Server(parse_listen(listen, any_port=True), handler, context)


class Handler(BaseHTTPRequestHandler):
    """What every agentwatch handler shares: one way to answer, optional basic auth, and
    request logging at debug level only (a scrape every 15 s is not news)."""

    auth: Authenticator | None = None  # set by a subclass to require basic auth
    logger: logging.Logger = log
    extra_headers: ClassVar[Mapping[str, str]] = {}

    def send(
        self, status: int, content_type: str, body: bytes, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in {**self.extra_headers, **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def send_text(self, status: int, text: str) -> None:
        self.send(status, "text/plain; charset=utf-8", text.encode("utf-8"))

    def send_json(self, status: int, payload: Any) -> None:
        self.send(status, "application/json", json.dumps(payload).encode() + b"\n")

    def authorized(self) -> bool:
        """True when the request may proceed; otherwise a 401 has been sent."""
        if self.auth is None or self.auth.check(self.headers.get("Authorization")):
            return True
        self.send(
            401,
            "text/plain; charset=utf-8",
            b"401 Unauthorized\n",
            {"WWW-Authenticate": f'Basic realm="{REALM}"'},
        )
        return False

    def log_message(self, format: str, *args: object) -> None:
        self.logger.debug("%s %s", self.address_string(), format % args)
