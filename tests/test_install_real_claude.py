"""The settings.json `agentwatch install` writes, as the real Claude Code (2.1.328) takes it: a
headless `claude -p` run with a tool call through the scripted API succeeds, and Claude Code
runs the installed hook command for each event it fires, with the event's JSON on stdin; an
interactive session in tmux runs the installed statusLine command and shows what it prints.

The installed command is a stub "agentwatch" that logs its argv and what it read (this branch
does not have `agentwatch hook` itself), so the test checks exactly what install wired up.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentwatch.cli import install
from agentwatch.cli import main as cli
from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn
from tests.claude_cli import claude_command, environment, prepare_home, run_print
from tests.real_screens import COLUMNS, ROWS, STARTUP, Tmux, wait_for

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

STUB = """\
#!{python}
import json, pathlib, sys
data = sys.stdin.buffer.read()
try:
    payload = json.loads(data)
except ValueError:
    payload = {{}}
call = {{"argv": sys.argv[1:], "stdin": len(data), "event": payload.get("hook_event_name"),
        "session": "session_id" in payload}}
log = pathlib.Path(__file__).with_name("calls.jsonl")
with log.open("a") as handle:
    handle.write(json.dumps(call) + "\\n")
if sys.argv[1:2] == ["statusline"]:
    print("stub statusline")
"""

SCRIPT = {
    "default": [{"answer": {"text": "Done."}}],
    "sessions": [
        {
            "prompt_contains": "list the files",
            "steps": [
                {"tool_use": {"name": "Bash", "input": {"command": "ls", "description": "List"}}},
                {"answer": {"text": "Two files."}},
            ],
        }
    ],
}


@dataclass
class Installed:
    home: Path
    project: Path
    stub: Path
    state: Path

    def calls(self) -> list[dict]:
        log = self.stub.parent / "calls.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Installed:
    """A fresh HOME whose ~/.claude/settings.json `agentwatch install` wrote (twice: a second
    install must not add a second set), pointing at the stub."""
    home = tmp_path / "home"
    project = tmp_path / "work" / "demo-project"
    project.mkdir(parents=True)
    prepare_home(home, [project])
    stub = tmp_path / "stub-bin" / "agentwatch"
    stub.parent.mkdir()
    stub.write_text(STUB.format(python=sys.executable))
    stub.chmod(0o755)
    for variable, folder in (
        ("XDG_CONFIG_HOME", "xdg-config"),
        ("XDG_DATA_HOME", "xdg-data"),
        ("XDG_STATE_HOME", "xdg-state"),
    ):
        monkeypatch.setenv(variable, str(tmp_path / folder))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setattr(install, "agentwatch_command", lambda: (str(stub),))
    state = tmp_path / "state"
    config = tmp_path / "config.yaml"
    config.write_text(f"state_dir: {state}\n")

    for _ in range(2):  # a second install must not add a second set of hooks
        assert cli.main(["--config", str(config), "install"]) == 0, capsys.readouterr().err
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    hook = shlex.join([str(stub), "hook", "--state-dir", str(state)])
    assert settings["hooks"]["PreToolUse"] == [{"hooks": [{"type": "command", "command": hook}]}]
    return Installed(home, project, stub, state)


def test_real_claude_runs_the_installed_hooks(installed: Installed, tmp_path: Path) -> None:
    home, project, state = installed.home, installed.project, installed.state
    with StandIn(parse(SCRIPT), ServedLog(tmp_path / "served.jsonl")) as api:
        done = run_print(home, api.url, project, "please list the files", "--allowedTools", "Bash")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Two files." in done.stdout

    calls = installed.calls()
    assert calls, "Claude Code ran none of the installed commands"
    hooks = [call for call in calls if call["argv"][:1] == ["hook"]]
    assert all(call["argv"] == ["hook", "--state-dir", str(state)] for call in hooks)
    assert all(call["stdin"] > 0 and call["session"] for call in hooks)
    fired = [call["event"] for call in hooks]
    assert fired == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ]


def test_real_claude_shows_the_installed_statusline(installed: Installed, tmp_path: Path) -> None:
    tmux = Tmux(tmp_path / "tmux.sock")
    with StandIn(parse(SCRIPT), ServedLog(tmp_path / "served.jsonl")) as api:
        env = environment(installed.home, api.url)
        command = ["env", "-i", *(f"{k}={v}" for k, v in env.items()), claude_command()]
        try:
            tmux.run("new-session", "-d", "-s", "statusline", "-x", str(COLUMNS),
                     "-y", str(ROWS), "-c", str(installed.project),
                     shlex.join(command))  # fmt: skip
            wait_for(lambda: tmux.capture("statusline"), STARTUP.pattern, 60)
            wait_for(lambda: tmux.capture("statusline"), r"stub statusline", 30)
        finally:
            tmux.kill()
    lines = [call for call in installed.calls() if call["argv"][:1] == ["statusline"]]
    assert lines, "Claude Code never ran the installed statusLine command"
    assert all(
        call["argv"] == ["statusline", "--state-dir", str(installed.state)] for call in lines
    )
    assert all(call["stdin"] > 0 and call["session"] for call in lines)
