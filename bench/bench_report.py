"""`agentwatch report daily --json` (the ledger's database) vs `ccusage claude daily --json
--offline` (a read of every transcript), in interleaved pairs, on the same tree.

    python bench/bench_report.py [--size 500M] [--files 1000] [--pairs 5] [--target 0.5]

Generates a transcript tree with generators/corpus.py (re-used when present), counts it once
with `agentwatch sentinel token-ledger --once`, then runs both reports as whole processes in
pairs (pairs.py: order alternating, wall/CPU/peak RSS of each process tree). Prints each side's
median (min-max), the min/median/max of the per-pair ratios and the load average. Exit 1 when
the median wall ratio is above --target (the report reads a database ccusage has to rebuild from
the transcripts: it must answer in half ccusage's time) or the daily tokens differ; 2 when
ccusage or agentwatch is missing.
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

from agent_bench import default_ccusage
from generators import corpus
from pairs import (
    Check,
    main_guard,
    need_executable,
    ratio_check,
    run_command,
    run_pairs,
    table,
    verdict,
)

ROOT = Path(__file__).resolve().parents[1]
TYPES = ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens")


def by_day(report: bytes) -> dict[str, tuple[int, ...]]:
    days = json.loads(report)["daily"]
    return {day["date"]: tuple(day[name] for name in TYPES) for day in days}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="500M", help="corpus size (default 500M)")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--pairs", "--rounds", type=int, default=5, dest="pairs")
    parser.add_argument(
        "--target", type=float, default=0.5, help="largest wall(report) / wall(ccusage) allowed"
    )
    parser.add_argument("--corpus-dir", type=Path)
    parser.add_argument("--ccusage", default=default_ccusage())
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "report.json")
    args = parser.parse_args()

    def body() -> int:
        ccusage = need_executable(args.ccusage, "ccusage", "run scripts/setup --test or --ccusage")
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
            print(f"corpus {where} ({corpus.format_size(size)}, {args.files} files); "
                  f"the ledger counted it once in {counted:.1f} s", flush=True)  # fmt: skip
            ours = [*agentwatch, "report", "daily", "--json", "--state-dir", str(state)]
            theirs = [ccusage, "claude", "daily", "--json", "--offline"]
            outs: dict[str, bytes] = {}

            def side(name: str, argv: list[str]):  # type: ignore[no-untyped-def]
                def run():  # type: ignore[no-untyped-def]
                    sample = run_command(argv, env=env, timeout=1800)
                    outs[name] = sample.out
                    return sample

                return run

            result = run_pairs(
                ("report daily", side("ours", ours)),
                ("ccusage daily", side("ccusage", theirs)),
                args.pairs,
            )
            mine, reference = by_day(outs["ours"]), by_day(outs["ccusage"])
            differ = sum(mine.get(day) != reference.get(day) for day in mine.keys() | reference)
        print(table(result))
        checks = [
            ratio_check(result, "wall_s", args.target),
            Check("days whose tokens differ from ccusage's", differ, 0),
        ]
        return verdict(checks, args.out, result.as_dict())

    return main_guard(body)


if __name__ == "__main__":
    sys.exit(main())
