"""What the front page costs next to a /metrics scrape of the same spool.

Writes a busy workstation's spool with the families the page reads (token ledger: 40 projects
x 4 models, 100 recent sessions; four agents' spend; claude-sessions: 100 sessions' state
sets and the quota windows; plus 1,300 series of other sentinels), starts the real
`agentwatch exporter` on it (loopback; the stack's Prometheus, Alertmanager and controller
ports point at closed ports, so the page shows them unreachable and the background reads cost
nothing measurable), and then `--rounds` pairs (pairs.py, order alternating): rewrite the
ledger's file (as the ledger does every few seconds, so neither answer is served from a
cache), GET /; rewrite it again, GET /metrics. Prints p50/p99 latency and the exporter's CPU
per request of each, the min/median/max of the per-pair ratios and the load average. Exit 1
when the median wall ratio / : /metrics is over `--target-ratio` (1.5) or p99(/) over
`--target-p99` seconds (0.5); 2 when the exporter does not start.

No peer program: no other program renders this page (Grafana is not installed here, and a
dashboard's cost is its queries to Prometheus, not a spool read). The reference is the scrape
of the same spool by the same exporter, which Prometheus already pays every 15 s: a page that
costs at most 1.5 scrapes adds no more than a second scraper; half a second is what still
feels immediate to a person reloading it.

    .venv/bin/python bench/bench_front_page.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pairs  # bench/ is on sys.path when a bench runs as `python bench/NAME.py`
import psutil
from pairs import free_port
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from agentwatch.core import spool

ROOT = Path(__file__).resolve().parents[1]
TYPES = ("input", "output", "cache_read", "cache_creation")
MODELS = ("claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5", "claude-opus-4-5")
AGENTS = ("claude-code", "gemini", "codex", "opencode")
STATES = ("working", "waiting_for_permission", "waiting_for_input", "idle", "compacting")
STATES += ("ended", "failed")
SESSIONS = 100


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
    raise pairs.SetupError(f"the exporter did not start; see {log.name}")


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
    parser.add_argument("--rounds", type=int, default=200, help="pairs of / and /metrics")
    parser.add_argument("--target-ratio", type=float, default=1.5)
    parser.add_argument("--target-p99", type=float, default=0.5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "front_page.json")
    args = parser.parse_args()
    return pairs.main_guard(lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
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
        size: dict[str, int] = {}
        counter = iter(range(1 << 30))

        def side(path: str):  # type: ignore[no-untyped-def]
            def run() -> pairs.Sample:
                value = next(counter)
                spool.write(folder, "token-ledger", 5, lambda v=value: ledger(1e6 + v))
                before = exporter.cpu_times()
                started = time.perf_counter()
                size[path] = get(port, path)
                wall = time.perf_counter() - started
                after = exporter.cpu_times()
                cpu = (after.user - before.user) + (after.system - before.system)
                return pairs.Sample(wall, cpu, exporter.memory_info().rss / (1 << 20))

            return run

        try:
            for path in ("/metrics", "/"):  # warm-up: imports, first parse
                get(port, path)
            result = pairs.run_pairs(("/", side("/")), ("/metrics", side("/metrics")),
                                     args.rounds, progress=False)  # fmt: skip
        finally:
            stop(process)
    print(f"spool: {series:,} series; {args.rounds} pairs, spool rewritten before each request")
    print(f"{'path':<10} {'bytes':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'CPU ms/req':>11}")
    for path, samples in (("/metrics", result.b), ("/", result.a)):
        values = [sample.wall_s for sample in samples]
        cpu = sum(sample.cpu_s for sample in samples) / len(samples)
        print(
            f"{path:<10} {size[path]:>9,} {pct(values, 0.5) * 1e3:>8.1f} "
            f"{pct(values, 0.99) * 1e3:>8.1f} {max(values) * 1e3:>8.1f} {cpu * 1e3:>11.2f}"
        )
    print(pairs.table(result, ("wall_s", "cpu_s")))
    checks = [
        pairs.ratio_check(result, "wall_s", args.target_ratio),
        pairs.Check("p99 of / s", pct([s.wall_s for s in result.a], 0.99), args.target_p99),
    ]
    return pairs.verdict(checks, args.out, result.as_dict())


if __name__ == "__main__":
    sys.exit(main())
