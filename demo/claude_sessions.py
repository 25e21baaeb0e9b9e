"""The demo on the real Claude Code: interactive sessions in tmux against the scripted API.

When the pinned Claude Code is installed, the demo workload runs it instead of its simulated
sessions: each role is one interactive `claude` in a window of the demo's tmux server, with
its own config dir (the demo's CLAUDE_CONFIG_DIR, so the ledger reads what it writes) and its
own script on the stand-in API. A small driver types the next prompt whenever a session sits
at its prompt after a finished turn. The roles:
- `data-pipeline` burns: big answers, prompt after prompt, for `burn_seconds`, then it rests;
- `docs-site` stalls: after `stall_after_turns` answers the API fails with a 500; the driver
  never resends, so only the controller's nudge (typed into the pane) gets it going again;
- `mobile-app` is rate limited once: a 429, resent by the driver after a minute;
- `webshop` works normally.
The driver reads its own sessions' screens to know when to type; agentwatch never does.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentwatch.core.claude import telemetry_env
from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn

API_KEY = "sk-ant-api03-agentwatch-demo-0123456789abcdefghij"
STARTUP_SECONDS = 6.0  # the prompt box takes input a few seconds after launch
RESEND_AFTER = 60.0  # the rate-limited session is resent this long after its 429
AT_PROMPT = re.compile(r"\? for shortcuts|bypass permissions on")
WORKING = re.compile(r"esc to interrupt|…\s*\(\d")
ERROR_GHOST = re.compile(r"Resend your message|Once fixed, resend")
PROMPTS = (
    "Add input validation to the signup form and cover it with tests",
    "Find why the nightly export job is slow and fix the worst query",
    "Refactor the payment client so retries are configurable",
    "Update the API docs for the new pagination parameters",
    "Make the flaky integration test deterministic",
    "Split the settings page into smaller components",
)


def _usage(inputs: int, output: int, read: int, written: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": inputs,
        "output_tokens": output,
        "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": written, "ephemeral_1h_input_tokens": 0},
    }


def _answer(text: str, usage: dict[str, Any], delay: float) -> dict[str, Any]:
    return {"answer": {"text": text, "usage": usage}, "delay": delay}


@dataclass(frozen=True)
class RealRole:
    project: str
    model: str
    pace: float  # seconds between the end of a turn and the next prompt
    burns: bool = False
    stalls: bool = False
    throttled: bool = False


REAL_ROSTER = (
    RealRole("webshop", "claude-sonnet-4-5", 8.0),
    RealRole("data-pipeline", "claude-opus-4-5", 1.0, burns=True),
    RealRole("docs-site", "claude-haiku-4-5", 6.0, stalls=True),
    RealRole("mobile-app", "claude-sonnet-4-5", 10.0, throttled=True),
)


def steps(role: RealRole, stall_after_turns: int) -> list[dict[str, Any]]:
    """The API's answers to one role's session, in order (the last one repeats)."""
    if role.burns:
        return [_answer("Rewrote the pipeline stage; re-running it.",
                        _usage(20_000, 4_000, 90_000, 10_000), 1.0)]  # fmt: skip
    normal = _answer("Done: the change is in and the tests pass.", _usage(3_000, 400, 20_000), 2.0)
    if role.stalls:
        failure = {
            "error": {"status": 500, "type": "api_error", "message": "Internal server error"}
        }
        return [*[normal] * max(stall_after_turns, 1), failure, normal]
    if role.throttled:
        limit = {"error": {"status": 429, "type": "rate_limit_error",
                           "message": "This request would exceed the rate limit for your "
                           "organization of 50,000 input tokens per minute.",
                           "headers": {"retry-after": "60"}}}  # fmt: skip
        return [normal, normal, limit, normal]
    return [normal]


@dataclass
class Driven:
    """What the driver knows of one session."""

    role: RealRole
    started: float
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    prompts: int = 0
    last_prompt: float = 0.0
    error_seen: float | None = None


class RealSessions:
    """The stand-in API, the argv of each role's window, and the driver."""

    def __init__(self, claude: str, claude_dir: Path, work: Path, served: Path,
                 burn_seconds: float, stall_after_turns: int,
                 otel_listen: str | None = None):  # fmt: skip
        self.claude = claude
        self.otel_listen = otel_listen  # the otel sentinel: the sessions export to it
        self.claude_dir = claude_dir
        self.work = work
        self.burn_seconds = burn_seconds
        self.stall_after_turns = stall_after_turns
        self.sessions: dict[str, Driven] = {}
        self.api = StandIn(parse({"default": [_answer("Done.", _usage(500, 50, 0), 1.0)]}),
                           ServedLog(served))  # fmt: skip
        self.began = time.monotonic()

    def start(self) -> None:
        self.api.start()
        self.claude_dir.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        # Every role's folder trusted before any Claude Code starts: a running one rewrites
        # .claude.json from what it read, so a folder added later can be lost, and that
        # session then waits on the trust dialog instead of its prompt.
        self._trust([self.work / role.project for role in REAL_ROSTER])

    def stop(self) -> None:
        self.api.stop()

    def argv(self, role: RealRole) -> list[str]:
        """The window's command: `claude` with the demo's environment (no shell)."""
        session = Driven(role, time.monotonic())
        self.sessions[role.project] = session
        self._script(session)
        cwd = self.work / role.project
        cwd.mkdir(parents=True, exist_ok=True)  # trusted already: start() did every role's
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.work),
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
            "CLAUDE_CONFIG_DIR": str(self.claude_dir),
            "ANTHROPIC_BASE_URL": self.api.url,
            "ANTHROPIC_API_KEY": API_KEY,
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            # their own telemetry to the otel sentinel, so the dashboards show API latency
            **(telemetry_env(self.otel_listen) if self.otel_listen else {}),
        }
        return ["env", "-i", "-C", str(cwd), *(f"{k}={v}" for k, v in env.items()),
                self.claude, "--model", role.model, "--session-id", session.session_id]  # fmt: skip

    def _script(self, session: Driven) -> None:
        """Give the new session its own steps on the stand-in."""
        scripted = parse(
            {"sessions": [{"session_id": session.session_id,
                           "steps": steps(session.role, self.stall_after_turns)}]}
        ).sessions[0]  # fmt: skip
        self.api.sessions.add(scripted)

    def _trust(self, folders: list[Path]) -> None:
        """Onboarding done, the key approved, the folders trusted: straight to the prompt."""
        path = self.claude_dir / ".claude.json"
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            state = {}
        state["hasCompletedOnboarding"] = True
        state["customApiKeyResponses"] = {"approved": [API_KEY[-20:]], "rejected": []}
        projects = state.setdefault("projects", {})
        for cwd in folders:
            projects[str(cwd)] = {
                "hasTrustDialogAccepted": True,
                "hasCompletedProjectOnboarding": True,
            }
        path.write_text(json.dumps(state), encoding="utf-8")

    def drive(self, capture: Any, send: Any) -> None:
        """One pass of the driver: type the next prompt where a session waits for one.
        `capture(name)` returns a window's screen; `send(name, text)` types a line into it."""
        now = time.monotonic()
        for name, session in self.sessions.items():
            if now - session.started < STARTUP_SECONDS:
                continue
            screen = capture(name)
            if not AT_PROMPT.search(screen) or WORKING.search(screen):
                continue
            if ERROR_GHOST.search(screen):
                session.error_seen = session.error_seen or now
                resend = session.role.throttled and now - session.error_seen >= RESEND_AFTER
                if resend:
                    send(name, "continue")
                    session.error_seen, session.last_prompt = None, now
                continue  # the stalled session waits for the controller's nudge
            session.error_seen = None
            if session.role.burns and now - self.began > self.burn_seconds:
                continue  # the burn is over: it rests
            if now - session.last_prompt >= session.role.pace:
                send(name, PROMPTS[session.prompts % len(PROMPTS)])
                session.prompts += 1
                session.last_prompt = now
