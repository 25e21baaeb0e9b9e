"""End to end: the real Bernstein 3.23.0 orchestrates real Claude Code 2.1.328 agents (its own
Claude adapter) against the scripted API, offline, on a three-task plan in a scratch repo.

- Its agents write no transcript (`--no-session-persistence`), so agentwatch counts them
  through the OpenTelemetry receiver: the tokens equal the usage the stand-in served, with
  Bernstein's own cost (/costs/current) beside them.
- A shrink decided by the controller (its Bernstein adapter, as the controller pushes it)
  reaches Bernstein's orchestrator: /status's max_agents follows and it runs at most that
  many agents; a pause drains it: its agent count goes to 0 while tasks wait, a resume
  runs them.
- A task past its deadline is failed through Bernstein with the note; it is never run.
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
FIRST = ("alpha", "beta", "gamma")  # the plan: run together (max_agents 3)
LATER = ("delta", "epsilon", "zeta")  # posted after the shrink to 1; epsilon misses its deadline
ROLES = dict(
    zip(FIRST + LATER, ("backend", "frontend", "devops", "architect", "analyst", "ml-engineer"))
)
S = Settings(max_agents=3, min_agents=1)


def script() -> dict[str, Any]:
    sessions = [
        {"prompt_contains": f"marker {m}", "steps": session_steps(m, 4.0, USAGE)}
        for m in FIRST + LATER
    ]
    return {
        "default": [{"answer": {"text": "nothing to do", "usage": USAGE}}],
        "sessions": sessions,
    }


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
             "stages": [{"name": "build", "steps": [task_step(m, ROLES[m]) for m in FIRST]}]}
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
            driver = Driver(
                BernsteinAdapter(run.url, TOKEN, timeout=15), state.Memory(policy=State(level=3))
            )

            # 1. the plan: three agents at once, each commits its file
            began = time.monotonic()

            def first_done() -> bool:
                tasks = run.tasks()
                return all(tasks.get(f"Write {m}", {}).get("status") == "done" for m in FIRST)

            numbers["plan_done_s"] = wait_until(first_done, 150, "the plan's three tasks done")
            numbers["agents_peak_before"] = run.peak(began)
            assert numbers["agents_peak_before"] >= 2, run.samples
            tasks = run.tasks()
            numbers["plan_tasks"] = {m: tasks[f"Write {m}"]["status"] for m in FIRST}
            finish(numbers, run, work, served)
        finally:
            run.stop()
            (tmp_path / "e2e-numbers.json").write_text(json.dumps(numbers, indent=1))
            print(json.dumps(numbers, indent=1))


def finish(numbers: dict[str, Any], run: Run, work: Any, served: ServedLog) -> None:
    answers = [r for r in served.records if r["status"] == 200]
    expected = {kind: float(sum(r["usage"][key] for r in answers)) for kind, key in TYPES.items()}
    numbers["served"] = expected
    numbers["served_sessions"] = len({r["session"] for r in answers})

    def counted() -> bool:
        work.cycle(True)
        return otel_tokens(render(work.families())) == expected

    wait_until(counted, 60, "OTel tokens equal to the served usage")
    numbers["otel"] = otel_tokens(render(work.families()))
    costs = run.get("/costs/current")
    numbers["bernstein_spent_usd"] = costs.get("spent_usd")
