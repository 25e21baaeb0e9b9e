"""The demo's loops reach chat and its budget holds across restarts: the stall alert's first
message leaves Alertmanager before the controller's nudge can resolve it, and a restart of
`agentwatch up` counts the run budget on instead of from $0."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

import pytest

from agentwatch.cli import stack, up
from agentwatch.core import run_budget
from agentwatch.sentinels import registry
from tests.conftest import CLI, local_config


def test_a_demo_alerts_first_message_precedes_any_resolution(tmp_path: Path) -> None:
    """Prometheus sees a resolution one evaluation after the alert fired at the earliest;
    Alertmanager's group wait must end before that, or a stall the controller nudges at once
    resolves unannounced (it did with the default 10 s against the demo's 5 s)."""
    layout = up.Layout(state=tmp_path, spool=tmp_path / "spool", demo=True, stack=True)
    args = argparse.Namespace(config=tmp_path / "no-config.yaml")
    _, derived = up.derived_config(args, registry.config_from_mapping({}), layout)
    settings = derived["stack"]
    assert settings["group_wait"] < settings["evaluation_interval"]
    assert stack.alertmanager_config(derived)["route"]["group_wait"] == "1s"


def test_an_active_run_is_resumed_not_restarted(tmp_path: Path) -> None:
    first, resumed = run_budget.resume_or_start(tmp_path, 1_800_000_000.0)
    assert not resumed and first.started_at == 1_800_000_000.0
    again, resumed = run_budget.resume_or_start(tmp_path, 1_800_000_900.0)
    assert resumed and again.started_at == 1_800_000_000.0
    run_budget.stop(tmp_path)
    assert run_budget.resume_or_start(tmp_path, 1_800_001_000.0)[0].started_at == 1_800_001_000.0


@pytest.mark.slow
def test_a_restart_of_up_keeps_the_demos_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    env.pop("CLAUDE_CONFIG_DIR", None)
    argv = [*CLI, "--config", str(local_config(tmp_path)), "up", "--demo", "--no-stack",
            "--no-claude", "--state-dir", str(tmp_path / "state"), "--spool-dir",
            str(tmp_path / "spool"), "--for", "2"]  # fmt: skip
    run_file = run_budget.path(tmp_path / "state" / "demo")
    started = []
    outputs = []
    for _ in range(2):
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        started.append(json.loads(run_file.read_text())["started_at"])
        outputs.append(done.stdout)
    assert started[0] == started[1]
    assert "counts on from the run started" in outputs[1]
    assert "counts on" not in outputs[0]
