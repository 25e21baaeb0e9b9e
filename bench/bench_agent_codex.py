"""The agent ledger on a Codex CLI corpus against `ccusage codex daily`, in interleaved pairs.

    python bench/bench_agent_codex.py [--size 256M] [--pairs 3] [--keep DIR] [--out result.json]

Generates a CODEX_HOME of rollouts shaped like Codex CLI 0.171.0's (a session_meta carrying
the base instructions, response items, world state, turn contexts, and a token_count per
response with last and total usage) of about --size bytes, then runs, each as its own
process on a warm page cache, in pairs (agent_bench.py): `agentwatch sentinel agent-ledger
--once` (cold: fresh state) and `ccusage codex daily --json --offline`. Exit 1 when the median
CPU ratio passes 1.0, the peak memory is not below ccusage's, or the token totals differ.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import agent_bench
from pairs import main_guard

MODELS = ("gpt-5", "gpt-5-codex", "gpt-5.2-codex", "gpt-5.3-codex", "gpt-5.4", "gpt-5.5")


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


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    agent_bench.add_options(parser)
    args = parser.parse_args()

    def body() -> int:
        base = args.keep or Path(tempfile.mkdtemp(prefix="bench-codex-"))
        home = base / "codex-home"
        try:
            if not home.exists():
                started = time.perf_counter()
                files, counts = generate(home, agent_bench.parse_size(args.size))
                took = time.perf_counter() - started
                print(f"corpus: {files} rollouts, {counts} token_count lines, made in {took:.1f} s")
            return agent_bench.compare(
                args, "codex", base, home, {"CODEX_HOME": str(home)}, agent_bench.totals_of
            )
        finally:
            if not args.keep:
                shutil.rmtree(base, ignore_errors=True)

    return main_guard(body)


if __name__ == "__main__":
    raise SystemExit(main())
