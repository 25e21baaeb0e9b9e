"""Whole `agentwatch sentinel agent-ledger --once` on one agent's corpus vs ccusage: CPU,
peak RSS and token totals, in interleaved pairs; or the command under cProfile.

    python bench/profile_agent_ledger.py generate {codex,gemini,opencode} DIR [--size 256M]
    python bench/profile_agent_ledger.py compare AGENT DIR [--pairs 3]
    python bench/profile_agent_ledger.py profile AGENT DIR [--top 40]

`generate` writes a corpus with the bench_agent_* generators (DIR/data is the agent's data
dir). `compare` runs, per pair, our whole command (a fresh state folder, HOME an empty
folder, only that agent's data-dir variable set) and `ccusage <agent> daily --json
--offline`, each a fresh process: CPU from wait4 (user + system), peak RSS (ru_maxrss), the
ratio's min/median/max, and whether the four token totals (our spool file's
agentwatch_tokens_total against ccusage's totals) are equal. A tool to find where the time
goes; the bench_agent_* scripts are the benchmarks.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CCUSAGE = os.environ.get("AGENTWATCH_CCUSAGE") or str(
    REPO / ".tools" / "ccusage" / "node_modules" / ".bin" / "ccusage"
)
ENV_OF = {"codex": "CODEX_HOME", "gemini": "GEMINI_DATA_DIR", "opencode": "OPENCODE_DATA_DIR"}
TYPES = ("input", "output", "cache_read", "cache_creation")


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].isalpha() else int(text)


def generate(agent: str, base: Path, size: int) -> None:
    data = base / "data"
    if agent == "codex":
        import bench_agent_codex

        bench_agent_codex.generate(data, size)
    elif agent == "gemini":
        import bench_agent_gemini

        bench_agent_gemini.generate(data, size, 11)
    else:
        from agentwatch.demo import opencode_corpus

        opencode_corpus.write_size(base, size)  # writes base/data


def _env(agent: str, base: Path, home: Path) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TZ": "UTC",
           ENV_OF[agent]: str(base / "data")}  # fmt: skip
    if "PYTHONPATH" in os.environ:  # a frozen copy of the package to measure
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def _run(cmd: list[str], env: dict[str, str], out: Path) -> tuple[float, float]:
    """CPU seconds (user + system of the child and what it waited for) and peak RSS MiB."""
    with open(out, "wb") as handle:
        proc = subprocess.Popen(cmd, env=env, stdout=handle, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[:3]} failed: {err[-2000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def our_totals(spool: Path, agent: str) -> dict[str, int]:
    totals = dict.fromkeys(TYPES, 0)
    for path in spool.glob("*.prom"):
        for line in path.read_text().splitlines():
            if line.startswith("agentwatch_tokens_total{") and f'agent="{agent}"' in line:
                kind = line.split('type="', 1)[1].split('"', 1)[0]
                totals[kind] += int(float(line.rsplit(" ", 1)[1]))
    return totals


def ccusage_totals(path: Path, agent: str) -> dict[str, int]:
    """As the bench_agent_* scripts compare: Gemini's output is what the total holds beyond
    the other types (reasoning included); OpenCode's and Codex's is outputTokens."""
    totals = json.loads(path.read_text())["totals"]
    known = totals["inputTokens"] + totals["cacheReadTokens"] + totals["cacheCreationTokens"]
    output = totals["totalTokens"] - known if agent == "gemini" else totals["outputTokens"]
    return {"input": totals["inputTokens"], "output": output,
            "cache_read": totals["cacheReadTokens"],
            "cache_creation": totals["cacheCreationTokens"]}  # fmt: skip


def compare(agent: str, base: Path, pairs: int, ours: Path) -> int:
    ratios: list[float] = []
    agree = True
    print(f"load {os.getloadavg()[0]:.2f}; corpus {base}")
    for pair in range(pairs):
        with tempfile.TemporaryDirectory(prefix="a29-") as scratch:
            work = Path(scratch)
            home, state, spool = work / "home", work / "state", work / "spool"
            for folder in (home, state, spool):
                folder.mkdir()
            env = _env(agent, base, home)
            ours_cmd = [str(ours), "sentinel", "agent-ledger",
                        "--once", "--state-dir", str(state), "--spool-dir", str(spool)]  # fmt: skip
            theirs_cmd = [CCUSAGE, agent, "daily", "--json", "--offline", "--timezone", "UTC"]
            runs = [("ours", ours_cmd), ("ccusage", theirs_cmd)]
            if pair % 2:
                runs.reverse()
            result = {}
            for name, cmd in runs:
                result[name] = _run(cmd, env, work / f"{name}.out")
            mine, ref = our_totals(spool, agent), ccusage_totals(work / "ccusage.out", agent)
            agree = agree and mine == ref
            ratio = result["ours"][0] / result["ccusage"][0]
            ratios.append(ratio)
            differ = "" if mine == ref else f" ours {mine} ccusage {ref}"
            print(f"pair {pair}: ours cpu {result['ours'][0]:6.2f} s rss {result['ours'][1]:6.1f}"
                  f" MiB | ccusage cpu {result['ccusage'][0]:6.2f} s rss "
                  f"{result['ccusage'][1]:6.1f} MiB | ratio {ratio:.2f} | totals equal "
                  f"{mine == ref}{differ}")  # fmt: skip
    print(f"cpu ratio min {min(ratios):.2f} median {statistics.median(ratios):.2f} "
          f"max {max(ratios):.2f}; load {os.getloadavg()[0]:.2f}")  # fmt: skip
    return 0 if agree else 1


def profile(agent: str, base: Path, top: int) -> None:
    from agentwatch.cli.main import main as cli_main

    with tempfile.TemporaryDirectory(prefix="a29-") as scratch:
        work = Path(scratch)
        home = work / "home"
        home.mkdir()
        os.environ.clear()
        os.environ.update(_env(agent, base, home))
        argv = ["sentinel", "agent-ledger", "--once", "--state-dir", str(work / "state"),
                "--spool-dir", str(work / "spool")]  # fmt: skip
        profiler = cProfile.Profile(time.process_time)  # CPU: the machine is busy
        started = time.process_time()
        profiler.enable()
        with contextlib.suppress(SystemExit):
            cli_main(argv)
        profiler.disable()
        print(f"cpu {time.process_time() - started:.2f} s")
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(top)
        stats.sort_stats("cumulative").print_stats(top)
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("generate", "compare", "profile"))
    parser.add_argument("agent", choices=sorted(ENV_OF))
    parser.add_argument("dir", type=Path)
    parser.add_argument("--size", default="256M")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--ours", type=Path, default=REPO / ".venv" / "bin" / "agentwatch",
                        help="the agentwatch to run (another checkout's)")  # fmt: skip
    args = parser.parse_args()
    if args.action == "generate":
        generate(args.agent, args.dir, parse_size(args.size))
        return 0
    if args.action == "compare":
        return compare(args.agent, args.dir, args.pairs, args.ours)
    profile(args.agent, args.dir, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
