"""Acceptance on the real Claude Code 2.1.328 TUI: an interactive session in tmux, with
agentwatch installed into its fresh HOME's settings, asks for a permission; claude-sessions shows it
`waiting_for_permission` in its tmux pane, and `agentwatch status` merges that with what the
idle-error classifier reads from the same pane."""

from __future__ import annotations

import json
import shlex
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from agentwatch.core import claude_events
from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn
from tests.claude_cli import claude_command, environment, prepare_home
from tests.conftest import run_cli, running_on, samples
from tests.real_screens import COLUMNS, ROWS, STARTUP, Tmux, wait_for
from tests.test_claude_sessions_real_claude import install_into

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`


def test_a_real_permission_prompt_in_tmux_is_waiting_for_permission(tmp_path: Path) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="aw-tui-"))  # short: tmux socket paths
    home, state, spool = tmp_path / "home", tmp_path / "state", tmp_path / "spool"
    project = tmp_path / "work" / "asking"
    project.mkdir(parents=True)
    prepare_home(home, [project])
    install_into(home, tmp_path, state)
    session = str(uuid.uuid4())
    steps = [
        {"tool_use": {"name": "Bash", "text": "I will run the tests.",
                      "input": {"command": "python3 -m pytest -q", "description": "Run tests"}}},
        {"answer": {"text": "Tests pass."}},
    ]  # fmt: skip
    script = parse({"default": [{"answer": {"text": "Done."}}],
                    "sessions": [{"session_id": session, "steps": steps}]})  # fmt: skip
    tmux = Tmux(scratch / "tmux.sock")
    with StandIn(script, ServedLog(None)) as api:
        try:
            env = " ".join(shlex.quote(f"{k}={v}") for k, v in environment(home, api.url).items())
            # env -i keeps the test's environment out; the pane's own TMUX_PANE goes in, as
            # it does for a session a person starts in tmux
            line = (f'env -i {env} TMUX_PANE="$TMUX_PANE" {shlex.quote(claude_command())} '
                    f"--model claude-sonnet-4-5 --session-id {session}")  # fmt: skip
            tmux.run("new-session", "-d", "-s", "asking", "-x", str(COLUMNS), "-y", str(ROWS),
                     "-c", str(project), line)  # fmt: skip
            pane = tmux.run("list-panes", "-t", "asking", "-F", "#{pane_id}").strip()
            wait_for(lambda: tmux.capture("asking"), STARTUP.pattern, 60)
            time.sleep(1.0)  # the prompt box takes input a moment after it is drawn
            tmux.run("send-keys", "-t", "asking", "-l", "Run the tests")
            time.sleep(0.3)
            tmux.run("send-keys", "-t", "asking", "Enter")
            wait_for(lambda: tmux.capture("asking"), r"(?i)do you want to proceed", 60)
            # 2.1.328 runs the Notification hook (permission_prompt) 6 s after the dialog shows
            spool_file = claude_events.events_dir(state) / claude_events.EVENTS
            wait_for(spool_file.read_text, r'"e":"Notification"', 30)

            config = tmp_path / "config.yaml"
            config.write_text(f"agents: {{tmux_sockets: [{tmux.socket}], names: [claude]}}\n")
            dirs = ["--spool-dir", str(spool), "--state-dir", str(state)]
            for name in ("claude-sessions", "idle-error"):
                ran = run_cli("--config", str(config), "sentinel", name, "--once", *dirs)
                assert ran.returncode == 0, ran.stderr
            found = samples((spool / "claude-sessions.prom").read_text())
            with running_on(state):
                shown = run_cli("--config", str(config), "status", "--json", *dirs)
            status = json.loads(shown.stdout)
        finally:
            tmux.kill()
    labels = {"session": session, "project": "asking"}
    key = ("agentwatch_claude_session_state",
           tuple(sorted({**labels, "state": "waiting_for_permission"}.items())))  # fmt: skip
    assert found[key] == 1
    info = ("agentwatch_claude_session_info",
            tuple(sorted({**labels, "mode": "tmux", "pane": pane}.items())))  # fmt: skip
    assert found[info] == 1
    entry = next(item for item in status if item["sentinel"] == "claude-sessions")
    rows = {row["session"]: row for row in entry["sessions"]}
    assert rows[session]["state"] == "waiting_for_permission"
    assert rows[session]["source"] == "hooks"
    assert rows[session]["pane"] == pane
    assert "asking" not in rows, "the pane is the session's, not shown twice"
