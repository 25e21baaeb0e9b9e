"""The state file: the decision as JSON, written atomically, plus the controller's memory.

One file serves two readers. Orchestrators (and `agentwatch status`, the /throttle endpoint and
`agentwatch.controller.client`) read the top-level decision fields. The controller itself reads
`internal` back on start, so `controller --once` run by a timer continues where the last run
stopped: policy timers, counters, what the adapter already applied, nudge bookkeeping.
A missing file is a fresh start; one that cannot be read or parsed (replaced by a FIFO, a
device, a huge file, garbage or JSON nested too deep) is set aside as
`<name>.unreadable-<timestamp>`, counted, logged once and followed by a fresh start: never a
crash, a hang or a read without bound.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentwatch.controller.burn import MAX_BURNS, STEPS, Burn
from agentwatch.controller.policy import (
    BREAKER_STATES,
    MODES,
    TASK_ID,
    NudgeTarget,
    Settings,
    State,
    initial,
)
from agentwatch.core.bounded import STATE_LIMIT, FileRefused, read_text
from agentwatch.core.files import write_atomic

log = logging.getLogger("agentwatch.controller")

VERSION = 1
MAX_DEADLINE_TASKS = 100  # tasks whose deadline-exceeded counter is kept (bounded labels)


@dataclass
class Memory:
    """Everything the controller carries from one cycle (or one --once run) to the next."""

    policy: State
    counters: dict[str, dict[str, float]] = field(default_factory=dict)
    adapter: dict[str, Any] = field(default_factory=dict)
    nudge: dict[str, Any] = field(default_factory=dict)
    deadlines: dict[str, float] = field(default_factory=dict)  # task -> when failed for it
    discarded: str | None = None  # why the last run's file was set aside (this run only)

    def count(self, family: str, label: str, amount: float = 1.0) -> None:
        values = self.counters.setdefault(family, {})
        values[label] = values.get(label, 0.0) + amount

    def deadline_exceeded(self, tasks: Iterable[str], now: float) -> list[str]:
        """Record the tasks failed for their deadline; each task counts once (a restart or
        an alert that flaps never counts it twice), the last MAX_DEADLINE_TASKS are kept.
        Returns the tasks new this time."""
        new = [task for task in tasks if task not in self.deadlines]
        for task in new:
            self.deadlines[task] = now
        if len(self.deadlines) > MAX_DEADLINE_TASKS:
            newest = sorted(self.deadlines.items(), key=lambda item: (item[1], item[0]))
            self.deadlines = dict(newest[-MAX_DEADLINE_TASKS:])
        return new


def decision(state: State, settings: Settings, budget: tuple[float, str]) -> dict[str, Any]:
    """The public decision: what /throttle serves, webhooks receive and clients read."""
    return {
        "version": VERSION,
        "max_agents": state.level,
        "effective_max_agents": state.effective_max_agents,
        "configured_max_agents": settings.max_agents,
        "min_agents": settings.min_agents,
        "paused": state.paused,
        "should_stop": state.should_stop,
        "breaker": state.breaker,
        "deferred_tiers": list(state.deferred_tiers),
        "fail_tasks": list(state.fail_tasks),
        "nudges": [{"tmux_session": n.tmux_session, "pane": n.pane} for n in state.nudges],
        "reasons": list(state.reasons),
        "actions": {action: list(names) for action, names in state.actions.items()},
        "mode": state.mode,
        "budget_limit_usd": budget[0],
        "budget_source": budget[1],
        "alertmanager_last_success": state.last_success_at,
        "updated_at": state.updated_at,
    }


VOLATILE = ("updated_at", "alertmanager_last_success")


def essence(public: dict[str, Any]) -> dict[str, Any]:
    """The decision without its timestamps: what "changed" is judged on."""
    return {key: value for key, value in public.items() if key not in VOLATILE}


def _policy_to_json(state: State) -> dict[str, Any]:
    return {
        "level": state.level,
        "paused": state.paused,
        "should_stop": state.should_stop,
        "breaker": state.breaker,
        "breaker_since": state.breaker_since,
        "deferred_tiers": list(state.deferred_tiers),
        "fail_tasks": list(state.fail_tasks),
        "nudges": [[n.tmux_session, n.pane, n.alert] for n in state.nudges],
        "actions": {action: list(names) for action, names in state.actions.items()},
        "mode": state.mode,
        "last_shrink_at": state.last_shrink_at,
        "clear_since": state.clear_since,
        "last_success_at": state.last_success_at,
        "updated_at": state.updated_at,
        "burns": [
            {
                "alertname": b.alertname,
                "project": b.project,
                "session": b.session,
                "throttled_at": b.throttled_at,
                "pre_rate": b.pre_rate,
                "step": b.step,
                "active": b.active,
            }
            for b in state.burns
        ],
    }


def _burns_from_json(raw: Any) -> tuple[Burn, ...]:
    """The throttled burns; an entry with a missing or wrong field is dropped, not guessed."""
    burns: list[Burn] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        alertname, project, session = (item.get(k) for k in ("alertname", "project", "session"))
        throttled_at = _number(item.get("throttled_at"))
        pre_rate = _number(item.get("pre_rate"))
        if (
            not isinstance(alertname, str)
            or not isinstance(project, str)
            or not isinstance(session, str)
            or throttled_at is None
            or item.get("step") not in STEPS
        ):
            continue
        burns.append(
            Burn(
                alertname,
                project,
                session,
                throttled_at=throttled_at,
                pre_rate=pre_rate if pre_rate is not None and pre_rate >= 0 else None,
                step=str(item["step"]),
                active=item.get("active") is True,
            )
        )
    return tuple(burns[:MAX_BURNS])


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer past 1e308
        return None
    return number if math.isfinite(number) else None


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str))


def _policy_from_json(raw: Any, settings: Settings) -> State:
    """Tolerant reading: any field that is missing or of the wrong type takes its default."""
    if not isinstance(raw, dict):
        return initial(settings)
    level = raw.get("level")
    if isinstance(level, bool) or not isinstance(level, int):
        level = settings.max_agents
    actions_raw = raw.get("actions")
    if not isinstance(actions_raw, dict):
        actions_raw = {}
    nudges = []
    for item in raw.get("nudges") or []:
        if isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item):
            nudges.append(NudgeTarget(*item))
    breaker = raw.get("breaker") if raw.get("breaker") in BREAKER_STATES else "closed"
    return State(
        level=settings.clamp(level),
        paused=raw.get("paused") is True,
        should_stop=raw.get("should_stop") is True,
        breaker=str(breaker),
        breaker_since=_number(raw.get("breaker_since")),
        deferred_tiers=_strings(raw.get("deferred_tiers")),
        fail_tasks=_strings(raw.get("fail_tasks")),
        nudges=tuple(nudges),
        actions={str(k): _strings(v) for k, v in actions_raw.items()},
        mode=str(raw.get("mode")) if raw.get("mode") in MODES else "live",
        last_shrink_at=_number(raw.get("last_shrink_at")),
        clear_since=_number(raw.get("clear_since")),
        last_success_at=_number(raw.get("last_success_at")),
        updated_at=_number(raw.get("updated_at")) or 0.0,
        burns=_burns_from_json(raw.get("burns")),
    )


def _counters_from_json(raw: Any) -> dict[str, dict[str, float]]:
    counters: dict[str, dict[str, float]] = {}
    if isinstance(raw, dict):
        for family, values in raw.items():
            if isinstance(values, dict):
                numbers = {str(label): _number(value) for label, value in values.items()}
                counters[str(family)] = {
                    label: value
                    for label, value in numbers.items()
                    if value is not None and value >= 0
                }
    return counters


def _deadlines_from_json(raw: Any) -> dict[str, float]:
    if not isinstance(raw, dict):
        return {}
    found = {str(task): _number(at) for task, at in raw.items() if TASK_ID.match(str(task))}
    kept = sorted(
        ((task, at) for task, at in found.items() if at is not None), key=lambda x: (x[1], x[0])
    )
    return dict(kept[-MAX_DEADLINE_TASKS:])


DISCARD_REASONS = ("not_regular", "too_large", "unreadable", "invalid")


def _set_aside(path: Path) -> str:
    """Rename the file out of the way (never opened); what became of it, for the log."""
    if path.is_dir() and not path.is_symlink():
        return "left in place (a directory)"
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    aside = path.with_name(f"{path.name}.unreadable-{stamp}")
    for number in range(1, 100):
        if not os.path.lexists(aside):
            break
        aside = path.with_name(f"{path.name}.unreadable-{stamp}-{number}")
    try:
        os.rename(path, aside)
    except OSError as err:
        return f"could not be set aside ({err.strerror or type(err).__name__})"
    return f"set aside as {aside.name}"


def _read(path: Path) -> Any:
    """The parsed file; FileRefused/OSError/ValueError/RecursionError when unusable."""
    return json.loads(read_text(path, STATE_LIMIT))


def _discard(path: Path, settings: Settings, reason: str, why: str) -> Memory:
    log.warning("state file %s unusable (%s): %s; starting fresh", path, why, _set_aside(path))
    return Memory(policy=initial(settings), discarded=reason)


def load(path: Path, settings: Settings) -> Memory:
    """The memory of the last run, or a fresh one when the file is absent or unusable
    (logged once; `discarded` says why, for the controller's counter)."""
    try:
        raw = _read(path)
    except FileNotFoundError:
        return Memory(policy=initial(settings))
    except FileRefused as err:
        return _discard(path, settings, err.reason, str(err).removeprefix(f"{path}: "))
    except OSError as err:
        return _discard(path, settings, "unreadable", err.strerror or type(err).__name__)
    except UnicodeDecodeError:
        return _discard(path, settings, "invalid", "not UTF-8")
    except ValueError as err:
        return _discard(path, settings, "invalid", f"not JSON: {type(err).__name__}")
    except RecursionError:
        return _discard(path, settings, "invalid", "JSON nested too deep")
    internal = raw.get("internal") if isinstance(raw, dict) else None
    if not isinstance(internal, dict):
        log.warning("state file %s has no controller memory: starting fresh", path)
        return Memory(policy=initial(settings))
    adapter = internal.get("adapter")
    nudge = internal.get("nudge")
    try:
        return Memory(
            policy=_policy_from_json(internal.get("policy"), settings),
            counters=_counters_from_json(internal.get("counters")),
            adapter=adapter if isinstance(adapter, dict) else {},
            nudge=nudge if isinstance(nudge, dict) else {},
            deadlines=_deadlines_from_json(internal.get("deadlines")),
        )
    except (TypeError, ValueError, OverflowError, RecursionError) as err:
        return _discard(path, settings, "invalid", f"bad memory: {type(err).__name__}")


def document(public: dict[str, Any], memory: Memory) -> dict[str, Any]:
    return {
        **public,
        "internal": {
            "policy": _policy_to_json(memory.policy),
            "counters": memory.counters,
            "adapter": memory.adapter,
            "nudge": memory.nudge,
            "deadlines": memory.deadlines,
        },
    }


def write(path: Path, payload: dict[str, Any]) -> None:
    """The state file as JSON, written atomically and durably (it is the controller's only
    memory across restarts and what orchestrators read)."""
    data = json.dumps(payload, indent=2, sort_keys=True) + "\n"
    write_atomic(path, data, durable=True)
