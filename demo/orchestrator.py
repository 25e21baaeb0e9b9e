"""A tiny stand-in orchestrator speaking the subset of Bernstein's task-server API we use.

    python -m agentwatch.demo.orchestrator --listen 127.0.0.1:8052 \
        --state-file /tmp/orchestrator.json [--budget-usd 20] [--max-agents 4]

Endpoints (JSON): GET /status, GET /costs/current, GET /tasks, GET /drain, POST /config
{"max_agents": N} (clamped 1-50 like Bernstein), POST /drain, POST /drain/cancel,
POST /tasks {"title", "deadline"?} (creates an open task), POST /tasks/{id}/fail, and
POST /usage {"agents": N, "spent_usd": X} through which the demo workload reports what it
runs. Its state lives in memory and in `--state-file` (rewritten atomically on each change),
which the demo workload reads to decide how many simulated agents to run: `max_agents`, and
`draining` (start none). With `--token-env VAR` every request needs `Authorization: Bearer
$VAR`. Binds 127.0.0.1 unless told otherwise. For demos and tests, not production.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from agentwatch.core.files import write_atomic
from agentwatch.core.http import Handler, make_server

MAX_BODY = 1 << 16
TASK_FAIL = re.compile(r"^/tasks/([^/]+)/fail$")
OPEN = ("open", "claimed")


class Orchestrator:
    """The in-memory state and its JSON file."""

    def __init__(self, state_file: Path, budget_usd: float, max_agents: int):
        self.state_file = state_file
        self.lock = threading.Lock()
        self.max_agents = max(1, min(50, max_agents))
        self.draining = False
        self.agents = 0
        self.spent_usd = 0.0
        self.budget_usd = budget_usd
        self.tasks: dict[str, dict[str, Any]] = {}
        self.save()

    def snapshot(self) -> dict[str, Any]:
        return {
            "max_agents": self.max_agents,
            "draining": self.draining,
            "agents": self.agents,
            "spent_usd": self.spent_usd,
            "budget_usd": self.budget_usd,
            "tasks": list(self.tasks.values()),
            "updated_at": time.time(),
        }

    def save(self) -> None:
        write_atomic(self.state_file, json.dumps(self.snapshot(), indent=2) + "\n")

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("open", "claimed", "done", "failed"), 0)
        for task in self.tasks.values():
            counts[task["status"]] = counts.get(task["status"], 0) + 1
        return counts

    def status(self) -> dict[str, Any]:
        return {
            "agents": self.agents,
            "max_agents": self.max_agents,
            "draining": self.draining,
            "cost_usd": round(self.spent_usd, 6),
            "total": len(self.tasks),
            **self.counts(),
        }

    def costs(self) -> dict[str, Any]:
        budget, spent = self.budget_usd, self.spent_usd
        percentage = spent / budget * 100 if budget > 0 else 0.0
        return {
            "spent_usd": round(spent, 6),
            "budget_usd": budget,
            "remaining_usd": round(max(budget - spent, 0.0), 6) if budget > 0 else 0.0,
            "percentage_used": round(percentage, 4),
            "should_warn": budget > 0 and percentage >= 80,
            "should_stop": budget > 0 and percentage >= 100,
        }


class BadRequest(Exception):
    pass


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise BadRequest(f"{name} must be a non-negative number")
    return float(value)


def make_handler(orc: Orchestrator, token: str | None) -> type[Handler]:
    class OrchestratorHandler(Handler):
        server_version = "agentwatch-demo-orchestrator"

        def _authorized(self) -> bool:
            if token and self.headers.get("Authorization", "") != f"Bearer {token}":
                self.send_json(401, {"detail": "unauthorized"})
                return False
            return True

        def _body(self) -> Any:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError as err:
                raise BadRequest("bad Content-Length") from err
            if not 0 <= length <= MAX_BODY:
                raise BadRequest("body too large")
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return {}
            try:
                return json.loads(raw)
            except ValueError as err:
                raise BadRequest("body is not JSON") from err

        def do_GET(self) -> None:
            if not self._authorized():
                return
            route = urlsplit(self.path).path
            with orc.lock:
                if route == "/status":
                    self.send_json(200, orc.status())
                elif route == "/costs/current":
                    self.send_json(200, orc.costs())
                elif route == "/tasks":
                    self.send_json(200, list(orc.tasks.values()))
                elif route == "/drain":
                    self.send_json(200, {"draining": orc.draining, "active_agents": orc.agents})
                else:
                    self.send_json(404, {"detail": "not found"})

        def do_POST(self) -> None:
            if not self._authorized():
                return
            route = urlsplit(self.path).path
            try:
                body = self._body()
                with orc.lock:
                    status, answer = self._post(route, body)
                    if status < 300:
                        orc.save()
            except BadRequest as err:
                status, answer = 400, {"detail": str(err)}
            self.send_json(status, answer)

        def _post(self, route: str, body: Any) -> tuple[int, dict[str, Any]]:
            if not isinstance(body, dict):
                raise BadRequest("body must be a JSON object")
            if route == "/config":
                value = body.get("max_agents")
                if isinstance(value, bool) or not isinstance(value, int):
                    raise BadRequest("max_agents must be an integer")
                orc.max_agents = max(1, min(50, value))
                return 200, {"max_agents": orc.max_agents}
            if route == "/drain":
                orc.draining = True
                return 200, {"status": "draining", "active_agents": orc.agents}
            if route == "/drain/cancel":
                orc.draining = False
                return 200, {"status": "cancelled"}
            if route == "/usage":
                if "agents" in body:
                    orc.agents = int(_number(body["agents"], "agents"))
                if "spent_usd" in body:
                    orc.spent_usd = _number(body["spent_usd"], "spent_usd")
                return 200, orc.status()
            if route == "/tasks":
                task_id = f"t-{uuid.uuid4().hex[:8]}"
                deadline = body.get("deadline")
                task = {
                    "id": task_id,
                    "title": str(body.get("title", ""))[:200],
                    "status": "open",
                    "deadline": _number(deadline, "deadline") if deadline is not None else None,
                }
                orc.tasks[task_id] = task
                return 201, task
            match = TASK_FAIL.match(route)
            if match:
                task = orc.tasks.get(unquote(match.group(1)))
                if task is None:
                    return 404, {"detail": "no such task"}
                if task["status"] not in OPEN:
                    return 409, {"detail": f"task is already {task['status']}"}
                task["status"] = "failed"
                task["reason"] = str(body.get("reason", ""))[:200]
                return 200, task
            return 404, {"detail": "not found"}

    return OrchestratorHandler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentwatch.demo.orchestrator",
        description="A tiny orchestrator speaking the Bernstein API subset agentwatch uses.",
    )
    parser.add_argument("--listen", default="127.0.0.1:8052", help="HOST:PORT (127.0.0.1:8052)")
    parser.add_argument("--state-file", type=Path, required=True, help="JSON state file")
    parser.add_argument("--budget-usd", type=float, default=0.0, help="run budget (0: none)")
    parser.add_argument("--max-agents", type=int, default=4, help="initial max_agents")
    parser.add_argument("--token-env", help="environment variable holding a bearer token")
    args = parser.parse_args(argv)
    token = os.environ.get(args.token_env, "") if args.token_env else None
    if args.token_env and not token:
        print(f"${args.token_env} is empty", file=sys.stderr)
        return 2
    orc = Orchestrator(args.state_file, args.budget_usd, args.max_agents)
    try:
        server = make_server(args.listen, make_handler(orc, token))
    except (OSError, ValueError) as err:
        print(f"cannot listen on {args.listen}: {err}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(f"demo orchestrator on http://{args.listen}, state {args.state_file}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
