"""Cold read of a Codex CLI corpus: the Codex reader vs `ccusage codex daily`, in the same run.

    python bench/bench_agent_codex.py [--size 256M] [--keep DIR] [--out result.json]

Generates a CODEX_HOME of rollouts shaped like Codex CLI 0.171.0's (a session_meta carrying
the base instructions, response items, world state, turn contexts, and a token_count per
response with last and total usage) of about --size bytes, then runs, each as its own
process on a warm page cache: `ccusage codex daily --json --offline` and
`read_files(files(root))` + `daily_totals` of the reader. Per run: wall time, CPU, peak RSS
(its process tree, sampled every 10 ms); then the ratios and seconds per GiB. The two per-day
token totals must agree, or the run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
CCUSAGE = os.environ.get("AGENTWATCH_CCUSAGE") or str(
    ROOT / ".tools" / "ccusage" / "node_modules" / ".bin" / "ccusage"
)
READER = """
import json, sys
from pathlib import Path
from agentwatch.sentinels.agent_ledger import codex
from agentwatch.sentinels.agent_ledger.base import daily_totals
roots = codex.roots({"CODEX_HOME": sys.argv[1]}, Path.home())
paths = [p for root in roots for p in codex.files(root)]
result = codex.read_files(paths)
print(json.dumps({"days": daily_totals(result.entries, "UTC", codex.price),
                  "entries": len(result.entries), "rejects": result.rejects}))
"""
MODELS = ("gpt-5", "gpt-5-codex", "gpt-5.2-codex", "gpt-5.3-codex", "gpt-5.4", "gpt-5.5")


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B").rstrip("I")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def generate(home: Path, size: int, seed: int = 7) -> tuple[int, int]:
    """Rollouts until `size` bytes: (files, token_count lines)."""
    rng = random.Random(seed)
    words = [
        ("".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 9)))) for _ in range(500)
    ]
    filler = [" ".join(rng.choice(words) for _ in range(n)) for n in (200, 600, 1500)]
    instructions = " ".join(rng.choice(words) for _ in range(1800))
    written = files = counts = 0
    clock = 1_772_000_000.0
    while written < size:
        files += 1
        clock += rng.uniform(600, 7200)
        moment = time.gmtime(clock)
        day = time.strftime("%Y/%m/%d", moment)
        session = f"{rng.getrandbits(64):016x}-{files:06d}"
        path = (
            home
            / "sessions"
            / day
            / f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', moment)}-{session}.jsonl"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        model = rng.choice(MODELS)
        lines = []

        def stamp(offset: float, start: float = clock) -> str:
            t = start + offset
            return (
                time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"
            )

        meta = {
            "id": session,
            "cwd": f"/work/p{files % 37}",
            "cli_version": "0.171.0",
            "base_instructions": {"text": instructions},
        }
        lines.append(compact({"timestamp": stamp(0), "type": "session_meta", "payload": meta}))
        totals = {
            "input_tokens": 0,
            "cached_input_tokens": 0,
            "cache_write_input_tokens": 0,
            "output_tokens": 0,
            "reasoning_output_tokens": 0,
            "total_tokens": 0,
        }
        offset = 0.0
        for _turn in range(rng.randint(3, 40)):
            offset += rng.uniform(5, 120)
            lines.append(
                compact(
                    {
                        "timestamp": stamp(offset),
                        "type": "turn_context",
                        "payload": {"model": model, "cwd": meta["cwd"], "approval_policy": "never"},
                    }
                )
            )
            for _ in range(rng.randint(1, 4)):
                text = rng.choice(filler)
                item = {
                    "type": "message",
                    "role": rng.choice(("user", "assistant")),
                    "content": [{"type": "output_text", "text": text}],
                }
                lines.append(
                    compact({"timestamp": stamp(offset), "type": "response_item", "payload": item})
                )
            tokens_in = rng.randint(2_000, 120_000)
            cached = rng.randint(0, tokens_in)
            last = {
                "input_tokens": tokens_in,
                "cached_input_tokens": cached,
                "cache_write_input_tokens": rng.choice((0, min(tokens_in - cached, 900))),
                "output_tokens": rng.randint(10, 3000),
                "reasoning_output_tokens": rng.randint(0, 800),
            }
            last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
            for key in totals:
                totals[key] += last[key]
            info = {
                "total_token_usage": dict(totals),
                "last_token_usage": last,
                "model_context_window": 258400,
            }
            lines.append(
                compact(
                    {
                        "timestamp": stamp(offset + 1),
                        "type": "event_msg",
                        "payload": {"type": "token_count", "info": info, "rate_limits": None},
                    }
                )
            )
            counts += 1
        data = "\n".join(lines) + "\n"
        path.write_text(data, encoding="utf-8")
        written += len(data)
    return files, counts


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    peak_rss_mib: float


def measure(command: list[str], env: dict[str, str]) -> tuple[Run, str]:
    """Run to completion: wall, CPU (the child and what it waited for) and the peak of its
    process tree's summed RSS, sampled every 10 ms."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        try:
            root = psutil.Process(proc.pid)
        except psutil.Error:
            return
        while not done.is_set():
            total = 0
            try:
                for member in [root, *root.children(recursive=True)]:
                    total += member.memory_info().rss
            except psutil.Error:
                pass
            peak[0] = max(peak[0], total)
            done.wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out_chunks: list[str] = []
    reader = threading.Thread(
        target=lambda: out_chunks.append(proc.stdout.read() if proc.stdout else "")
    )
    reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    reader.join()
    err = proc.stderr.read() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{command[0]} failed: {err[-2000:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, peak[0] / (1 << 20)), "".join(out_chunks)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", default="256M", help="corpus size (e.g. 256M, 1G)")
    parser.add_argument("--keep", help="generate into (and keep) this directory")
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()
    size = parse_size(args.size)
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-codex-"))
    home = base / "codex-home"
    try:
        if not home.exists():
            started = time.perf_counter()
            files, counts = generate(home, size)
            took = time.perf_counter() - started
            print(f"corpus: {files} rollouts, {counts} token_count lines, made in {took:.1f} s")
        corpus_bytes = sum(p.stat().st_size for p in home.rglob("*.jsonl"))
        for path in home.rglob("*.jsonl"):  # warm the page cache for both readers alike
            path.read_bytes()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(base),
            "CODEX_HOME": str(home),
        }
        ccusage, report = measure(
            [CCUSAGE, "codex", "daily", "--json", "--offline", "-z", "UTC"], env
        )
        ours, mine = measure(
            [sys.executable, "-c", READER, str(home)],
            {**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        )
        theirs = {
            row["date"]: (
                row["inputTokens"],
                row["outputTokens"],
                row["cacheReadTokens"],
                row["cacheCreationTokens"],
            )
            for row in json.loads(report)["daily"]
        }
        days = json.loads(mine)["days"]
        ours_days = {
            day: (v["input"], v["output"], v["cache_read"], v["cache_creation"])
            for day, v in days.items()
        }
        if ours_days != theirs:
            raise SystemExit("token totals differ from ccusage's")
        gib = corpus_bytes / (1 << 30)
        result = {
            "corpus_bytes": corpus_bytes,
            "days": len(theirs),
            "ccusage": asdict(ccusage),
            "reader": asdict(ours),
            "wall_ratio": ours.wall_s / ccusage.wall_s,
            "cpu_ratio": ours.cpu_s / ccusage.cpu_s,
            "rss_ratio": ours.peak_rss_mib / ccusage.peak_rss_mib,
            "reader_s_per_gib": ours.wall_s / gib,
            "ccusage_s_per_gib": ccusage.wall_s / gib,
        }
        mib = corpus_bytes / (1 << 20)
        print(f"corpus {mib:.0f} MiB, {len(theirs)} days; per-day tokens equal ccusage's")
        print(f"  {'':10} {'wall s':>8} {'cpu s':>8} {'peak RSS MiB':>13} {'s/GiB':>8}")
        for name, run in (("ccusage", ccusage), ("reader", ours)):
            figures = f"{run.wall_s:8.2f} {run.cpu_s:8.2f} {run.peak_rss_mib:13.1f}"
            print(f"  {name:10} {figures} {run.wall_s / gib:8.2f}")
        ratios = (result["wall_ratio"], result["cpu_ratio"], result["rss_ratio"])
        print("  ratio reader/ccusage: wall {:.1f}x, cpu {:.1f}x, peak RSS {:.1f}x".format(*ratios))
        if args.out:
            Path(args.out).write_text(json.dumps(result, indent=1))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
