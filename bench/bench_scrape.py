"""Concurrent scrapers against the real exporter and node_exporter's textfile collector
serving the same spool, in interleaved rounds.

    .venv/bin/python bench/bench_scrape.py [--scrapers 50] [--requests 10] [--pairs 5]

Writes a realistic spool (token ledger, resources, idle-error, footprint, release-readiness,
controller: about 2,100 series, 180 KiB in 6 files), starts `agentwatch exporter` on it and
Debian's prometheus-node-exporter with only its textfile collector
(`--collector.disable-defaults --collector.textfile --collector.textfile.directory=SPOOL`),
both on loopback. Each round, `--scrapers` clients each GET /metrics `--requests` times back
to back with Prometheus' default 10 s timeout, against one server, then the other (order
alternating, pairs.py). Per round: p50/p99 latency, failures, the server's own CPU per request
and its RSS; then min/median/max of the per-round ratios and the load average. Exit 1 when
the median p99 ratio passes 1.0 (`--target`) or a scrape of ours failed; 2 when
node_exporter is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from pairs import (
    Check,
    Sample,
    SetupError,
    Side,
    cpu_of,
    free_port,
    main_guard,
    need_executable,
    ratio_check,
    rss_mib,
    run_pairs,
    table,
    verdict,
)
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily

from agentwatch.core import spool

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 10.0  # Prometheus' default scrape_timeout
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"


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


# baseline_tree and start_exporter: shared with bench_auth.py and bench_scrape_flight.py
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


def wait_up(port: int, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SetupError(f"{what} exited {process.returncode} at start")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
                reply.read()
            return
        except OSError:
            time.sleep(0.1)
    stop(process)
    raise SetupError(f"{what} did not answer on 127.0.0.1:{port} within 60 s")


def start(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip


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


async def scrapers(port: int, count: int, requests: int) -> dict[str, Any]:
    """`count` clients, each doing `requests` GETs back to back under the 10 s timeout."""
    latencies: list[float] = []
    failures = {"timeouts": 0, "errors": 0}

    async def one() -> None:
        for _ in range(requests):
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
        return latencies[min(len(latencies) - 1, round(p * (len(latencies) - 1)))]

    if not latencies:
        return {"answered": 0, **failures, "p50": TIMEOUT, "p99": TIMEOUT}
    return {"answered": len(latencies), **failures, "p50": pct(0.50), "p99": pct(0.99)}


def server_side(port: int, pid: int, args: argparse.Namespace) -> Side:
    """One round of the scrapers against a running server: p50/p99, failures, and the
    server's own CPU per request and RSS (from /proc)."""

    def run() -> Sample:
        before = cpu_of(pid)
        started = time.perf_counter()
        found = asyncio.run(scrapers(port, args.scrapers, args.requests))
        wall = time.perf_counter() - started
        cpu = (cpu_of(pid) - before) / max(found["answered"], 1)
        extra = {"p99_s": found["p99"], "p50_s": found["p50"],
                 "failed": float(found["timeouts"] + found["errors"])}  # fmt: skip
        return Sample(wall, cpu, rss_mib(pid), extra=extra)

    return run


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scrapers", type=int, default=50, help="concurrent clients (50)")
    parser.add_argument("--requests", type=int, default=10, help="GETs per client a round (10)")
    parser.add_argument("--pairs", type=int, default=5, help="interleaved rounds of each (5)")
    parser.add_argument("--target", type=float, default=1.0, help="max p99 ratio (1.0)")
    parser.add_argument("--node-exporter", default=NODE_EXPORTER, help="the peer's binary")
    parser.add_argument(
        "--agentwatch",
        default=str(Path(sys.executable).parent / "agentwatch"),
        help="the agentwatch command (default: next to this Python)",
    )
    parser.add_argument("--out", type=Path, help="write the samples and verdict as JSON")
    args = parser.parse_args()
    return main_guard(lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    peer = need_executable(
        args.node_exporter, "node_exporter", "apt-get install prometheus-node-exporter"
    )
    agentwatch = need_executable(args.agentwatch, "agentwatch", "pip install -e .")
    with tempfile.TemporaryDirectory(prefix="aw-bench-scrape-") as temp:
        work = Path(temp)
        spool_dir = work / "spool"
        series = write_spool(spool_dir)
        size = sum(p.stat().st_size for p in spool_dir.glob("*.prom"))
        print(f"spool: {series} series, {size / 1024:.0f} KiB in 6 files; {args.scrapers} "
              f"scrapers x {args.requests} GETs a round, timeout {TIMEOUT:.0f} s")  # fmt: skip
        ours_port, peer_port = free_port(), free_port()
        config = work / "config.yaml"
        config.write_text(f"exporter: {{listen: '127.0.0.1:{ours_port}'}}\n")
        (work / "home").mkdir()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work / "home")}
        ours_cmd = [agentwatch, "--config", str(config), "exporter", "--spool-dir", str(spool_dir)]
        peer_cmd = [peer, "--collector.disable-defaults", "--collector.textfile",
                    f"--collector.textfile.directory={spool_dir}",
                    f"--web.listen-address=127.0.0.1:{peer_port}"]  # fmt: skip
        print(f"ours: {' '.join(ours_cmd)}\npeer: {' '.join(peer_cmd)}")
        ours = start(ours_cmd, work / "ours.log", env)
        theirs = start(peer_cmd, work / "peer.log")
        try:
            wait_up(ours_port, ours, "agentwatch exporter")
            wait_up(peer_port, theirs, "node_exporter")
            for port in (ours_port, peer_port):  # warm-up
                asyncio.run(scrapers(port, 5, 2))
            result = run_pairs(
                ("agentwatch exporter", server_side(ours_port, ours.pid, args)),
                ("node_exporter textfile", server_side(peer_port, theirs.pid, args)),
                args.pairs,
            )
        finally:
            stop(ours)
            stop(theirs)
    print(table(result, ("p99_s", "p50_s", "cpu_s", "rss_mib", "failed")))
    print("(cpu_s: the server's CPU per answered request; rss_mib: its resident memory)")
    failed = sum(s.extra["failed"] for s in result.a)
    checks = [
        ratio_check(result, "p99_s", args.target),
        Check("scrapes of agentwatch that timed out or failed", failed, 0),
    ]
    return verdict(checks, args.out, {"series": series, "pairs": result.as_dict()})


if __name__ == "__main__":
    sys.exit(main())
