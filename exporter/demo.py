"""A demo workload: simulated Claude Code sessions writing real-format transcripts.

Used by `agentwatch up` when the machine has no transcripts (or with --demo) so a newcomer
sees the whole pipeline move: a steady session, a burning one, and one that stalls on an
API error. The lines follow the shapes in Claude Code's transcripts and never contain
anything but invented text.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path


@dataclass
class DemoSession:
    """One simulated session: where it writes and how hungry it is."""

    project: str
    model: str
    tokens_per_turn: int
    seconds_per_turn: float
    stall_after_turns: int | None = None  # write an API error and go quiet after N turns

    def __post_init__(self) -> None:
        self.session_id = str(uuid.uuid4())
        self.turns = 0


def default_sessions() -> list[DemoSession]:
    return [
        DemoSession("webshop", "claude-sonnet-4-5-20250929", 3_000, 4.0),
        DemoSession("data-pipeline", "claude-opus-4-5-20251101", 40_000, 2.0),  # the burner
        DemoSession("docs-site", "claude-haiku-4-5-20251001", 1_500, 5.0, stall_after_turns=6),
    ]


def _timestamp() -> str:
    return (
        datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.")
        + f"{datetime.now(UTC).microsecond // 1000:03d}Z"
    )


def _line(session: DemoSession, cwd: str, message: dict, **extra: object) -> dict:
    """The fields every transcript line of a session carries."""
    return {
        "parentUuid": str(uuid.uuid4()),
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session.session_id,
        "version": "2.0.14",
        "gitBranch": "main",
        "message": message,
        **extra,
        "type": "assistant",
        "uuid": str(uuid.uuid4()),
        "timestamp": _timestamp(),
    }


def assistant_line(session: DemoSession, cwd: str, rng: random.Random) -> dict:
    tokens = session.tokens_per_turn
    return _line(
        session,
        cwd,
        {
            "id": f"msg_demo_{uuid.uuid4().hex[:20]}",
            "type": "message",
            "role": "assistant",
            "model": session.model,
            "content": [{"type": "text", "text": "Working on the next step of the demo task."}],
            "stop_reason": None,
            "usage": {
                "input_tokens": rng.randint(tokens // 20, tokens // 10),
                "cache_creation_input_tokens": rng.randint(0, tokens // 4),
                "cache_read_input_tokens": rng.randint(tokens // 2, tokens),
                "output_tokens": rng.randint(tokens // 20, tokens // 8),
                "service_tier": "standard",
            },
        },
        requestId=f"req_demo_{uuid.uuid4().hex[:20]}",
    )


def api_error_line(session: DemoSession, cwd: str) -> dict:
    return _line(
        session,
        cwd,
        {
            "id": str(uuid.uuid4()),
            "type": "message",
            "role": "assistant",
            "model": "<synthetic>",
            "content": [
                {
                    "type": "text",
                    "text": 'API Error: 529 {"type":"error","error":{"type":"overloaded_error",'
                    '"message":"Overloaded"}}',
                }
            ],
            "usage": {"input_tokens": 0, "output_tokens": 0},
        },
        isApiErrorMessage=True,
    )


def transcript_path(claude_dir: Path, session: DemoSession) -> tuple[Path, str]:
    cwd = f"/home/demo/{session.project}"
    slug = cwd.replace("/", "-")
    return claude_dir / "projects" / slug / f"{session.session_id}.jsonl", cwd


def run(claude_dir: Path, stop: threading.Event, seed: int = 7, speed: float = 1.0) -> None:
    """Append turns until `stop` is set; `speed` > 1 makes everything faster."""
    rng = random.Random(seed)
    sessions = default_sessions()
    next_turn = {id(s): time.monotonic() + rng.uniform(0, 1) for s in sessions}
    while not stop.is_set():
        now = time.monotonic()
        for session in sessions:
            if now < next_turn[id(session)]:
                continue
            path, cwd = transcript_path(claude_dir, session)
            path.parent.mkdir(parents=True, exist_ok=True)
            stalled = session.stall_after_turns is not None and (
                session.turns >= session.stall_after_turns
            )
            if stalled and session.turns == session.stall_after_turns:
                record = api_error_line(session, cwd)
            elif stalled:
                next_turn[id(session)] = float("inf")  # sits at its prompt from now on
                continue
            else:
                record = assistant_line(session, cwd, rng)
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, separators=(",", ":")) + "\n")
            session.turns += 1
            next_turn[id(session)] = now + session.seconds_per_turn / speed
        stop.wait(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentwatch.exporter.demo",
        description="Write simulated Claude Code transcripts under CLAUDE_DIR/projects.",
    )
    parser.add_argument("claude_dir", type=Path)
    parser.add_argument("--speed", type=float, default=1.0, help="time multiplier")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    run(args.claude_dir, stop, speed=args.speed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
