"""The agent ledger's whole command against `ccusage <agent> daily`, in interleaved pairs: the
part bench_agent_codex.py, bench_agent_gemini.py and bench_agent_opencode.py share.

Each pair runs, as whole processes on the same warm corpus, `agentwatch --config C sentinel
agent-ledger --once` with a fresh state and spool folder (a cold backfill: the command a
user runs, start-up, database and spool file included) and `ccusage <agent> daily --json
--offline`. Targets (issue 29): CPU at most 1.0 times ccusage's (median of the pair ratios),
peak memory below ccusage's, and the token totals equal (the ledger's spool file summed per
type against ccusage's report), else exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pairs import (
    Check,
    Sample,
    SetupError,
    need_executable,
    ratio_check,
    run_command,
    run_pairs,
    table,
    verdict,
)
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
TYPES = ("input", "output", "cache_read", "cache_creation")


def default_ccusage() -> str:
    return os.environ.get("AGENTWATCH_CCUSAGE") or str(
        ROOT / ".tools" / "ccusage" / "node_modules" / ".bin" / "ccusage"
    )


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B").rstrip("I")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def add_options(parser: argparse.ArgumentParser, size: str = "256M") -> None:
    parser.add_argument("--size", default=size, help=f"corpus size (default {size})")
    parser.add_argument("--pairs", type=int, default=3, help="interleaved pairs (default 3)")
    parser.add_argument("--keep", type=Path, help="generate into (and re-use) this folder")
    parser.add_argument("--out", type=Path, help="write the samples and verdicts as JSON")
    parser.add_argument("--ccusage", default=default_ccusage(), help="the ccusage command")
    parser.add_argument(
        "--agentwatch",
        default=str(Path(sys.executable).parent / "agentwatch"),
        help="the agentwatch command (default: next to this Python)",
    )
    parser.add_argument("--target-cpu", type=float, default=1.0, help="max CPU ratio (1.0)")
    parser.add_argument("--target-rss", type=float, default=1.0, help="RSS ratio below (1.0)")


def spool_totals(spool: Path, agent: str) -> dict[str, int]:
    """agentwatch_tokens_total of `agent` in the spool files, summed per type."""
    totals = dict.fromkeys(TYPES, 0)
    for path in spool.glob("*.prom"):
        for family in text_string_to_metric_families(path.read_text(encoding="utf-8")):
            for sample in family.samples:
                if sample.name == "agentwatch_tokens_total" and sample.labels.get("agent") == agent:
                    totals[sample.labels["type"]] += int(sample.value)
    return totals


def warm(root: Path) -> int:
    """Read every file once (both sides start from the same warm page cache); the bytes."""
    total = 0
    for path in root.rglob("*"):
        if path.is_file():
            with open(path, "rb", buffering=0) as handle:
                while chunk := handle.read(4 << 20):
                    total += len(chunk)
    return total


def compare(
    args: argparse.Namespace,
    agent: str,
    base: Path,
    corpus_root: Path,
    env: Mapping[str, str],
    reference: Callable[[dict[str, Any]], dict[str, int]],
    ccusage_extra: tuple[str, ...] = (),
) -> int:
    """Run the pairs on a generated corpus and return the exit status."""
    ccusage = need_executable(args.ccusage, "ccusage", "run scripts/setup --test or --ccusage")
    agentwatch = need_executable(args.agentwatch, "agentwatch", "pip install -e . or --agentwatch")
    corpus_bytes = warm(corpus_root)
    print(f"corpus: {corpus_bytes / (1 << 20):.1f} MiB under {corpus_root}", flush=True)
    run = base / "run"
    config = base / "agentwatch.yaml"
    config.write_text(json.dumps({"sentinels": {"agent-ledger": {"agents": [agent]}}}))
    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "TZ": "UTC"}
    full_env.update(env)
    last: dict[str, Sample] = {}
    ours_cmd = [agentwatch, "--config", str(config), "sentinel", "agent-ledger", "--once",
                "--spool-dir", str(run / "spool"), "--state-dir", str(run / "state")]  # fmt: skip
    theirs_cmd = [ccusage, agent, "daily", "--json", "--offline", *ccusage_extra]

    def ours() -> Sample:
        shutil.rmtree(run, ignore_errors=True)  # a cold backfill every time
        (run / "spool").mkdir(parents=True)
        last["ours"] = run_command(ours_cmd, env=full_env)
        return last["ours"]

    def theirs() -> Sample:
        last["theirs"] = run_command(theirs_cmd, env=full_env)
        return last["theirs"]

    print(f"ours:   {' '.join(ours_cmd)}\npeer:   {' '.join(theirs_cmd)}", flush=True)
    result = run_pairs(("agentwatch", ours), ("ccusage", theirs), args.pairs)
    print(table(result))
    try:
        mine = spool_totals(run / "spool", agent)
        ref = reference(json.loads(last["theirs"].out))
    except (ValueError, KeyError) as err:
        raise SetupError(f"could not read the totals: {err}") from err
    print(f"token totals: agentwatch {[mine[k] for k in TYPES]}, ccusage {[ref[k] for k in TYPES]}")
    differ = sum(1 for kind in TYPES if mine[kind] != ref[kind])
    checks = [
        ratio_check(result, "cpu_s", args.target_cpu),
        ratio_check(result, "rss_mib", args.target_rss, strict=True),
        Check("token types whose totals differ from ccusage's", differ, 0),
    ]
    info = {"agent": agent, "corpus_bytes": corpus_bytes, "pairs": result.as_dict()}
    return verdict(checks, args.out, info)


def totals_of(report: dict[str, Any]) -> dict[str, int]:
    """ccusage's `totals` block, per type."""
    totals = report["totals"]
    return {
        "input": totals["inputTokens"],
        "output": totals["outputTokens"],
        "cache_read": totals["cacheReadTokens"],
        "cache_creation": totals["cacheCreationTokens"],
    }
