"""The JSON object Claude Code writes on a hook's or the statusline's stdin, read so that it
can never hold the caller up: at most a cap of bytes, and within a total time even when stdin
stays open. Shared by `agentwatch hook` and `agentwatch statusline` (both on the hot path, so
only builtin modules here)."""

from __future__ import annotations

import json
import os
import select
import time
from pathlib import Path

from agentwatch.core import claude_events


def read_stdin(
    limit: int = claude_events.STDIN_LIMIT,
    seconds: float = claude_events.STDIN_SECONDS,
    descriptor: int = 0,
) -> tuple[bytes, str | None]:
    """(the bytes read, None) at end of input; with the counter reason instead when stdin
    passed `limit` (no bytes then) or stayed open past `seconds` (what came so far)."""
    deadline = time.monotonic() + seconds
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), claude_events.STDIN_TIMEOUT
        try:
            ready, _, _ = select.select([descriptor], [], [], left)
            if not ready:
                continue
            chunk = os.read(descriptor, 64 * 1024)
        except (OSError, ValueError):  # no stdin at all (closed descriptor)
            return b"".join(chunks), None
        if not chunk:
            return b"".join(chunks), None
        size += len(chunk)
        if size > limit:
            return b"", claude_events.TOO_LARGE
        chunks.append(chunk)


def parse(data: bytes) -> tuple[dict[str, object] | None, str]:
    """(the payload as a JSON object, ""), or (None, the counter reason) when it is not one:
    `bad_json`, or `too_deep` for nesting past the parser's recursion limit (1 MiB of `[`)."""
    try:
        value = json.loads(data)
    except ValueError:  # also UnicodeDecodeError
        return None, claude_events.BAD_JSON
    except RecursionError:
        return None, claude_events.TOO_DEEP
    return (value, "") if isinstance(value, dict) else (None, claude_events.BAD_JSON)


def state_dir(argv: list[str]) -> Path:
    """The state dir of `--state-dir DIR` or `--state-dir=DIR` in the command's arguments, else
    the writers' default (argparse costs more than a hook may take; anything else on the line
    is ignored, never an error)."""
    for index, argument in enumerate(argv):
        if argument == "--state-dir" and index + 1 < len(argv):
            return Path(argv[index + 1])
        if argument.startswith("--state-dir="):
            return Path(argument.split("=", 1)[1])
    return claude_events.state_dir()
