"""Read the alerts back from one or more Alertmanagers and merge them.

An HA pair gossips silences but not alerts (Prometheus sends every alert to every peer), so the
reader asks every configured Alertmanager, merges the answers by fingerprint and carries on
while any one answers. An alert counts as suppressed when any peer that knows it says it is
silenced or inhibited: a silence created on one peer may not have reached the other yet, and an
inhibiting alert held by one peer is firing all the same. Only alerts that carry the
`agentwatch_action` label matter to the controller; the rest are for humans.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from calendar import timegm
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import requests

from agentwatch.controller.web import HttpError, join, redact, request_json
from agentwatch.core.log import FailureGate
from agentwatch.core.sanitize import label_value

log = logging.getLogger("agentwatch.controller")

ACTION_LABEL = "agentwatch_action"
# Alerts whose inhibition holds back only the message, never the controller's action.
MESSAGE_ONLY_INHIBITORS = frozenset({"AgentwatchBurnPattern"})
ACTIONS = (
    "shrink",
    "pause",
    "breaker",
    "stop",
    "defer_tier",
    "fail_task",
    "nudge",
    "grow",
    "burn",
)
# RFC 3339 as Alertmanager writes startsAt: nanoseconds optional, Z or a numeric offset.
_TIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|z|[+-]\d{2}:\d{2})$"
)


def parse_time(text: str) -> float | None:
    """Unix seconds of an RFC 3339 timestamp, None for anything else (never an error: an
    unreadable startsAt only means the alert's age is unknown)."""
    match = _TIME.match(text) if len(text) <= 64 else None
    if not match:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7), match.group(8)
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        return None
    try:
        seconds = float(timegm((year, month, day, hour, minute, second, 0, 0, 0)))
    except (OverflowError, ValueError):
        return None
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        seconds -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return seconds + (float(fraction) if fraction else 0.0)


def parse_rate(value: Any) -> float | None:
    """The `rate` annotation (a plain non-negative number as text), else None."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


@dataclass(frozen=True)
class Alert:
    """One alert as the controller sees it: labels plus whether a human acknowledged it."""

    name: str
    labels: Mapping[str, str]
    fingerprint: str
    starts_at: str = ""
    silenced: bool = False
    inhibited: bool = False
    rate: float | None = None  # the `rate` annotation of burn alerts (tokens per hour)
    inhibitors: tuple[str, ...] = ()  # fingerprints of the alerts that inhibit it
    unexplained: bool = False  # suppressed with neither silence nor inhibitor named

    @property
    def started(self) -> float | None:
        """startsAt in Unix seconds (None when absent or unreadable)."""
        return parse_time(self.starts_at) if self.starts_at else None

    @property
    def action(self) -> str | None:
        return self.labels.get(ACTION_LABEL) or None

    @property
    def actionable(self) -> bool:
        """Active, not silenced (= acknowledged), not inhibited, and asking for an action."""
        return self.action is not None and not self.silenced and not self.inhibited


@dataclass
class Snapshot:
    """The merged answer of one read: None alerts when no Alertmanager answered."""

    alerts: list[Alert] | None
    up: dict[str, bool] = field(default_factory=dict)  # redacted URL -> answered
    malformed: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # HttpError reason -> peers


class MalformedAnswer(ValueError):
    pass


class MalformedAlerts(HttpError):
    """An answer with malformed elements: unusable as a whole, the elements counted."""

    def __init__(self, message: str, malformed: int):
        super().__init__("invalid", message)
        self.malformed = malformed


def _fingerprint(labels: Mapping[str, str]) -> str:
    text = "\x00".join(f"{key}={labels[key]}" for key in sorted(labels))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


STATES = ("active", "suppressed", "unprocessed")


def _string_list(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise MalformedAnswer(f"{what} is not a list of strings")
    return value


def unnamed(fingerprint: str) -> str:
    """What an alert without `alertname` is called in reasons and logs: never an empty
    string, which would read as "no actionable alerts"."""
    return f"(alert without alertname, fingerprint {fingerprint[:16]})"


def parse_alert(item: Any) -> Alert:
    """One element of GET /api/v2/alerts; raises MalformedAnswer on anything unexpected."""
    if not isinstance(item, Mapping):
        raise MalformedAnswer("alert is not an object")
    labels = item.get("labels")
    if not isinstance(labels, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in labels.items()
    ):
        raise MalformedAnswer("alert labels are not a string mapping")
    status = item.get("status")
    if status is None:
        status = {}
    if not isinstance(status, Mapping):
        raise MalformedAnswer("alert status is not an object")
    silenced_by = _string_list(status.get("silencedBy"), "silencedBy")
    inhibited_by = _string_list(status.get("inhibitedBy"), "inhibitedBy")
    state = status.get("state", "active")
    if state not in STATES:
        raise MalformedAnswer("alert state is not active, suppressed or unprocessed")
    suppressed_unexplained = state == "suppressed" and not silenced_by and not inhibited_by
    fingerprint = item.get("fingerprint")
    if fingerprint is not None and not isinstance(fingerprint, str):
        raise MalformedAnswer("alert fingerprint is not a string")
    if not fingerprint:
        fingerprint = _fingerprint(labels)
    starts_at = item.get("startsAt")
    annotations = item.get("annotations")
    rate = parse_rate(annotations.get("rate")) if isinstance(annotations, Mapping) else None
    name = labels.get("alertname", "")
    return Alert(
        name=label_value(name) if name else unnamed(label_value(fingerprint)),
        labels=dict(labels),
        fingerprint=fingerprint,
        starts_at=starts_at if isinstance(starts_at, str) else "",
        silenced=bool(silenced_by),
        inhibited=bool(inhibited_by) or suppressed_unexplained,
        rate=rate,
        inhibitors=tuple(inhibited_by),
        unexplained=suppressed_unexplained,
    )


def parse_alerts(payload: Any) -> tuple[list[Alert], int]:
    """All well-formed alerts of one answer and how many elements were malformed (the
    reader refuses an answer with any: what it cannot validate it cannot call "no alerts")."""
    if not isinstance(payload, list):
        raise MalformedAnswer(f"expected a JSON list of alerts, got {type(payload).__name__}")
    alerts: list[Alert] = []
    malformed = 0
    for item in payload:
        try:
            alerts.append(parse_alert(item))
        except MalformedAnswer:
            malformed += 1
    return alerts, malformed


def merge(answers: Iterable[list[Alert]]) -> list[Alert]:
    """One alert per fingerprint; suppressed when any peer says so."""
    merged: dict[str, Alert] = {}
    for alerts in answers:
        for alert in alerts:
            seen = merged.get(alert.fingerprint)
            if seen is None:
                merged[alert.fingerprint] = alert
                continue
            starts = [a for a in (seen, alert) if a.started is not None]
            earliest = min(starts, key=lambda a: a.started or 0.0) if starts else seen
            merged[alert.fingerprint] = Alert(
                name=seen.name,
                labels=seen.labels,
                fingerprint=seen.fingerprint,
                starts_at=earliest.starts_at
                or min(filter(None, (seen.starts_at, alert.starts_at)), default=""),
                silenced=seen.silenced or alert.silenced,
                inhibited=seen.inhibited or alert.inhibited,
                rate=seen.rate if seen.rate is not None else alert.rate,
                inhibitors=tuple(dict.fromkeys(seen.inhibitors + alert.inhibitors)),
                unexplained=seen.unexplained or alert.unexplained,
            )
    return sorted(message_only(merged), key=lambda a: (a.name, a.fingerprint))


def message_only(alerts: Mapping[str, Alert]) -> list[Alert]:
    """The alerts with an inhibition that only holds back a message counted as not inhibited:
    a burn pattern (rules/burn-patterns.rules.yml) replaces the burns' separate messages, but
    each burn still escalates. An inhibitor the answer does not hold counts as a real one."""
    found = []
    for alert in alerts.values():
        if (
            alert.inhibited
            and alert.inhibitors
            and not alert.unexplained
            and all(
                fp in alerts and alerts[fp].name in MESSAGE_ONLY_INHIBITORS
                for fp in alert.inhibitors
            )
        ):
            alert = replace(alert, inhibited=False)
        found.append(alert)
    return found


class AlertReader:
    """Asks every configured Alertmanager each cycle; logs failures once per peer."""

    def __init__(
        self,
        urls: list[str],
        timeout: float,
        session: requests.Session | None = None,
        match: Mapping[str, str] | None = None,
    ):
        self.urls = list(urls)
        self.timeout = timeout
        # Only alerts carrying these labels concern this controller (e.g. its host's
        # `instance` when one Alertmanager serves several workstations).
        self.match = dict(match or {})
        self.session = session or requests.Session()
        self.gates = {url: FailureGate(log, f"Alertmanager {redact(url)}") for url in self.urls}

    def fetch_one(self, url: str) -> list[Alert]:
        """The alerts of one peer; HttpError for any answer that is not fully valid."""
        where = f"GET {redact(url)}/api/v2/alerts"
        payload = request_json(self.session, "GET", join(url, "/api/v2/alerts"), self.timeout)
        try:
            alerts, malformed = parse_alerts(payload)
        except MalformedAnswer as err:
            raise HttpError("invalid", f"{where}: {err}") from err
        if malformed:
            count = f"{malformed} of {len(payload)}"
            raise MalformedAlerts(f"{where}: {count} alerts are malformed", malformed)
        return [a for a in alerts if all(a.labels.get(k) == v for k, v in self.match.items())]

    def read(self) -> Snapshot:
        answers: list[list[Alert]] = []
        snapshot = Snapshot(alerts=None)
        for url in self.urls:
            try:
                alerts = self.fetch_one(url)
            except Exception as err:  # whatever went wrong, this peer is unusable
                if not isinstance(err, HttpError):
                    err = HttpError("invalid", f"GET {redact(url)}: {type(err).__name__}")
                snapshot.up[redact(url)] = False
                snapshot.malformed += err.malformed if isinstance(err, MalformedAlerts) else 0
                snapshot.errors[err.reason] = snapshot.errors.get(err.reason, 0) + 1
                self.gates[url].failed(err)
                continue
            self.gates[url].succeeded()
            snapshot.up[redact(url)] = True
            answers.append(alerts)
        if answers:
            snapshot.alerts = merge(answers)
        return snapshot
