"""Wall time of the real `agentwatch hook` process on a loaded machine: the SessionEnd and
PreToolUse calls, with CPU hogs (busy loops, one more than the machine has cores) running the
whole time, as Claude Code pays it (interpreter start included).

Why: under load Claude Code 2.1.328 cancelled the SessionEnd hook ("Hook cancelled") in 3 of 6
runs. Its SessionEnd hooks get 1.5 s in all unless a hook entry sets `timeout` (seconds, the
largest counts, up to 60 s); `agentwatch install` now writes `"timeout": 10` on SessionEnd
(cli/claude_settings.py). The target: p99 under this load at most half that timeout (5 s),
so the budget we install keeps a 2x margin over the slow tail; the calls over the old 1.5 s
default are printed too (on a 2-core machine shared with other work, a few percent were: the
cancellations' cause). Exit 1 when a p99 passes the target.

Payloads: the recorded 2.1.328 SessionEnd and PreToolUse fixtures, with `cwd` this checkout
(so SessionEnd really reads the git HEAD, as it does in a repository).

No peer: the target is Claude Code's own budget (the timeout the hook runs under), not another
program's pace; the hook's pairing with a peer (`ccusage statusline`, same call frequency) is
bench_hooks.py's. Prints p50/p99/max per event with the load average before and after; exit 1
when a p99 passes the target or a call's event line is missing, 2 without `agentwatch`.

    .venv/bin/python bench/bench_hook_latency.py [--calls 100] [--hogs N] [--target 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pairs  # bench/ is on sys.path when a bench runs as `python bench/NAME.py`

from agentwatch.cli.claude_settings import SESSION_END_TIMEOUT

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "hooks"
DEFAULT_BUDGET = 1.5  # seconds: Claude Code 2.1.328's SessionEnd budget without a timeout
TARGET_P99 = SESSION_END_TIMEOUT / 2  # half the timeout install writes
HOG = "while True: pass"


def payload(name: str) -> bytes:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    data["cwd"] = str(ROOT)
    return json.dumps(data).encode()


def timed(argv: list[str], data: bytes) -> float:
    """Start to exit of one call (no timeout on the wait: Python would poll with sleeps)."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    process.communicate(data)
    elapsed = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"{argv} exited {process.returncode}")
    return elapsed


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="calls of each event")
    parser.add_argument("--hogs", type=int, default=(os.cpu_count() or 1) + 1)
    parser.add_argument("--target", type=float, default=TARGET_P99, help="p99 bound, seconds")
    parser.add_argument("--agentwatch", default=str(Path(sys.executable).parent / "agentwatch"))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "hook_latency.json")
    args = parser.parse_args()
    return pairs.main_guard(lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    agentwatch = pairs.need_executable(args.agentwatch, "agentwatch", "pip install -e .")
    before = pairs.load()
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(args.hogs)]
    try:
        time.sleep(1.0)  # the hogs at full speed
        with tempfile.TemporaryDirectory(prefix="aw-hook-bench-") as state:
            argv = [agentwatch, "hook", "--state-dir", state]
            events = {name: payload(name) for name in ("SessionEnd", "PreToolUse")}
            times: dict[str, list[float]] = {name: [] for name in events}
            for _ in range(args.calls):  # round-robin: the load hits both alike
                for name, data in events.items():
                    times[name].append(timed(argv, data))
            lines = (Path(state) / "claude-events" / "events.jsonl").read_bytes().count(b"\n")
        after = pairs.load()
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    print(f"agentwatch hook, {args.calls} calls each, {args.hogs} CPU hogs; "
          f"{pairs.load_line(before, after)}")  # fmt: skip
    checks = [pairs.Check("hook calls without their event line", 2 * args.calls - lines, 0)]
    for name, values in times.items():
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        over = sum(1 for value in values if value > DEFAULT_BUDGET)
        print(f"  {name:<11} min {min(values) * 1000:7.1f} ms  p50 {p50 * 1000:7.1f} ms  "
              f"p99 {p99 * 1000:7.1f} ms  max {max(values) * 1000:7.1f} ms  "
              f"over {DEFAULT_BUDGET:.1f} s: {over}")  # fmt: skip
        checks.append(pairs.Check(f"{name} p99 s under {args.hogs} hogs", p99, args.target))
    return pairs.verdict(checks, args.out, {"times_s": times, "hogs": args.hogs})


if __name__ == "__main__":
    sys.exit(main())
