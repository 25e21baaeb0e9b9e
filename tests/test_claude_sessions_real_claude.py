"""Acceptance on the real Claude Code 2.1.328: with agentwatch installed (`agentwatch install`)
into a fresh HOME's settings, headless `claude -p` runs call the real `agentwatch hook`; a live
claude-sessions sentinel and the real exporter watch. Each session is
`ended` with its project on /metrics within 2 s of its exit, and commit-completion tells the
session that committed from the one that did not, in a real git repository; a tool call the
model repeats counts once as a repeat."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn
from tests.claude_cli import prepare_home, run_print
from tests.claude_spool import git, head
from tests.conftest import CLI, free_port, samples

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

AGENTWATCH = str(Path(sys.executable).parent / "agentwatch")
USAGE = {"input_tokens": 300, "output_tokens": 20}
COMMIT = "git -c user.email=t@example.invalid -c user.name=t commit -q --allow-empty -m agent"
LOOK = {"tool_use": {"name": "Bash", "input": {"command": "git status --short",
                                               "description": "look"}, "usage": USAGE}}  # fmt: skip
SCRIPT = {
    "default": [{"answer": {"text": "Nothing to do.", "usage": USAGE}}],
    "sessions": [
        {
            "prompt_contains": "commit it",
            "steps": [
                *[LOOK] * 2,  # the same call twice: one repeat
                {
                    "tool_use": {
                        "name": "Bash",
                        "input": {"command": COMMIT, "description": "c"},
                        "usage": USAGE,
                    }
                },
                {"answer": {"text": "Committed.", "usage": USAGE}},
            ],
        }
    ],
}


def _scrape(port: int) -> dict:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            return samples(response.read().decode())
    except OSError:
        return {}


def _ended(found: dict, project: str) -> set[str]:
    return {
        dict(labels)["session"]
        for (name, labels), value in found.items()
        if name == "agentwatch_claude_session_state" and value == 1
        and dict(labels)["state"] == "ended" and dict(labels)["project"] == project
    }  # fmt: skip


def _wait_ended(port: int, project: str, count: int, bound: float) -> tuple[float, dict]:
    started = time.monotonic()
    while time.monotonic() - started < bound:
        found = _scrape(port)
        if len(_ended(found, project)) == count:
            return time.monotonic() - started, found
        time.sleep(0.02)
    raise AssertionError(f"{count} ended session(s) of {project} not on /metrics in {bound} s")


def install_into(home: Path, scratch: Path, state: Path) -> None:
    """`agentwatch install` for real, into a fresh HOME (every XDG folder in the scratch)."""
    config = scratch / "config.yaml"
    config.write_text(f"state_dir: {state}\n")
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}
    env["HOME"] = str(home)
    for variable in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env[variable] = str(scratch / variable.lower())
    done = subprocess.run([*CLI, "--config", str(config), "install"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert set(settings["hooks"]) >= {"SessionStart", "SessionEnd", "PostToolUse"}


def test_real_headless_sessions_end_on_the_exporter_with_commit_completion(
    tmp_path: Path, processes: list
) -> None:
    home, state, spool = tmp_path / "home", tmp_path / "state", tmp_path / "spool"
    repo = tmp_path / "work" / "hooked-repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "commit", "-q", "--allow-empty", "-m", "start")
    prepare_home(home, [repo])
    install_into(home, tmp_path, state)
    port = free_port()
    dirs = ["--spool-dir", str(spool), "--state-dir", str(state)]
    processes.append(subprocess.Popen([*CLI, "sentinel", "claude-sessions", *dirs]))
    serve = ["--spool-dir", str(spool), "--listen", f"127.0.0.1:{port}"]
    processes.append(subprocess.Popen([*CLI, "exporter", *serve]))
    deadline = time.monotonic() + 30
    while not _scrape(port) and time.monotonic() < deadline:
        time.sleep(0.05)

    with StandIn(parse(SCRIPT), ServedLog(None)) as api:
        before = head(repo)
        done = run_print(home, api.url, repo, "just look", "--model", "claude-sonnet-4-5")
        assert done.returncode == 0, done.stderr[-2000:]
        took, found = _wait_ended(port, "hooked-repo", 1, 2.0)
        print(f"first session ended on /metrics {took:.2f} s after claude -p exited")
        assert head(repo) == before
        without = ("agentwatch_sessions_without_commit_total", (("project", "hooked-repo"),))
        assert found[without] == 1

        done = run_print(home, api.url, repo, "commit it", "--model", "claude-sonnet-4-5",
                         "--allowedTools", "Bash")  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        took, found = _wait_ended(port, "hooked-repo", 2, 2.0)
        print(f"second session ended on /metrics {took:.2f} s after claude -p exited")
    assert head(repo) != before, "the session really committed"
    assert found[without] == 1, "the session that committed is not counted"
    ended = ("agentwatch_claude_sessions_ended_total", (("project", "hooked-repo"),))
    assert found[ended] == 2
    repeats = [value for (name, _), value in found.items()
               if name == "agentwatch_claude_session_tool_repeats_total"]  # fmt: skip
    assert sorted(repeats) == [0, 1], "the committing session repeated its look once"
    for session in _ended(found, "hooked-repo"):
        info = ("agentwatch_claude_session_info",
                tuple(sorted({"session": session, "project": "hooked-repo", "mode": "headless",
                              "pane": ""}.items())))  # fmt: skip
        assert found[info] == 1


def test_the_real_statusline_command_gives_the_official_quota_within_two_seconds(
    tmp_path: Path, processes: list
) -> None:
    """The recorded 2.1.328 statusline payload of a subscription session (five_hour used 42 %)
    through the real `agentwatch statusline`: 0.42 on the exporter within 2 s."""
    state, spool, port = tmp_path / "state", tmp_path / "spool", free_port()
    recorded = Path(__file__).parent / "fixtures" / "hooks" / "statusline-subscription.json"
    assert json.loads(recorded.read_text())["rate_limits"]["five_hour"]["used_percentage"] == 42
    dirs = ["--spool-dir", str(spool), "--state-dir", str(state)]
    processes.append(subprocess.Popen([*CLI, "sentinel", "claude-sessions", *dirs]))
    serve = ["--spool-dir", str(spool), "--listen", f"127.0.0.1:{port}"]
    processes.append(subprocess.Popen([*CLI, "exporter", *serve]))
    deadline = time.monotonic() + 30
    while not _scrape(port) and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    subprocess.run(
        [AGENTWATCH, "statusline", "--state-dir", str(state)],
        input=recorded.read_bytes(), capture_output=True, timeout=30, check=True,
    )  # fmt: skip
    key = ("agentwatch_quota_used_ratio", (("window", "five_hour"),))
    while _scrape(port).get(key) != 0.42:
        assert time.monotonic() - started < 2.0, "the quota reading is not on /metrics in 2 s"
        time.sleep(0.02)
    print(f"five_hour 0.42 on /metrics {time.monotonic() - started:.2f} s after the render")
