"""The real Claude Code 2.1.328 (headless `claude -p` through the scripted API) with its hooks
pointed at the real `agentwatch hook` of this checkout: the events land in the spool, with
secrets planted in the prompt, the tool input, the tool output and the assistant text
nowhere in the state dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentwatch.cli import claude_settings
from agentwatch.core import claude_events
from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn
from tests.claude_cli import prepare_home, run_print

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

AGENTWATCH = str(Path(sys.executable).parent / "agentwatch")
SECRETS = {
    "prompt": "sk-ant-api03-PROMPTSECRET0123456789",
    "tool": "ghp_TOOLINPUTSECRET0123456789abcdef",
    "output": "AKIAOUTPUTSECRET0123",
    "assistant": "xoxb-ASSISTANTSECRET-0123456789",
}
USAGE = {"input_tokens": 300, "output_tokens": 20}
SCRIPT = {
    "default": [{"answer": {"text": "Done.", "usage": USAGE}}],
    "sessions": [
        {
            "prompt_contains": "run it",
            "steps": [
                {
                    "tool_use": {
                        "name": "Bash",
                        "input": {
                            "command": f"echo {SECRETS['tool']}; "
                            f"echo {SECRETS['output'][::-1]} | rev",
                            "description": "print",
                        },
                        "usage": USAGE,
                    }
                },
                {
                    "tool_use": {
                        "name": "Bash",
                        "input": {"command": "exit 3", "description": "fail"},
                        "usage": USAGE,
                    }
                },
                {"answer": {"text": f"Here: {SECRETS['assistant']}", "usage": USAGE}},
            ],
        }
    ],
}


def settings(state: Path) -> dict[str, object]:
    command = f"{AGENTWATCH} hook --state-dir {state}"
    # the entries install writes (SessionEnd's with its timeout: without one, a loaded machine
    # had Claude Code cancel it)
    hooks = {event: [claude_settings.group(command, event)] for event in claude_events.HOOK_EVENTS}
    return {"hooks": hooks}


def test_a_real_headless_session_leaves_its_events_and_no_secret(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    project = tmp_path / "work" / "hooked-project"
    project.mkdir(parents=True)
    prepare_home(home, [project])
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(json.dumps(settings(state)))
    with StandIn(parse(SCRIPT), ServedLog(None)) as api:
        done = run_print(home, api.url, project, f"run it {SECRETS['prompt']}",
                         "--model", "claude-sonnet-4-5", "--allowedTools", "Bash")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert SECRETS["assistant"] in done.stdout  # the session really said it
    lines = [json.loads(line) for line in (claude_events.events_dir(state) / "events.jsonl")
             .read_text().splitlines()]  # fmt: skip
    assert len({line["s"] for line in lines}) == 1
    assert all(line["p"] == "hooked-project" and line["pane"] == "" for line in lines)
    seen = [(line["e"], line.get("tool"), line.get("ok")) for line in lines]
    assert seen == [
        ("SessionStart", None, None),
        ("UserPromptSubmit", None, None),
        ("PreToolUse", "Bash", None),
        ("PostToolUse", "Bash", True),
        ("PreToolUse", "Bash", None),
        ("PostToolUse", "Bash", False),
        ("Stop", None, None),
        ("SessionEnd", None, None),
    ]
    assert lines[-1]["reason"] == "other"
    # of each tool input only its hash: the canonical JSON of what the model asked for
    inputs = [step["tool_use"]["input"] for step in SCRIPT["sessions"][0]["steps"][:2]]
    hashes = [line[claude_events.INPUT_HASH] for line in lines if line["e"] == "PreToolUse"]
    salt = claude_events.salt(state)
    assert salt is not None
    assert hashes == [claude_events.input_hash(given, salt) for given in inputs]
    assert claude_events.read_counters(state) == {}
    transcripts = b"".join(p.read_bytes() for p in (home / ".claude").rglob("*.jsonl"))
    stored = b"".join(p.read_bytes() for p in state.rglob("*") if p.is_file())
    for where, secret in SECRETS.items():
        assert secret.encode() in transcripts, f"the {where} secret never reached Claude Code"
        assert secret.encode() not in stored, f"the {where} secret reached the spool"


COMMIT_SCRIPT = {
    "default": [{"answer": {"text": "Nothing to do.", "usage": USAGE}}],
    "sessions": [
        {
            "prompt_contains": "commit it",
            "steps": [
                {"tool_use": {"name": "Bash", "usage": USAGE, "input": {
                    "command": "git commit -q --allow-empty -m work", "description": "commit"}}},
                {"answer": {"text": "Committed.", "usage": USAGE}},
            ],
        }
    ],
}  # fmt: skip


def test_git_head_at_start_and_end_of_real_sessions(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    project = tmp_path / "work" / "repo-project"
    project.mkdir(parents=True)
    env = dict(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@e", GIT_CONFIG_GLOBAL="/dev/null",
               PATH="/usr/bin:/bin")  # fmt: skip
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "one"]):
        subprocess.run(["git", "-C", str(project), *args], env=env, check=True, timeout=30)
    prepare_home(home, [project])
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(json.dumps(settings(state)))
    (home / ".gitconfig").write_text("[user]\n\tname = t\n\temail = t@e\n")
    with StandIn(parse(COMMIT_SCRIPT), ServedLog(None)) as api:
        for prompt in ("just look", "commit it"):
            done = run_print(home, api.url, project, prompt, "--model", "claude-sonnet-4-5",
                             "--allowedTools", "Bash")  # fmt: skip
            assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in (claude_events.events_dir(state) / "events.jsonl")
             .read_text().splitlines()]  # fmt: skip
    heads = [(line["e"], line.get("head")) for line in lines if "Session" in line["e"]]
    log = subprocess.run(["git", "-C", str(project), "log", "--format=%H"], capture_output=True,
                         text=True, env=env, check=True, timeout=30).stdout.split()  # fmt: skip
    second, first = log
    assert heads == [("SessionStart", first), ("SessionEnd", first),
                     ("SessionStart", first), ("SessionEnd", second)]  # fmt: skip


def _hogs() -> list[subprocess.Popen[bytes]]:
    """Busy loops, one more than the machine has cores, for the length of a test."""
    count = (os.cpu_count() or 1) + 1
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def _session_end_recorded(tmp_path: Path, end_group: dict[str, object]) -> bool:
    """One real headless session with agentwatch's hooks as install writes them, SessionEnd's
    group replaced by `end_group`; whether its SessionEnd reached the spool."""
    home, state = tmp_path / "home", tmp_path / "state"
    project = tmp_path / "work" / "loaded-project"
    project.mkdir(parents=True)
    prepare_home(home, [project])
    (home / ".claude").mkdir()
    document = claude_settings.merged({}, claude_settings.Commands.build([AGENTWATCH], state), ())
    document["hooks"]["SessionEnd"] = [end_group]
    del document["statusLine"]  # headless: no statusline runs
    (home / ".claude" / "settings.json").write_text(json.dumps(document))
    hogs = _hogs()
    try:
        with StandIn(parse(SCRIPT), ServedLog(None)) as api:
            done = run_print(home, api.url, project, "hello", "--model", "claude-sonnet-4-5")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert done.returncode == 0, done.stderr[-2000:]
    path = claude_events.events_dir(state) / "events.jsonl"
    seen = [json.loads(line)["e"] for line in path.read_text().splitlines()]
    assert seen[:2] == ["SessionStart", "UserPromptSubmit"]  # the session itself was hooked
    return "SessionEnd" in seen


def test_session_end_is_recorded_on_a_loaded_machine(tmp_path: Path) -> None:
    """2.1.328 gives SessionEnd hooks 1.5 s in all unless an entry sets `timeout`: under load
    the hook's start passed it and was cancelled ("Hook cancelled", 3 of 6 runs). Install's
    entry carries `"timeout": 10`; a hook made 2.5 s slower than it is still lands with it,
    with CPU hogs running, as the real agentwatch hook under heavy load would."""
    state = tmp_path / "state"
    ours = claude_settings.group(f"{AGENTWATCH} hook --state-dir {state}", "SessionEnd")
    assert ours["hooks"][0]["timeout"] == claude_settings.SESSION_END_TIMEOUT  # type: ignore[index]
    slow = {"hooks": [{**ours["hooks"][0], "command": f"sleep 2.5; {ours['hooks'][0]['command']}"}]}  # type: ignore[index]
    assert _session_end_recorded(tmp_path, slow)


def test_without_the_timeout_a_slow_session_end_is_cancelled(tmp_path: Path) -> None:
    """The control: the same slow hook without install's timeout never lands (Claude Code
    cancels it at 1.5 s), which is what the timeout above prevents."""
    state = tmp_path / "state"
    command = f"sleep 2.5; {AGENTWATCH} hook --state-dir {state}"
    assert not _session_end_recorded(tmp_path, {"hooks": [{"type": "command", "command": command}]})
