"""The Bernstein adapter against the real `bernstein serve` (3.23.0) in a scratch repo set up by
`bernstein init`: shrink/grow land in its run overlay, pause/stop drain it, resume cancels the
drain, a deadline fail fails a real task, and /status, /costs/current, /drain and /tasks are read
from its real answers. Its real 401, 404 and 500 and a closed port are counted adapter errors,
logged once. One server per module (start-up is 5-25 s)."""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import responses

from agentwatch.controller import state
from agentwatch.controller.adapters import Driver
from agentwatch.controller.bernstein import BernsteinAdapter
from agentwatch.controller.main import Controller, settings_from
from agentwatch.controller.metrics import View, families
from agentwatch.controller.policy import Settings, State
from agentwatch.core.spool import render
from agentwatch.sentinels import registry
from tests.bernstein_support import (
    TOKEN,
    Server,
    git_dir,
    overlay_max_agents,
    project,
)
from tests.conftest import free_port, samples

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

S = Settings(max_agents=4, min_agents=1)
NOW = time.time()
SOON = NOW + 7200.0


def public(level: int = 4, **fields: Any) -> dict[str, Any]:
    return state.decision(State(level=level, **fields), S, (0.0, "default"))


def memory() -> state.Memory:
    return state.Memory(policy=State(level=4))


@dataclass
class Bernstein:
    server: Server
    repo: Path
    tasks: dict[str, str]  # name -> task id
    startup: list[float]


@pytest.fixture(scope="module")
def bernstein(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bernstein]:
    root = tmp_path_factory.mktemp("bernstein")
    repo = project(root)
    server = Server(repo, root / "serve.log")
    try:
        server.start()
        tasks = {name: server.create_task(name)["id"] for name in ("late", "plain")}
        yield Bernstein(server, repo, tasks, [server.started_in or 0.0])
    finally:
        server.stop()


def adapter(b: Bernstein, token: str | None = TOKEN, url: str | None = None) -> BernsteinAdapter:
    return BernsteinAdapter(url or b.server.url, token, timeout=10)


def test_it_started_in_time_and_reports_no_deadlines(bernstein: Bernstein) -> None:
    """Bernstein 3.23.0 keeps no deadline from POST /tasks (TaskStore.create drops it) and
    shows none in GET /tasks (task_to_response leaves it out), so no real task has one; the
    reading of real deadlines is tested with the demo orchestrator. This fails once Bernstein
    reports them: then read them here."""
    assert all(0 < s < 60 for s in bernstein.startup), bernstein.startup
    server = bernstein.server
    posted = server.post("/tasks", {"title": "d", "description": "d", "deadline": SOON})
    assert posted.status_code == 201 and posted.json()["deadline"] is None
    listed = server.get("/tasks").json()
    assert listed and all(task["deadline"] is None for task in listed)
    assert adapter(bernstein).observe().deadlines == {}
    server.post(f"/tasks/{posted.json()['id']}/fail", {"reason": "not needed"})


def test_shrink_and_grow_write_the_run_overlay(bernstein: Bernstein) -> None:
    driver = Driver(adapter(bernstein), memory())
    yaml_before = (bernstein.repo / "bernstein.yaml").read_text()
    driver.push(public(level=2), now=0)
    assert overlay_max_agents(bernstein.repo) == 2 and not driver.failing
    driver.push(public(level=3), now=1)  # grow
    assert overlay_max_agents(bernstein.repo) == 3
    assert (bernstein.repo / "bernstein.yaml").read_text() == yaml_before, "tracked file kept"
    assert driver.memo["config"] == 3


def test_pause_and_stop_drain_and_resume_cancels(bernstein: Bernstein) -> None:
    driver = Driver(adapter(bernstein), memory())
    driver.push(public(level=3), now=0)
    assert bernstein.server.get("/drain").json()["draining"] is False
    driver.push(public(level=3, paused=True), now=1)
    assert bernstein.server.get("/drain").json()["draining"] is True
    assert overlay_max_agents(bernstein.repo) == 3, "a pause keeps the level"
    driver.push(public(level=3), now=2)  # resume
    assert bernstein.server.get("/drain").json()["draining"] is False
    driver.push(public(level=3, should_stop=True), now=3)
    assert bernstein.server.get("/drain").json()["draining"] is True
    reading = adapter(bernstein).observe()
    assert reading.draining is True, "read from GET /drain"
    driver.push(public(level=3), now=4)
    assert bernstein.server.get("/drain").json()["draining"] is False
    assert not driver.failing


def test_status_costs_tasks_and_deadlines_from_real_answers(bernstein: Bernstein) -> None:
    reading = adapter(bernstein).observe()
    assert reading.up and reading.draining is False
    listed = bernstein.server.get("/tasks").json()
    open_now = sum(1 for task in listed if task["status"] == "open")
    assert reading.tasks["open"] == open_now >= 2
    assert reading.agents == 0 and reading.max_agents == 6  # its default; no orchestrator
    assert reading.cost_usd == 0 and reading.budget_usd == 0
    series = samples(render(families(View(memory=memory(), settings=S, reading=reading))))
    assert series[("agentwatch_orchestrator_up", ())] == 1
    assert series[("agentwatch_orchestrator_agents", ())] == 0
    assert series[("agentwatch_orchestrator_tasks", (("status", "open"),))] == open_now


def test_fail_task_fails_the_real_task_once(bernstein: Bernstein) -> None:
    late = bernstein.tasks["late"]
    mem = memory()
    bernstein_adapter = adapter(bernstein)
    driver = Driver(bernstein_adapter, mem)
    driver.observe()  # learns no deadline (3.23.0 reports none): the reason says so
    decision = public(level=4, fail_tasks=(late,))
    decision["actions"] = {"fail_task": ["AgentwatchTaskPastDeadline"]}
    driver.push(decision, now=NOW)
    driver.push(decision, now=NOW + 1)  # done: not posted again
    task = bernstein.server.get(f"/tasks/{late}").json()
    assert task["status"] == "failed"
    assert task["result_summary"] == (
        "Deadline exceeded (agentwatch alert AgentwatchTaskPastDeadline). "
        "A retry needs a new deadline."
    )
    assert bernstein.server.log.read_text().count(f'"POST /tasks/{late}/fail HTTP/1.1"') == 1
    assert not driver.failing and mem.counters == {}
    # failing it again elsewhere: the real 409 (already final) is no error either
    other = Driver(adapter(bernstein), memory())
    other.push(decision, now=NOW)
    assert not other.failing


def test_a_wrong_token_is_its_real_401_counted_and_logged_once(
    bernstein: Bernstein, caplog: pytest.LogCaptureFixture
) -> None:
    assert bernstein.server.get("/status", token="wrong").status_code == 401
    mem = memory()
    wrong = adapter(bernstein, token="wrong")
    driver = Driver(wrong, mem)
    with caplog.at_level(logging.INFO, "agentwatch.controller"):
        for now in (100, 105, 115):  # each one after the backoff
            driver.push(public(level=2), now=now)
            assert not wrong.observe().up
    assert mem.counters["adapter_errors"] == {"bernstein": 3}
    assert driver.memo.get("config") is None, "nothing recorded as applied"
    lines = [r.getMessage() for r in caplog.records]
    assert sum("adapter bernstein failing" in m for m in lines) == 1, lines
    assert sum("GET" in m and "/status failing" in m for m in lines) == 1, lines
    assert all("401" in m for m in lines if "failing" in m), lines
    assert TOKEN not in "".join(lines) and "wrong" not in "".join(lines)
    tokenless = adapter(bernstein, token=None)
    assert "Authorization" not in tokenless.session.headers and not tokenless.observe().up


@pytest.mark.parametrize("where", ["404", "500", "closed"])
def test_real_404_500_and_a_closed_port_are_counted_adapter_errors(
    bernstein: Bernstein, tmp_path: Path, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = bernstein.server.url
    overlay_dir = git_dir(bernstein.repo) / "bernstein"
    if where == "404":
        url += "/not-bernstein"  # a path prefix the server does not have
    elif where == "closed":
        url = f"http://127.0.0.1:{free_port()}"
    else:  # a run overlay it cannot write: its POST /config answers 500
        shutil.rmtree(overlay_dir)
        overlay_dir.write_text("not a folder")
    try:
        mem = memory()
        driver = Driver(adapter(bernstein, url=url), mem)
        with caplog.at_level(logging.WARNING, "agentwatch.controller"):
            driver.push(public(level=1), now=0)
            driver.push(public(level=1), now=10)
        assert mem.counters["adapter_errors"] == {"bernstein": 2}
        assert driver.failing and driver.memo.get("config") is None
        failing = [r.getMessage() for r in caplog.records if "failing" in r.getMessage()]
        assert len(failing) == 1, failing
        expect = {"404": "404", "500": "500", "closed": "connectionerror"}[where]
        assert expect in failing[0].lower()
        if where != "500":
            assert not adapter(bernstein, url=url).observe().up
    finally:
        if where == "500":
            overlay_dir.unlink()


def config_posts(b: Bernstein) -> int:
    return b.server.log.read_text().count('"POST /config HTTP/1.1"')


def test_a_level_is_posted_once_though_its_status_keeps_the_old_one(bernstein: Bernstein) -> None:
    """/status reports the loaded config (6), not the overlay the adapter wrote: the level is
    re-posted only when the reported value changes, never every cycle."""
    driver = Driver(adapter(bernstein), memory())
    before = config_posts(bernstein)
    for now in range(4):
        driver.observe()
        driver.push(public(level=2), now=now)
    assert driver.reading is not None and driver.reading.max_agents == 6
    assert overlay_max_agents(bernstein.repo) == 2
    assert config_posts(bernstein) - before == 1


def test_it_recovers_after_its_real_500_and_forgets_the_failure(bernstein: Bernstein) -> None:
    overlay_dir = git_dir(bernstein.repo) / "bernstein"
    shutil.rmtree(overlay_dir)
    overlay_dir.write_text("not a folder")
    driver = Driver(adapter(bernstein), memory())
    try:
        driver.push(public(level=3), now=0)
        assert driver.failing and driver.retry_at() == 5
    finally:
        overlay_dir.unlink()
    driver.push(public(level=3), now=5)
    assert not driver.failing and driver.retry_at() is None and driver.memo["config"] == 3
    assert overlay_max_agents(bernstein.repo) == 3


def test_a_drain_it_did_not_start_is_left_alone(bernstein: Bernstein) -> None:
    assert bernstein.server.post("/drain").status_code == 200  # an operator drains
    try:
        driver = Driver(adapter(bernstein), memory())
        driver.push(public(level=4), now=0)
        driver.push(public(level=4), now=1)
        assert bernstein.server.get("/drain").json()["draining"] is True
    finally:
        bernstein.server.post("/drain/cancel")


def test_a_task_it_does_not_know_is_its_real_404_and_not_retried(bernstein: Bernstein) -> None:
    driver = Driver(adapter(bernstein), memory())
    decision = public(level=4, fail_tasks=("no-such-task",))
    driver.push(decision, now=0)
    driver.push(decision, now=1)
    assert not driver.failing
    log = bernstein.server.log.read_text()
    assert log.count('"POST /tasks/no-such-task/fail HTTP/1.1" 404') == 1


@responses.activate
def test_the_controller_keeps_deciding_while_bernstein_refuses_it(
    bernstein: Bernstein, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The real server answers 401 to every push: counted, logged once; the decision still
    follows Alertmanager: paused, then held when it stops answering, then the fallback."""
    am = f"http://127.0.0.1:{free_port()}"
    responses.add_passthru(bernstein.server.url)
    pause = {
        "labels": {"alertname": "AgentwatchHostLoadHigh", "agentwatch_action": "pause"},
        "fingerprint": "f1",
        "status": {"state": "active", "silencedBy": [], "inhibitedBy": []},
    }
    responses.get(f"{am}/api/v2/alerts", json=[pause])
    cfg = registry.config_from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "controller": {"max_agents": 4, "hold_for": 60, "alertmanagers": [am]},
        }
    )
    controller = Controller(
        cfg,
        settings_from(cfg["controller"]),
        [am],
        tmp_path / "c.json",
        adapter(bernstein, token="wrong"),
        {},
        spool_dir=tmp_path / "spool",
        state_dir=tmp_path / "state",
    )
    with caplog.at_level(logging.WARNING, "agentwatch.controller"):
        controller.cycle(now=1000)
        assert json.loads((tmp_path / "c.json").read_text())["paused"] is True
        responses.replace(responses.GET, f"{am}/api/v2/alerts", status=500)
        controller.cycle(now=1030)
        held = json.loads((tmp_path / "c.json").read_text())
        assert (held["mode"], held["paused"]) == ("holding", True)
        controller.cycle(now=1061)
        fallen = json.loads((tmp_path / "c.json").read_text())
        assert (fallen["mode"], fallen["max_agents"]) == ("fallback", 1)
    assert controller.memory.counters["adapter_errors"] == {"bernstein": 3}  # past each backoff
    assert not controller.cycle_gate.failing
    failing = [r.getMessage() for r in caplog.records if "adapter bernstein" in r.getMessage()]
    assert len(failing) == 1 and "401" in failing[0], failing
    assert bernstein.server.get("/drain").json()["draining"] is False, "nothing got through"
