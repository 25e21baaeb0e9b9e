"""The action policy: a pure function from (previous state, alerts, time) to the next state.

No I/O and no clock here, so every transition is tested with a fake clock. The design avoids
the adaptive-parallelism bugs seen in Bernstein:
- the floor is a clamp, never a "restore" target, so the level cannot saw-tooth or snap back;
- a shrink takes one step per cooldown (not per tick); growth (as Bernstein specifies it) one
  step per sustain period, and only while a `grow` alert (a low error rate) is active: without
  one the level holds;
- an unacknowledged burn alert escalates by its age to a shrink, then a pause (burn.py);
- pause, stop and the breaker gate spawning without touching the level, so the level before a
  pause is exactly the level after it (a shrink alert active during the pause still shrinks);
  growth waits while anything gates spawning;
- configured bounds are re-applied every cycle, so a runtime change of max/min takes effect.
When no Alertmanager answers, the last decision is held for `hold_for`, then the configured
fallback applies; nothing relaxes while the controller is blind unless the fallback says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from agentwatch.controller import burn
from agentwatch.controller.alerts import ACTIONS, Alert

TIERS = ("opus", "sonnet", "haiku")  # highest first: deferring a tier defers every higher one
BREAKER_STATES = ("closed", "open", "half_open")
MODES = ("live", "holding", "fallback")
FALLBACKS = ("floor", "hold", "pause", "max")
DECISION_REASONS = (
    "shrink",
    "grow",
    "limit",
    "pause",
    "resume",
    "stop",
    "stop_cleared",
    "breaker_open",
    "breaker_half_open",
    "breaker_closed",
    "defer_tier",
    "undefer_tier",
    "fail_task",
    "fallback",
    "burn_shrink",
    "burn_pause",
)
TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
PANE_ID = re.compile(r"^%[0-9]{1,9}$")
SESSION_NAME = re.compile(r"^[^\x00-\x1f:.]{1,128}$")


@dataclass(frozen=True)
class Settings:
    """The policy's knobs (config section `controller`), validated on construction."""

    max_agents: int = 4
    min_agents: int = 1
    shrink_cooldown: float = 180.0
    grow_sustain: float = 120.0
    breaker_cooldown: float = 900.0
    probe_window: float = 300.0
    hold_for: float = 300.0
    fallback: str = "floor"
    escalate_after: float = 900.0
    verify_after: float = 300.0
    verify_fraction: float = 0.5

    def __post_init__(self) -> None:
        if self.min_agents < 1:
            raise ValueError("controller.min_agents must be at least 1")
        if self.max_agents < self.min_agents:
            raise ValueError(
                f"controller.max_agents ({self.max_agents}) is below controller.min_agents "
                f"({self.min_agents})"
            )
        if self.fallback not in FALLBACKS:
            raise ValueError(f"controller.fallback must be one of {', '.join(FALLBACKS)}")
        if not 0 < self.verify_fraction <= 1:
            raise ValueError("controller.burn.verify_fraction must be above 0 and at most 1")
        if self.escalate_after <= 0 or self.verify_after <= 0:
            raise ValueError("controller.burn.escalate_after and verify_after must be positive")

    def clamp(self, level: int) -> int:
        return max(self.min_agents, min(self.max_agents, level))


@dataclass(frozen=True)
class NudgeTarget:
    """A stalled pane an actionable `nudge` alert points at."""

    tmux_session: str
    pane: str
    alert: str


@dataclass(frozen=True)
class Actions:
    """What the actionable alerts ask for, with the alert names behind each action."""

    by_action: dict[str, tuple[str, ...]] = field(default_factory=dict)
    deferred_tiers: tuple[str, ...] = ()
    fail_tasks: tuple[str, ...] = ()
    nudges: tuple[NudgeTarget, ...] = ()
    unusable: tuple[str, ...] = ()  # actionable-looking alerts whose labels we cannot use

    def active(self, action: str) -> bool:
        return action in self.by_action


def collect(alerts: Iterable[Alert]) -> Actions:
    """Reduce the actionable alerts to the actions they ask for."""
    names: dict[str, set[str]] = {}
    tiers: set[str] = set()
    tasks: set[str] = set()
    nudges: set[NudgeTarget] = set()
    unusable: set[str] = set()
    for alert in alerts:
        if not alert.actionable:
            continue
        action = alert.action or ""
        usable = action in ACTIONS
        if action == "defer_tier":
            tier = alert.labels.get("agentwatch_tier", "")
            usable = tier in TIERS
            if usable:
                tiers.update(TIERS[: TIERS.index(tier) + 1])
        elif action == "fail_task":
            task = alert.labels.get("task", "")
            usable = bool(TASK_ID.match(task))
            if usable:
                tasks.add(task)
        elif action == "burn":
            continue  # a message first; burn.advance escalates it by its age
        elif action == "nudge":
            session, pane = alert.labels.get("tmux_session", ""), alert.labels.get("pane", "")
            usable = bool(SESSION_NAME.match(session) and PANE_ID.match(pane))
            if usable:
                nudges.add(NudgeTarget(session, pane, alert.name))
        if usable:
            names.setdefault(action, set()).add(alert.name)
        else:
            unusable.add(alert.name or "<unnamed>")
    return Actions(
        by_action={action: tuple(sorted(names[action])) for action in sorted(names)},
        deferred_tiers=tuple(tier for tier in TIERS if tier in tiers),
        fail_tasks=tuple(sorted(tasks)),
        nudges=tuple(sorted(nudges, key=lambda n: (n.tmux_session, n.pane, n.alert))),
        unusable=tuple(sorted(unusable)),
    )


@dataclass(frozen=True)
class State:
    """The decision plus the few timestamps the next decision depends on."""

    level: int
    paused: bool = False
    should_stop: bool = False
    breaker: str = "closed"
    breaker_since: float | None = None  # when the breaker entered open or half_open
    deferred_tiers: tuple[str, ...] = ()
    fail_tasks: tuple[str, ...] = ()
    nudges: tuple[NudgeTarget, ...] = ()
    actions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    mode: str = "live"
    last_shrink_at: float | None = None
    clear_since: float | None = None  # start of the current shrink-free, ungated period
    last_success_at: float | None = None  # last cycle with an Alertmanager answer
    updated_at: float = 0.0
    burns: tuple[burn.Burn, ...] = ()  # throttled burns (persisted: a restart keeps timers)
    changes: tuple[str, ...] = ()  # what changed in the step that produced this state
    notes: tuple[str, ...] = ()  # one line per burn escalation of this step, for the log

    @property
    def reasons(self) -> tuple[str, ...]:
        """The alert names behind the current decision."""
        return tuple(sorted({name for names in self.actions.values() for name in names}))

    @property
    def effective_max_agents(self) -> int:
        """What the orchestrator may run now: 0 = start no new agents, 1 = one probe."""
        if self.should_stop or self.paused or self.breaker == "open":
            return 0
        if self.breaker == "half_open":
            return min(1, self.level)
        return self.level


def initial(settings: Settings) -> State:
    """Before the first cycle the orchestrator runs as configured."""
    return State(level=settings.max_agents)


def _breaker(prev: State, active: bool, now: float, s: Settings) -> tuple[str, float | None]:
    state, since = prev.breaker, prev.breaker_since
    if state not in BREAKER_STATES:
        state = "closed"
    if state == "closed":
        return ("open", now) if active else ("closed", None)
    since = now if since is None else since
    if state == "open":
        if not active and now - since >= s.breaker_cooldown:
            return "half_open", now
        return "open", since
    if active:  # the probe failed: open again for a full cool-down
        return "open", now
    if now - since >= s.probe_window:
        return "closed", None
    return "half_open", since


def _live(prev: State, acts: Actions, now: float, s: Settings) -> State:
    breaker, breaker_since = _breaker(prev, acts.active("breaker"), now, s)
    paused, stop = acts.active("pause"), acts.active("stop")
    gated = paused or stop or breaker != "closed"
    level = s.clamp(prev.level)
    last_shrink, clear_since = prev.last_shrink_at, prev.clear_since
    if acts.active("shrink"):
        clear_since = None
        cooled = last_shrink is None or now - last_shrink >= s.shrink_cooldown
        if level > s.min_agents and cooled:
            level, last_shrink = level - 1, now
    elif gated or not acts.active("grow"):
        clear_since = None  # growth needs a grow alert and nothing gating spawning
    elif clear_since is None or clear_since > now:
        clear_since = now
    elif level < s.max_agents and now - clear_since >= s.grow_sustain:
        level, clear_since = level + 1, now
    return State(
        level=level,
        paused=paused,
        should_stop=stop,
        breaker=breaker,
        breaker_since=breaker_since,
        deferred_tiers=acts.deferred_tiers,
        fail_tasks=acts.fail_tasks,
        nudges=acts.nudges,
        actions=acts.by_action,
        mode="live",
        last_shrink_at=last_shrink,
        clear_since=clear_since,
        last_success_at=now,
    )


def _blind(prev: State, now: float, s: Settings) -> State:
    """No Alertmanager answered: hold, then fall back; one-shot actions are never repeated."""
    base = replace(prev, level=s.clamp(prev.level), clear_since=None, fail_tasks=(), nudges=())
    last = prev.last_success_at
    if last is not None and 0 <= now - last <= s.hold_for:
        return replace(base, mode="holding")
    base = replace(base, mode="fallback")
    if s.fallback == "floor":
        return replace(base, level=s.min_agents)
    if s.fallback == "pause":
        return replace(base, paused=True)
    if s.fallback == "max":
        return replace(
            base,
            level=s.max_agents,
            paused=False,
            should_stop=False,
            breaker="closed",
            breaker_since=None,
            deferred_tiers=(),
            actions={},
        )
    return base  # "hold": the last decision stays until an Alertmanager answers again


def changes(prev: State, new: State, s: Settings) -> tuple[str, ...]:
    """The reasons the decision changed between two states, for the log and the counter."""
    out: list[str] = []
    if new.mode == "fallback" and prev.mode != "fallback":
        out.append("fallback")
    if prev.level != new.level:
        if not s.min_agents <= prev.level <= s.max_agents:
            out.append("limit")
        elif new.mode == "fallback":
            out.append("fallback")
        else:
            out.append("shrink" if new.level < prev.level else "grow")
    if prev.paused != new.paused:
        out.append("pause" if new.paused else "resume")
    if prev.should_stop != new.should_stop:
        out.append("stop" if new.should_stop else "stop_cleared")
    if prev.breaker != new.breaker:
        out.append(f"breaker_{new.breaker}")
    if set(new.deferred_tiers) - set(prev.deferred_tiers):
        out.append("defer_tier")
    if set(prev.deferred_tiers) - set(new.deferred_tiers):
        out.append("undefer_tier")
    if set(new.fail_tasks) - set(prev.fail_tasks):
        out.append("fail_task")
    return tuple(dict.fromkeys(out))


def with_burns(acts: Actions, burns: Sequence[burn.Burn]) -> Actions:
    """The actions plus the escalated burns, as the shrink or pause alerts they act as."""
    extra = burn.names_by_step(burns)
    if not extra:
        return acts
    merged = {action: set(names) for action, names in acts.by_action.items()}
    for step, names in extra.items():
        merged.setdefault(step, set()).update(names)
    return replace(acts, by_action={a: tuple(sorted(merged[a])) for a in sorted(merged)})


def decide(prev: State, alerts: Sequence[Alert] | None, now: float, settings: Settings) -> State:
    """The next state. `alerts` is None when no Alertmanager answered this cycle."""
    if alerts is None:
        new = _blind(prev, now, settings)
        return replace(new, updated_at=now, changes=changes(prev, new, settings), notes=())
    burns, events = burn.advance(
        prev.burns, alerts, now, settings.escalate_after, settings.verify_after
    )
    new = replace(_live(prev, with_burns(collect(alerts), burns), now, settings), burns=burns)
    found = changes(prev, new, settings)
    found += tuple(dict.fromkeys(f"burn_{event.burn.step}" for event in events))
    notes = tuple(burn.describe(event, new.level) for event in events)
    return replace(new, updated_at=now, changes=found, notes=notes)
