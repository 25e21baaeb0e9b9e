"""`agentwatch status`: one state per Claude Code session, merged from its hooks (the real
claude-sessions sentinel) and its pane's classifier (the real idle-error sentinel on a real
tmux server), with the source of each."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from agentwatch.grafana.queries import PANE_STATES
from tests.claude_spool import append, event
from tests.conftest import run_cli, running_on
from tests.dashboards import dashboard_queries
from tests.test_idle_error import TmuxServer, program


@pytest.fixture
def server() -> Iterator[TmuxServer]:
    assert shutil.which("tmux"), "tmux is required (Debian package tmux)"
    folder = Path(tempfile.mkdtemp(prefix="aw-cs-"))  # short: socket paths are < 108 bytes
    tmux = TmuxServer(folder)
    try:
        yield tmux
    finally:
        tmux.kill()
        shutil.rmtree(folder, ignore_errors=True)


def test_status_merges_hooks_and_panes_and_names_the_source(
    server: TmuxServer, workdirs: dict[str, Path], tmp_path: Path
) -> None:
    claude = program(tmp_path / "bin", "claude")
    err = server.pane("err", claude, "api_error_500.txt")
    ask = server.pane("ask", claude, "approval_boxed.txt")
    server.pane("alone", claude, "api_error_500.txt")  # a pane no hook session claims
    state = workdirs["state"]
    append(
        state,
        # hooks say working, but the pane sits on an API error between two hook events
        event("s-err", "UserPromptSubmit", p="web", pane=err),
        # hooks see the permission ask themselves
        event("s-ask", "PreToolUse", p="web", pane=ask, tool="Bash"),
        event("s-ask", "Notification", p="web", pane=ask, kind="permission_prompt"),
        # a headless run: hooks only
        event("s-headless", "Stop", p="api"),
    )
    config = tmp_path / "config.yaml"
    config.write_text(f"agents: {{tmux_sockets: [{server.sock}], names: [claude]}}\n")
    dirs = ["--spool-dir", str(workdirs["spool"]), "--state-dir", str(state)]
    for name in ("idle-error", "claude-sessions"):
        ran = run_cli("--config", str(config), "sentinel", name, "--once", *dirs, env=server.env)
        assert ran.returncode == 0, ran.stderr

    with running_on(state):
        ran = run_cli("--config", str(config), "status", "--json", *dirs)
        text = run_cli("--config", str(config), "status", *dirs).stdout
    entry = next(item for item in json.loads(ran.stdout) if item["sentinel"] == "claude-sessions")
    rows = {row["session"]: (row["state"], row["source"], row["pane"]) for row in entry["sessions"]}
    assert rows == {
        "s-err": ("api_error", "hooks+pane", err),
        "s-ask": ("waiting_for_permission", "hooks", ask),
        "s-headless": ("idle", "hooks", ""),
        "alone": ("api_error", "pane", rows["alone"][2]),
    }

    line = next(line for line in text.splitlines() if "s-headless" in line)
    assert "idle" in line and "(hooks)" in line and "headless" in line


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{key}="{value}"' for key, value in labels.items()) + "}"


def _series(metric: str, **labels: str) -> str:
    return metric + _labels(job="agentwatch", instance="ws1", **labels)


def test_the_dashboard_joins_each_session_to_what_its_pane_shows(tmp_path: Path) -> None:
    """The sessions dashboard's "hooks and pane" table, evaluated by promtool on series as the
    two sentinels write them: the pane column is the pane's state number, for tmux sessions
    only; the hook column is the time in the hook state, labelled with it."""
    queries = {
        query.ref_id: query.expr
        for query in dashboard_queries()
        if query.panel == "Claude Code sessions: hooks and pane"
    }
    one, two = {"session": "s1", "project": "web"}, {"session": "s2", "project": "api"}
    pane = {"tmux_session": "w", "pane": "%3", "agent": "claude"}
    series = {
        _series("agentwatch_claude_session_info", **one, mode="tmux", pane="%3"): "1x10",
        _series("agentwatch_claude_session_info", **two, mode="headless", pane=""): "1x10",
        _series("agentwatch_claude_session_state", **one, state="working"): "1x10",
        _series("agentwatch_claude_session_state", **two, state="idle"): "1x10",
        _series("agentwatch_claude_session_state_since_timestamp_seconds", **one): "0x10",
        _series("agentwatch_claude_session_state_since_timestamp_seconds", **two): "0x10",
        _series("agentwatch_pane_state", **pane, state="api_error"): "1x10",
        _series("agentwatch_pane_state", **pane, state="working"): "0x10",
    }
    api_error = list(PANE_STATES).index("api_error") + 1
    test = {
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": k, "values": v} for k, v in series.items()],
                "promql_expr_test": [
                    {
                        "expr": queries["B"],
                        "eval_time": "5m",
                        "exp_samples": [
                            {
                                "labels": _labels(instance="ws1", **one, pane="%3"),
                                "value": api_error,
                            }
                        ],
                    },
                    {
                        "expr": queries["A"],
                        "eval_time": "5m",
                        "exp_samples": [
                            {
                                "labels": _labels(instance="ws1", **one, state="working"),
                                "value": 300,
                            },
                            {
                                "labels": _labels(instance="ws1", **two, state="idle"),
                                "value": 300,
                            },
                        ],
                    },
                ],
            }
        ]
    }
    path = tmp_path / "dashboard_test.yml"
    path.write_text(yaml.safe_dump(test))
    promtool = shutil.which("promtool")
    assert promtool
    done = subprocess.run(
        [promtool, "test", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
