"""The Bernstein adapter: push the decision through its task server, read its status back.

Writes: POST /config {"max_agents": N}, POST /drain, POST /drain/cancel, POST /tasks/{id}/fail
(bearer token optional). Reads: GET /status, GET /costs/current, GET /drain, GET /tasks, as
`agentwatch_orchestrator_*` so rules can use the run's spend, budget, agents and deadlines.
Answers are parsed tolerantly (fields vary between Bernstein versions); what is missing is left
out, never guessed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import requests

from agentwatch.controller.adapters import AdapterError, Reading, count, http_session, number
from agentwatch.controller.policy import TASK_ID
from agentwatch.controller.web import HttpError, join, redact, request_json
from agentwatch.core.log import FailureGate

log = logging.getLogger("agentwatch.controller")

BERNSTEIN_MAX_AGENTS = 50  # Bernstein clamps POST /config to 1..50
TASK_STATUSES = ("open", "claimed", "in_progress", "done", "failed", "blocked", "cancelled")
OPEN_STATUSES = {"open", "claimed", "in_progress", "pending", "blocked"}
MAX_DEADLINE_SERIES = 100
FAILED_TASK_MEMORY = 3600.0  # seconds a failed task id is remembered after its alert went
KNOWN_DEADLINES = 200  # deadlines remembered from past /tasks reads, for the fail reason


def fail_reason(deadline: float | None, now: float, alerts: str) -> str:
    """The reason posted with a fail: it states the deadline, so the next attempt (and the
    human reading the task) knows why and that a retry needs a new one."""
    if deadline is None:
        return f"Deadline exceeded (agentwatch alert {alerts}). A retry needs a new deadline."
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(deadline))
    ago = max(now - deadline, 0.0)
    return (
        f"Deadline exceeded: the deadline {when} passed {ago:.0f} s ago (agentwatch alert "
        f"{alerts}). A retry needs a new deadline."
    )


class BernsteinAdapter:
    """Bernstein's task server: POST /config, /drain, /drain/cancel, /tasks/{id}/fail.

    Spawning is gated (pause, stop, open breaker: effective_max_agents 0) with POST /drain,
    which freezes task claiming without killing running agents; Bernstein's max_agents cannot
    be 0. The drain is cancelled when spawning may resume, but only if this adapter started it.
    """

    name = "bernstein"

    def __init__(
        self, url: str, token: str | None, timeout: float, session: requests.Session | None = None
    ):
        self.url = url
        self.timeout = timeout
        self.session = session or http_session(token)
        self.read_gates = {
            path: FailureGate(log, f"Bernstein GET {redact(url)}{path}")
            for path in ("/status", "/costs/current", "/drain", "/tasks")
        }
        self.known_deadlines: dict[str, float] = {}

    @staticmethod
    def desired(public: Mapping[str, Any]) -> tuple[int, bool]:
        """(max_agents to configure, whether claiming must be frozen)."""
        effective, level = int(public["effective_max_agents"]), int(public["max_agents"])
        target = effective if effective > 0 else level
        return max(1, min(BERNSTEIN_MAX_AGENTS, target)), effective == 0

    def _unfailed(self, public: Mapping[str, Any], memo: dict[str, Any]) -> list[str]:
        done = memo.get("failed_tasks")
        if not isinstance(done, dict):
            done = memo["failed_tasks"] = {}
        return [task for task in public.get("fail_tasks", []) if task not in done]

    def pending(self, public: dict[str, Any], memo: dict[str, Any]) -> bool:
        config, drain = self.desired(public)
        return (
            memo.get("config") != config
            or bool(memo.get("drained")) != drain
            or bool(self._unfailed(public, memo))
        )

    def _post(self, path: str, body: Any = None) -> None:
        try:
            request_json(
                self.session, "POST", join(self.url, path), self.timeout, body, expect_json=False
            )
        except HttpError as err:
            raise AdapterError(str(err)) from err

    def apply(self, public: dict[str, Any], memo: dict[str, Any], now: float) -> None:
        config, drain = self.desired(public)
        if drain and not memo.get("drained"):
            self._post("/drain")  # freeze first, so nothing is claimed at the old level
            memo["drained"] = True
        if memo.get("config") != config:
            self._post("/config", {"max_agents": config})
            memo["config"] = config
        if not drain and memo.get("drained"):
            self._post("/drain/cancel")
            memo["drained"] = False
        self._fail_tasks(public, memo, now)

    def _fail_tasks(self, public: dict[str, Any], memo: dict[str, Any], now: float) -> None:
        self._unfailed(public, memo)  # makes sure the memo holds a mapping
        done: dict[str, float] = memo["failed_tasks"]
        wanted = set(public.get("fail_tasks", []))
        for task, at in list(done.items()):
            when = number(at)
            if task not in wanted and (when is None or now - when > FAILED_TASK_MEMORY):
                del done[task]
        reasons = ", ".join(public.get("actions", {}).get("fail_task", [])) or "deadline"
        for task in self._unfailed(public, memo):
            path = f"/tasks/{quote(task, safe='')}/fail"
            body = {"reason": fail_reason(self.known_deadlines.get(task), now, reasons)}
            try:
                request_json(self.session, "POST", join(self.url, path), self.timeout, body, False)
            except HttpError as err:
                if err.status in (404, 409):  # gone or already final: nothing left to do
                    log.info("task %s could not be failed (HTTP %s): skipped", task, err.status)
                else:
                    raise AdapterError(str(err)) from err
            else:
                log.info("told %s to fail task %s (%s)", redact(self.url), task, reasons)
            done[task] = now

    def _get(self, path: str) -> Any:
        gate = self.read_gates[path]
        try:
            payload = request_json(self.session, "GET", join(self.url, path), self.timeout)
        except HttpError as err:
            gate.failed(err)
            return None
        gate.succeeded()
        return payload

    def observe(self) -> Reading:
        """/status, /costs/current, /drain and /tasks into one reading; parts that fail are
        left out. Bernstein 3.23.0 answers /status with the task counts at the top level, a
        `summary` (agents, cost_usd, max_agents) and `agents`/`tasks` as {count, items}; older
        or other servers put them at the top level: both are read, the summary first."""
        status = self._get("/status")
        if not isinstance(status, dict):
            if status is not None:
                self.read_gates["/status"].failed("answer is not a JSON object")
            return Reading(up=False)
        reading = Reading(up=True)
        summary = status.get("summary")
        layers = [summary, status] if isinstance(summary, dict) else [status]

        def first(*keys: str) -> Any:
            for layer in layers:
                for key in keys:
                    if layer.get(key) is not None:
                        return layer[key]
            return None

        reading.agents = count(first("agents", "active_agents"))
        reading.max_agents = number(first("max_agents"))
        reading.cost_usd = number(first("cost_usd", "total_cost_usd"))
        draining = status.get("draining")
        reading.draining = draining if isinstance(draining, bool) else None
        counts = status.get("tasks")
        if isinstance(counts, dict) and not any(name in counts for name in TASK_STATUSES):
            counts = None  # {count, items}: the counts are at the top level
        for name in TASK_STATUSES:
            value = number(first(name) if counts is None else counts.get(name))
            if value is not None:
                reading.tasks[name] = value
        costs = self._get("/costs/current")
        if isinstance(costs, dict):
            spent = number(costs.get("spent_usd"))
            reading.cost_usd = spent if spent is not None else reading.cost_usd
            reading.budget_usd = number(costs.get("budget_usd"))
        if reading.draining is None:
            drain = self._get("/drain")
            if isinstance(drain, dict) and isinstance(drain.get("draining"), bool):
                reading.draining = drain["draining"]
        reading.deadlines = self._deadlines(self._get("/tasks"))
        self.known_deadlines.update(reading.deadlines)
        if len(self.known_deadlines) > KNOWN_DEADLINES:
            latest = sorted(self.known_deadlines.items(), key=lambda item: item[1])
            self.known_deadlines = dict(latest[-KNOWN_DEADLINES:])
        return reading

    @staticmethod
    def _deadlines(payload: Any) -> dict[str, float]:
        tasks = payload.get("tasks") if isinstance(payload, dict) else payload
        if not isinstance(tasks, list):
            return {}
        found: dict[str, float] = {}
        for task in tasks:
            if not isinstance(task, dict):
                continue
            task_id, deadline = task.get("id"), number(task.get("deadline"))
            if (
                isinstance(task_id, str)
                and TASK_ID.match(task_id)
                and deadline is not None
                and deadline > 0
                and task.get("status") in OPEN_STATUSES
            ):
                found[task_id] = deadline
        nearest = sorted(found.items(), key=lambda item: item[1])[:MAX_DEADLINE_SERIES]
        return dict(nearest)

    @staticmethod
    def reconcile(reading: Reading, memo: dict[str, Any]) -> None:
        """Re-apply what the orchestrator lost (a restart, a manual edit) on the next push.

        max_agents is re-pushed only when the reported value changed since the last reading:
        Bernstein 3.23.0's /status reports its loaded config, which takes up the run overlay
        that POST /config writes only at the orchestrator's hot reload (never under a bare
        `bernstein serve`), so a mere difference would re-post the same value every cycle."""
        if not reading.up:
            return
        seen, memo["seen_max_agents"] = memo.get("seen_max_agents"), reading.max_agents
        if (
            reading.max_agents is not None
            and reading.max_agents != seen
            and memo.get("config") not in (None, reading.max_agents)
        ):
            memo.pop("config", None)
        if reading.draining is False and memo.get("drained"):
            memo["drained"] = False
