"""Deadlines as Bernstein has them: the fail reason states the deadline (a fake Bernstein
through `responses`), and the per-task exceeded counter counts each task once, across
restarts and a flapping alert, for the last 100 tasks."""

from __future__ import annotations

import json
from pathlib import Path

import responses

from agentwatch.controller import state
from agentwatch.controller.adapters import Driver
from agentwatch.controller.bernstein import BernsteinAdapter, fail_reason
from agentwatch.controller.metrics import View, families
from agentwatch.controller.policy import Settings, State
from agentwatch.core.spool import render
from tests.conftest import samples

URL = "http://127.0.0.1:18053"
S = Settings(max_agents=4, min_agents=1)
DEADLINE = 1_796_134_800.0  # 2026-12-01T14:20:00Z


def public(**fields: object) -> dict:
    return state.decision(State(level=4, **fields), S, (0.0, "default"))  # type: ignore[arg-type]


@responses.activate
def test_the_fail_reason_states_the_deadline_for_the_next_attempt() -> None:
    responses.get(f"{URL}/status", json={"agents": 1, "max_agents": 4})
    responses.get(f"{URL}/costs/current", json={"spent_usd": 1.0})
    responses.get(
        f"{URL}/tasks",
        json={"tasks": [{"id": "t-7", "status": "in_progress", "deadline": DEADLINE}]},
    )
    responses.post(f"{URL}/config", json={})
    failed = responses.post(f"{URL}/tasks/t-7/fail", json={})
    responses.post(f"{URL}/tasks/t-8/fail", json={})
    driver = Driver(BernsteinAdapter(URL, None, timeout=1), state.Memory(policy=State(level=4)))
    driver.observe()
    actions = {"fail_task": ("AgentwatchTaskPastDeadline",)}
    driver.push(public(fail_tasks=("t-7", "t-8"), actions=actions), now=DEADLINE + 95)
    assert failed.call_count == 1
    bodies = {
        call.request.url.removeprefix(URL): json.loads(call.request.body or "{}")
        for call in responses.calls
        if call.request.url.endswith("/fail")
    }
    assert bodies["/tasks/t-7/fail"]["reason"] == (
        "Deadline exceeded: the deadline 2026-12-01T14:20:00Z passed 95 s ago "
        "(agentwatch alert AgentwatchTaskPastDeadline). A retry needs a new deadline."
    )
    assert bodies["/tasks/t-8/fail"]["reason"] == (
        "Deadline exceeded (agentwatch alert AgentwatchTaskPastDeadline). "
        "A retry needs a new deadline."
    ), "an unknown deadline is not made up"


def test_fail_reason_never_says_a_negative_age() -> None:
    assert "passed 0 s ago" in fail_reason(DEADLINE, DEADLINE - 5, "X")


def exceeded(memory: state.Memory) -> dict[str, float]:
    series = samples(render(families(View(memory=memory, settings=S))))
    ours = {
        dict(labels)["task"]: value
        for (name, labels), value in series.items()
        if name == "agentwatch_task_deadline_exceeded_total"
    }
    theirs = {
        dict(labels)["task"]: value
        for (name, labels), value in series.items()
        if name == "bernstein_task_deadline_exceeded_total"
    }
    assert ours == theirs
    return ours


def test_each_task_counts_once_across_restarts_and_flapping(tmp_path: Path) -> None:
    path = tmp_path / "controller.json"
    memory = state.Memory(policy=State(level=4))
    assert memory.deadline_exceeded(["t-1", "t-2"], 100) == ["t-1", "t-2"]
    assert memory.deadline_exceeded(["t-1"], 200) == [], "the same alert again: no recount"
    state.write(path, state.document(public(), memory))
    again = state.load(path, S)
    assert again.deadline_exceeded(["t-2", "t-3"], 300) == ["t-3"], "a restart: no recount"
    assert exceeded(again) == {"t-1": 1.0, "t-2": 1.0, "t-3": 1.0}


def test_the_counter_keeps_the_last_hundred_tasks() -> None:
    memory = state.Memory(policy=State(level=4))
    for number in range(130):
        memory.deadline_exceeded([f"t-{number}"], float(number))
    kept = exceeded(memory)
    assert len(kept) == 100 and "t-129" in kept and "t-29" not in kept and "t-30" in kept
