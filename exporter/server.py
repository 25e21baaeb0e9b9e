"""The one HTTP endpoint Prometheus scrapes: /metrics, a landing page on / and /healthz."""

from __future__ import annotations

import html
import json
import logging
import time
from urllib.parse import urlsplit

from prometheus_client.exposition import choose_encoder

from agentwatch.core import __version__
from agentwatch.core.http import Handler, Server, make_server
from agentwatch.core.webconfig import Authenticator, WebConfig
from agentwatch.exporter.collector import SentinelHealth, SpoolCollector

log = logging.getLogger("agentwatch.exporter")


def _landing_page(health: list[SentinelHealth], now: float) -> bytes:
    rows = []
    for item in health:
        age = "never" if item.last_write is None else f"{now - item.last_write:.0f} s ago"
        state = "up" if item.up else ("stale" if item.stale else "error")
        if not item.present:
            state = "missing"
        rows.append(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.0f} s</td><td>{}</td></tr>".format(
                html.escape(item.sentinel),
                state,
                age,
                item.interval,
                html.escape(item.error or ""),
            )
        )
    body = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>agentwatch exporter</title></head>
<body><h1>agentwatch exporter</h1>
<p>Version {html.escape(__version__)}.
<a href="/metrics">Metrics</a> · <a href="/healthz">Health</a></p>
<table border="1" cellpadding="4"><tr><th>sentinel</th><th>state</th><th>last update</th>
<th>interval</th><th>error</th></tr>
{"".join(rows) or '<tr><td colspan="5">no sentinel has written yet</td></tr>'}
</table></body></html>
"""
    return body.encode("utf-8")


def make_handler(collector: SpoolCollector, auth: Authenticator | None = None) -> type[Handler]:
    """Routes /metrics, / and /healthz; with basic auth configured every path needs it."""

    class ExporterHandler(Handler):
        server_version = f"agentwatch/{__version__}"
        logger = log

        def do_GET(self) -> None:
            if not self.authorized():
                return
            route = urlsplit(self.path).path
            if route == "/metrics":
                _, content_type = choose_encoder(self.headers.get("Accept", ""))
                openmetrics = content_type.startswith("application/openmetrics-text")
                self.send(200, content_type, collector.body(openmetrics))
            elif route == "/":
                _, health = collector.snapshot()
                self.send(200, "text/html; charset=utf-8", _landing_page(health, time.time()))
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


def serve(collector: SpoolCollector, listen: str, web: WebConfig | None = None) -> Server:
    """Bind (loopback by default, via config) and return the server; caller runs it.

    `web` (exporter.web_config_file) adds TLS and/or basic auth; None is plain HTTP."""
    auth = Authenticator(web.users) if web is not None and web.users else None
    handler = make_handler(collector, auth)
    return make_server(listen, handler, web.context if web else None, collector.connections)
