"""Small builders for Claude Code transcript lines used across the unit tests."""

from __future__ import annotations

import json
from itertools import count
from pathlib import Path
from typing import Any

_ids = count(1)


def assistant(
    msg_id: str | None = None,
    request_id: str | None = "auto",
    *,
    input_tokens: int = 100,
    output_tokens: int = 10,
    cache_read: int = 0,
    cache_creation: int = 0,
    model: str = "claude-sonnet-4-5-20250929",
    cwd: str = "/home/alice/proj",
    timestamp: str = "2026-11-28T10:00:05.000Z",
    sidechain: bool = False,
    **top: Any,
) -> dict[str, Any]:
    """One assistant line with usage, in Claude Code's shape."""
    number = next(_ids)
    msg_id = msg_id or f"msg_{number:06d}"
    record: dict[str, Any] = {
        "parentUuid": f"u-{number}",
        "isSidechain": sidechain,
        "userType": "external",
        "cwd": cwd,
        "sessionId": "6f1c",
        "version": "2.0.14",
        "gitBranch": "main",
        "message": {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": "hi"}],
            "stop_reason": None,
            "usage": {
                "input_tokens": input_tokens,
                "cache_creation_input_tokens": cache_creation,
                "cache_read_input_tokens": cache_read,
                "output_tokens": output_tokens,
                "service_tier": "standard",
            },
        },
        "type": "assistant",
        "uuid": f"a-{number}",
        "timestamp": timestamp,
    }
    if request_id == "auto":
        record["requestId"] = f"req_{msg_id}"
    elif request_id is not None:
        record["requestId"] = request_id
    record.update(top)
    return record


def user_line(text: str = "please fix the bug") -> dict[str, Any]:
    return {
        "type": "user",
        "message": {"role": "user", "content": text},
        "timestamp": "2026-11-28T10:00:00.000Z",
        "sessionId": "6f1c",
    }


def encode(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)


def transcript(root: Path, slug: str = "-home-alice-proj", session: str = "s1") -> Path:
    """Path of a session transcript under a CLAUDE_CONFIG_DIR-style root."""
    path = root / "projects" / slug / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)
