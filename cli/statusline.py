"""`agentwatch statusline`: Claude Code's statusLine command.

At every render Claude Code runs it with a JSON snapshot of the session on stdin. It records
what agentwatch exports from it (cost, context-window use, model, prompt-cache hit ratio and
the official `rate_limits` windows, per core/claude_events.py), then prints the first line of
the statusLine command the user had before (kept by `agentwatch install` in
statusline-chain.json) and one compact line of its own. On any error it prints the chained
line alone, or nothing, and exits 0: a status line must never break the session.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

from agentwatch.core import claude_events

TYPE_CHECKING = False
if TYPE_CHECKING:  # without importing typing (3 ms of every hook's start)
    import argparse
    from typing import BinaryIO

CHAIN_FILE = "statusline-chain.json"  # in the config dir, written by `agentwatch install`
CHAIN_SECONDS = 3.0
CHAIN_GUARD = "AGENTWATCH_STATUSLINE_CHAINED"  # set for the chained command: no loops
_SHORT = {"five_hour": "5h", "seven_day": "7d"}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


class Bounds:
    """Reads numbers of one payload within their bounds (core/claude_events.py); `broken`
    tells whether any was past one (counted once per render, `out_of_range`). An absent or
    null field is no reading, not a broken one."""

    def __init__(self) -> None:
        self.broken = False

    def _bad(self) -> None:
        self.broken = True

    def number(self, value: object, low: float, high: float) -> float | None:
        if value is None:
            return None
        found = _number(value)
        if found is None or not low <= found <= high:
            self._bad()
            return None
        return found

    def ratio(self, percentage: object) -> float | None:
        """A percentage (0-100; up to MAX_PERCENT clamped to 1) as a 0-1 ratio."""
        value = self.number(percentage, 0.0, claude_events.MAX_PERCENT)
        return None if value is None else min(value / 100.0, 1.0)

    def epoch(self, value: object) -> float | None:
        """resets_at as epoch seconds: 2.1.328 sends seconds in the statusline's windows and
        an ISO 8601 string in model_scoped (the usage API's form), which is converted."""
        if isinstance(value, str) and value:
            from datetime import datetime

            try:
                value = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                self._bad()
                return None
        return self.number(value, 1.0, claude_events.MAX_EPOCH)


def _get(payload: dict[str, object], *keys: str) -> object:
    value: object = payload
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def rate_limits(payload: dict[str, object], bounds: Bounds) -> dict[str, dict[str, float]]:
    """Every window of `rate_limits` that carries a used_percentage, by Claude Code's name."""
    from agentwatch.core.sanitize import label_value

    found: dict[str, dict[str, float]] = {}
    limits = payload.get("rate_limits")
    if not isinstance(limits, dict):
        return found
    for window, value in limits.items():
        if not isinstance(value, dict) or not isinstance(window, str):
            continue
        used = bounds.ratio(value.get("used_percentage"))
        if used is None:
            continue
        entry = {"used_ratio": used}
        resets = bounds.epoch(value.get("resets_at"))
        if resets is not None:
            entry["resets_at"] = resets
        found[label_value(window)] = entry
    return found


def model_windows(payload: dict[str, object], bounds: Bounds) -> dict[str, dict[str, float]]:
    """`rate_limits.model_scoped`: Claude Code's per-model weekly windows, a list of
    {display_name, utilization, resets_at} (the shape of 2.1.328's usage schema: utilization
    a percentage, as its /usage screen prints it, resets_at ISO 8601), by display name; at
    most MAX_MODEL_WINDOWS, an entry without a utilization skipped."""
    from agentwatch.core.sanitize import label_value

    scoped = _get(payload, "rate_limits", "model_scoped")
    found: dict[str, dict[str, float]] = {}
    if not isinstance(scoped, list):
        return found
    for item in scoped:
        if len(found) >= claude_events.MAX_MODEL_WINDOWS:
            break
        name = item.get("display_name") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(name, str) or not name:
            continue
        used = bounds.ratio(item.get("utilization"))
        if used is None:
            continue
        entry = {"used_ratio": used}
        resets = bounds.epoch(item.get("resets_at"))
        if resets is not None:
            entry["resets_at"] = resets
        found[label_value(name, 64)] = entry
    return found


def snapshot(
    payload: dict[str, object], now: float, bounds: Bounds | None = None
) -> dict[str, object] | None:
    """The contract's snapshot of one statusline payload; None without a session id. A
    number past its bound is left out (and `bounds.broken` set)."""
    from agentwatch.core.sanitize import label_value

    bounds = bounds or Bounds()
    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        return None
    record: dict[str, object] = {"v": claude_events.VERSION, "t": round(now, 3)}
    record["s"] = label_value(session)
    cwd = _get(payload, "workspace", "current_dir") or payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        record["p"] = label_value(os.path.basename(cwd.rstrip("/")) or "unknown")
    model = _get(payload, "model", "id")
    if isinstance(model, str) and model:
        record["model"] = label_value(model)
    cost = bounds.number(_get(payload, "cost", "total_cost_usd"), 0.0, claude_events.MAX_COST_USD)
    if cost is not None:
        record["cost_usd"] = cost
    context = bounds.ratio(_get(payload, "context_window", "used_percentage"))
    if context is not None:
        record["context_used_ratio"] = context
    hit = bounds.number(_get(payload, "prompt_cache", "hit_ratio"), 0.0, 1.0)
    if hit is not None:
        record["cache_hit_ratio"] = hit
    limits = rate_limits(payload, bounds)
    if limits:
        record["rate_limits"] = limits
    models = model_windows(payload, bounds)
    if models:
        record["model_windows"] = models
    return record


def line(record: dict[str, object]) -> str:
    """`5h 42% · 7d 18% · $3.20 · ctx 61%`: what is known, in that order."""
    parts = []
    limits = record.get("rate_limits")
    for window, short in _SHORT.items():
        entry = limits.get(window) if isinstance(limits, dict) else None
        if isinstance(entry, dict) and isinstance(entry.get("used_ratio"), float):
            parts.append(f"{short} {round(entry['used_ratio'] * 100)}%")
    cost, context = record.get("cost_usd"), record.get("context_used_ratio")
    if isinstance(cost, float):
        parts.append(f"${cost:.2f}")
    if isinstance(context, float):
        parts.append(f"ctx {round(context * 100)}%")
    return " · ".join(parts)


def chained(data: bytes, state: Path) -> bytes | None:
    """The first line the user's previous statusLine command prints for the same stdin, run
    as Claude Code runs one (`/bin/sh -c COMMAND`); None without one or when it fails."""
    if os.environ.get(CHAIN_GUARD):
        return None
    from agentwatch.core import bounded, paths

    try:
        import json

        chain_file = paths.default_config_file().parent / CHAIN_FILE
        chain = json.loads(bounded.read_bytes(chain_file, 64 * 1024))
    except (OSError, ValueError):
        return None
    command = chain.get("command") if isinstance(chain, dict) else None
    if not isinstance(command, str) or not command.strip():
        return None
    import subprocess

    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            input=data,
            capture_output=True,
            timeout=CHAIN_SECONDS,
            env=dict(os.environ, **{CHAIN_GUARD: "1"}),
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        claude_events.count(state, claude_events.CHAIN_FAILED)
        return None
    if done.returncode != 0:
        claude_events.count(state, claude_events.CHAIN_FAILED)
    first = done.stdout.split(b"\n", 1)[0].rstrip(b"\r")
    return first or None


def run(state: Path, out: BinaryIO) -> None:
    from agentwatch.cli import payload as stdin

    data, problem = stdin.read_stdin()
    if problem is not None:
        claude_events.count(state, problem)
    previous = chained(data, state) if problem != claude_events.TOO_LARGE else None
    if previous is not None:
        out.write(previous + b"\n")
        out.flush()
    if problem == claude_events.TOO_LARGE:
        return
    parsed, reason = stdin.parse(data)
    if parsed is None:
        claude_events.count(state, reason)
        return
    bounds = Bounds()
    record = snapshot(parsed, time.time(), bounds)
    if record is None:
        claude_events.count(state, claude_events.NO_SESSION)
        return
    if bounds.broken:
        claude_events.count(state, claude_events.OUT_OF_RANGE)
    try:
        claude_events.write_status(state, record)
    except (OSError, ValueError) as err:
        refused = getattr(err, "reason", "") in ("not_regular", "symlink")  # bounded.FileRefused
        claude_events.count(
            state, claude_events.STATUS_REFUSED if refused else claude_events.STATUS_UNWRITABLE
        )
    text = line(record)
    if text:
        out.write(text.encode("utf-8") + b"\n")
        out.flush()


def main(argv: list[str]) -> int:
    """Exit 0 whatever happens: a broken status line must not break the session."""
    try:
        from agentwatch.cli.payload import state_dir

        run(state_dir(argv), sys.stdout.buffer)
    except BaseException:  # printed what it could; Claude Code must see no failure
        return 0
    return 0


def add(commands: argparse._SubParsersAction) -> None:
    """`agentwatch statusline` in the full parser (for --help; calls go through cli/entry.py)."""
    parser = commands.add_parser(
        "statusline",
        help="Claude Code's statusLine command: record quota, cost and context; print a line",
        description="Reads Claude Code's statusline JSON on stdin, records the session's cost, "
        "context use, model, cache hit ratio and rate_limits under <state dir>/claude-events/"
        "statusline/, and prints the chained statusLine command's first line (if any) and "
        "`5h 42% · 7d 18% · $3.20 · ctx 61%`. Always exits 0.",
    )
    parser.add_argument("--state-dir", type=Path, help="state dir (default: the XDG one)")
