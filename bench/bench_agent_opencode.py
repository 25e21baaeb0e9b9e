"""The agent ledger on an OpenCode data directory against `ccusage opencode daily`, in pairs.

    python bench/bench_agent_opencode.py [--size 256M] [--pairs 3] [--keep DIR]

Generates an OpenCode data directory of about --size (an opencode.db plus some legacy
message files, generators/opencode_corpus.write_size), then runs, as whole processes on a warm page
cache, in interleaved pairs (agent_bench.py): `agentwatch sentinel agent-ledger --once` (cold:
fresh state) and `ccusage opencode daily --json --offline` (20.0.24). Exit 1 when the median
CPU ratio passes 1.0, the peak memory is not below ccusage's, or the token totals differ.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import agent_bench
from generators import opencode_corpus
from pairs import main_guard


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    agent_bench.add_options(parser)
    args = parser.parse_args()

    def body() -> int:
        base = args.keep or Path(tempfile.mkdtemp(prefix="bench-opencode-"))
        try:
            root = base / "data"
            if not root.exists():
                started = time.perf_counter()
                opencode_corpus.write_size(base, agent_bench.parse_size(args.size))
                print(f"corpus generated in {time.perf_counter() - started:.1f} s")
            env = {"OPENCODE_DATA_DIR": str(root)}
            return agent_bench.compare(args, "opencode", base, root, env, agent_bench.totals_of)
        finally:
            if not args.keep:
                shutil.rmtree(base, ignore_errors=True)

    return main_guard(body)


if __name__ == "__main__":
    raise SystemExit(main())
