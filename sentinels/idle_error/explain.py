"""`agentwatch classify-pane`: the classifier on one captured pane, as JSON — "why did it fire?".

It prints the deciding line to the user's own terminal (that is its purpose); the sentinel
itself never puts pane text into metrics or logs.
"""

from __future__ import annotations

import json
import sys
import time
from typing import BinaryIO

from agentwatch.core import bounded
from agentwatch.sentinels.idle_error import screen
from agentwatch.sentinels.idle_error.classify import Observation, Result, Settings, classify
from agentwatch.sentinels.idle_error.patterns import shipped

MAX_INPUT = 16 * 2**20  # a pane capture is a few KB; refuse to slurp a runaway file


def read_capture(source: str, stdin: BinaryIO) -> str:
    """The text of FILE, or of stdin for `-` (undecodable bytes replaced, never an error)."""
    if source != "-":  # a regular file only: a FIFO or a device named by mistake is refused
        return bounded.read_bytes(source, MAX_INPUT).decode("utf-8", errors="replace")
    data = stdin.read(MAX_INPUT + 1)
    if len(data) > MAX_INPUT:
        raise ValueError(f"larger than {MAX_INPUT // 2**20} MiB; not a pane capture")
    return data.decode("utf-8", errors="replace")


def as_dict(result: Result) -> dict[str, object]:
    return {
        "state": result.state,
        "pattern": result.pattern,
        "line_from_end": result.line_from_end,
        "line": result.line,
        "usage_limit_reset_timestamp": result.reset_at,
        "suppressed": [
            {"reason": item.reason, "pattern": item.pattern, "line_from_end": item.line_from_end}
            for item in result.suppressed
        ],
    }


def explain(text: str, settings: Settings, unchanged_for: float, now: float) -> dict[str, object]:
    """Classify as if the same tail had been on screen for `unchanged_for` seconds."""
    previous = None
    if unchanged_for > 0:
        lines = screen.meaningful_lines(text, settings.capture_rows)
        start = now - unchanged_for
        previous = Observation(screen.tail_hash(lines), start, "working", start)
    result = classify(text, previous, now, settings, shipped())
    out = as_dict(result)
    out["settings"] = {
        "capture_rows": settings.capture_rows,
        "window_lines": settings.window_lines,
        "settle_time": settings.settle_time,
        "unchanged_for": unchanged_for,
    }
    return out


def run(
    source: str,
    settings: Settings,
    unchanged_for: float = 0.0,
    now: float | None = None,
    stdin: BinaryIO | None = None,
) -> int:
    try:
        text = read_capture(source, stdin or sys.stdin.buffer)
    except (OSError, ValueError) as error:
        if isinstance(error, bounded.FileRefused):  # its message names the file and why
            print(f"agentwatch classify-pane: cannot read {error}", file=sys.stderr)
            return 2
        reason = getattr(error, "strerror", None) or error
        print(f"agentwatch classify-pane: cannot read {source}: {reason}", file=sys.stderr)
        return 2
    now = time.time() if now is None else now
    print(json.dumps(explain(text, settings, unchanged_for, now), ensure_ascii=False))
    return 0
