"""The one HTTP endpoint Prometheus scrapes: /metrics, the front page on / and /healthz."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from urllib.parse import urlsplit

from agentwatch.core import __version__
from agentwatch.core.http import Handler, Server, make_server
from agentwatch.core.webconfig import Authenticator, WebConfig
from agentwatch.exporter.collector import SpoolCollector
from agentwatch.exporter.negotiate import choose
from agentwatch.exporter.overview import build
from agentwatch.exporter.overview_html import CSP, render
from agentwatch.exporter.remote import Endpoints, RemoteReader

log = logging.getLogger("agentwatch.exporter")


CSS = (Path(__file__).parent / "overview.css").read_bytes()
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def front_page(collector: SpoolCollector, remote: RemoteReader, now: float | None = None) -> bytes:
    """The overview on /: the spool as it is now, the stack as last read in the background."""
    now = time.time() if now is None else now
    families, health = collector.snapshot(now)
    return render(build(families, health, remote.current(), now))


def make_handler(
    collector: SpoolCollector,
    auth: Authenticator | None = None,
    remote: RemoteReader | None = None,
) -> type[Handler]:
    """Routes /metrics, /, /overview.css and /healthz; with basic auth configured every path
    needs it."""
    reader = remote if remote is not None else RemoteReader(Endpoints())

    class ExporterHandler(Handler):
        server_version = f"agentwatch/{__version__}"
        logger = log

        def do_GET(self) -> None:
            if not self.authorized():
                return
            route = urlsplit(self.path).path
            if route == "/metrics":
                chosen = choose(self.headers.get("Accept", ""))
                self.send(200, chosen.content_type, collector.body(chosen.openmetrics))
            elif route == "/":
                page = front_page(collector, reader)
                self.send(200, "text/html; charset=utf-8", page, PAGE_HEADERS)
            elif route == "/overview.css":
                self.send(200, "text/css; charset=utf-8", CSS, {"Cache-Control": "max-age=300"})
            elif route == "/healthz":
                now = time.time()
                _, health = collector.snapshot(now)
                payload = {
                    "status": "ok",
                    "version": __version__,
                    "sentinels": [item.as_dict(now) for item in health],
                }
                self.send(200, "application/json", json.dumps(payload).encode())
            else:
                self.send_text(404, "not found: try /metrics\n")

    ExporterHandler.auth = auth
    return ExporterHandler


def serve(
    collector: SpoolCollector,
    listen: str,
    web: WebConfig | None = None,
    endpoints: Endpoints | None = None,
) -> Server:
    """Bind (loopback by default, via config) and return the server; caller runs it.

    `web` (exporter.web_config_file) adds TLS and/or basic auth; None is plain HTTP.
    `endpoints` are the stack's parts the front page reads and links to."""
    auth = Authenticator(web.users) if web is not None and web.users else None
    handler = make_handler(collector, auth, RemoteReader(endpoints or Endpoints()))
    return make_server(listen, handler, web.context if web else None, collector.connections)
