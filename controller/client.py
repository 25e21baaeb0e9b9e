"""Read the controller's decision from any orchestrator: a state file path or a /throttle URL.

    from agentwatch.controller.client import read
    throttle = read("~/.local/state/agentwatch/controller.json", default_max_agents=2)
    if throttle.should_stop: drain_and_exit()
    elif throttle.may_spawn(running=len(agents)) and throttle.tier_allowed("opus"): spawn()

When the decision cannot be read (no file, controller down, garbage, older than `max_age`
seconds) the answer is a safe default: `default_max_agents` agents, nothing paused or
deferred, with `available` False so the caller can tell. The default is the caller's choice:
a small number keeps a run going at low risk while agentwatch itself is down.

When the controller's listener has a web config (controller.web_config_file), pass what it
asks for: `auth=("user", "password")` for basic auth, `ca_file=` to verify its certificate
(a self-signed one), `client_cert=(cert_file, key_file)` for RequireAndVerifyClientCert.
"""

from __future__ import annotations

import base64
import http.client
import json
import math
import os
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentwatch.core.bounded import STATE_LIMIT, read_text

TIERS = ("opus", "sonnet", "haiku")


@dataclass(frozen=True)
class Throttle:
    """The decision, as far as an orchestrator needs it."""

    max_agents: int
    effective_max_agents: int
    paused: bool = False
    should_stop: bool = False
    breaker: str = "closed"
    deferred_tiers: tuple[str, ...] = ()
    fail_tasks: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    updated_at: float | None = None
    available: bool = True
    problem: str = ""  # why the default is in use

    def may_spawn(self, running: int) -> bool:
        """Whether one more agent may start now, given how many run."""
        return not self.should_stop and running < self.effective_max_agents

    def tier_allowed(self, tier: str) -> bool:
        return tier not in self.deferred_tiers


def default(max_agents: int, problem: str) -> Throttle:
    return Throttle(max_agents, max_agents, available=False, problem=problem)


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str))


def _integer(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def parse(payload: Any, default_max_agents: int, max_age: float | None, now: float) -> Throttle:
    """A Throttle from the decision JSON, or the default when it is unusable or too old."""
    if not isinstance(payload, dict):
        return default(default_max_agents, "decision is not a JSON object")
    level = _integer(payload.get("max_agents"))
    effective = _integer(payload.get("effective_max_agents"))
    if level is None:
        return default(default_max_agents, "decision has no valid max_agents")
    if effective is None:  # an older or foreign writer: fold the flags in here
        paused, stop = payload.get("paused") is True, payload.get("should_stop") is True
        breaker = payload.get("breaker")
        effective = 0 if paused or stop or breaker == "open" else level
        effective = min(1, effective) if breaker == "half_open" else effective
    updated = payload.get("updated_at")
    updated_at = None
    if isinstance(updated, int | float) and not isinstance(updated, bool):
        updated_at = float(updated) if math.isfinite(updated) else None
    if max_age is not None and (updated_at is None or now - updated_at > max_age):
        return default(default_max_agents, "decision is older than max_age")
    breaker = payload.get("breaker")
    return Throttle(
        max_agents=level,
        effective_max_agents=effective,
        paused=payload.get("paused") is True,
        should_stop=payload.get("should_stop") is True,
        breaker=breaker if breaker in ("closed", "open", "half_open") else "closed",
        deferred_tiers=tuple(t for t in _strings(payload.get("deferred_tiers")) if t in TIERS),
        fail_tasks=_strings(payload.get("fail_tasks")),
        reasons=_strings(payload.get("reasons")),
        updated_at=updated_at,
    )


@dataclass(frozen=True)
class Access:
    """How to reach a /throttle behind TLS and basic auth; all optional."""

    auth: tuple[str, str] | None = None
    ca_file: str | None = None
    client_cert: tuple[str, str] | None = None

    def request(self, url: str) -> urllib.request.Request:
        request = urllib.request.Request(url)
        if self.auth is not None:
            pair = f"{self.auth[0]}:{self.auth[1]}".encode()
            request.add_header("Authorization", "Basic " + base64.b64encode(pair).decode())
        return request

    def context(self) -> ssl.SSLContext | None:
        if self.ca_file is None and self.client_cert is None:
            return None
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.client_cert is not None:
            context.load_cert_chain(*self.client_cert)
        return context


MAX_ANSWER = 1 << 20


def _body(reply: http.client.HTTPResponse, end: float) -> bytes:
    """At most MAX_ANSWER bytes, given up at the monotonic deadline `end` (a server trickling
    bytes cannot hold the orchestrator; each wait for a byte is at most the timeout)."""
    chunks: list[bytes] = []
    size = 0
    while size < MAX_ANSWER:
        if time.monotonic() > end:
            raise TimeoutError("the decision took longer than the timeout")
        chunk = reply.read1(MAX_ANSWER - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _load(source: str, timeout: float, access: Access) -> Any:
    if source.startswith(("http://", "https://")):
        request = access.request(source)
        end = time.monotonic() + timeout
        with urllib.request.urlopen(request, timeout=timeout, context=access.context()) as reply:
            return json.loads(_body(reply, end))
    return json.loads(read_text(Path(os.path.expanduser(source)), STATE_LIMIT))


def read(
    source: str | os.PathLike[str],
    default_max_agents: int = 1,
    max_age: float | None = 300.0,
    timeout: float = 2.0,
    now: float | None = None,
    auth: tuple[str, str] | None = None,
    ca_file: str | None = None,
    client_cert: tuple[str, str] | None = None,
) -> Throttle:
    """The decision from a state file or a /throttle URL; never raises.

    `auth`, `ca_file` and `client_cert` are for a /throttle served with TLS / basic auth."""
    now = time.time() if now is None else now
    access = Access(auth, ca_file, client_cert)
    try:
        payload = _load(os.fspath(source), timeout, access)
    except (
        OSError,
        urllib.error.URLError,
        http.client.HTTPException,
        ValueError,
        RecursionError,
    ) as err:
        return default(default_max_agents, f"cannot read the decision: {type(err).__name__}")
    return parse(payload, default_max_agents, max_age, now)
