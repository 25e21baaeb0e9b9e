"""What the front page needs from the rest of the stack, read in the background.

Alertmanager's alerts, the controller's /throttle decision and Prometheus's spend history
are read by one daemon thread with short timeouts, never by a request: a page is rendered
from the last reading, so a stack that is down or slow shows "unreachable" and never slows
the page. The thread reads only while someone looks (a page served in the last IDLE_AFTER
seconds) and starts with the first page.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import unquote, urlencode, urlsplit

log = logging.getLogger("agentwatch.exporter")

TIMEOUT = 2.0  # seconds per read, whole answer included (socket timeout per operation)
INTERVAL = 10.0  # seconds between readings while the page is looked at
IDLE_AFTER = 300.0  # no page for this long: stop reading until the next one
MAX_BODY = 4 << 20
HOURS = 24  # spend-per-hour chart width
SPEND_PER_HOUR = "sum(increase(agentwatch_cost_usd_total[1h]))"
T = TypeVar("T")


@dataclass
class Endpoints:
    """Base URLs (scheme://host:port) of the stack's parts; None when not configured."""

    prometheus: str | None = None
    alertmanager: str | None = None
    controller: str | None = None  # the controller's base URL; /throttle is read


@dataclass
class Alert:
    """One firing alert as the front page lists it."""

    name: str
    severity: str
    summary: str
    starts_at: float | None  # unix seconds; None when Alertmanager's time is unreadable
    where: str  # project / session / instance, whichever the alert names


@dataclass
class Reading:
    """One source's last answer: `error` is None when it answered and was understood."""

    error: str | None = "not read yet"
    at: float | None = None


@dataclass
class Remote:
    """What the front page read from Alertmanager and the controller."""

    endpoints: Endpoints = field(default_factory=Endpoints)
    alerts: list[Alert] = field(default_factory=list)
    silenced: int = 0
    inhibited: int = 0
    alertmanager: Reading = field(default_factory=Reading)
    throttle: dict[str, Any] | None = None
    controller: Reading = field(default_factory=Reading)
    spend_per_hour: list[tuple[float, float]] = field(default_factory=list)
    prometheus: Reading = field(default_factory=Reading)


class HttpError(Exception):
    """A read that gave no usable answer; the message is what the page shows."""


def get(url: str, timeout: float = TIMEOUT) -> bytes:
    """GET without proxies or redirects; the body if 200, else HttpError with a short why."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HttpError("not an http(s) URL")
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname, parts.port, timeout=timeout)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = {"Accept": "application/json"}
    if parts.username is not None:  # http://user:pass@host, as the controller accepts it
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        body = response.read(MAX_BODY + 1)
    except TimeoutError as err:
        raise HttpError("no answer in time") from err
    except (OSError, http.client.HTTPException) as err:
        raise HttpError("unreachable") from err
    finally:
        connection.close()
    if response.status != 200:
        raise HttpError(f"answered HTTP {response.status}")
    if len(body) > MAX_BODY:
        raise HttpError("answer too large")
    return body


def get_json(url: str, timeout: float = TIMEOUT) -> Any:
    try:
        return json.loads(get(url, timeout))
    except (ValueError, RecursionError) as err:
        raise HttpError("answered something that is not JSON") from err


def read_alerts(base: str) -> tuple[list[Alert], int, int]:
    """Firing alerts (active: neither silenced nor inhibited), and how many are suppressed."""
    return parse_alerts(get_json(f"{base.rstrip('/')}/api/v2/alerts"))


def parse_alerts(answer: Any) -> tuple[list[Alert], int, int]:
    """Alertmanager's alert list; elements that are not alerts are skipped."""
    if not isinstance(answer, list):
        raise HttpError("answered something that is not an alert list")
    firing, silenced, inhibited = [], 0, 0
    for item in answer:
        if not isinstance(item, dict) or not isinstance(item.get("labels"), dict):
            continue
        found = item.get("status")
        status: dict[str, Any] = found if isinstance(found, dict) else {}
        labels = _strings(item.get("labels"))
        annotations = _strings(item.get("annotations"))
        if status.get("silencedBy"):
            silenced += 1
        elif status.get("inhibitedBy"):
            inhibited += 1
        elif status.get("state", "active") == "active":
            where = " / ".join(
                labels[key] for key in ("project", "session", "instance") if labels.get(key)
            )
            firing.append(
                Alert(
                    name=labels.get("alertname", "?"),
                    severity=labels.get("severity", ""),
                    summary=annotations.get("summary", ""),
                    starts_at=parse_time(item.get("startsAt")),
                    where=where,
                )
            )
    order = {"critical": 0, "warning": 1, "info": 2}
    firing.sort(key=lambda a: (order.get(a.severity, 3), a.name, a.where))
    return firing, silenced, inhibited


_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(\.\d+)?(Z|z|[+-]\d{2}:\d{2})$")


def parse_time(value: Any) -> float | None:
    """Unix seconds of Alertmanager's RFC 3339 time (nanoseconds allowed), else None."""
    match = _RFC3339.match(value) if isinstance(value, str) and len(value) <= 64 else None
    if not match:
        return None
    day, clock, fraction, zone = match.groups()
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        stamp = datetime.fromisoformat(f"{day}T{clock}{zone}").timestamp()
    except ValueError:
        return None
    return stamp + (float(fraction) if fraction else 0.0)


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def read_throttle(base: str) -> dict[str, Any]:
    """The controller's `/throttle` decision."""
    answer = get_json(f"{base.rstrip('/')}/throttle")
    if not isinstance(answer, dict):
        raise HttpError("answered something that is not a decision")
    return answer


def _read(url: str | None, fetch: Callable[[str], T], now: float) -> tuple[T | None, Reading]:
    """One part of the stack read: its answer (None when it gave none) and how the read went."""
    if not url:
        return None, Reading("not configured", now)
    try:
        return fetch(url), Reading(None, now)
    except HttpError as err:
        return None, Reading(str(err), now)


def read_spend_per_hour(base: str, now: float) -> list[tuple[float, float]]:
    """(end of hour, USD spent in the hour before it) for the last HOURS clock hours, the
    current one included (its end is still to come: its bar grows until then)."""
    end = math.ceil(now / 3600) * 3600
    query = urlencode(
        {"query": SPEND_PER_HOUR, "start": end - (HOURS - 1) * 3600, "end": end, "step": 3600}
    )
    answer = get_json(f"{base.rstrip('/')}/api/v1/query_range?{query}")
    try:
        results = answer["data"]["result"]
        values = results[0]["values"] if results else []
        points = {float(t): float(v) for t, v in values}
        points = {t: v for t, v in points.items() if math.isfinite(v)}
    except (KeyError, IndexError, TypeError, ValueError) as err:
        raise HttpError("answered something that is not a query result") from err
    ends = [end - (HOURS - 1 - i) * 3600 for i in range(HOURS)]
    return [(end, max(0.0, _near(points, end))) for end in ends]


def _near(points: dict[float, float], at: float) -> float:
    for t, value in points.items():
        if abs(t - at) < 1.0:
            return value if value == value else 0.0  # NaN: no data
    return 0.0


class RemoteReader:
    """Keeps the latest Remote; `current()` is what a page renders and wakes the reader."""

    def __init__(self, endpoints: Endpoints, interval: float = INTERVAL) -> None:
        self.endpoints = endpoints
        self.interval = interval
        self._latest = Remote(endpoints=endpoints)
        self._wanted_at = 0.0
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def current(self) -> Remote:
        self._wanted_at = time.monotonic()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="overview", daemon=True)
                self._thread.start()
        self._wake.set()
        return self._latest

    def _run(self) -> None:
        while True:
            self._wake.clear()
            try:
                self._latest = self.read_once()
            except Exception:  # a bug here must not end the readings for good
                log.exception("the front page's background reading failed")
            if time.monotonic() - self._wanted_at > IDLE_AFTER:
                self._wake.wait()  # nobody looks: sleep until a page is asked for
            else:
                time.sleep(self.interval)

    def read_once(self, now: float | None = None) -> Remote:
        now = time.time() if now is None else now
        remote = Remote(endpoints=self.endpoints)
        ends = self.endpoints
        alerts, remote.alertmanager = _read(ends.alertmanager, read_alerts, now)
        if alerts is not None:
            remote.alerts, remote.silenced, remote.inhibited = alerts
        throttle, remote.controller = _read(ends.controller, read_throttle, now)
        if throttle is not None:
            remote.throttle = throttle
        spend, remote.prometheus = _read(
            ends.prometheus, lambda base: read_spend_per_hour(base, now), now
        )
        if spend is not None:
            remote.spend_per_hour = spend
        return remote
