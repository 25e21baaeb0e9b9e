"""Cold read of a generated Gemini CLI corpus: our reader vs `ccusage gemini daily --json
--offline`, measured in the same run on the same files (warm page cache).

    python bench/bench_agent_gemini.py [--size 256M] [--seed 11] [--out result.json]

Each side runs as a fresh process: wall time, CPU, peak RSS of its process tree (sampled as
bench_ledger.py samples it), their ratio, and seconds per GiB. The corpus is sessions shaped
like Gemini CLI 0.61 writes them (demo/gemini_corpus.session_lines: replies written
again when tokens or tool calls arrive), one in ten in the older whole-file .json form. The
token totals of both readers must agree, or the run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench_ledger import CCUSAGE, Run, run_measured

from agentwatch.demo import gemini_corpus

READER = """
import json, sys
from pathlib import Path
from agentwatch.sentinels.agent_ledger import gemini
from agentwatch.sentinels.agent_ledger.base import daily_totals
roots = gemini.roots({gemini.DATA_DIR_ENV: sys.argv[1]}, Path("/nonexistent"))
result = gemini.read_files(p for root in roots for p in gemini.files(root))
days = daily_totals(result.entries, "UTC", gemini.price)
totals = {k: sum(day[k] for day in days.values())
          for k in ("input", "output", "cache_read", "cache_creation", "cost_usd")}
print(json.dumps({"totals": totals, "entries": len(result.entries), "rejects": result.rejects}))
"""


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return (
        int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)
    )


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


def warm_cache(data_dir: Path) -> None:
    """Read every file once, so both sides start from the same warm page cache."""
    for path in data_dir.rglob("*.json*"):
        with open(path, "rb", buffering=0) as handle:
            while handle.read(4 << 20):
                pass


def measure(cmd: list[str], env: dict[str, str], work: Path, name: str) -> tuple[Run, Any]:
    out, err = work / f"{name}.out", work / f"{name}.err"
    run = run_measured(cmd, env, out, err, timeout=3600)
    return run, json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", default="256M")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-gemini-") as scratch:
        work = Path(scratch)
        data_dir = work / "tmp"
        files, size = generate(data_dir, parse_size(args.size), args.seed)
        warm_cache(data_dir)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "TZ": "UTC",
               "GEMINI_DATA_DIR": str(data_dir)}  # fmt: skip
        ours, mine = measure([sys.executable, "-c", READER, str(data_dir)], env, work, "reader")
        ccusage_cmd = [CCUSAGE, "gemini", "daily", "--json", "--offline", "--timezone", "UTC"]
        theirs, report = measure(ccusage_cmd, env, work, "ccusage")
    totals = report["totals"]
    known = totals["inputTokens"] + totals["cacheReadTokens"] + totals["cacheCreationTokens"]
    reference = {"input": totals["inputTokens"], "output": totals["totalTokens"] - known,
                 "cache_read": totals["cacheReadTokens"],
                 "cache_creation": totals["cacheCreationTokens"]}  # fmt: skip
    agree = all(mine["totals"][k] == v for k, v in reference.items())
    gib = size / (1 << 30)
    result = {
        "corpus": {"files": files, "bytes": size, "entries": mine["entries"]},
        "reader": vars(ours) | {"s_per_gib": ours.wall_s / gib},
        "ccusage": vars(theirs) | {"s_per_gib": theirs.wall_s / gib},
        "ratio": {
            "wall": ours.wall_s / theirs.wall_s,
            "cpu": ours.cpu_s / theirs.cpu_s,
            "rss": ours.max_rss_mib / theirs.max_rss_mib,
        },
        "totals_agree": agree,
        "cost": {"reader": mine["totals"]["cost_usd"], "ccusage": totals["totalCost"]},
    }
    print(f"corpus: {files} files, {size / (1 << 20):.1f} MiB, {mine['entries']} responses")
    print(f"reader : {ours.describe()}, {ours.wall_s / gib:6.2f} s/GiB")
    print(f"ccusage: {theirs.describe()}, {theirs.wall_s / gib:6.2f} s/GiB")
    ratio = result["ratio"]
    print(f"ratio reader/ccusage: wall {ratio['wall']:.2f}x, cpu {ratio['cpu']:.2f}x, "
          f"peak RSS {ratio['rss']:.2f}x; token totals agree: {agree}")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
