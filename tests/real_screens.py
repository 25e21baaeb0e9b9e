"""Screens of the real Claude Code TUI, captured live in tmux against the scripted API.

Every scenario is one interactive `claude` session (the pinned 2.1.328) on a private tmux
socket, driven by a script of API steps and the prompts typed into it, and labelled with the
state the idle-error classifier must give. `capture_all` runs them side by side and returns
each screen as `tmux capture-pane -p -J` shows it (the sentinel's own capture), with the
stand-in's port replaced by a fixed one so that regenerated fixtures compare equal.

Regenerate the kept fixtures when Claude Code changes:
    python -m tests.real_screens --out tests/fixtures/panes/real
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn
from tests.claude_cli import claude_command, environment, prepare_home

FIXTURES = Path(__file__).parent / "fixtures" / "panes" / "real"
LABELS = "labels.json"
COLUMNS, ROWS = 120, 40
STARTUP = re.compile(r"\? for shortcuts|for agents")
FIXED_PORT = "127.0.0.1:8080"
FIXED_SCRATCH = "/home/dev"


@dataclass(frozen=True)
class Scenario:
    """One situation: the session's API steps, then each prompt typed and the screen text
    (a regex) that shows its answer arrived; the last one shows the situation is reached."""

    name: str
    state: str
    steps: list[dict[str, Any]]
    turns: tuple[tuple[str, str], ...]
    env: dict[str, str] = field(default_factory=dict)
    settle: float = 1.0  # seconds the screen must hold still at the end (0: do not wait)


TASK = "Fix the failing test in tests/test_parser.py"


def _error(status: int, kind: str, message: str, **headers: str) -> dict[str, Any]:
    return {"error": {"status": status, "type": kind, "message": message, "headers": headers}}


def _once(
    name: str, state: str, steps: list[dict[str, Any]], reached: str, **extra: Any
) -> Scenario:
    return Scenario(name, state, steps, ((TASK, reached),), **extra)


WEDGE = (
    "messages.3.content.1: `thinking` or `redacted_thinking` blocks in the latest assistant "
    "message cannot be modified. These blocks must remain as they were in the original response."
)
RESET = str(int(time.time()) // 3600 * 3600 + 3 * 3600)  # a whole hour, 2-3 hours ahead
# The API's answer to a key whose account has no credit (quoted in anthropics/claude-code#4684).
CREDIT = (
    "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing "
    "to upgrade or purchase credits."
)
SCENARIOS = [
    _once("finished_turn", "idle",
          [{"answer": {"text": "Fixed: the parser now skips blank lines. All 12 tests pass."}}],
          r"All 12 tests pass"),
    _once("server_error_500", "api_error",
          [_error(500, "api_error", "Internal server error")], r"API Error: 500"),
    _once("overloaded_529", "rate_limited",
          [_error(529, "overloaded_error", "Overloaded")], r"API Error: 529"),
    _once("rate_limit_429", "rate_limited",
          [_error(429, "rate_limit_error", "This request would exceed the rate limit for your "
                  "organization of 50,000 input tokens per minute.", **{"retry-after": "30"})],
          r"429"),
    # An API-key session shows a rejected unified limit as a plain 429 (the usage-limit
    # wording is for subscription logins), so it is a throttle here.
    _once("unified_limit_rejected", "rate_limited",
          [_error(429, "rate_limit_error", "Rate limited", **{
              "anthropic-ratelimit-unified-status": "rejected",
              "anthropic-ratelimit-unified-reset": RESET,
              "anthropic-ratelimit-unified-5h-status": "rejected",
              "anthropic-ratelimit-unified-5h-reset": RESET,
              "anthropic-ratelimit-unified-5h-utilization": "1.0",
              "anthropic-ratelimit-unified-representative-claim": "five_hour"})],
          r"Request rejected \(429\)"),
    _once("auth_401", "api_error",
          [_error(401, "authentication_error", "invalid x-api-key")], r"(?i)api key"),
    _once("unreachable", "api_error", [{"drop": True}], r"(?i)error|unable|connect"),
    # Billing: no resend or nudge helps, so it is a limit someone has to lift (usage_limit).
    _once("credit_balance_low", "usage_limit",
          [_error(400, "invalid_request_error", CREDIT)], r"(?i)credit balance"),
    _once("prompt_too_long", "context_too_long",
          [_error(400, "invalid_request_error",
                  "prompt is too long: 215023 tokens > 200000 maximum")],
          r"(?i)prompt is too long"),
    _once("thinking_wedge", "context_wedge",
          [_error(400, "invalid_request_error", WEDGE)], r"cannot be modified"),
    _once("quoted_error_answer", "idle",
          [{"answer": {"text": "The CI log shows `API Error: 500 Internal server error` from "
                               "the mock; I made the test retry once."}}],
          r"retry once"),
    _once("permission_prompt", "approval_prompt",
          [{"tool_use": {"name": "Bash", "text": "I will run the tests.",
                         "input": {"command": "python3 -m pytest -q",
                                   "description": "Run tests"}}},
           {"answer": {"text": "Tests pass."}}],
          r"(?i)do you want to proceed"),
    _once("working_slow_answer", "working",
          [{"answer": {"text": "Done."}, "delay": 900}], r"(?i)esc to interrupt", settle=0),
    _once("retrying_529", "working",
          [_error(529, "overloaded_error", "Overloaded")], r"(?i)retrying in", settle=0,
          env={"CLAUDE_CODE_MAX_RETRIES": "10"}),
    Scenario("resubmitted_after_error", "working",
             [_error(500, "api_error", "Internal server error"),
              {"answer": {"text": "Done."}, "delay": 900}],
             ((TASK, r"API Error: 500"), ("continue", r"(?i)esc to interrupt")), settle=0),
]  # fmt: skip


class Tmux:
    """A private tmux server for the sessions (never the user's)."""

    def __init__(self, socket: Path):
        self.socket = socket

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-f", "/dev/null", "-S", str(self.socket), *args],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"tmux {args[0]} failed: {done.stderr.strip()}")
        return done.stdout

    def capture(self, target: str) -> str:
        return self.run("capture-pane", "-p", "-J", "-t", target)

    def kill(self) -> None:
        subprocess.run(["tmux", "-f", "/dev/null", "-S", str(self.socket), "kill-server"],
                       capture_output=True, timeout=10, check=False)  # fmt: skip


def wait_for(read: Any, pattern: str, timeout: float) -> str:
    """The screen once `pattern` shows on it (RuntimeError with the screen after `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        screen = str(read())
        if re.search(pattern, screen, re.M):
            return screen
        if time.monotonic() > deadline:
            raise RuntimeError(f"{pattern!r} did not show within {timeout:.0f}s:\n{screen}")
        time.sleep(0.2)


def settled(read: Any, hold: float, timeout: float = 15.0) -> str:
    """The screen once it held still for `hold` seconds."""
    last, since = str(read()), time.monotonic()
    deadline = since + timeout
    while time.monotonic() < deadline:
        time.sleep(0.2)
        screen = str(read())
        if screen != last:
            last, since = screen, time.monotonic()
        elif time.monotonic() - since >= hold:
            break
    return last


@contextmanager
def sessions(scenarios: list[Scenario], scratch: Path) -> Iterator[tuple[Tmux, StandIn]]:
    """One stand-in and one tmux server with a live Claude Code session per scenario (the
    tmux session is named after the scenario)."""
    ids = {scenario.name: str(uuid.uuid4()) for scenario in scenarios}
    script = parse(
        {
            "default": [{"answer": {"text": "Done."}}],
            "sessions": [{"session_id": ids[s.name], "steps": s.steps} for s in scenarios],
        }
    )
    home = scratch / "home"
    projects = {s.name: scratch / "work" / s.name for s in scenarios}
    for folder in projects.values():
        folder.mkdir(parents=True, exist_ok=True)
    prepare_home(home, list(projects.values()))
    tmux = Tmux(scratch / "tmux.sock")
    with StandIn(script, ServedLog(scratch / "served.jsonl")) as api:
        try:
            for scenario in scenarios:
                env = {**environment(home, api.url), **scenario.env}
                command = [
                    "env", "-i", *(f"{k}={v}" for k, v in env.items()), claude_command(),
                    "--model", "claude-sonnet-4-5", "--session-id", ids[scenario.name],
                ]  # fmt: skip
                tmux.run("new-session", "-d", "-s", scenario.name, "-x", str(COLUMNS),
                         "-y", str(ROWS), "-c", str(projects[scenario.name]),
                         shlex.join(command))  # fmt: skip
            yield tmux, api
        finally:
            tmux.kill()


def drive(tmux: Tmux, scenarios: list[Scenario], timeout: float = 60.0) -> dict[str, str]:
    """Type each scenario's prompts, turn by turn, into all sessions at once; return each
    screen once its situation is reached."""

    def reader(name: str) -> Any:
        return lambda: tmux.capture(name)

    for scenario in scenarios:
        wait_for(reader(scenario.name), STARTUP.pattern, timeout)
    time.sleep(1.0)  # the prompt box takes input a moment after it is drawn
    screens: dict[str, str] = {}
    for turn in range(max(len(s.turns) for s in scenarios)):
        active = [s for s in scenarios if turn < len(s.turns)]
        for scenario in active:
            tmux.run("send-keys", "-t", scenario.name, "-l", scenario.turns[turn][0])
        time.sleep(0.3)
        for scenario in active:
            tmux.run("send-keys", "-t", scenario.name, "Enter")
        for scenario in active:
            screens[scenario.name] = wait_for(
                reader(scenario.name), scenario.turns[turn][1], timeout
            )
    for scenario in scenarios:
        if scenario.settle:
            screens[scenario.name] = settled(reader(scenario.name), scenario.settle)
    return screens


def normalized(screen: str, api: StandIn, scratch: Path) -> str:
    """The screen with what changes between runs made fixed: the stand-in's port and the
    scratch folder (the times in "done 12:03 PM" lines stay: they are part of the screen)."""
    return screen.replace(api.url.removeprefix("http://"), FIXED_PORT).replace(
        str(scratch), FIXED_SCRATCH
    )


def capture_all(scenarios: list[Scenario], scratch: Path) -> dict[str, str]:
    with sessions(scenarios, scratch) as (tmux, api):
        screens = drive(tmux, scenarios)
        return {name: normalized(screen, api, scratch) for name, screen in screens.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.real_screens",
        description="Capture the real Claude Code TUI in every scripted situation.",
    )
    parser.add_argument("--out", type=Path, default=FIXTURES, help="folder for NAME.txt files")
    parser.add_argument("--only", action="append", help="scenario name (repeatable)")
    args = parser.parse_args(argv)
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only]
    with tempfile.TemporaryDirectory(
        prefix="agentwatch-screens-", ignore_cleanup_errors=True
    ) as scratch:
        screens = capture_all(chosen, Path(scratch))
    args.out.mkdir(parents=True, exist_ok=True)
    labels_path = args.out / LABELS
    labels = json.loads(labels_path.read_text()) if labels_path.exists() else {}
    for scenario in chosen:
        (args.out / f"{scenario.name}.txt").write_text(screens[scenario.name], encoding="utf-8")
        labels[scenario.name] = scenario.state
        print(f"{scenario.name}: {scenario.state}")
    labels_path.write_text(json.dumps(dict(sorted(labels.items())), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
