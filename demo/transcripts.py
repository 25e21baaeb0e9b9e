"""The demo's transcript lines: the shapes of Claude Code's transcripts, invented text only.

The sessions that write them run in tmux panes (`demo_agent`), started and stopped by
`demo_workload` as the demo orchestrator's concurrency changes.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agentwatch.core import claude


@dataclass
class DemoSession:
    """One simulated session: where it writes and how hungry it is."""

    project: str
    model: str
    tokens_per_turn: int

    def __post_init__(self) -> None:
        self.session_id = str(uuid.uuid4())
        self.turns = 0


def _timestamp() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


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


# A server error (not a rate limit or an overload, which would open the breaker and pause the
# whole demo for its cool-down): the session stalls, the rest carries on.
API_ERROR_TEXT = (
    'API Error: 500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}'
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
                    "text": API_ERROR_TEXT,
                }
            ],
            "usage": {"input_tokens": 0, "output_tokens": 0},
        },
        isApiErrorMessage=True,
    )


def transcript_path(claude_dir: Path, session: DemoSession) -> tuple[Path, str]:
    cwd = f"/home/demo/{session.project}"
    return claude.transcript_path(claude_dir / "projects", cwd, session.session_id), cwd
