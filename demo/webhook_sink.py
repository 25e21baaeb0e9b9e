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
from pathlib import Path
from typing import Any

from agentwatch.core.http import Handler, make_server

MAX_BODY = 1 << 20
GREETING = "agentwatch webhook sink: POST Alertmanager webhooks here\n"


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


def receive(body: bytes, out: Path) -> tuple[int, str]:
    """One webhook body: appended to `out` and printed, (200, "ok"); else (400, why)."""
    if not 0 < len(body) <= MAX_BODY:
        return 400, "expected a JSON body up to 1 MiB\n"
    try:
        payload = json.loads(body)
        alerts = payload["alerts"]
        status = str(payload.get("status", ""))
        lines = [describe(alert, status) for alert in alerts]
    except (ValueError, KeyError, TypeError, AttributeError):
        return 400, "not an Alertmanager webhook payload\n"
    with out.open("a", encoding="utf-8") as handle:
        record = {"received_at": time.time(), "payload": payload}
        handle.write(json.dumps(record, separators=(",", ":")) + "\n")
    for line in lines:
        print(time.strftime("%H:%M:%S"), line, flush=True)
    return 200, "ok\n"


def make_handler(out: Path, lock: threading.Lock) -> type[Handler]:
    class SinkHandler(Handler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_BODY:
                self.send_text(400, "expected a JSON body up to 1 MiB\n")
                return
            body = self.rfile.read(length)
            with lock:
                code, text = receive(body, out)
            self.send_text(code, text)

        def do_GET(self) -> None:
            self.send_text(200, GREETING)

    return SinkHandler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentwatch.demo.webhook_sink",
        description="Receive Alertmanager webhooks, print them, append them to a JSONL file.",
    )
    parser.add_argument("--listen", default="127.0.0.1:9849", help="HOST:PORT")
    parser.add_argument("--out", type=Path, required=True, help="JSONL file of payloads")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        server = make_server(args.listen, make_handler(args.out, threading.Lock()))
    except (OSError, ValueError) as err:
        print(f"cannot listen on {args.listen}: {err}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(poll_interval=3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
