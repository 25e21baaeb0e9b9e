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
import json
import random
import select
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from agentwatch.demo import transcripts as demo

PR_SET_NAME = 15
PROMPT_BOX = (
    "╭──────────────────────────────────────────────────────────╮\n"
    "│ >                                                        │\n"
    "╰──────────────────────────────────────────────────────────╯\n"
    "  ⏵⏵ bypass permissions on (shift+tab to cycle)"
)
API_ERROR = "⏺ " + demo.API_ERROR_TEXT


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


def run(session: demo.DemoSession, claude_dir: Path, plan: Plan, seed: int) -> int:
    stop = [False]

    def request_stop(*_: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGHUP, request_stop)
    rng = random.Random(seed)
    path, cwd = demo.transcript_path(claude_dir, session)
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    turns_since_stall = 0
    _show(f"✻ Welcome to the agentwatch demo session for {session.project} (simulated)")
    while not stop[0]:
        if plan.stall_after_turns and turns_since_stall >= plan.stall_after_turns:
            _append(path, demo.api_error_line(session, cwd))
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
        _append(path, demo.assistant_line(session, cwd, rng))
        session.turns += 1
        turns_since_stall += 1
        _show(f"⏺ Turn {session.turns}: edited the {session.project} code (simulated)")
        _show("✻ Working… (esc to interrupt)")
        deadline = time.monotonic() + plan.seconds_per_turn
        while not stop[0] and time.monotonic() < deadline:
            time.sleep(min(0.2, max(deadline - time.monotonic(), 0)))
    return 0


def _append(path: Path, record: dict) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, separators=(",", ":")) + "\n")


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
    session = demo.DemoSession(args.project, args.model, args.tokens)
    plan = Plan(args.tokens, args.every, args.burn_seconds, args.stall_after)
    return run(session, args.claude_dir, plan, args.seed)


if __name__ == "__main__":
    sys.exit(main())
