"""`agentwatch report daily --json` (the ledger's database) vs `ccusage claude daily --json
--offline` (a read of every transcript), interleaved, on the same tree.

    python bench/bench_report.py [--size 500M] [--files 1000] [--rounds 5] [--target 0.5]

Generates a transcript tree with generators/corpus.py (re-used when present), counts it once
with `agentwatch sentinel token-ledger --once`, then runs both reports alternately, each as
its own process. Prints each one's wall times (median, min, max) and the ratio of the medians;
exits 1 when the ratio is above --target or the daily tokens differ.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from generators import corpus

ROOT = Path(__file__).resolve().parents[1]

CCUSAGE = os.environ.get("AGENTWATCH_CCUSAGE") or str(
    ROOT / ".tools" / "ccusage" / "node_modules" / ".bin" / "ccusage"
)
TYPES = ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens")


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, json.loads(done.stdout)


def by_day(report: dict) -> dict[str, tuple[int, ...]]:
    return {day["date"]: tuple(day[name] for name in TYPES) for day in report["daily"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="500M", help="corpus size (default 500M)")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target", type=float, default=0.5,
                        help="largest allowed wall(report) / wall(ccusage), medians")  # fmt: skip
    parser.add_argument("--corpus-dir", type=Path)
    args = parser.parse_args()
    size = corpus.parse_size(args.size)
    where = args.corpus_dir or Path(f"/tmp/aw-report-corpus-{args.size}-f{args.files}")
    corpus.ensure_corpus(where, size, args.files, progress=True)
    with tempfile.TemporaryDirectory() as scratch:
        home, state = Path(scratch) / "home", Path(scratch) / "state"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "XDG_"))}
        env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(where), TZ="UTC",
                   XDG_CONFIG_HOME=str(home / ".config"))  # fmt: skip
        agentwatch = [sys.executable, "-m", "agentwatch.cli"]
        count = [*agentwatch, "--log-level", "error", "sentinel", "token-ledger", "--once",
                              "--spool-dir", str(Path(scratch) / "spool"),
                              "--state-dir", str(state)]  # fmt: skip
        started = time.perf_counter()
        subprocess.run(count, env=env, check=True, timeout=3600)
        counted = time.perf_counter() - started
        ours_argv = [*agentwatch, "report", "daily", "--json", "--state-dir", str(state)]
        theirs_argv = [CCUSAGE, "claude", "daily", "--json", "--offline"]
        ours, theirs = [], []
        for _ in range(args.rounds):  # interleaved: both see the same machine load
            wall, mine = timed(ours_argv, env)
            ours.append(wall)
            wall, reference = timed(theirs_argv, env)
            theirs.append(wall)
        equal = by_day(mine) == by_day(reference)
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"corpus {where} ({corpus.format_size(size)}, {args.files} files); "
          f"the ledger counted it once in {counted:.1f} s")  # fmt: skip
    for name, walls in (("agentwatch report daily", ours), ("ccusage claude daily", theirs)):
        print(f"  {name:<24} median {statistics.median(walls):.3f} s  "
              f"(min {min(walls):.3f}, max {max(walls):.3f}, {len(walls)} rounds)")  # fmt: skip
    verdict = "PASS" if ratio <= args.target and equal else "FAIL"
    print(f"  ratio {ratio:.3f} (target <= {args.target}); daily tokens equal: {equal}; {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
