"""The settings.json `agentwatch install` writes, as the real Claude Code (2.1.328) takes it: a
headless `claude -p` run with a tool call through the scripted API succeeds, and Claude Code
runs the installed hook command for each event it fires, with the event's JSON on stdin.

The installed command is a stub "agentwatch" that logs its argv and what it read (this branch
does not have `agentwatch hook` itself), so the test checks exactly what install wired up.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from agentwatch.cli import install
from agentwatch.cli import main as cli
from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn
from tests.claude_cli import prepare_home, run_print

STUB = """\
#!{python}
import json, pathlib, sys
data = sys.stdin.buffer.read()
try:
    event = json.loads(data).get("hook_event_name", "")
except ValueError:
    event = None
log = pathlib.Path(__file__).with_name("calls.jsonl")
with log.open("a") as handle:
    handle.write(json.dumps({{"argv": sys.argv[1:], "stdin": len(data), "event": event}}) + "\\n")
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


def test_real_claude_runs_the_installed_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
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
        assert cli.main(["--config", str(config), "install"]) in (0, 1), capsys.readouterr().err
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    hook = shlex.join([str(stub), "hook", "--state-dir", str(state)])
    assert settings["hooks"]["PreToolUse"] == [{"hooks": [{"type": "command", "command": hook}]}]

    with StandIn(parse(SCRIPT), ServedLog(tmp_path / "served.jsonl")) as api:
        done = run_print(home, api.url, project, "please list the files", "--allowedTools", "Bash")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Two files." in done.stdout

    calls = [json.loads(line) for line in (stub.parent / "calls.jsonl").read_text().splitlines()]
    assert calls, "Claude Code ran none of the installed commands"
    hooks = [call for call in calls if call["argv"][:1] == ["hook"]]
    assert all(call["argv"] == ["hook", "--state-dir", str(state)] for call in hooks)
    assert all(call["stdin"] > 0 for call in hooks)
    fired = [call["event"] for call in hooks]
    assert fired == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ]
