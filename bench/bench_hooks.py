"""Wall time per call of `agentwatch hook` and `agentwatch statusline`, as Claude Code pays it
(interpreter start included), next to the bare interpreter and `agentwatch --version` measured
in the same run, round-robin so that a busy machine slows all of them alike.

Each command runs `--calls` times with a recorded 2.1.328 payload on stdin (a PreToolUse for
the hook, a subscription statusline with rate_limits for the statusline; no chained command).
Prints p50/p99/max per command and their ratios to the bare interpreter, and what the editable
install's import hook (the `__editable__` finder a `pip install -e` adds to site-packages)
costs at every start: `python -X importtime` of it, and `python -c pass` against `python -S`
(no site, so no .pth files at all). Fails (exit 1) when a writer's p99 passes 60 ms.

    .venv/bin/python bench/bench_hooks.py [--calls 200]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "hooks"
TARGET_P99 = 0.060


def timed(argv: list[str], data: bytes) -> float:
    """Start to exit of one call. No timeout on the wait: with one, Python polls the child
    with growing sleeps and the figures snap to them."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    process.communicate(data)
    elapsed = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"{argv} exited {process.returncode}")
    return elapsed


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def finder_import_ms(python: str) -> float:
    """Cumulative import time of the editable finder, from `-X importtime`."""
    done = subprocess.run([python, "-X", "importtime", "-c", "pass"], capture_output=True,
                          text=True, timeout=30, check=True)  # fmt: skip
    for line in done.stderr.splitlines():
        if "__editable__" in line and "finder" in line:
            return int(re.split(r"\s*\|\s*", line)[1]) / 1000
    return 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    python = sys.executable
    agentwatch = str(Path(python).parent / "agentwatch")
    with tempfile.TemporaryDirectory() as scratch:
        state = str(Path(scratch) / "state")
        hook_input = (FIXTURES / "PreToolUse.json").read_bytes()
        status_input = (FIXTURES / "statusline-subscription.json").read_bytes()
        commands = {
            "python -c pass": ([python, "-c", "pass"], b""),
            "python -S -c pass (no site)": ([python, "-S", "-c", "pass"], b""),
            "agentwatch --version": ([agentwatch, "--version"], b""),
            "agentwatch hook": ([agentwatch, "hook", "--state-dir", state], hook_input),
            "agentwatch statusline": (
                [agentwatch, "statusline", "--state-dir", state],
                status_input,
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.calls):
            for name, (argv, data) in commands.items():
                times[name].append(timed(argv, data))
        events = (Path(state) / "claude-events" / "events.jsonl").read_text().count("\n")
    bare = statistics.median(times["python -c pass"])
    print(f"{args.calls} calls each, round-robin; ratios are p50 / p50 of `python -c pass`")
    print(f"{'command':34} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'ratio':>6}")
    for name, values in times.items():
        p50, p99 = statistics.median(values), percentile(values, 0.99)
        print(f"{name:34} {p50 * 1e3:8.1f} {p99 * 1e3:8.1f} {max(values) * 1e3:8.1f} "
              f"{p50 / bare:6.2f}")  # fmt: skip
    site_cost = bare - statistics.median(times["python -S -c pass (no site)"])
    finder = statistics.median(finder_import_ms(python) for _ in range(20))
    print(f"editable install's import hook: {finder:.1f} ms (-X importtime, median of 20); "
          f"site with every .pth: {site_cost * 1e3:.1f} ms (p50 with site minus -S)")  # fmt: skip
    assert events == args.calls, f"the hook wrote {events} events for {args.calls} calls"
    worst = max(
        percentile(times[name], 0.99) for name in ("agentwatch hook", "agentwatch statusline")
    )
    verdict = "meets" if worst <= TARGET_P99 else "MISSES"
    print(
        f"p99 of the writers {worst * 1e3:.1f} ms: {verdict} the {TARGET_P99 * 1e3:.0f} ms target"
    )
    return 0 if worst <= TARGET_P99 else 1


if __name__ == "__main__":
    sys.exit(main())
