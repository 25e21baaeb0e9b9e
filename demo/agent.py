"""One simulated Claude Code session for the demo, run inside a tmux pane.

It writes real-format transcript lines (tokens the ledger counts), draws the bits of Claude
Code's screen the idle-error sentinel reads (a working spinner, or an API error above the
prompt box), and answers a nudge typed into its pane by resuming. The process names itself
`claude` so the resources, footprint and idle-error sentinels treat it as an agent session.
Every text it writes is invented.
"""

from __future__ import annotations

import argparse
import ctypes
import random
import select
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentwatch.core import claude
from agentwatch.demo import transcripts

PR_SET_NAME = 15
PROMPT_BOX = (
    "╭──────────────────────────────────────────────────────────╮\n"
    "│ >                                                        │\n"
    "╰──────────────────────────────────────────────────────────╯\n"
    "  ⏵⏵ bypass permissions on (shift+tab to cycle)"
)
# A server error (not a rate limit or an overload, which would open the breaker and pause the
# whole demo for its cool-down): the session stalls, the rest carries on.
API_ERROR_TEXT = (
    'API Error: 500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}'
)
API_ERROR = "⏺ " + API_ERROR_TEXT


@dataclass
class DemoSession:
    """One simulated session: where it writes, how hungry it is, and its last line (the
    parent of the next one)."""

    project: str
    model: str
    tokens_per_turn: int
    ids: random.Random = field(default_factory=random.Random)  # seeded by the OS: unique ids
    turns: int = 0
    last_uuid: str | None = None

    def __post_init__(self) -> None:
        self.session_id = transcripts.new_uuid(self.ids)
        self.cwd = f"/home/demo/{self.project}"

    def transcript(self, claude_dir: Path) -> Path:
        return claude.transcript_path(claude_dir / "projects", self.cwd, self.session_id)

    def fields(self) -> dict[str, Any]:
        """The keywords of its next line: session fields, a fresh uuid, the time now."""
        parent, self.last_uuid = self.last_uuid, transcripts.new_uuid(self.ids)
        return {
            "cwd": self.cwd,
            "session": self.session_id,
            "parent_uuid": parent,
            "uuid": self.last_uuid,
            "timestamp": transcripts.now(),
        }


def assistant_line(session: DemoSession, rng: random.Random) -> dict[str, Any]:
    tokens = session.tokens_per_turn
    return transcripts.assistant(
        transcripts.new_message_id(session.ids),
        transcripts.new_request_id(session.ids),
        model=session.model,
        input_tokens=rng.randint(tokens // 20, tokens // 10),
        cache_creation=rng.randint(0, tokens // 4),
        cache_read=rng.randint(tokens // 2, tokens),
        output_tokens=rng.randint(tokens // 20, tokens // 8),
        text="Working on the next step of the demo task.",
        **session.fields(),
    )


def api_error_line(session: DemoSession) -> dict[str, Any]:
    return transcripts.api_error(
        transcripts.new_uuid(session.ids),
        API_ERROR_TEXT,
        usage=transcripts.synthetic_usage(),
        **session.fields(),
    )


@dataclass
class Plan:
    tokens_per_turn: int
    seconds_per_turn: float
    burn_seconds: float = 0.0  # burn (10x tokens) for this long after the start, then steady
    stall_after_turns: int = 0  # 0: never stalls


def name_process(name: bytes = b"claude") -> None:
    """Show up as an agent CLI in /proc/<pid>/comm (what the sentinels match)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)


def _show(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _wait_for_nudge(stop: list[bool]) -> str | None:
    """Sit at the prompt until a line is typed into the pane (a nudge) or we are stopped."""
    while not stop[0]:
        ready, _, _ = select.select([sys.stdin], [], [], 0.5)
        if ready:
            line = sys.stdin.readline()
            if not line:  # no terminal any more: keep sitting
                time.sleep(0.5)
                continue
            return line.strip()
    return None


def run(session: DemoSession, claude_dir: Path, plan: Plan, seed: int) -> int:
    stop = [False]

    def request_stop(*_: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGHUP, request_stop)
    rng = random.Random(seed)
    path = session.transcript(claude_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    turns_since_stall = 0
    _show(f"✻ Welcome to the agentwatch demo session for {session.project} (simulated)")
    while not stop[0]:
        if plan.stall_after_turns and turns_since_stall >= plan.stall_after_turns:
            _append(path, api_error_line(session))
            _show(API_ERROR)
            _show("")
            _show(PROMPT_BOX)
            typed = _wait_for_nudge(stop)
            if typed is None:
                break
            _show(f"> {typed[:60]}")
            turns_since_stall = 0
            continue
        burning = time.monotonic() - started < plan.burn_seconds
        session.tokens_per_turn = plan.tokens_per_turn * (10 if burning else 1)
        _append(path, assistant_line(session, rng))
        session.turns += 1
        turns_since_stall += 1
        _show(f"⏺ Turn {session.turns}: edited the {session.project} code (simulated)")
        _show("✻ Working… (esc to interrupt)")
        deadline = time.monotonic() + plan.seconds_per_turn
        while not stop[0] and time.monotonic() < deadline:
            time.sleep(min(0.2, max(deadline - time.monotonic(), 0)))
    return 0


def _append(path: Path, line: dict[str, Any]) -> None:
    with path.open("ab") as handle:
        handle.write(transcripts.encode_lines([line]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentwatch.demo.agent",
        description="One simulated Claude Code session (for the demo, inside a tmux pane).",
    )
    parser.add_argument("claude_dir", type=Path)
    parser.add_argument("--project", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--tokens", type=int, default=3000, help="tokens per turn")
    parser.add_argument("--every", type=float, default=4.0, help="seconds per turn")
    parser.add_argument("--burn-seconds", type=float, default=0.0)
    parser.add_argument("--stall-after", type=int, default=0, help="turns before an API error")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    name_process()
    session = DemoSession(args.project, args.model, args.tokens)
    plan = Plan(args.tokens, args.every, args.burn_seconds, args.stall_after)
    return run(session, args.claude_dir, plan, args.seed)


if __name__ == "__main__":
    sys.exit(main())
