"""The agent ledger on a generated Gemini CLI corpus against `ccusage gemini daily --json
--offline`, whole processes in interleaved pairs on the same files (warm page cache).

    python bench/bench_agent_gemini.py [--size 256M] [--pairs 3] [--seed 11] [--keep DIR]

Each pair runs `agentwatch sentinel agent-ledger --once` (cold: fresh state) and ccusage
(agent_bench.py); exit 1 when the median CPU ratio passes 1.0, the peak memory is not below
ccusage's, or the token totals differ. The corpus is sessions shaped
like Gemini CLI 0.61 writes them (generators/gemini_corpus.session_lines: replies written
again when tokens or tool calls arrive), one in ten in the older whole-file .json form. The
token totals of both readers must agree, or the run fails.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import agent_bench
from generators import gemini_corpus
from pairs import main_guard


def generate(data_dir: Path, size: int, seed: int) -> tuple[int, int]:
    """Sessions until the corpus holds `size` bytes; returns (files, bytes)."""
    rng = random.Random(seed)
    written = files = 0
    while written < size:
        session = str(uuid.UUID(int=rng.getrandbits(128)))
        day = rng.randint(1, 28)
        lines = gemini_corpus.session_lines(rng, session, day, rng.randint(20, 400))
        folder = data_dir / f"project-{files % 17}" / "chats"
        folder.mkdir(parents=True, exist_ok=True)
        if rng.random() < 0.1:
            records = [line for line in lines[1:] if isinstance(line, dict) and "id" in line]
            text = json.dumps({**gemini_corpus.header(session), "messages": records})
            path = folder / f"session-{files:05d}.json"
        else:
            text = "".join(json.dumps(line) + "\n" for line in lines)
            path = folder / f"session-{files:05d}-{session[:8]}.jsonl"
        path.write_text(text)
        written += len(text)
        files += 1
    return files, written


def reference(report: dict[str, Any]) -> dict[str, int]:
    """ccusage's totals per type; its output column leaves thoughts out, its total has them."""
    totals = report["totals"]
    known = totals["inputTokens"] + totals["cacheReadTokens"] + totals["cacheCreationTokens"]
    return {
        "input": totals["inputTokens"],
        "output": totals["totalTokens"] - known,
        "cache_read": totals["cacheReadTokens"],
        "cache_creation": totals["cacheCreationTokens"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    agent_bench.add_options(parser)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    def body() -> int:
        base = args.keep or Path(tempfile.mkdtemp(prefix="bench-gemini-"))
        data_dir = base / "tmp"
        try:
            if not data_dir.exists():
                files, size = generate(data_dir, agent_bench.parse_size(args.size), args.seed)
                print(f"corpus: {files} files, {size / (1 << 20):.1f} MiB")
            env = {"GEMINI_DATA_DIR": str(data_dir)}
            extra = ("--timezone", "UTC")
            return agent_bench.compare(args, "gemini", base, data_dir, env, reference, extra)
        finally:
            if not args.keep:
                shutil.rmtree(base, ignore_errors=True)

    return main_guard(body)


if __name__ == "__main__":
    sys.exit(main())
