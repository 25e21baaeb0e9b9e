"""Many concurrent scrapers on a big spool: do they share one render, or queue for the CPU?

Writes a spool of `--series` series (20,000 by default, 1.9 MB, a busy fleet's token ledger),
starts the real `agentwatch exporter` on it (loopback), and runs `--scrapers` concurrent
clients (200), each doing `--rounds` GET /metrics (10) back to back under Prometheus' default
10 s scrape timeout, the whole run bounded by `--seconds` (60). Half the clients ask for
OpenMetrics as Prometheus does, half for text as curl does (`--accept`). The spool is
rewritten every `--rewrite` seconds (5), as a sentinel does, so renders happen during the run.
The peer: Debian's prometheus-node-exporter with only its textfile collector on the same spool
(`--collector.disable-defaults --collector.textfile`), the program whose file format the spool
uses, run the same way; `--pairs` pairs of one run each (pairs.py, order alternating). Prints
p50/p99/max latency, answers, timeouts and errors of every run, each side's median (min-max),
the per-pair ratios and the load average; `--baseline REF` measures the exporter of that git
ref the same way once. Exit 1 when a scrape of ours failed, our median p99 is over
`--target-p99` seconds (5), or the median per-pair ratio ours / node_exporter of `p99_all` is
over 1.0: the p99 with every failed scrape counted at the 10 s timeout (lost data, as
Prometheus sees it; the p99 of the answered scrapes alone is printed too, but a side that
answers nothing has none); 2 when node_exporter is missing (`scripts/setup --test`).
node_exporter answers 503 past its default 40 requests in flight: those count as its errors.

    .venv/bin/python bench/bench_scrape_flight.py [--scrapers 200] [--pairs 3] [--baseline main]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pairs  # bench/ is on sys.path when a bench runs as `python bench/NAME.py`
import psutil
from bench_scrape import (
    NODE_EXPORTER,
    TIMEOUT,
    baseline_tree,
    free_port,
    start,
    start_exporter,
    stop,
    wait_up,
)
from prometheus_client.metrics_core import CounterMetricFamily

from agentwatch.core import spool

ROOT = Path(__file__).resolve().parents[1]
TYPES = ("input", "output", "cache_read", "cache_creation")
MODELS = ("claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5", "claude-opus-4-5")


def write_spool(folder: Path, series: int, value: float = 1.0) -> None:
    """One token-ledger file of `series` series (project x model x type), as the ledger
    writes it; `value` changes the numbers (and so the file's signature) on a rewrite."""
    tokens = CounterMetricFamily(
        "agentwatch_tokens", "Tokens by type", labels=["project", "model", "type"]
    )
    per_project = len(MODELS) * len(TYPES)
    for index in range(series):
        project, rest = divmod(index, per_project)
        model, kind = divmod(rest, len(TYPES))
        tokens.add_metric([f"/src/p{project:04d}", MODELS[model], TYPES[kind]], value + index)
    spool.write(folder, "token-ledger", 5, lambda: [tokens])


# What Prometheus 3 sends (it prefers OpenMetrics), and what curl sends.
ACCEPT = {
    "openmetrics": "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;"
    "version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
    "text": "*/*",
}


async def _scrape(port: int, accept: str) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = f"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: {ACCEPT[accept]}\r\n\r\n"
        writer.write(head.encode())
        await writer.drain()
        body = await reader.read()
        if not body.startswith(b"HTTP/1.0 200"):
            raise ConnectionError("not a 200")
        return len(body)
    finally:
        writer.close()


async def _run(
    port: int, scrapers: int, rounds: int, seconds: float, accept: str
) -> dict[str, Any]:
    latencies: list[float] = []
    failures = {"timeouts": 0, "errors": 0}
    stop_at = time.monotonic() + seconds

    async def one(index: int) -> None:
        kind = accept if accept != "mixed" else ("text", "openmetrics")[index % 2]
        for _ in range(rounds):
            if time.monotonic() >= stop_at:
                return
            started = time.monotonic()
            try:
                await asyncio.wait_for(_scrape(port, kind), TIMEOUT)
                latencies.append(time.monotonic() - started)
            except TimeoutError:
                failures["timeouts"] += 1
            except OSError:
                failures["errors"] += 1

    started = time.monotonic()
    await asyncio.gather(*(one(n) for n in range(scrapers)))
    wall = time.monotonic() - started
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else 0.0

    return {
        "requests": len(latencies),
        **failures,
        "wall": wall,
        "p50": pct(0.50),
        "p99": pct(0.99),
        "max": latencies[-1] if latencies else 0.0,
        "mean": statistics.fmean(latencies) if latencies else 0.0,
        "p99_all": p99_with_failures(latencies, sum(failures.values())),
    }


def p99_with_failures(latencies: list[float], failed: int) -> float:
    """The p99 with each failed scrape counted at the timeout: lost data, as Prometheus sees
    it (a side that answers nothing has no p99 of answers to compare)."""
    every = sorted(latencies + [TIMEOUT] * failed)
    return every[min(len(every) - 1, int(0.99 * len(every)))] if every else 0.0


def start_peer(spool_dir: Path, port: int, work: Path) -> Any:
    argv = [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}",
            "--collector.disable-defaults", "--collector.textfile",
            f"--collector.textfile.directory={spool_dir}"]  # fmt: skip
    process = start(argv, work / f"node-exporter-{port}.log")
    wait_up(port, process, "node_exporter")
    return process, "node_exporter textfile"


def measure(
    label: str, spool_dir: Path, work: Path, tree: Path | None, args: Any, peer: bool = False
) -> dict:
    port = free_port()
    if peer:
        process, where = start_peer(spool_dir, port, work)
    else:
        process, where = start_exporter(spool_dir, port, work, tree)
    done = threading.Event()

    def rewrite() -> None:  # a sentinel rewriting its file: renders happen mid-run
        value = 2.0
        while not done.wait(args.rewrite):
            write_spool(spool_dir, args.series, value)
            value += 1.0

    writer = threading.Thread(target=rewrite, daemon=True)
    try:
        asyncio.run(_run(port, 5, 1, 30.0, args.accept))  # warm-up: the first parse
        before = psutil.Process(process.pid).cpu_times()
        writer.start()
        result = asyncio.run(_run(port, args.scrapers, args.rounds, args.seconds, args.accept))
        after = psutil.Process(process.pid).cpu_times()
        result["exporter_cpu_s"] = (after.user + after.system) - (before.user + before.system)
        result["threads"] = psutil.Process(process.pid).num_threads()
        result["rss_mib"] = pairs.rss_mib(process.pid)
    finally:
        done.set()
        writer.join()
        stop(process)
    print(
        f"{label:>9}: {result['requests']:5d} answered in {result['wall']:5.1f} s, "
        f"p50 {result['p50']:6.2f} s, p99 {result['p99']:6.2f} s, max {result['max']:6.2f} s, "
        f"timeouts {result['timeouts']}, errors {result['errors']}, exporter CPU "
        f"{result['exporter_cpu_s']:.1f} s  ({where})",
        flush=True,
    )
    return result


def sample(result: dict) -> pairs.Sample:
    extra = {name: float(result[name]) for name in ("p50", "p99", "p99_all", "requests")}
    extra["failed"] = float(result["timeouts"] + result["errors"])
    extra["cpu_per_answer_ms"] = 1000 * result["exporter_cpu_s"] / max(1, result["requests"])
    return pairs.Sample(result["wall"], result["exporter_cpu_s"], result["rss_mib"], extra=extra)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=20_000)
    parser.add_argument("--scrapers", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10, help="scrapes per scraper")
    parser.add_argument("--seconds", type=float, default=60.0, help="bound of each run")
    parser.add_argument("--rewrite", type=float, default=5.0, help="spool rewrite period")
    parser.add_argument("--target-p99", type=float, default=5.0, help="seconds")
    parser.add_argument(
        "--accept", choices=("mixed", "openmetrics", "text"), default="mixed",
        help="what the scrapers ask for: Prometheus' OpenMetrics, curl's text, or half each",
    )  # fmt: skip
    parser.add_argument("--baseline", help="git ref of an exporter to measure too")
    parser.add_argument("--pairs", type=int, default=3, help="interleaved pairs (default 3)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "scrape_flight.json")
    args = parser.parse_args()
    return pairs.main_guard(lambda: run(args))


def run(args: argparse.Namespace) -> int:
    pairs.need_executable(NODE_EXPORTER, "node_exporter", "scripts/setup --test")
    with tempfile.TemporaryDirectory(prefix="aw-bench-flight-") as temp:
        work = Path(temp)
        spool_dir = work / "spool"
        write_spool(spool_dir, args.series)
        size = sum(p.stat().st_size for p in spool_dir.glob("*.prom"))
        print(
            f"spool: {args.series} series, {size / 1e6:.2f} MB; {args.scrapers} scrapers x "
            f"{args.rounds} scrapes (bounded by {args.seconds:.0f} s), timeout {TIMEOUT:.0f} s",
            flush=True,
        )
        result = pairs.run_pairs(
            ("agentwatch", lambda: sample(measure("this", spool_dir, work, None, args))),
            ("node_exporter", lambda: sample(measure("peer", spool_dir, work, None, args, True))),
            args.pairs,
            progress=False,
        )
        if args.baseline:
            measure(args.baseline, spool_dir, work, baseline_tree(args.baseline, work / "b"), args)
    metrics = ("p50", "p99", "p99_all", "failed", "requests", "cpu_per_answer_ms", "rss_mib")
    print(pairs.table(result, metrics))
    ours = [s.value("p99") for s in result.a]
    checks = [
        pairs.Check(
            "failed scrapes of agentwatch, all runs", sum(s.value("failed") for s in result.a), 0
        ),
        pairs.Check(
            "runs of agentwatch with no answer", sum(s.value("requests") == 0 for s in result.a), 0
        ),
        pairs.median_check("agentwatch p99 s", ours, args.target_p99),
        pairs.ratio_check(result, "p99_all", 1.0),
    ]
    return pairs.verdict(checks, args.out, result.as_dict())


if __name__ == "__main__":
    sys.exit(main())
