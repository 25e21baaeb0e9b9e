"""The demo's orchestrator is the real Bernstein 3.23.0 when it can be had: `agentwatch up`
plans it (its agents real Claude Code sessions against the scripted API) and points the
controller and Prometheus at it with a token; without it the stand-in runs, said once.
The slow test runs `python -m agentwatch.demo.bernstein` and steers it as the controller
does: a pause drains the real Bernstein (its own /metrics: no agent while tasks wait), a
resume runs its agents again; agentwatch's OTel receiver counts their tokens."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests
import yaml

from agentwatch.cli import up
from agentwatch.controller import state
from agentwatch.controller.adapters import Driver
from agentwatch.controller.bernstein import BernsteinAdapter
from agentwatch.controller.policy import Settings, State
from agentwatch.core.spool import render
from agentwatch.sentinels import registry
from tests.bernstein_run import wait_until
from tests.bernstein_support import bernstein_command
from tests.claude_cli import claude_command
from tests.conftest import free_port, samples
from tests.otel_support import port, receiver

TOKEN_ENV = "AGENTWATCH_TEST_DEMO_TOKEN"
TOKEN = "demo-test-token"


def planned(tmp_path: Path, bernstein: str | None) -> tuple[dict[str, up.Child], dict[str, Any]]:
    args = argparse.Namespace(config=tmp_path / "no-config.yaml", listen=None, log_level=None)
    layout = up.Layout(state=tmp_path / "state", spool=tmp_path / "spool", demo=True,
                       stack=False, claude="/opt/claude", bernstein=bernstein)  # fmt: skip
    layout.state.mkdir(parents=True, exist_ok=True)
    children = up.plan(args, registry.config_from_mapping({}), layout)
    return {c.name: c for c in children}, yaml.safe_load(layout.config_file.read_text())


def test_up_plans_the_real_bernstein_as_the_demos_orchestrator(tmp_path: Path) -> None:
    children, derived = planned(tmp_path, "/opt/bernstein/bin/bernstein")
    assert "demo-orchestrator" not in children
    argv = children["demo-bernstein"].argv
    assert argv[:3] == [sys.executable, "-m", "agentwatch.demo.bernstein"]
    assert argv[argv.index("--bernstein") + 1] == "/opt/bernstein/bin/bernstein"
    assert argv[argv.index("--claude") + 1] == "/opt/claude"
    assert argv[argv.index("--port") + 1] == "9852"  # demo.orchestrator_listen's port
    assert argv[argv.index("--token-env") + 1] == up.DEMO_TOKEN_ENV
    orchestrator = derived["controller"]["orchestrator"]
    assert orchestrator == {
        "kind": "bernstein",
        "url": "http://127.0.0.1:9852",
        "token_env": up.DEMO_TOKEN_ENV,
    }
    # the tmux sessions run beside it at their default number, not after the stand-in's file
    assert "--orchestrator-state" not in children["demo"].argv


def test_without_bernstein_the_stand_in_runs_and_up_says_so_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(up.BERNSTEIN_ENV, str(tmp_path / "absent" / "bernstein"))
    assert up.real_bernstein("/opt/claude") is None
    assert up.real_bernstein(None) is None  # simulated sessions: nothing for it to run
    said = capsys.readouterr().out
    assert said.count("Bernstein 3.23.0 is not installed") == 1, said
    assert "stand-in orchestrator" in said
    children, derived = planned(tmp_path, None)
    assert "demo-bernstein" not in children and "demo-orchestrator" in children
    assert "token_env" not in derived["controller"]["orchestrator"]
    assert "--orchestrator-state" in children["demo"].argv


def agents_active(url: str) -> float:
    text = requests.get(url + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"},
                        timeout=15).text  # fmt: skip
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("bernstein_agents_active{")
    )


def tasks(url: str) -> list[dict[str, Any]]:
    answer = requests.get(url + "/tasks", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=15)
    answer.raise_for_status()
    return list(answer.json())


def count(url: str, status: str) -> int:
    return sum(1 for task in tasks(url) if task.get("status") == status)


def decision(paused: bool) -> dict[str, Any]:
    return state.decision(
        State(level=2, paused=paused), Settings(max_agents=2, min_agents=1), (0.0, "default")
    )


def otel_input_tokens(work: Any) -> float:
    work.cycle(True)
    return sum(
        value
        for (name, labels), value in samples(render(work.families())).items()
        if name == "agentwatch_otel_tokens_total" and dict(labels).get("type") == "input"
    )


@pytest.mark.slow
def test_the_demos_bernstein_runs_claude_agents_the_controller_pauses(tmp_path: Path) -> None:
    numbers: dict[str, float] = {}
    bernstein_port = free_port()
    url = f"http://127.0.0.1:{bernstein_port}"
    with receiver(tmp_path, grace=1.0) as work:
        demo = start_demo(tmp_path, bernstein_port, "--otel-listen", f"127.0.0.1:{port(work)}")
        try:
            began = time.monotonic()
            wait_until(lambda: count(url, "done") >= 2, 240, "two of its agents' tasks done")
            numbers["first_two_done_s"] = time.monotonic() - began
            wait_until(lambda: otel_input_tokens(work) > 0, 60, "its agents' tokens via OTel")
            driver = Driver(
                BernsteinAdapter(url, TOKEN, timeout=15), state.Memory(policy=State(level=2))
            )
            driver.push(decision(paused=True), now=time.time())
            assert not driver.failing
            numbers["pause_to_no_agent_s"] = wait_until(
                lambda: agents_active(url) == 0, 120, "no agent while paused"
            )
            # drained: tasks wait (the demo keeps two open) and none is claimed for a while
            held = time.monotonic()
            while time.monotonic() - held < 8.0:
                assert agents_active(url) == 0 and count(url, "claimed") == 0
                time.sleep(0.5)
            assert count(url, "open") >= 2
            done_before = count(url, "done")
            driver.push(decision(paused=False), now=time.time())
            numbers["resume_to_claim_s"] = wait_until(
                lambda: agents_active(url) > 0, 90, "an agent claimed after the resume"
            )
            wait_until(lambda: count(url, "done") > done_before, 120, "a task done again")
            numbers["otel_input_tokens"] = otel_input_tokens(work)
        finally:
            demo.send_signal(signal.SIGTERM)
            code = demo.wait(timeout=120)
            print(numbers)
        assert code == 0, (tmp_path / "demo.log").read_text()[-3000:]
    with pytest.raises(requests.ConnectionError):  # it stopped Bernstein's server
        requests.get(url + "/status", timeout=5)
    wait_until(lambda: survivors(tmp_path / "demo") == [], 30, "no Bernstein process left")


def survivors(folder: Path) -> list[int]:
    """Processes whose command line names the demo's folder (Bernstein's own run detached)."""
    return [
        proc.pid
        for proc in psutil.process_iter(["cmdline"])
        if any(str(folder) in part for part in proc.info["cmdline"] or [])
    ]


def start_demo(tmp_path: Path, bernstein_port: int, *extra: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "agentwatch.demo.bernstein", str(tmp_path / "demo"),
            "--bernstein", bernstein_command(), "--claude", claude_command(),
            "--port", str(bernstein_port), "--token-env", TOKEN_ENV, "--max-agents", "2",
            "--agent-seconds", "6", *extra]  # fmt: skip
    with (tmp_path / "demo.log").open("ab") as log:
        return subprocess.Popen(
            argv, env={**os.environ, TOKEN_ENV: TOKEN}, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip


@pytest.mark.slow
def test_a_stop_during_bernsteins_start_leaves_nothing_behind(tmp_path: Path) -> None:
    """`bernstein run` takes 20-60 s to hand over; `up` gives a child 10 s to end."""
    demo = start_demo(tmp_path, free_port())
    try:
        folder = tmp_path / "demo"
        wait_until(lambda: set(survivors(folder)) - {demo.pid}, 120, "bernstein run started")
    finally:
        demo.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        code = demo.wait(timeout=60)
    assert code == 0, (tmp_path / "demo.log").read_text()[-3000:]
    assert time.monotonic() - stopped < 10.0
    wait_until(lambda: survivors(tmp_path / "demo") == [], 30, "no Bernstein process left")
