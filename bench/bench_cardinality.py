"""Benchmark of the ledger's fold: spool size and scrape time with many distinct names.

    python bench/bench_cardinality.py [--names 100000] [--scrapes 5] [--work-dir DIR]

Writes NAMES transcript lines, each with its own project (cwd), model and session (one file
each, timestamped now so every session is recent), then runs `agentwatch sentinel token-ledger
--once` twice on it: with the default caps (the fold) and with caps above NAMES (no fold). For
each it prints the spool file's size, the time of a `/metrics` scrape of a real exporter on
that spool (median of SCRAPES) and the exporter's RSS, and checks that the token totals are the
same (the fold loses no token). Targets with the fold: spool < 2 MB, scrape < 100 ms (median
of the scrapes, printed with their spread and the load average), no token lost; exit 1 on a
miss. No peer: the fold (capping the label values a ledger writes) is agentwatch's own;
ccusage has no Prometheus output, and serving a spool against node_exporter's textfile
collector is bench_scrape.py's pairing. The targets are the design's: a spool file Prometheus
scrapes in well under its 10 s timeout and keeps under its default sample limits.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import orjson
import pairs  # bench/ is on sys.path when a bench runs as `python bench/NAME.py`
import psutil
from pairs import free_port
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
AGENTWATCH = [sys.executable, "-m", "agentwatch.cli"]


def write_corpus(root: Path, names: int) -> int:
    """One line per name, in its own project, model and session; the input tokens in total."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    total = 0
    for number in range(names):
        folder = root / "projects" / f"-w-p{number}"
        folder.mkdir(parents=True)
        line = {
            "type": "assistant", "timestamp": now, "sessionId": f"s{number}",
            "requestId": f"r{number}", "version": "2.0.0", "cwd": f"/w/project-{number}",
            "message": {"id": f"m{number}", "model": f"claude-bench-{number}",
                        "usage": {"input_tokens": number + 1, "output_tokens": 1}},
        }  # fmt: skip
        total += number + 1
        (folder / f"s{number}.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    return total


def run_once(corpus: Path, work: Path, cap: int | None) -> tuple[Path, float]:
    """The ledger's --once on the corpus; the spool dir and the wall time."""
    spool, state = work / "spool", work / "state"
    spool.mkdir(parents=True)
    config = work / "config.yaml"
    caps = "" if cap is None else f"max_projects: {cap}, max_models: {cap}, max_sessions: {cap}"
    config.write_text(f"sentinels:\n  token-ledger: {{{caps}}}\n")
    started = time.monotonic()
    subprocess.run(
        [*AGENTWATCH, "--config", str(config), "sentinel", "token-ledger", "--once",
         "--spool-dir", str(spool), "--state-dir", str(state)],
        env=dict(os.environ, CLAUDE_CONFIG_DIR=str(corpus)), check=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return spool, time.monotonic() - started


def scrape(spool: Path, scrapes: int) -> tuple[list[float], int, str]:
    """Each scrape's seconds, the exporter's RSS after them, and the last body."""
    port = free_port()
    exporter = subprocess.Popen(
        [*AGENTWATCH, "exporter", "--spool-dir", str(spool), "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=120) as response:
                    response.read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        times, body = [], ""
        for _ in range(scrapes):
            started = time.monotonic()
            with urllib.request.urlopen(url, timeout=120) as response:
                body = response.read().decode()
            times.append(time.monotonic() - started)
        rss = psutil.Process(exporter.pid).memory_info().rss
        return times, rss, body
    finally:
        exporter.kill()
        exporter.wait(timeout=10)


def input_tokens(text: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "agentwatch_tokens"
        for sample in family.samples
        if sample.labels.get("type") == "input"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--names", type=int, default=100_000)
    parser.add_argument("--scrapes", type=int, default=5)
    parser.add_argument("--work-dir", type=Path, default=None, help="kept; default a temp dir")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "cardinality.json")
    args = parser.parse_args()
    return pairs.main_guard(lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="aw-cardinality-"))
    before = pairs.load()
    try:
        corpus = work / "claude"
        print(f"writing {args.names} names (one file each) under {corpus} ...", flush=True)
        expected = write_corpus(corpus, args.names)
        rows = []
        runs = (("fold (default caps)", "fold", None), ("no fold", "flat", args.names + 1))
        for label, folder, cap in runs:
            spool, wall = run_once(corpus, work / folder, cap)
            size = (spool / "token-ledger.prom").stat().st_size
            times, rss, body = scrape(spool, args.scrapes)
            tokens = input_tokens(body)
            rows.append((label, size, times, rss, tokens, wall))
        print(f"\n{'':22} {'spool MB':>9} {'scrape ms median (min-max)':>28} "
              f"{'exporter MB':>12} {'--once s':>9} {'input tokens':>14}")  # fmt: skip
        for label, size, times, rss, tokens, wall in rows:
            low, mid, high = pairs.spread(times)
            cell = f"{mid * 1e3:.1f} ({low * 1e3:.1f}-{high * 1e3:.1f})"
            print(f"{label:22} {size / 1e6:9.2f} {cell:>28} {rss / 1e6:12.1f} "
                  f"{wall:9.1f} {tokens:14.0f}")  # fmt: skip
        fold, flat = rows[0], rows[1]
        print(f"\nratio no fold / fold: spool {flat[1] / fold[1]:.1f}x, scrape "
              f"{pairs.spread(flat[2])[1] / max(pairs.spread(fold[2])[1], 1e-9):.1f}x")  # fmt: skip
        print(f"expected input tokens {expected}; with the fold {fold[4]:.0f}")
        print(pairs.load_line(before, pairs.load()))
        checks = [
            pairs.Check("spool file with the fold, MB", fold[1] / 1e6, 2.0, strict=True),
            pairs.median_check("scrape with the fold, s", fold[2], 0.1, strict=True),
            pairs.Check("input tokens lost or added by the fold", abs(fold[4] - expected), 0),
        ]
        data = {"names": args.names, "rows": [[*row[:4], row[5]] for row in rows]}
        return pairs.verdict(checks, args.out, data)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
