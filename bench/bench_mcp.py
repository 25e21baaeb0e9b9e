"""Per-call latency of every `agentwatch mcp` tool on a year's history, over the real stdio pipe.

The history: the demo's corpus generator spreads `--size` of transcripts over 365 days ending
now (plus one response appended now, so a 5-hour block is active), the real token ledger reads
it with `session_ttl` of a year and `max_sessions` 1000 (every session keeps its series: the
largest spool file the session tools can meet), the recorded 2.1.328 subscription statusline
goes through `agentwatch statusline` and the claude-sessions sentinel (the official quota),
the resources sentinel counts agents, a real Alertmanager holds `--alerts` alerts (a burn per
session, the quota buckets) and `controller --once` decides from it. Then one `agentwatch mcp`
process is asked, round-robin so a busy machine slows every tool alike, each tool `--calls`
times with its spool files unchanged and `--calls` times right after every file was replaced
(as a sentinel's write does: the answer must read and parse its file again), `session_clock`
and `alerts` for a session id of the history, from the request written to its response read.
Prints min/p50/p99/max per tool, the server's start and the load average; exit 1 when a
tool's p99 passes 100 ms or a call fails, 2 when Alertmanager is missing (`scripts/setup
--test`).

No peer runs: ccusage's MCP server (@ccusage/mcp) answers usage only, by reading transcripts
per call, and is not installed here; none of the other four tools (quota, budget, decision,
alerts) has a counterpart. The 100 ms target is absolute: an answer an agent waits for inside
its turn without noticing.

    .venv/bin/python bench/bench_mcp.py [--size 256M] [--files 3000] [--calls 200] [--alerts 300]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pairs  # bench/ is on sys.path when a bench runs as `python bench/NAME.py`
import requests
import yaml
from generators import corpus
from pairs import free_port

from agentwatch.cli import mcp_server

ROOT = Path(__file__).resolve().parents[1]
STATUSLINE = ROOT / "tests" / "fixtures" / "hooks" / "statusline-subscription.json"
ALERTMANAGER = shutil.which("prometheus-alertmanager") or "/usr/bin/prometheus-alertmanager"
TARGET = 0.100
YEAR_MS = 365 * 86_400_000


def cli(*args: str, env: dict[str, str] | None = None, data: bytes | None = None) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentwatch.cli", *args],
        env={**os.environ, **(env or {})}, input=data, capture_output=True, timeout=1800,
        check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"agentwatch {' '.join(args)} failed: {done.stderr.decode()[-2000:]}")


def history(work: Path, size: int, files: int) -> tuple[Path, float]:
    """A year of transcripts ending now, one response appended now; (root, seconds)."""
    root = work / "claude"
    now_ms = time.time_ns() // 1_000_000
    started = time.monotonic()
    corpus.generate(root, size, files, seed=31, span_days=365, base_ms=now_ms - YEAR_MS)
    newest = max(corpus.transcript_files(root), key=lambda p: p.stat().st_size)
    corpus.append_response(newest, timestamp=corpus.iso_ms(now_ms))
    return root, time.monotonic() - started


def alertmanager(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    config = work / "alertmanager.yml"
    config.write_text('route:\n  receiver: "null"\nreceivers:\n  - name: "null"\n')
    web = f"127.0.0.1:{free_port()}"
    process = subprocess.Popen(
        [ALERTMANAGER, f"--config.file={config}", f"--storage.path={work / 'am'}",
         f"--web.listen-address={web}", "--cluster.listen-address=", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url, deadline = f"http://{web}", time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{url}/-/ready", timeout=1).ok:
                return process, url
        except requests.ConnectionError:
            pass
        time.sleep(0.05)
    process.kill()
    raise pairs.SetupError("alertmanager did not become ready")


def sessions_in(spool: Path) -> list[tuple[str, str]]:
    """(session, project) of every session series in the ledger's spool file."""
    from prometheus_client.parser import text_string_to_metric_families

    text = (spool / "token-ledger.prom").read_text()
    return sorted(
        {
            (s.labels["session"], s.labels["project"])
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "agentwatch_session_cost_usd_total"
        }
    )


def post_alerts(url: str, sessions: list[tuple[str, str]], count: int) -> None:
    ends = (datetime.now(UTC) + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    body: list[dict[str, Any]] = [
        {"labels": {"alertname": "AgentwatchQuotaElevated", "severity": "info",
                    "window": "five_hour", "agentwatch_action": "defer_tier",
                    "agentwatch_tier": "opus"}, "endsAt": ends},
    ]  # fmt: skip
    for session, project in (sessions * (count // max(len(sessions), 1) + 1))[: count - 1]:
        labels = {"alertname": "AgentwatchSessionTokenBurn", "severity": "warning",
                  "project": project, "session": session}  # fmt: skip
        body.append({"labels": labels, "endsAt": ends})
    requests.post(f"{url}/api/v2/alerts", json=body, timeout=30).raise_for_status()


def rewrite(spool: Path) -> None:
    """Every spool file replaced by a copy of itself (a new inode, as a sentinel's atomic
    write leaves): the server cannot answer from what it read before."""
    for path in spool.glob("*.prom"):
        fresh = path.with_name(f".{path.name}.bench")
        fresh.write_bytes(path.read_bytes())
        os.replace(fresh, path)


class Server:
    """One `agentwatch mcp` process spoken to line by line."""

    def __init__(self, config: Path, cwd: Path):
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentwatch.cli", "--config", str(config), "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd,
        )  # fmt: skip
        self.ident = 0
        self.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "0"}})  # fmt: skip
        self.start = time.perf_counter() - started
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def ask(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], float]:
        assert self.proc.stdout is not None
        self.ident += 1
        started = time.perf_counter()
        self.write({"jsonrpc": "2.0", "id": self.ident, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("agentwatch mcp closed its stdout")
            message = json.loads(line)
            if message.get("id") == self.ident:
                return message, time.perf_counter() - started

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="256M", help="transcript bytes of the year")
    parser.add_argument("--files", type=int, default=3000, help="transcript files")
    parser.add_argument("--calls", type=int, default=200, help="calls of each tool")
    parser.add_argument("--alerts", type=int, default=300, help="alerts Alertmanager holds")
    parser.add_argument("--keep", type=Path, help="work folder to use and keep")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "mcp.json")
    args = parser.parse_args(argv)
    return pairs.main_guard(lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    pairs.need_executable(ALERTMANAGER, "Alertmanager", "scripts/setup --test")
    before = pairs.load()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    work.mkdir(parents=True, exist_ok=True)
    spool, state, project = work / "spool", work / "state", work / "work"
    am, url = alertmanager(work)
    try:
        root, generated = history(work, corpus.parse_size(args.size), args.files)
        config = work / "config.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(state), "spool_dir": str(spool),
            "controller": {"alertmanagers": [url], "budget_usd": 500.0, "budget_period": "day"},
            "sentinels": {"token-ledger": {"session_ttl": 400 * 86_400.0, "max_sessions": 1000}},
        }))  # fmt: skip
        started = time.monotonic()
        cli("--config", str(config), "sentinel", "token-ledger", "--once",
            env={"CLAUDE_CONFIG_DIR": str(root)})  # fmt: skip
        backfill = time.monotonic() - started
        cli("statusline", "--state-dir", str(state), data=STATUSLINE.read_bytes())
        cli("--config", str(config), "sentinel", "claude-sessions", "--once")
        cli("--config", str(config), "sentinel", "resources", "--once")
        sessions = sessions_in(spool)
        post_alerts(url, sessions, args.alerts)
        cli("--config", str(config), "controller", "--once")
        session, name = sessions[len(sessions) // 2]
        (project / name).mkdir(parents=True, exist_ok=True)
        size = (spool / "token-ledger.prom").stat().st_size
        print(
            f"history: {args.size} over 365 days, {args.files} files, generated in "
            f"{generated:.0f} s, read by the ledger in {backfill:.0f} s; token-ledger.prom "
            f"{size / 1024:.0f} KiB with {len(sessions)} sessions; {args.alerts} alerts"
        )
        calls: dict[str, dict[str, Any]] = {
            "quota": {}, "budget": {}, "session_clock": {"session": session},
            "decision": {"tier": "opus"}, "alerts": {"session": session},
        }  # fmt: skip
        assert list(calls) == list(mcp_server.TOOLS)
        server = Server(config, project / name)
        times: dict[str, list[float]] = {
            f"{tool}{phase}": [] for phase in ("", " (new file)") for tool in calls
        }
        failed = 0
        try:
            for number in range(2 * args.calls):
                # odd rounds: every spool file replaced first, as a sentinel's write does, so
                # each answer reads and parses its file again; even rounds: files unchanged
                phase = " (new file)" if number % 2 else ""
                if phase:
                    rewrite(spool)
                for tool, arguments in calls.items():
                    answer, took = server.ask("tools/call", {"name": tool, "arguments": arguments})
                    result = answer.get("result") or {}
                    if result.get("isError") or "result" not in answer:
                        failed += 1
                        print(f"  {tool} failed: {json.dumps(answer)[:300]}", file=sys.stderr)
                    times[f"{tool}{phase}"].append(took)
        finally:
            server.close()
    finally:
        am.kill()
        am.wait()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"server start to initialize answered: {server.start * 1000:.0f} ms; "
          f"{pairs.load_line(before, pairs.load())}")  # fmt: skip
    print(f"{'tool':<25} {'min':>8} {'p50':>8} {'p99':>8} {'max':>8}   ({args.calls} calls each)")
    checks = [pairs.Check("failed calls", failed, 0)]
    for tool, values in times.items():
        p99 = statistics.quantiles(values, n=100, method="inclusive")[98]
        print(
            f"{tool:<25} {min(values) * 1000:>6.1f}ms {statistics.median(values) * 1000:>6.1f}ms "
            f"{p99 * 1000:>6.1f}ms {max(values) * 1000:>6.1f}ms"
        )
        checks.append(pairs.Check(f"{tool} p99 s", p99, TARGET))
    return pairs.verdict(checks, args.out, {"times_s": times, "start_s": server.start})


if __name__ == "__main__":
    sys.exit(main())
