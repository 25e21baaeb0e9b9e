"""Whether the hook-event spool keeps a claude-sessions sentinel that was down for an hour of
a busy fleet whole: the spool's bound ((KEEP_ROTATED + 1) x ROTATE_BYTES) against the bytes
such an hour writes, measured with the real hook's lines, then checked end to end.

The fleet (an assumption, stated): 10 sessions, each making a tool call every 3 s (a fast
model on short tool results; real agentic sessions wait longer on the model) in turns of 10
calls: per session and hour 1,200 PreToolUse + 1,200 PostToolUse + 120 UserPromptSubmit + 120
Stop = 2,640 events; 26,400 for the fleet.

1. Bytes per event: the real `agentwatch hook` process on each recorded 2.1.328 payload
   (tests/fixtures/hooks) with a tmux pane set, the line sizes weighted by that mix.
2. Hours kept = bound / (events per hour x bytes per event). Target: at least 2 (a margin
   of 2x over the hour).
3. End to end: one such hour written with the writers' own code (claude_events.append_event,
   rotation included) while the sentinel is down, then the real `agentwatch sentinel
   claude-sessions --once` until it has read everything: read must equal written and
   agentwatch_claude_events_lost_total must stay 0. Exit 1 when any of it misses.

No peer: the bound is a design figure (the hook spool's size against a stated fleet), not a
pace to compare with another program's. Each target is absolute and printed with the load
average (only the catch-up time depends on the machine, and it has no target).

    .venv/bin/python bench/bench_spool_bound.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pairs  # bench/ is on sys.path when a bench runs as `python bench/NAME.py`

from agentwatch.cli import hook
from agentwatch.core import claude_events, spool

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "hooks"
AGENTWATCH = str(Path(sys.executable).parent / "agentwatch")
SESSIONS, CALL_EVERY, CALLS_PER_TURN = 10, 3.0, 10
PER_SESSION_HOUR = {
    "PreToolUse": 3600 / CALL_EVERY,
    "PostToolUse": 3600 / CALL_EVERY,
    "UserPromptSubmit": 3600 / CALL_EVERY / CALLS_PER_TURN,
    "Stop": 3600 / CALL_EVERY / CALLS_PER_TURN,
}
TARGET_HOURS = 2.0


def fixture(name: str) -> dict[str, object]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def line_sizes(state: Path) -> dict[str, int]:
    """The real hook's line for each event of the mix, in bytes."""
    sizes = {}
    path = claude_events.events_dir(state) / claude_events.EVENTS
    for name in PER_SESSION_HOUR:
        before = path.stat().st_size if path.exists() else 0
        subprocess.run([AGENTWATCH, "hook", "--state-dir", str(state)],
                       input=(FIXTURES / f"{name}.json").read_bytes(),
                       env=dict(os.environ, TMUX_PANE="%12"), check=True, timeout=30)  # fmt: skip
        sizes[name] = path.stat().st_size - before
    return sizes


def write_hour(state: Path) -> int:
    """One fleet hour of events with the writers' code; how many lines."""
    payloads = {name: fixture(name) for name in PER_SESSION_HOUR}
    written, start = 0, time.time() - 3600
    per_fleet = {name: int(count) * SESSIONS for name, count in PER_SESSION_HOUR.items()}
    order = [name for name, count in per_fleet.items() for _ in range(count)]
    order.sort(key=lambda name: name != "UserPromptSubmit")  # any interleaving does
    for number, name in enumerate(order):
        payload = dict(payloads[name], session_id=f"{number % SESSIONS:08d}-bench-session")
        if name == "PreToolUse":
            payload["tool_input"] = {"command": f"make test-{number}"}
        line = hook.record(payload, start + number * 3600 / len(order), "%12")
        claude_events.append_event(state, line)
        written += 1
    return written


def read_all(state: Path, spool_dir: Path) -> tuple[int, int, float]:
    """(read, lost, seconds) once `--once` runs stop finding more."""
    config = state.parent / "bench-config.yaml"
    config.write_text("sentinels:\n  claude-sessions: {}\n")
    started, before = time.monotonic(), None
    while True:
        subprocess.run([AGENTWATCH, "--config", str(config), "sentinel", "claude-sessions",
                        "--once", "--spool-dir", str(spool_dir), "--state-dir", str(state)],
                       check=True, timeout=600, capture_output=True)  # fmt: skip
        text = (spool_dir / "claude-sessions.prom").read_text()
        values = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in spool.parse_text(text)
            for sample in family.samples
        }
        read = int(values[("agentwatch_claude_events_read_total", ())])
        lost = int(values[("agentwatch_claude_events_lost_total", (("reason", "rotated"),))])
        if (read, lost) == before:
            return read, lost, time.monotonic() - started
        before = (read, lost)


def main() -> int:
    return pairs.main_guard(measure)


def measure() -> int:
    bound = (claude_events.KEEP_ROTATED + 1) * claude_events.ROTATE_BYTES
    before = pairs.load()
    with tempfile.TemporaryDirectory(prefix="aw-spool-bench-") as folder:
        sizes = line_sizes(Path(folder) / "sizes")
        events = sum(PER_SESSION_HOUR.values()) * SESSIONS
        per_hour = sum(sizes[name] * count * SESSIONS for name, count in PER_SESSION_HOUR.items())
        hours = bound / per_hour
        print(f"line bytes (real hook): {sizes}")
        print(f"busy fleet: {SESSIONS} sessions, a tool call every {CALL_EVERY:.0f} s: "
              f"{events:,.0f} events/h, {per_hour / 2**20:.2f} MiB/h")  # fmt: skip
        print(f"spool bound: {claude_events.KEEP_ROTATED + 1} files x "
              f"{claude_events.ROTATE_BYTES >> 20} MiB = {bound >> 20} MiB -> "
              f"{hours:.1f} h of that fleet (target >= {TARGET_HOURS:.1f} h)")  # fmt: skip
        state, spool_dir = Path(folder) / "state", Path(folder) / "spool"
        spool_dir.mkdir()
        written = write_hour(state)
        read, lost, seconds = read_all(state, spool_dir)
        print(f"sentinel down for that hour: {written:,} written, {read:,} read, {lost} lost; "
              f"caught up in {seconds:.1f} s")  # fmt: skip
    print(pairs.load_line(before, pairs.load()))
    checks = [
        pairs.Check("hours of the busy fleet the bound keeps", hours, TARGET_HOURS, at_least=True),
        pairs.Check("events not read back", written - read, 0),
        pairs.Check("events lost to rotation", lost, 0),
    ]
    data = {"line_bytes": sizes, "hours": hours, "written": written, "read": read}
    return pairs.verdict(checks, ROOT / "bench" / "out" / "spool_bound.json", data)


if __name__ == "__main__":
    sys.exit(main())
