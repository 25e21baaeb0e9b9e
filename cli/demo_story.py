"""What `agentwatch up --demo` says about each of the seeds' loops, one line per step, once.

The demo exists to show the loops closing: a burn pages and, unanswered, is throttled and then
verified; a stalled pane is nudged and resumes; a quota bucket defers a model tier; a budget
pauses spawning. The status line shows the state; these lines tell the story, each step once,
from what Alertmanager holds and what the controller decided and published. Nothing here reads
a transcript, a pane or a payload.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

BURNS = ("AgentwatchSessionTokenBurn", "AgentwatchProjectTokenBurn")
STALL = "AgentwatchSessionStalledOnError"
QUOTA = ("AgentwatchQuotaElevated", "AgentwatchQuotaCritical", "AgentwatchQuotaShutdown")
INEFFECTIVE = "AgentwatchBurnThrottleIneffective"
NUDGE_GRACE = 30.0  # seconds a resume waits for the nudge behind it to show

Samples = Mapping[tuple[str, tuple[tuple[str, str], ...]], float]


@dataclass(frozen=True)
class Firing:
    """An active alert as the story needs it: name, labels, summary."""

    name: str
    labels: Mapping[str, str]
    summary: str


def firing(alerts: Any) -> list[Firing]:
    """The active (not silenced or inhibited) alerts of an Alertmanager answer."""
    found: list[Firing] = []
    for alert in alerts if isinstance(alerts, list) else []:
        if not isinstance(alert, dict):
            continue
        status, labels = alert.get("status"), alert.get("labels")
        annotations = alert.get("annotations")
        if not isinstance(labels, dict) or not isinstance(status, dict):
            continue
        if status.get("state") != "active":
            continue
        summary = annotations.get("summary", "") if isinstance(annotations, dict) else ""
        found.append(Firing(str(labels.get("alertname", "")), labels, str(summary)))
    return found


def _where(labels: Mapping[str, str]) -> str:
    session, project = labels.get("session", ""), labels.get("project", "")
    return f"session {session} of {project}" if session else f"project {project}"


def _value(samples: Samples, name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    for (sample, pairs), value in samples.items():
        if sample == name and all((key, want) in pairs for key, want in labels.items()):
            total += value
    return total


@dataclass
class Story:
    """Remembers which steps were told; `observe` returns the lines that are new."""

    told: set[str] = field(default_factory=set)
    stalled: dict[str, str] = field(default_factory=dict)  # pane -> state, while it pages
    nudges_before: float = math.inf  # nudges sent as of the last look (none looked yet)
    nudges_at_stall: float = math.inf
    resumed: dict[str, float] = field(default_factory=dict)  # pane -> when its alert went

    def _once(self, key: str, line: str, out: list[str]) -> None:
        if key not in self.told:
            self.told.add(key)
            out.append(line)

    def observe(
        self,
        alerts: Any,
        decision: Mapping[str, Any] | None,
        samples: Samples,
        now: float,
        effect: float | None = None,
    ) -> list[str]:
        """New lines; `effect` is the burn's current rate over its pre-throttle rate."""
        if not isinstance(alerts, list):
            return []  # Alertmanager did not answer: no news, and nothing has resolved
        active = firing(alerts)
        decision = decision or {}
        out: list[str] = []
        self._burn(active, decision, samples, now, effect, out)
        stalls = {a.get("labels", {}).get("pane", "?") for a in alerts
                  if isinstance(a, dict) and isinstance(a.get("labels"), dict)
                  and a["labels"].get("alertname") == STALL}  # fmt: skip
        self._stall(active, stalls, samples, now, out)
        self._quota(active, decision, out)
        self._budget(active, decision, out)
        return out

    def _burn(
        self,
        active: Iterable[Firing],
        decision: Mapping[str, Any],
        samples: Samples,
        now: float,
        effect: float | None,
        out: list[str],
    ) -> None:
        alerts = list(active)
        for alert in alerts:
            if alert.name in BURNS:
                kind = alert.labels.get("burn_kind", "heavy_work")
                self._once(
                    "burn.fired",
                    f"burn: {alert.name} fired for {_where(alert.labels)} ({kind})",
                    out,
                )
        actions = decision.get("actions") if isinstance(decision.get("actions"), dict) else {}
        for step, did in (("pause", "paused spawning"), ("shrink", "shrank max_agents")):
            names = actions.get(step) or [] if isinstance(actions, dict) else []
            if any(name in BURNS for name in names):
                level = decision.get("max_agents")
                what = did if step == "pause" else f"{did} to {level}"
                self._once(
                    f"burn.{step}",
                    f"burn: still unacknowledged, so the controller {what}",
                    out,
                )
        if any(alert.name == INEFFECTIVE for alert in alerts):
            self._once(
                "burn.verdict",
                f"burn: verifier: the throttle did not slow the burn down ({INEFFECTIVE} fired)",
                out,
            )
        due = _value(samples, "agentwatch_controller_burn_verify_due_timestamp_seconds")
        target = _value(samples, "agentwatch_controller_burn_target_rate")
        pre = _value(samples, "agentwatch_controller_burn_pre_throttle_rate")
        # past due plus the rule's `for`: had the rate stayed above target, the alert had fired
        if due and now > due + 90 and effect is not None and pre and effect * pre < target:
            self._once(
                "burn.verdict",
                f"burn: verifier: the rate fell to {effect:.0%} of its pre-throttle rate: "
                "the throttle worked",
                out,
            )

    def _stall(
        self,
        active: Iterable[Firing],
        present: set[str],
        samples: Samples,
        now: float,
        out: list[str],
    ) -> None:
        """`present`: the panes with a stall alert in any state (a silenced one is no resume).
        A pane may resume before the controller's next spool write shows its nudge: the resume
        is told after the nudge, or on its own once NUDGE_GRACE has passed."""
        nudged = _value(samples, "agentwatch_controller_nudges_total", result="sent")
        paging = {
            alert.labels.get("pane", "?"): alert.labels.get("state", "?")
            for alert in active
            if alert.name == STALL
        }
        for pane, state in paging.items():
            if pane not in self.stalled:
                self._once(f"stall.fired.{pane}", f"stall: pane {pane} stuck on {state}", out)
                if "stall.nudged" not in self.told:  # the count before this look, if known
                    before = nudged if math.isinf(self.nudges_before) else self.nudges_before
                    self.nudges_at_stall = min(self.nudges_at_stall, before)
        self.nudges_before = nudged
        stalls_seen = any(key.startswith("stall.fired.") for key in self.told)
        if stalls_seen and nudged > self.nudges_at_stall:
            self._once("stall.nudged", "stall: the controller nudged the pane", out)
        for pane in set(self.stalled) - present:
            self.resumed.setdefault(pane, now)
        for pane, since in sorted(self.resumed.items()):
            if "stall.nudged" in self.told or now - since >= NUDGE_GRACE:
                self._once(
                    f"stall.resumed.{pane}",
                    f"stall: pane {pane} resumed (its alert resolved)",
                    out,
                )
        self.resumed = {
            p: t for p, t in self.resumed.items() if f"stall.resumed.{p}" not in self.told
        }
        self.stalled = {pane: state for pane, state in self.stalled.items() if pane in present}
        self.stalled.update(paging)

    def _quota(self, active: Iterable[Firing], decision: Mapping[str, Any], out: list[str]) -> None:
        deferred = decision.get("deferred_tiers") or []
        for alert in active:
            if alert.name in QUOTA and "opus" in deferred:
                window = alert.labels.get("window", "?")
                source = alert.labels.get("source", "?")
                self._once(
                    "quota.deferred",
                    f"quota: {alert.summary or alert.name} (window {window}, from {source}): "
                    f"the controller deferred {'/'.join(map(str, deferred))}",
                    out,
                )

    def _budget(
        self, active: Iterable[Firing], decision: Mapping[str, Any], out: list[str]
    ) -> None:
        for alert in active:
            if alert.name == "AgentwatchBudgetCritical" and decision.get("paused"):
                self._once(
                    "budget.paused",
                    f"budget: {alert.summary or alert.name}: the controller paused spawning",
                    out,
                )
            if alert.name == "AgentwatchBudgetExhausted" and decision.get("should_stop"):
                self._once(
                    "budget.stopped",
                    f"budget: {alert.summary or alert.name}: the controller told the "
                    "orchestrator to drain and stop",
                    out,
                )
