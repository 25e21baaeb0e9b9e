"""200 concurrent scrapers against the real exporter, next to the exporter before the body cache.

Writes a realistic spool (token ledger, resources, idle-error, footprint, release-readiness,
controller: about 3,000 series, 400 KB), starts `agentwatch exporter` on it (loopback), and
runs `--scrapers` concurrent clients that GET /metrics back to back for `--seconds`, each
request with Prometheus' default 10 s scrape timeout. Then the same against the exporter of
`--baseline` (a git ref, default `main`: its code extracted with `git archive` and run with
the same Python), measured in the same run. Prints p50/p99/max latency, requests and
timeouts of each, and the ratios.

    .venv/bin/python bench/bench_scrape.py [--scrapers 200] [--seconds 12] [--baseline main]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily

from agentwatch.core import spool

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 10.0  # Prometheus' default scrape_timeout
TARGET_P99 = 0.250


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_spool(folder: Path) -> int:
    """A spool the size of a busy workstation's; returns the number of series."""
    models = ["claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5", "claude-opus-4-5"]
    projects = [f"/home/dev/src/project-{n:02d}" for n in range(40)]
    tokens = CounterMetricFamily(
        "agentwatch_tokens", "Tokens by type", labels=["project", "model", "type"]
    )
    cost = CounterMetricFamily("agentwatch_cost_usd", "Cost", labels=["project", "model"])
    for project in projects:
        for model in models:
            for kind in ("input", "output", "cache_read", "cache_creation"):
                tokens.add_metric([project, model, kind], 123456789.0)
            cost.add_metric([project, model], 12.345)
    spool.write(folder, "token-ledger", 5, lambda: [tokens, cost])
    series = len(tokens.samples) + len(cost.samples)
    for name, count in (("resources", 600), ("idle-error", 300), ("footprint", 200),
                        ("release-readiness", 150), ("controller", 60)):  # fmt: skip
        family = GaugeMetricFamily(
            f"agentwatch_{name.replace('-', '_')}_value", f"{name} values",
            labels=["session", "what"],
        )  # fmt: skip
        for index in range(count):
            family.add_metric([f"session-{index // 4}", f"what-{index % 4}"], index * 1.5)
        spool.write(folder, name, 15, lambda family=family: [family])  # type: ignore[misc]
        series += count
    return series


def baseline_tree(ref: str, into: Path) -> Path:
    """The package as it is at `ref`, importable as `agentwatch` from the returned folder."""
    package = into / "agentwatch"
    package.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(package)], input=archive, check=True)
    return into


def start_exporter(spool_dir: Path, port: int, work: Path, pythonpath: Path | None) -> Any:
    config = work / f"config-{port}.yaml"
    config.write_text(f"exporter: {{listen: '127.0.0.1:{port}'}}\n")
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    code = "import agentwatch.core.http as m; print(m.__file__.rsplit('/core/', 1)[0])"
    where = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    log = (work / f"exporter-{port}.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "agentwatch.cli", "--config", str(config), "exporter",
         "--spool-dir", str(spool_dir)],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
                reply.read()
            return process, where
        except OSError:
            time.sleep(0.1)
    stop(process)
    raise SystemExit(f"the exporter ({where}) did not start; see {log.name}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


async def scrape_once(port: int) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        body = await reader.read()
        if not body.startswith(b"HTTP/1.0 200"):
            raise ConnectionError("not a 200")
        return len(body)
    finally:
        writer.close()


async def scrapers(port: int, count: int, seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    failures = {"timeouts": 0, "errors": 0}
    stop_at = time.monotonic() + seconds

    async def one() -> None:
        while time.monotonic() < stop_at:
            started = time.monotonic()
            try:
                await asyncio.wait_for(scrape_once(port), TIMEOUT)
                latencies.append(time.monotonic() - started)
            except TimeoutError:
                failures["timeouts"] += 1
            except OSError:
                failures["errors"] += 1

    await asyncio.gather(*(one() for _ in range(count)))
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else 0

    return {
        "requests": len(latencies),
        **failures,
        "per_second": len(latencies) / seconds,
        "p50": pct(0.50),
        "p99": pct(0.99),
        "max": latencies[-1] if latencies else 0.0,
        "mean": statistics.fmean(latencies) if latencies else 0.0,
    }


def measure(label: str, spool_dir: Path, work: Path, pythonpath: Path | None, args: Any) -> dict:
    port = free_port()
    process, where = start_exporter(spool_dir, port, work, pythonpath)
    try:
        asyncio.run(scrapers(port, 10, 1.0))  # warm-up
        before = psutil.Process(process.pid).cpu_times()
        result = asyncio.run(scrapers(port, args.scrapers, args.seconds))
        after = psutil.Process(process.pid).cpu_times()
        cpu = (after.user + after.system) - (before.user + before.system)
        result["exporter_cpu_ms_per_request"] = 1000 * cpu / max(result["requests"], 1)
    finally:
        stop(process)
    result["code"] = where
    print(
        f"{label:>9}: {result['requests']:6d} requests, {result['per_second']:7.0f}/s, "
        f"p50 {result['p50'] * 1000:7.1f} ms, p99 {result['p99'] * 1000:7.1f} ms, "
        f"max {result['max'] * 1000:7.1f} ms, timeouts {result['timeouts']}, "
        f"errors {result['errors']}, exporter CPU "
        f"{result['exporter_cpu_ms_per_request']:.2f} ms/request  ({where})"
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapers", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=12.0, help="per exporter measured")
    parser.add_argument("--baseline", default="main", help="git ref of the exporter to compare")
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aw-bench-scrape-") as temp:
        work = Path(temp)
        spool_dir = work / "spool"
        series = write_spool(spool_dir)
        size = sum(p.stat().st_size for p in spool_dir.glob("*.prom"))
        print(
            f"spool: {series} series, {size / 1024:.0f} KiB in 6 files; {args.scrapers} "
            f"scrapers, {args.seconds:.0f} s each, timeout {TIMEOUT:.0f} s"
        )
        results = {"this": measure("this", spool_dir, work, None, args)}
        if not args.skip_baseline:
            tree = baseline_tree(args.baseline, work / "baseline")
            results["baseline"] = measure(args.baseline, spool_dir, work, tree, args)
    this = results["this"]
    verdict = "PASS" if this["p99"] < TARGET_P99 and this["timeouts"] == 0 else "FAIL"
    print(f"target: p99 < {TARGET_P99 * 1000:.0f} ms and no timeout: {verdict}")
    if "baseline" in results:
        base = results["baseline"]
        print(
            f"ratio this/{args.baseline}: p99 {this['p99'] / base['p99']:.3f}, "
            f"p50 {this['p50'] / base['p50']:.3f}, "
            f"throughput {this['per_second'] / base['per_second']:.2f}x"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"series": series, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
