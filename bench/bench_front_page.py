"""What the front page costs next to a /metrics scrape of the same spool.

Writes a busy workstation's spool with the families the page reads (token ledger: 40 projects
x 4 models, 100 recent sessions; four agents' spend; claude-sessions: 100 sessions' state
sets and the quota windows; plus 1,300 series of other sentinels), starts the real
`agentwatch exporter` on it (loopback; the stack's Prometheus, Alertmanager and controller
ports point at closed ports, so the page shows them unreachable and the background reads cost
nothing measurable), and then, `--rounds` times, interleaved: rewrite the ledger's file (as
the ledger does every few seconds, so neither answer is served from a cache), GET /metrics;
rewrite it again, GET /. Prints p50/p99 latency and the exporter's CPU per request of each,
and the ratios. Exits 1 when p50(/) is over `--target-ratio` x p50(/metrics) (1.5) or p99(/)
over `--target-p99` seconds (0.5).

    .venv/bin/python bench/bench_front_page.py [--rounds 200]
"""

from __future__ import annotations

import argparse
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

import psutil
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from agentwatch.core import spool

TYPES = ("input", "output", "cache_read", "cache_creation")
MODELS = ("claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5", "claude-opus-4-5")
AGENTS = ("claude-code", "gemini", "codex", "opencode")
STATES = ("working", "waiting_for_permission", "waiting_for_input", "idle", "compacting")
STATES += ("ended", "failed")
SESSIONS = 100


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ledger(value: float) -> list[Metric]:
    """The token ledger's families as it writes them; `value` moves the numbers."""
    now = time.time()
    tokens = CounterMetricFamily(
        "agentwatch_tokens", "Tokens", labels=["agent", "project", "model", "type"]
    )
    cost = CounterMetricFamily("agentwatch_cost_usd", "Cost", labels=["agent", "project", "model"])
    for project in range(40):
        for model in MODELS:
            for kind in TYPES:
                tokens.add_metric(["claude-code", f"project-{project:02d}", model, kind], value)
            cost.add_metric(["claude-code", f"project-{project:02d}", model], value / 1e6)
    session_tokens = CounterMetricFamily(
        "agentwatch_session_tokens", "Tokens", labels=["agent", "project", "session", "type"]
    )
    session_cost = CounterMetricFamily(
        "agentwatch_session_cost_usd", "Cost", labels=["agent", "project", "session"]
    )
    last = GaugeMetricFamily(
        "agentwatch_session_last_activity_timestamp_seconds",
        "Last",
        labels=["agent", "project", "session"],
    )
    for index in range(SESSIONS):
        labels = ["claude-code", f"project-{index % 40:02d}", f"{index:08x}-session"]
        for kind in TYPES:
            session_tokens.add_metric([*labels, kind], value * (index + 1))
        session_cost.add_metric(labels, value * (index + 1) / 1e6)
        last.add_metric(labels, now - index * 30)
    spend = GaugeMetricFamily("agentwatch_spend_usd", "Spend", labels=["agent", "period"])
    for agent in AGENTS:
        for period in ("day", "week", "month", "run"):
            spend.add_metric([agent, period], value / 1e5)
    block = GaugeMetricFamily("agentwatch_block_tokens", "Block", value=value)
    end = GaugeMetricFamily("agentwatch_block_end_timestamp_seconds", "End", value=now + 3600)
    return [tokens, cost, session_tokens, session_cost, last, spend, block, end]


def claude_sessions() -> list[Metric]:
    now = time.time()
    state = GaugeMetricFamily(
        "agentwatch_claude_session_state", "State", labels=["session", "project", "state"]
    )
    since = GaugeMetricFamily(
        "agentwatch_claude_session_state_since_timestamp_seconds",
        "Since",
        labels=["session", "project"],
    )
    for index in range(SESSIONS):
        labels = [f"{index:08x}-session", f"project-{index % 40:02d}"]
        for name in STATES:
            state.add_metric([*labels, name], 1.0 if STATES.index(name) == index % 7 else 0.0)
        since.add_metric(labels, now - index * 60)
    used = GaugeMetricFamily("agentwatch_quota_used_ratio", "Used", labels=["window"])
    resets = GaugeMetricFamily(
        "agentwatch_quota_resets_timestamp_seconds", "Resets", labels=["window"]
    )
    for window, ratio in (("five_hour", 0.42), ("seven_day", 0.18)):
        used.add_metric([window], ratio)
        resets.add_metric([window], now + 7200)
    return [state, since, used, resets]


def others(folder: Path) -> None:
    for name, count in (("resources", 600), ("idle-error", 300), ("footprint", 200),
                        ("release-readiness", 150), ("controller", 60)):  # fmt: skip
        family = GaugeMetricFamily(
            f"agentwatch_{name.replace('-', '_')}_value", f"{name} values",
            labels=["session", "what"],
        )  # fmt: skip
        for index in range(count):
            family.add_metric([f"session-{index // 4}", f"what-{index % 4}"], index * 1.5)
        spool.write(folder, name, 15, lambda family=family: [family])  # type: ignore[misc]


def start_exporter(spool_dir: Path, work: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    config = work / "config.yaml"
    closed = {name: f"127.0.0.1:{free_port()}" for name in ("prometheus_listen", "webhook_listen")}
    alertmanager = f"127.0.0.1:{free_port()}"
    config.write_text(
        f"exporter: {{listen: '127.0.0.1:{port}'}}\n"
        f"controller: {{listen: '127.0.0.1:{free_port()}', alertmanagers: ['http://{alertmanager}']}}\n"
        f"stack: {{prometheus_listen: '{closed['prometheus_listen']}', "
        f"alertmanager_listen: '{alertmanager}', webhook_listen: '{closed['webhook_listen']}'}}\n"
    )
    log = (work / "exporter.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "agentwatch.cli", "--config", str(config), "exporter",
         "--spool-dir", str(spool_dir)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            get(port, "/healthz")
            return process, port
        except OSError:
            time.sleep(0.1)
    stop(process)
    raise SystemExit(f"the exporter did not start; see {log.name}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def get(port: int, path: str) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
        return len(reply.read())


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--target-ratio", type=float, default=1.5)
    parser.add_argument("--target-p99", type=float, default=0.5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aw-front-") as tmp:
        work = Path(tmp)
        folder = work / "spool"
        folder.mkdir()
        others(folder)
        spool.write(folder, "claude-sessions", 15, claude_sessions)
        spool.write(folder, "token-ledger", 5, lambda: ledger(1e6))
        series = sum(
            1 for f in folder.glob("*.prom") for line in f.open() if not line.startswith("#")
        )
        process, port = start_exporter(folder, work)
        exporter = psutil.Process(process.pid)
        latency: dict[str, list[float]] = {"/metrics": [], "/": []}
        cpu: dict[str, float] = {"/metrics": 0.0, "/": 0.0}
        size: dict[str, int] = {}
        try:
            for path in ("/metrics", "/"):  # warm-up: imports, first parse
                get(port, path)
            for index in range(args.rounds):
                for path in ("/metrics", "/"):
                    spool.write(folder, "token-ledger", 5, lambda v=index: ledger(1e6 + v))
                    before = exporter.cpu_times()
                    started = time.perf_counter()
                    size[path] = get(port, path)
                    latency[path].append(time.perf_counter() - started)
                    after = exporter.cpu_times()
                    cpu[path] += (after.user - before.user) + (after.system - before.system)
        finally:
            stop(process)
    print(
        f"spool: {series:,} series; {args.rounds} rounds, interleaved, spool rewritten before each"
    )
    print(f"{'path':<10} {'bytes':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'CPU ms/req':>11}")
    for path, values in latency.items():
        print(
            f"{path:<10} {size[path]:>9,} {pct(values, 0.5) * 1e3:>8.1f} "
            f"{pct(values, 0.99) * 1e3:>8.1f} {max(values) * 1e3:>8.1f} "
            f"{cpu[path] / args.rounds * 1e3:>11.2f}"
        )
    ratio = pct(latency["/"], 0.5) / pct(latency["/metrics"], 0.5)
    cpu_ratio = cpu["/"] / cpu["/metrics"] if cpu["/metrics"] else float("nan")
    spread = statistics.pstdev(latency["/"]) * 1e3
    print(f"p50(/) / p50(/metrics) = {ratio:.2f} (target <= {args.target_ratio}); ", end="")
    print(f"CPU ratio {cpu_ratio:.2f}; spread of / {spread:.1f} ms (stdev)")
    p99 = pct(latency["/"], 0.99)
    ok = ratio <= args.target_ratio and p99 <= args.target_p99
    print("PASS" if ok else f"FAIL: ratio {ratio:.2f}, p99(/) {p99 * 1e3:.0f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
