"""End to end: the real Bernstein 3.23.0 orchestrates real Claude Code 2.1.328 agents (its own
Claude adapter) against the scripted API, offline, on a three-task plan in a scratch repo.

- Its agents write no transcript (`--no-session-persistence`), so agentwatch counts them
  through the OpenTelemetry receiver: the tokens equal the usage the stand-in served, with
  Bernstein's own cost (/costs/current) beside them.
- A shrink decided by the controller (its Bernstein adapter, as the controller pushes it)
  reaches Bernstein's orchestrator (its hot reload), which 3.23.0 does not honour until its
  next run; a pause drains it: its agent count goes to 0 while tasks wait, a resume runs
  them.
- A task past its deadline is failed through Bernstein with the note (Bernstein then
  retries it as a new task).
- Bernstein's reaping race (a live agent reaped by its Stop hook's marker, its task never
  completed) is kept out by `disableAllHooks` in the agents' settings (bernstein_run.py
  says why); the test asserts the orchestrator's log shows neither of its traces.
The numbers (tokens, agents before/after, seconds from decision to Bernstein's change) are
printed and written to e2e-numbers.json in the test's folder.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentwatch.cli import claude_settings as cs
from agentwatch.controller import state
from agentwatch.controller.adapters import Driver
from agentwatch.controller.bernstein import BernsteinAdapter
from agentwatch.controller.policy import Settings, State
from agentwatch.core.spool import render
from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn
from tests.bernstein_run import (
    Run,
    claude_settings,
    scratch_repo,
    session_steps,
    task_step,
    wait_until,
)
from tests.bernstein_support import TOKEN, overlay_max_agents
from tests.conftest import samples
from tests.otel_support import port, receiver

pytestmark = pytest.mark.slow
USAGE = {"input_tokens": 1500, "output_tokens": 40, "cache_read_input_tokens": 300}
TYPES = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_input_tokens",
}
# One role each: Bernstein batches two same-role tasks into one agent.
FIRST = {"alpha": "backend", "beta": "frontend", "gamma": "devops"}  # the plan, max_agents 3
SHRUNK = {"delta": "architect", "zeta": "ml-engineer"}  # posted after a shrink to 1
PAUSED = {"epsilon": "analyst", "eta": "prompt-engineer"}  # posted while paused; epsilon is failed
# The agents whose overlap is measured outlast a spawn (Bernstein waits up to 8 s for a
# fast exit before it claims the next task); the last two need not overlap.
DELAY = {**dict.fromkeys([*FIRST, *SHRUNK], 8.0), **dict.fromkeys(PAUSED, 1.0)}
S = Settings(max_agents=3, min_agents=1)


def script() -> dict[str, Any]:
    sessions = [
        {"prompt_contains": f"marker {m}", "steps": session_steps(m, DELAY[m], USAGE)}
        for m in DELAY
    ]
    default = [{"answer": {"text": "nothing to do", "usage": USAGE}}]
    return {"default": default, "sessions": sessions}


def public(level: int, paused: bool = False, fail: tuple[str, ...] = ()) -> dict[str, Any]:
    """The controller's public decision, as it pushes it to the adapter."""
    decision = state.decision(
        State(level=level, paused=paused, fail_tasks=fail), S, (0.0, "default")
    )
    if fail:
        decision["actions"] = {"fail_task": ["AgentwatchTaskPastDeadline"]}
    return decision


def otel_tokens(text: str) -> dict[str, float]:
    found = dict.fromkeys(TYPES, 0.0)
    for (name, labels), value in samples(text).items():
        kind = dict(labels).get("type", "")
        if name == "agentwatch_otel_tokens_total" and kind in found:
            found[kind] += value
    return found


def test_bernstein_runs_real_claude_agents_that_agentwatch_counts_and_steers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    numbers: dict[str, Any] = {}
    repo = scratch_repo(tmp_path, max_agents=3)
    home = tmp_path / "home"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))  # the receiver's look-up
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        yaml.safe_dump(
            {"name": "e2e", "cli": "claude",
             "stages": [{"name": "build", "steps": [task_step(m, r) for m, r in FIRST.items()]}]}
        )
    )  # fmt: skip
    served = ServedLog(tmp_path / "served.jsonl")
    run = Run(repo, home)
    with receiver(tmp_path, grace=1.0) as work, StandIn(parse(script()), served) as api:
        telemetry = {
            **cs.telemetry(f"127.0.0.1:{port(work)}"),
            "OTEL_METRIC_EXPORT_INTERVAL": "1000",
            "OTEL_LOGS_EXPORT_INTERVAL": "1000",
        }
        claude_settings(home, api.url, telemetry)
        try:
            numbers["run_handover_s"] = run.start(plan)
            run.watch()
            # Bernstein's orchestrator stops itself once nothing is open; its hold API keeps
            # it up for the tasks posted after the plan
            run.post("/orchestrator/holds", {"reason": "agentwatch e2e", "ttl_seconds": 600})
            driver = Driver(
                BernsteinAdapter(run.url, TOKEN, timeout=15), state.Memory(policy=State(level=3))
            )
            the_plan(numbers, run)
            shrink(numbers, run, driver)
            pause(numbers, run, driver)
            finish(numbers, run, work, served)
        finally:
            run.stop()
            (tmp_path / "e2e-numbers.json").write_text(json.dumps(numbers, indent=1))
            print(json.dumps(numbers, indent=1))


def finish(numbers: dict[str, Any], run: Run, work: Any, served: ServedLog) -> None:
    """agentwatch's count of the agents' tokens (OTel: they write no transcript) equals what
    the stand-in served; Bernstein's own cost is recorded beside it."""
    answers = [r for r in served.records if r["status"] == 200]
    expected = {kind: float(sum(r["usage"][key] for r in answers)) for kind, key in TYPES.items()}
    numbers["served"] = expected
    numbers["served_sessions"] = len({r["session"] for r in answers})
    ran = len(FIRST) + len(SHRUNK) + len(PAUSED)  # epsilon as Bernstein's retry
    assert numbers["served_sessions"] == ran, "one Claude Code session per task that ran"

    def counted() -> bool:
        work.cycle(True)
        return otel_tokens(render(work.families())) == expected

    wait_until(counted, 60, "OTel tokens equal to the served usage")
    text = render(work.families())
    numbers["otel"] = otel_tokens(text)
    numbers["otel_cost_usd"] = sum(
        v for (name, _), v in samples(text).items() if name == "agentwatch_otel_cost_usd_total"
    )
    costs = run.get("/costs/current")
    numbers["bernstein_costs_current"] = {
        k: costs.get(k) for k in ("spent_usd", "budget_usd", "remaining_usd", "percentage_used")
    }
    numbers["bernstein_status_cost_usd"] = (run.get("/status").get("summary") or {}).get("cost_usd")
    # the reaping race's two traces (see claude_settings): none, since no hook writes a marker
    numbers["marker_reaps"] = run.logged("has completion marker - reaping immediately")
    numbers["dead_agent_retries"] = run.logged("no longer tracked")
    assert numbers["marker_reaps"] == numbers["dead_agent_retries"] == 0


def statuses(run: Run, markers: Any) -> dict[str, str]:
    tasks = run.tasks()
    return {m: str(tasks.get(f"Write {m}", {}).get("status")) for m in markers}


def post_tasks(run: Run, markers: dict[str, str]) -> dict[str, str]:
    """Tasks through Bernstein's API, as an operator adds them; their ids."""
    return {m: run.post("/tasks", task_step(m, role))["id"] for m, role in markers.items()}


def the_plan(numbers: dict[str, Any], run: Run) -> None:
    """The plan's three tasks run at once (max_agents 3), each agent commits its file."""
    began = time.monotonic()
    done = lambda: set(statuses(run, FIRST).values()) == {"done"}  # noqa: E731
    numbers["plan_done_s"] = wait_until(done, 150, "the plan's three tasks done")
    numbers["agents_peak_before"] = run.peak(began)
    assert numbers["agents_peak_before"] >= 2, run.samples[-20:]


def shrink(numbers: dict[str, Any], run: Run, driver: Driver) -> None:
    """The controller's level 1 reaches Bernstein's orchestrator: POST /config writes its run
    overlay and the orchestrator logs its hot reload (`max_agents 3 -> 1`). Yet 3.23.0 goes
    on running two agents at once: every tick its adaptive parallelism sets max_agents back
    to its own limit, made from the max_agents of the orchestrator's start. And /status keeps
    the max_agents its server loaded at start. So a shrink reaches Bernstein but does not
    change how many agents it runs until its orchestrator restarts; this fails once
    Bernstein honours it (then assert one agent at a time)."""
    decided = time.time()
    driver.push(public(level=1), now=decided)
    assert not driver.failing and overlay_max_agents(run.repo) == 1
    reloaded = wait_until(
        lambda: run.reloaded(3, 1) is not None, 120, "the orchestrator's hot reload to 1"
    )
    logged = run.reloaded(3, 1)
    assert logged is not None
    numbers["shrink_to_reload_s"] = round(logged - decided, 1)  # by its log's clock (1 s)
    numbers["shrink_to_reload_seen_s"] = round(reloaded, 1)
    numbers["status_max_agents_after_shrink"] = run.sample().max_agents
    assert numbers["status_max_agents_after_shrink"] == 3
    began = time.monotonic()
    post_tasks(run, SHRUNK)
    done = lambda: set(statuses(run, SHRUNK).values()) == {"done"}  # noqa: E731
    numbers["shrunk_done_s"] = wait_until(done, 120, "the two tasks posted after the shrink")
    numbers["agents_peak_after_shrink"] = run.peak(began)
    assert numbers["agents_peak_after_shrink"] == 2, run.samples[-40:]


def pause(numbers: dict[str, Any], run: Run, driver: Driver) -> None:
    """A pause drains Bernstein: tasks posted meanwhile wait with no agent; a resume runs
    them. A task past its deadline is failed through Bernstein with the note while it waits.
    Bernstein 3.23.0 then retries it as a new task (same title, retry_count 1), which runs
    after the resume: its own retry policy, which nothing in /tasks/{id}/fail turns off."""
    paused = time.time()
    driver.push(public(level=1, paused=True), now=paused)
    assert run.get("/drain")["draining"] is True and not driver.failing
    began = time.monotonic()
    ids = post_tasks(run, PAUSED)
    while time.monotonic() - began < 8.0:  # a window in which nothing may start
        assert run.sample().metric_agents == 0, run.samples[-10:]
        assert set(statuses(run, PAUSED).values()) == {"open"}
        time.sleep(0.5)
    numbers["agents_while_paused"] = run.peak(began)
    # Bernstein 3.23.0 keeps no deadline (POST /tasks drops it), so the decision names the
    # task as AgentwatchTaskPastDeadline would
    driver.push(public(level=1, paused=True, fail=(ids["epsilon"],)), now=time.time())
    failed = run.get(f"/tasks/{ids['epsilon']}")
    assert failed["status"] == "failed", failed
    assert failed["result_summary"] == (
        "Deadline exceeded (agentwatch alert AgentwatchTaskPastDeadline). "
        "A retry needs a new deadline."
    )
    resumed = time.monotonic()
    driver.push(public(level=1), now=time.time())
    assert run.get("/drain")["draining"] is False and not driver.failing
    numbers["resume_to_claim_s"] = wait_until(
        lambda: statuses(run, ["eta"])["eta"] != "open", 90, "eta claimed after the resume"
    )

    def retried() -> list[dict[str, Any]]:
        return [
            task
            for task in run.get("/tasks")
            if task["title"] == "Write epsilon" and task["id"] != ids["epsilon"]
        ]

    wait_until(lambda: statuses(run, ["eta"])["eta"] == "done", 90, "eta done")
    wait_until(
        lambda: [t["status"] for t in retried()] == ["done"], 120, "Bernstein's retry of epsilon"
    )
    numbers["epsilon_retry"] = {k: retried()[0][k] for k in ("retry_count", "status")}
    assert run.get(f"/tasks/{ids['epsilon']}")["status"] == "failed"
    numbers["agents_peak_after_resume"] = run.peak(resumed)
    assert numbers["agents_peak_after_resume"] >= 1
    numbers["tasks"] = statuses(run, [*FIRST, *SHRUNK, *PAUSED])
