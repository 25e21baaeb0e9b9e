"""Cold read of an OpenCode data directory: our reader vs ccusage, in the same run.

    python bench/bench_agent_opencode.py [--size 256M] [--keep DIR]

Generates an OpenCode data directory of about --size (an opencode.db plus some legacy
message files, demo/opencode_corpus.write_size), then runs, each as a fresh process
on a warm page cache:

- ours: `read_files(files(root))` and the per-day totals (agentwatch's reader);
- ccusage: `ccusage opencode daily --json --offline` (20.0.24).

For each: wall time, CPU (user + system, from wait4), peak RSS (wait4's ru_maxrss of the
process), seconds per GiB; then the ratios ours/ccusage. The token totals of both must be
equal, or the numbers compare different work.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from agentwatch.demo import opencode_corpus

REPO = Path(__file__).resolve().parents[1]
CCUSAGE = os.environ.get("AGENTWATCH_CCUSAGE") or str(
    REPO / ".tools" / "ccusage" / "node_modules" / ".bin" / "ccusage"
)
TYPES = ("input", "output", "cache_read", "cache_creation")


@dataclass
class Run:
    name: str
    wall: float
    cpu: float
    max_rss_mib: float
    stdout: str

    def line(self, gib: float) -> str:
        return (
            f"{self.name:8s} wall {self.wall:7.2f} s  cpu {self.cpu:7.2f} s  "
            f"peak RSS {self.max_rss_mib:7.1f} MiB  {self.wall / gib:6.2f} s/GiB"
        )


def measure(name: str, command: list[str], env: dict[str, str]) -> Run:
    """Run to completion; wall clock, and CPU and peak RSS of the child from wait4."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        stderr = process.stderr.read().decode() if process.stderr else ""
        if process.returncode != 0:
            raise SystemExit(f"{name} failed ({process.returncode}): {stderr[-2000:]}")
        out.seek(0)
        stdout = out.read().decode()
    return Run(name, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, stdout)


def read_ours(root: str) -> None:
    """The measured process of our side: read the root and print the token totals."""
    from agentwatch.sentinels.agent_ledger import opencode
    from agentwatch.sentinels.agent_ledger.base import daily_totals

    result = opencode.read_files(opencode.files(Path(root)))
    days = daily_totals(result.entries, "UTC", opencode.price)
    totals = {kind: sum(int(day[kind]) for day in days.values()) for kind in TYPES}
    totals["entries"] = len(result.entries)
    print(json.dumps(totals))


def ccusage_totals(stdout: str) -> dict[str, int]:
    totals = json.loads(stdout)["totals"]
    return {
        "input": totals["inputTokens"], "output": totals["outputTokens"],
        "cache_read": totals["cacheReadTokens"], "cache_creation": totals["cacheCreationTokens"],
    }  # fmt: skip


def size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].isalpha() else int(text)


def disk_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="256M", help="corpus size (default 256M)")
    parser.add_argument("--keep", type=Path, help="write the corpus here and keep it")
    parser.add_argument("--read", help=argparse.SUPPRESS)  # internal: the measured process
    args = parser.parse_args()
    if args.read:
        read_ours(args.read)
        return
    with tempfile.TemporaryDirectory(prefix="bench-opencode-") as scratch:
        base = args.keep or Path(scratch)
        started = time.perf_counter()
        corpus = opencode_corpus.write_size(base, size(args.size))
        root = Path(corpus.env["OPENCODE_DATA_DIR"])
        on_disk = disk_bytes(root)
        gib = on_disk / (1 << 30)
        print(f"corpus: {on_disk / (1 << 20):.1f} MiB in {root} "
              f"(generated in {time.perf_counter() - started:.1f} s)")  # fmt: skip
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(base), "TZ": "UTC",
               "OPENCODE_DATA_DIR": str(root)}  # fmt: skip
        for path in root.rglob("*"):  # warm the page cache for both
            if path.is_file():
                path.read_bytes()
        ours = measure("ours", [sys.executable, __file__, "--read", str(root)],
                       {**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")})  # fmt: skip
        theirs = measure("ccusage", [CCUSAGE, "opencode", "daily", "--json", "--offline"], env)
        mine, ref = json.loads(ours.stdout), ccusage_totals(theirs.stdout)
        print(ours.line(gib))
        print(theirs.line(gib))
        rss = ours.max_rss_mib / theirs.max_rss_mib
        print(f"ratio    wall {ours.wall / theirs.wall:5.2f}x  cpu {ours.cpu / theirs.cpu:5.2f}x  "
              f"peak RSS {rss:5.2f}x  (ours / ccusage)")  # fmt: skip
        print(f"entries  {mine['entries']}; tokens ours {[mine[k] for k in TYPES]} "
              f"ccusage {[ref[k] for k in TYPES]}")  # fmt: skip
        if any(mine[kind] != ref[kind] for kind in TYPES):
            raise SystemExit("token totals differ: the runs did not read the same data")


if __name__ == "__main__":
    main()
