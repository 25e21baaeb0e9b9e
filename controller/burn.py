"""The burn runbook (after Instar): alert first, throttle only when nobody answers, then verify.

A burn alert (`agentwatch_action: burn`) only sends a message at first. When it stays active
and unacknowledged (no silence, no inhibition) for `escalate_after` after its Alertmanager
`startsAt`, the controller treats it as a `shrink` alert; after twice that, as a `pause`.
At the first escalation it records the throttle start and the alert's `rate` annotation (the
pre-throttle rate), so the verifier rule can compare the rate `verify_after` later against
`verify_fraction` of it. The records live in the policy state, hence in the state file: a
restart neither forgets a throttle nor starts its timer again. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from agentwatch.controller.alerts import Alert
from agentwatch.core.sanitize import label_value

STEPS = ("shrink", "pause")
MAX_BURNS = 100  # entries kept; alerts are few, this only bounds a pathological Alertmanager

Key = tuple[str, str, str]  # (alertname, project, session); session "" for a project burn


@dataclass(frozen=True)
class Burn:
    """One throttled burn: when the throttle began, the rate it began at, the step now."""

    alertname: str
    project: str
    session: str
    throttled_at: float
    pre_rate: float | None
    step: str
    active: bool = True  # escalating this cycle (False once acknowledged or resolved)

    @property
    def key(self) -> Key:
        return (self.alertname, self.project, self.session)


@dataclass(frozen=True)
class Escalation:
    """A burn that escalated (or changed step) in this cycle: one log line each."""

    burn: Burn
    age: float


def key_of(alert: Alert) -> Key:
    return (
        alert.name,
        label_value(alert.labels.get("project", "")),
        label_value(alert.labels.get("session", "")),
    )


def step_for(age: float, escalate_after: float) -> str | None:
    if age >= 2 * escalate_after:
        return "pause"
    if age >= escalate_after:
        return "shrink"
    return None


def advance(
    prev: Iterable[Burn],
    alerts: Iterable[Alert],
    now: float,
    escalate_after: float,
    verify_after: float,
) -> tuple[tuple[Burn, ...], tuple[Escalation, ...]]:
    """The burn records after this cycle's alerts, and the escalations to log."""
    entries = {burn.key: burn for burn in prev}
    present: set[Key] = set()
    ages: dict[Key, tuple[float, float | None]] = {}  # key -> (oldest age, its rate)
    for alert in alerts:
        if alert.action != "burn":
            continue
        key = key_of(alert)
        present.add(key)
        started = alert.started
        if not alert.actionable or started is None:
            continue  # acknowledged, inhibited, or of unknown age: never escalates
        age = now - started
        if key not in ages or age > ages[key][0]:
            ages[key] = (age, alert.rate)
    out: dict[Key, Burn] = {}
    events: list[Escalation] = []
    for key, (age, rate) in sorted(ages.items()):
        step = step_for(age, escalate_after)
        if step is None:
            continue
        old = entries.get(key)
        if old is None:
            new = Burn(*key, throttled_at=now, pre_rate=rate, step=step)
        else:
            new = replace(old, step=step, active=True)
        if old is None or not old.active or old.step != step:
            events.append(Escalation(new, age))
        out[key] = new
    for key, old in entries.items():
        if key in out:
            continue
        if key not in present and now >= old.throttled_at + verify_after:
            continue  # the alert is gone and the verifier had its time: forget
        out[key] = replace(old, active=False)
    kept = sorted(out.values(), key=lambda b: b.throttled_at, reverse=True)[:MAX_BURNS]
    return tuple(sorted(kept, key=lambda b: b.key)), tuple(events)


def names_by_step(burns: Iterable[Burn]) -> dict[str, tuple[str, ...]]:
    """The alert names behind each escalation step, merged into the policy's actions."""
    names: dict[str, set[str]] = {}
    for burn in burns:
        if burn.active:
            names.setdefault(burn.step, set()).add(burn.alertname)
    return {step: tuple(sorted(found)) for step, found in names.items()}


def describe(event: Escalation, level: int) -> str:
    """One log line: what the controller did about the burn and why."""
    burn = event.burn
    who = f"session={burn.session}" if burn.session else f"project={burn.project}"
    did = f"shrink to {level}" if burn.step == "shrink" else "pause (no new agents)"
    minutes = max(event.age, 0.0) / 60
    return f"burn {burn.alertname} {who} unacknowledged for {minutes:.0f}m: {did}"
