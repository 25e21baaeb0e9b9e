"""`agentwatch statusline` and `agentwatch hook` against `ccusage statusline`, each call a whole
process as Claude Code runs it (interpreter or Node start included), in interleaved pairs.

    .venv/bin/python bench/bench_hooks.py [--calls 100] [--ccusage PATH]

Both statuslines get the same recorded Claude Code 2.1.328 payload on stdin (a subscription
statusline with rate_limits; no chained command) with HOME and CLAUDE_CONFIG_DIR in a fresh
empty folder, so ccusage reads no transcripts: its floor, with its default 1 s output cache.
The hook (a recorded PreToolUse payload) has no peer of its own; Claude Code runs it as often
as the statusline, so it is paired with `ccusage statusline` too. Prints each side's
p50/p99/max wall and median CPU, the per-pair ratios' spread and the load average. Exit 1
when a p99 of ours passes ccusage's (ratio of the p99s over 1.0, `--target`), 2 when ccusage
is missing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from agent_bench import default_ccusage
from pairs import (
    Check,
    Pairs,
    command,
    main_guard,
    need_executable,
    ratio_check,
    run_pairs,
    table,
    verdict,
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "hooks"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def p99_check(result: Pairs, limit: float) -> Check:
    ours = percentile([s.wall_s for s in result.a], 0.99)
    theirs = percentile([s.wall_s for s in result.b], 0.99)
    print(f"p99 wall: {result.names[0]} {ours * 1e3:.1f} ms, {result.names[1]} "
          f"{theirs * 1e3:.1f} ms")  # fmt: skip
    return Check(f"p99 wall {result.names[0]} / {result.names[1]}", ours / theirs, limit)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=100, help="pairs per command (default 100)")
    parser.add_argument("--ccusage", default=default_ccusage(), help="the ccusage command")
    parser.add_argument(
        "--agentwatch",
        default=str(Path(sys.executable).parent / "agentwatch"),
        help="the agentwatch command (default: next to this Python)",
    )
    parser.add_argument("--target", type=float, default=1.0, help="max p99 ratio (1.0)")
    parser.add_argument("--out", type=Path, help="write the samples and verdicts as JSON")
    args = parser.parse_args()

    def body() -> int:
        ccusage = need_executable(args.ccusage, "ccusage", "run scripts/setup --test or --ccusage")
        agentwatch = need_executable(args.agentwatch, "agentwatch", "pip install -e .")
        with tempfile.TemporaryDirectory(prefix="bench-hooks-") as scratch:
            home, claude, state = (Path(scratch) / name for name in ("home", "claude", "state"))
            home.mkdir()
            claude.mkdir()
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                   "CLAUDE_CONFIG_DIR": str(claude), "TZ": "UTC"}  # fmt: skip
            status = (FIXTURES / "statusline-subscription.json").read_bytes()
            hook = (FIXTURES / "PreToolUse.json").read_bytes()
            peer = ("ccusage statusline", command([ccusage, "statusline"], env=env, stdin=status))
            ours_status = command(
                [agentwatch, "statusline", "--state-dir", str(state)], env=env, stdin=status
            )
            ours_hook = command(
                [agentwatch, "hook", "--state-dir", str(state)], env=env, stdin=hook
            )
            checks, data = [], {}
            for name, side in (("agentwatch statusline", ours_status),
                               ("agentwatch hook", ours_hook)):  # fmt: skip
                print(f"{name} against {peer[0]}: {args.calls} pairs", flush=True)
                result = run_pairs((name, side), peer, args.calls, warmup=2, progress=False)
                print(table(result))
                checks.append(p99_check(result, args.target))
                checks.append(ratio_check(result, "cpu_s", args.target))
                data[name] = result.as_dict()
            events = (state / "claude-events" / "events.jsonl").read_text().count("\n")
            lost = args.calls + 2 - events
            checks.append(Check("hook events not written", lost, 0))
        return verdict(checks, args.out, data)

    return main_guard(body)


if __name__ == "__main__":
    sys.exit(main())
