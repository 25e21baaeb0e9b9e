"""The adapter contract and the driver that applies a decision through an adapter.

An adapter pushes the decision to the orchestrator (`bernstein.py`: Bernstein's API;
`hooks.py`: a webhook or a command hook). Each keeps a small memo (persisted in the state file)
of what it already applied, so it pushes only changes, never repeats a one-shot action (failing
a task), and undoes only what it did itself. A failed push is retried with exponential backoff
by the `Driver`, counted in `agentwatch_controller_adapter_errors_total{adapter}` and logged
through a gate.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import requests

from agentwatch.controller.state import Memory, essence
from agentwatch.core.log import FailureGate

log = logging.getLogger("agentwatch.controller")

ADAPTERS = ("bernstein", "webhook", "command")


class AdapterError(Exception):
    """A push to the orchestrator failed; retried with backoff."""


class AdapterConfigError(ValueError):
    """The orchestrator section of the config cannot work (refused at start)."""


@dataclass
class Reading:
    """What the orchestrator reports about itself; None fields were not reported."""

    up: bool = False
    cost_usd: float | None = None
    budget_usd: float | None = None
    agents: float | None = None
    max_agents: float | None = None
    draining: bool | None = None
    tasks: dict[str, float] = field(default_factory=dict)
    deadlines: dict[str, float] = field(default_factory=dict)


class Adapter(Protocol):
    name: str

    def pending(self, public: dict[str, Any], memo: dict[str, Any]) -> bool: ...

    def apply(self, public: dict[str, Any], memo: dict[str, Any], now: float) -> None: ...


def number(value: Any) -> float | None:
    """A finite number from untrusted JSON, else None (booleans are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def count(value: Any) -> float | None:
    """A number, or the length of a list or object (e.g. `agents` as a list)."""
    if isinstance(value, list | dict):
        return float(len(value))
    return number(value)


def digest(public: dict[str, Any]) -> str:
    text = json.dumps(essence(public), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def http_session(token: str | None) -> requests.Session:
    """An HTTP session that sends the bearer token, if there is one."""
    http = requests.Session()
    if token:
        http.headers["Authorization"] = f"Bearer {token}"
    return http


class Driver:
    """Applies the decision through one adapter: only when something is pending, with
    exponential backoff after a failure, counting errors into the controller's memory."""

    BACKOFF_START = 5.0
    BACKOFF_MAX = 300.0

    def __init__(self, adapter: Adapter, memory: Memory):
        self.adapter = adapter
        self.memory = memory
        self.gate = FailureGate(log, f"adapter {adapter.name}")
        self.reading: Reading | None = None

    @property
    def memo(self) -> dict[str, Any]:
        """The adapter's persisted memo; a malformed one (a hand-edited file) starts over."""
        memo = self.memory.adapter.get(self.adapter.name)
        if not isinstance(memo, dict) or number(memo.get("failures", 0)) is None:
            memo = self.memory.adapter[self.adapter.name] = {}
        return memo

    @property
    def failing(self) -> bool:
        return bool(self.memo.get("failures"))

    def retry_at(self) -> float | None:
        value = number(self.memo.get("retry_at"))
        return value if self.failing else None

    def push(self, public: dict[str, Any], now: float) -> None:
        memo = self.memo
        if not self.adapter.pending(public, memo):
            memo.pop("failures", None)
            memo.pop("retry_at", None)
            self.gate.succeeded()
            return
        retry_at = self.retry_at()
        if retry_at is not None and now < retry_at:
            return
        try:
            self.adapter.apply(public, memo, now)
        except AdapterError as err:
            failures = int(number(memo.get("failures")) or 0) + 1
            memo["failures"] = failures
            memo["retry_at"] = now + min(self.BACKOFF_MAX, self.BACKOFF_START * 2 ** (failures - 1))
            self.memory.count("adapter_errors", self.adapter.name)
            self.gate.failed(err)
            return
        memo.pop("failures", None)
        memo.pop("retry_at", None)
        self.gate.succeeded()

    def observe(self) -> None:
        observe = getattr(self.adapter, "observe", None)
        if observe is None:
            return
        self.reading = observe()
        reconcile = getattr(self.adapter, "reconcile", None)
        if reconcile is not None and self.reading is not None:
            reconcile(self.reading, self.memo)
