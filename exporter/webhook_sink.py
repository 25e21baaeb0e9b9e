"""A local Alertmanager webhook receiver that prints each message in plain language.

The stack of `agentwatch up` routes its alerts here, so a newcomer sees what would reach
chat without configuring Telegram or Slack. Every payload is also appended to a JSONL file
(what the end-to-end test reads). Listens on 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MAX_BODY = 1 << 20


def describe(alert: dict[str, Any], status: str) -> str:
    """One line per alert: state, name, severity, where, and the rule's own summary."""
    labels = alert.get("labels") or {}
    annotations = alert.get("annotations") or {}
    where = ", ".join(
        f"{key}={labels[key]}"
        for key in ("project", "session", "tmux_session", "pane", "repo", "sentinel", "kind")
        if key in labels
    )
    action = labels.get("agentwatch_action")
    parts = [
        f"[{(alert.get('status') or status).upper()}]",
        str(labels.get("alertname", "?")),
        f"({labels.get('severity', 'none')})",
    ]
    if where:
        parts.append(where)
    if annotations.get("summary"):
        parts.append("- " + str(annotations["summary"]))
    if action:
        parts.append(f"[controller: {action}]")
    return " ".join(parts)


def make_handler(out: Path, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_BODY:
                self._reply(400, b"expected a JSON body up to 1 MiB\n")
                return
            try:
                payload = json.loads(self.rfile.read(length))
                alerts = payload["alerts"]
                status = str(payload.get("status", ""))
            except (ValueError, KeyError, TypeError):
                self._reply(400, b"not an Alertmanager webhook payload\n")
                return
            with lock:
                with out.open("a", encoding="utf-8") as handle:
                    record = {"received_at": time.time(), "payload": payload}
                    handle.write(json.dumps(record, separators=(",", ":")) + "\n")
                for alert in alerts:
                    print(time.strftime("%H:%M:%S"), describe(alert, status), flush=True)
            self._reply(200, b"ok\n")

        def do_GET(self) -> None:
            self._reply(200, b"agentwatch webhook sink: POST Alertmanager webhooks here\n")

        def _reply(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # one line per alert above is the log

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentwatch.exporter.webhook_sink",
        description="Receive Alertmanager webhooks, print them, append them to a JSONL file.",
    )
    parser.add_argument("--listen", default="127.0.0.1:9849", help="HOST:PORT")
    parser.add_argument("--out", type=Path, required=True, help="JSONL file of payloads")
    args = parser.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer((host, int(port)), make_handler(args.out, threading.Lock()))
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(poll_interval=3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
