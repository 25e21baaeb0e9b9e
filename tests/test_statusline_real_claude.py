"""A real interactive Claude Code 2.1.328 session in tmux, with its hooks and its statusLine on
this checkout's `agentwatch hook` and `agentwatch statusline` (and a chained statusLine of the
user's): the permission dialog shows in the spool at once (PermissionRequest) and as a
Notification, every render leaves the session's snapshot, and the status line Claude Code
draws is the user's line followed by ours."""

from __future__ import annotations

import json
import shlex
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentwatch.cli import claude_settings, statusline
from agentwatch.core import claude_events
from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn
from tests.claude_cli import claude_command, environment, prepare_home
from tests.real_screens import STARTUP, Tmux, wait_for

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

AGENTWATCH = str(Path(sys.executable).parent / "agentwatch")
USAGE = {"input_tokens": 1000, "output_tokens": 50}


def spool(state: Path) -> list[dict[str, Any]]:
    path = claude_events.events_dir(state) / claude_events.EVENTS
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_real_tui_session_with_hooks_and_statusline(tmp_path: Path) -> None:
    home, state, config = tmp_path / "home", tmp_path / "state", tmp_path / "config"
    project = tmp_path / "work" / "tui-project"
    project.mkdir(parents=True)
    prepare_home(home, [project])
    hook = f"{AGENTWATCH} hook --state-dir {state}"
    status = f"{AGENTWATCH} statusline --state-dir {state}"
    settings = {
        "hooks": {e: [claude_settings.group(hook, e)] for e in claude_events.HOOK_EVENTS},
        "statusLine": {"type": "command", "command": status},
    }  # fmt: skip
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    (config / "agentwatch").mkdir(parents=True)
    (config / "agentwatch" / statusline.CHAIN_FILE).write_text(
        json.dumps({"command": "echo users-own-line"})
    )
    session = str(uuid.uuid4())
    steps = [
        {"tool_use": {"name": "Bash", "usage": USAGE,
                      "input": {"command": "touch made-here", "description": "make"}}},
        {"answer": {"text": "Made it.", "usage": USAGE}},
    ]  # fmt: skip
    script = parse({"default": [{"answer": {"text": "Done."}}],
                    "sessions": [{"session_id": session, "steps": steps}]})  # fmt: skip
    tmux = Tmux(tmp_path / "tmux.sock")
    with StandIn(script, ServedLog(None)) as api:
        try:
            env = {**environment(home, api.url), "XDG_CONFIG_HOME": str(config)}
            command = [*(f"{k}={v}" for k, v in env.items()), claude_command(),
                       "--model", "claude-sonnet-4-5", "--session-id", session]  # fmt: skip
            # tmux's shell expands the pane id env -i would otherwise drop
            line = 'env -i TMUX_PANE="$TMUX_PANE" ' + shlex.join(command)
            tmux.run("new-session", "-d", "-s", "s", "-x", "120", "-y", "40",
                     "-c", str(project), line)  # fmt: skip

            def screen() -> str:
                return tmux.capture("s")

            wait_for(screen, STARTUP.pattern, 60)
            wait_for(screen, r"users-own-line", 30)  # the chained line, drawn by Claude Code
            time.sleep(1.0)
            tmux.run("send-keys", "-t", "s", "-l", "make a file")
            time.sleep(0.3)
            tmux.run("send-keys", "-t", "s", "Enter")
            wait_for(screen, r"Do you want to proceed", 60)
            wait_for(lambda: [e["e"] for e in spool(state)], "PermissionRequest", 10)
            wait_for(lambda: [e.get("kind") for e in spool(state)], "permission_prompt", 20)
            tmux.run("send-keys", "-t", "s", "Enter")
            drawn = wait_for(screen, r"users-own-line\s*\n.*\$0\.\d\d · ctx \d+%", 60)
            assert "Made it." in wait_for(screen, "Made it", 30), drawn
            # the answer is drawn before the Stop hook's process has run: on a loaded machine
            # killing the session right away raced it (the event was never written)
            wait_for(lambda: [e["e"] for e in spool(state)], "'Stop'", 30)
        finally:
            tmux.kill()
    lines = spool(state)
    assert {line["s"] for line in lines} == {session}
    assert all(line["p"] == "tui-project" for line in lines)
    events = [line["e"] for line in lines]
    for expected in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
                     "Notification", "PostToolUse", "Stop"):  # fmt: skip
        assert expected in events, events
    assert all(line["pane"].startswith("%") for line in lines)  # run in a tmux pane
    record = json.loads((claude_events.status_dir(state) / f"{session}.json").read_text())
    assert record["model"] == "claude-sonnet-4-5" and record["p"] == "tui-project"
    assert record["cost_usd"] > 0 and "rate_limits" not in record, record  # an API-key session
    assert claude_events.read_counters(state) == {}, lines
