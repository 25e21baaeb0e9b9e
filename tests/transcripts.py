"""The unit tests' defaults over the shared line builder (agentwatch.demo.transcripts): a fresh
message id per line unless one is given, a requestId derived from it, 100 input and 10 output
tokens."""

from __future__ import annotations

from itertools import count
from pathlib import Path
from typing import Any

from agentwatch.demo import transcripts

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
    cwd: str | None = "/home/alice/proj",
    timestamp: str = "2026-11-28T10:00:05.000Z",
    sidechain: bool = False,
    **top: Any,
) -> dict[str, Any]:
    """One assistant line with any top-level field overridden by `top`."""
    msg_id = msg_id or f"msg_{next(_ids):06d}"
    return transcripts.assistant(
        msg_id,
        f"req_{msg_id}" if request_id == "auto" else request_id,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_creation=cache_creation,
        cache_read=cache_read,
        timestamp=timestamp,
        sidechain=sidechain,
        cwd=cwd,
        changes=top,
    )


def user_line(text: str = "please fix the bug") -> dict[str, Any]:
    return transcripts.user_prompt(text, timestamp="2026-11-28T10:00:00.000Z")


def encode(*records: dict[str, Any]) -> bytes:
    return transcripts.encode_lines(records)


def transcript(root: Path, slug: str = "-home-alice-proj", session: str = "s1") -> Path:
    """Path of a session transcript under a CLAUDE_CONFIG_DIR-style root."""
    path = root / "projects" / slug / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)
