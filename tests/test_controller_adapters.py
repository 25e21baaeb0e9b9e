"""Adapters: Bernstein's API on the demo's stand-in orchestrator and with the faults the real
Bernstein cannot be made to produce (`responses`: a slow answer, garbage, a 500 on a read), the
webhook, the command hook, and the driver's retry with backoff. The adapter against the real
`bernstein serve`, its real 401, 404 and 500 included, is tests/test_bernstein_real.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from agentwatch.controller import orchestrators, state
from agentwatch.controller.adapters import AdapterConfigError, AdapterError, Driver
from agentwatch.controller.bernstein import BernsteinAdapter
from agentwatch.controller.hooks import CommandAdapter, WebhookAdapter
from agentwatch.controller.metrics import View, families
from agentwatch.controller.policy import Settings, State
from agentwatch.core.spool import render
from tests.conftest import free_port, samples

S = Settings(max_agents=4, min_agents=1)
URL = "http://127.0.0.1:18052"


def public(level: int = 4, **fields: Any) -> dict[str, Any]:
    decided = State(level=level, **fields)
    return state.decision(decided, S, (0.0, "default"))


def memory() -> state.Memory:
    return state.Memory(policy=State(level=4))


# --- the demo orchestrator, for real ------------------------------------------------------


@pytest.fixture
def orchestrator(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port = free_port()
    state_file = tmp_path / "orchestrator.json"
    env = dict(os.environ, DEMO_TOKEN="s3cret")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentwatch.demo.orchestrator",
            "--listen",
            f"127.0.0.1:{port}",
            "--state-file",
            str(state_file),
            "--budget-usd",
            "20",
            "--token-env",
            "DEMO_TOKEN",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                requests.get(f"{url}/status", timeout=0.5)
                break
            except requests.ConnectionError:
                time.sleep(0.05)
        yield url, state_file
    finally:
        process.terminate()
        process.wait(timeout=10)


def auth() -> dict[str, str]:
    return {"Authorization": "Bearer s3cret"}


def test_bernstein_adapter_against_the_demo_orchestrator(orchestrator: tuple[str, Path]) -> None:
    url, state_file = orchestrator
    mem = memory()
    driver = Driver(BernsteinAdapter(url, "s3cret", timeout=2), mem)
    task = requests.post(f"{url}/tasks", json={"title": "x", "deadline": 1.5e9}, headers=auth())
    task_id = task.json()["id"]
    requests.post(f"{url}/usage", json={"agents": 3, "spent_usd": 7.5}, headers=auth())

    driver.push(public(level=3), now=0)  # shrunk to 3
    on_disk = json.loads(state_file.read_text())
    assert on_disk["max_agents"] == 3 and on_disk["draining"] is False

    driver.push(public(level=3, paused=True), now=1)  # pause: freeze claiming, keep the level
    on_disk = json.loads(state_file.read_text())
    assert on_disk["draining"] is True and on_disk["max_agents"] == 3

    driver.push(public(level=3, breaker="half_open", breaker_since=1), now=2)  # one probe
    on_disk = json.loads(state_file.read_text())
    assert on_disk["draining"] is False and on_disk["max_agents"] == 1

    driver.push(public(level=3, fail_tasks=(task_id,)), now=3)
    driver.push(public(level=3, fail_tasks=(task_id,)), now=4)  # already done: no second POST
    tasks = requests.get(f"{url}/tasks", headers=auth()).json()
    assert tasks[0]["status"] == "failed" and "Deadline exceeded" in tasks[0]["reason"]
    assert json.loads(state_file.read_text())["max_agents"] == 3
    assert not driver.failing and mem.counters == {}

    driver.observe()
    reading = driver.reading
    assert reading is not None and reading.up
    assert (reading.agents, reading.max_agents, reading.cost_usd, reading.budget_usd) == (
        3,
        3,
        7.5,
        20,
    )
    assert reading.tasks["failed"] == 1 and reading.deadlines == {}


def test_bernstein_adapter_re_applies_what_a_restart_lost(orchestrator: tuple[str, Path]) -> None:
    url, state_file = orchestrator
    driver = Driver(BernsteinAdapter(url, "s3cret", timeout=2), memory())
    driver.push(public(level=2), now=0)
    requests.post(f"{url}/config", json={"max_agents": 9}, headers=auth())  # someone else
    driver.observe()
    driver.push(public(level=2), now=1)
    assert json.loads(state_file.read_text())["max_agents"] == 2


def test_open_deadlines_become_series(orchestrator: tuple[str, Path]) -> None:
    url, _ = orchestrator
    for deadline in (2e9, None, 1.9e9):
        body = {"title": "t"} | ({"deadline": deadline} if deadline else {})
        requests.post(f"{url}/tasks", json=body, headers=auth())
    adapter = BernsteinAdapter(url, "s3cret", timeout=2)
    reading = adapter.observe()
    assert sorted(reading.deadlines.values()) == [1.9e9, 2e9]
    text = render(families(View(memory=memory(), settings=S, reading=reading)))
    series = samples(text)
    deadline_series = [k for k in series if k[0].endswith("task_deadline_timestamp_seconds")]
    assert len(deadline_series) == 2
    assert series[("agentwatch_orchestrator_up", ())] == 1
    assert series[("agentwatch_orchestrator_tasks", (("status", "open"),))] == 3


def test_a_wrong_token_is_an_error_and_retried_with_backoff(
    orchestrator: tuple[str, Path],
) -> None:
    url, _ = orchestrator
    mem = memory()
    driver = Driver(BernsteinAdapter(url, "wrong", timeout=2), mem)
    driver.push(public(level=2), now=100)
    assert driver.failing and mem.counters["adapter_errors"] == {"bernstein": 1}
    assert driver.retry_at() == 105
    driver.push(public(level=2), now=101)  # inside the backoff: no attempt
    assert mem.counters["adapter_errors"] == {"bernstein": 1}
    driver.push(public(level=2), now=105)
    assert mem.counters["adapter_errors"] == {"bernstein": 2} and driver.retry_at() == 115
    assert driver.gate.consecutive == 2
    assert not BernsteinAdapter(url, None, timeout=2).observe().up


def test_demo_orchestrator_speaks_like_bernstein(orchestrator: tuple[str, Path]) -> None:
    url, state_file = orchestrator
    assert requests.get(f"{url}/status", timeout=5).status_code == 401

    def post(path: str, body: object) -> requests.Response:
        return requests.post(f"{url}{path}", json=body, headers=auth(), timeout=5)

    assert post("/config", {"max_agents": 99}).json() == {"max_agents": 50}
    assert post("/config", {"max_agents": 0}).json() == {"max_agents": 1}
    assert post("/config", {"max_agents": "2"}).status_code == 400
    assert post("/tasks/nope/fail", {}).status_code == 404
    task = post("/tasks", {"title": "x"}).json()
    assert post(f"/tasks/{task['id']}/fail", {"reason": "r"}).status_code == 200
    assert post(f"/tasks/{task['id']}/fail", {}).status_code == 409
    bad = requests.post(f"{url}/config", data=b"{", headers=auth(), timeout=5)
    assert bad.status_code == 400
    costs = requests.get(f"{url}/costs/current", headers=auth(), timeout=5).json()
    assert costs["budget_usd"] == 20 and costs["should_stop"] is False
    assert json.loads(state_file.read_text())["max_agents"] == 1


# --- injected faults ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [{"body": requests.exceptions.ReadTimeout("slow")}],
)
@responses.activate
def test_bernstein_push_faults_are_counted_never_raised(fault: dict) -> None:
    responses.post(f"{URL}/config", **fault)
    mem = memory()
    driver = Driver(BernsteinAdapter(URL, None, timeout=1), mem)
    driver.push(public(level=2), now=0)
    assert driver.failing and mem.counters["adapter_errors"]["bernstein"] == 1
    assert driver.memo.get("config") is None, "nothing recorded as applied"


@pytest.mark.parametrize(
    "status_fault",
    [
        {"status": 200, "body": "{garbage"},
        {"status": 200, "json": ["a", "list"]},
        {"status": 500},
        {"body": requests.exceptions.ConnectTimeout("slow")},
    ],
)
@responses.activate
def test_bernstein_read_faults_mean_orchestrator_down(status_fault: dict) -> None:
    responses.get(f"{URL}/status", **status_fault)
    reading = BernsteinAdapter(URL, None, timeout=1).observe()
    assert not reading.up
    series = samples(render(families(View(memory=memory(), settings=S, reading=reading))))
    assert series[("agentwatch_orchestrator_up", ())] == 0
    assert not any(name == "agentwatch_orchestrator_cost_usd" for name, _ in series)


@responses.activate
def test_bernstein_partial_reads_keep_what_answered() -> None:
    responses.get(f"{URL}/status", json={"open": 2, "claimed": 1, "total_cost_usd": 1.25})
    responses.get(f"{URL}/costs/current", body="not json")
    responses.get(f"{URL}/tasks", status=500)
    reading = BernsteinAdapter(URL, None, timeout=1).observe()
    assert reading.up and reading.cost_usd == 1.25 and reading.budget_usd is None
    assert reading.tasks == {"open": 2, "claimed": 1} and reading.agents is None


# --- webhook and command hook -------------------------------------------------------------


@responses.activate
def test_webhook_posts_the_decision_on_change_only() -> None:
    hook = "http://127.0.0.1:18099/hook"
    responses.post(hook, status=502)
    responses.post(hook, json={})
    mem = memory()
    driver = Driver(WebhookAdapter(hook, "tok", timeout=1), mem)
    decision = public(level=3)
    driver.push(decision, now=0)
    assert driver.failing and mem.counters["adapter_errors"] == {"webhook": 1}
    driver.push(decision, now=10)
    driver.push(decision | {"updated_at": 99.0}, now=11)  # a new timestamp is no change
    assert len(responses.calls) == 2 and not driver.failing
    sent = json.loads(responses.calls[1].request.body)
    assert sent["max_agents"] == 3 and "internal" not in sent
    assert responses.calls[1].request.headers["Authorization"] == "Bearer tok"
    driver.push(public(level=2), now=12)
    assert len(responses.calls) == 3


def test_command_hook_gets_the_decision_on_stdin(tmp_path: Path) -> None:
    out = tmp_path / "received.json"
    script = f"import sys, pathlib; pathlib.Path({str(out)!r}).write_text(sys.stdin.read())"
    driver = Driver(CommandAdapter([sys.executable, "-c", script], timeout=10), memory())
    driver.push(public(level=2, paused=True), now=0)
    received = json.loads(out.read_text())
    assert received["paused"] is True and received["effective_max_agents"] == 0
    out.unlink()
    driver.push(public(level=2, paused=True), now=1)
    assert not out.exists(), "not run again for the same decision"


@pytest.mark.parametrize(
    ("argv", "expect"),
    [
        ([sys.executable, "-c", "import sys; sys.exit(3)"], "status 3"),
        ([sys.executable, "-c", "import time; time.sleep(5)"], "timed out"),
        (["/nonexistent/hook"], "cannot run"),
    ],
)
def test_command_hook_failures_are_adapter_errors(argv: list[str], expect: str) -> None:
    mem = memory()
    adapter = CommandAdapter(argv, timeout=0.5)
    with pytest.raises(AdapterError, match=expect):
        adapter.apply(public(), {}, 0)
    driver = Driver(adapter, mem)
    driver.push(public(), now=0)
    assert mem.counters["adapter_errors"] == {"command": 1}


def test_build_refuses_incomplete_adapter_config(tmp_path: Path) -> None:
    base = {"kind": "bernstein", "url": None, "token_env": None, "token_file": None,
            "command": [], "timeout": 5.0}  # fmt: skip
    with pytest.raises(AdapterConfigError, match="URL"):
        orchestrators.build(base, {})
    with pytest.raises(AdapterConfigError, match="TOKEN"):
        orchestrators.build(base | {"url": URL, "token_env": "TOKEN"}, {})
    with pytest.raises(AdapterConfigError, match="argv"):
        orchestrators.build(base | {"kind": "command"}, {})
    token_file = tmp_path / "token"
    token_file.write_text("abc\n")
    token_file.chmod(0o600)  # a token file others can read is refused
    built = orchestrators.build(base | {"url": URL, "token_file": token_file}, {})
    assert isinstance(built, BernsteinAdapter)
    assert built.session.headers["Authorization"] == "Bearer abc"
    assert orchestrators.build(base | {"kind": "none"}, {}) is None
