"""CPU of the otel sentinel's receiver per OTLP request and per Claude Code session, measured
on the whole `agentwatch sentinel otel` process (every thread: intake, workers, the loop that
classifies, reconciles and rewrites the spool) with psutil.

The requests are the bodies the real Claude Code 2.1.328 sent (tests/fixtures/otel: metrics
and logs, JSON and protobuf). (a) per request: rounds of `--requests` posts of those bodies
with one session id, CPU of the process per request. (b) per session: rounds of `--sessions`
sessions, each the four requests of one `claude -p` run under its own session id (what a
headless orchestrator's stream of short runs looks like), CPU per session including the
classification cycles that follow. Rounds of (a) and (b) alternate, and each figure is
printed as median and spread with the load average before and after.

No peer: no other OTLP receiver is installed here (scripts/setup installs no OpenTelemetry
Collector), and Prometheus' own OTLP endpoint takes metrics only, not the log events (api
requests and errors) a session's work is counted from; so the targets are absolute.

Targets (exit 1 when a median misses, 2 when the sentinel cannot start): 2 ms CPU per request
and 10 ms per session. Claude Code sends one metrics request per session each export interval
(60 s by default) and a logs request every 5 s while events come, so 20 busy sessions make
about 5 requests a second: at 2 ms that is 1 % of a core. An orchestrator starting a short
headless run every second costs 10 ms a second at the session target, again 1 % of a core.

    .venv/bin/python bench/bench_otel.py [--rounds 7] [--requests 400] [--sessions 100]
"""

from __future__ import annotations

import argparse
import http.client
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pairs  # bench/ is on sys.path when a bench runs as `python bench/NAME.py`
import psutil
from pairs import free_port

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "otel"
TARGET_REQUEST = 0.002
TARGET_SESSION = 0.010
BODIES = (  # (fixture, path, content type, the session id it holds)
    ("claude-2.1.328-metrics.json", "/v1/metrics", "application/json",
     "f7ab2a09-3e20-44fc-834d-24a88b9362db"),
    ("claude-2.1.328-logs-api-request.json", "/v1/logs", "application/json",
     "f7ab2a09-3e20-44fc-834d-24a88b9362db"),
    ("claude-2.1.328-logs-api-error-529.pb", "/v1/logs", "application/x-protobuf",
     "880a4b2d-6d55-451b-b782-0be2238769d4"),
    ("claude-2.1.328-metrics-session.pb", "/v1/metrics", "application/x-protobuf",
     "880a4b2d-6d55-451b-b782-0be2238769d4"),
)  # fmt: skip


def session_bodies(session: str) -> list[tuple[str, str, bytes]]:
    """The four requests of one run, under `session` (same length: protobuf stays valid)."""
    found = []
    for name, path, kind, original in BODIES:
        body = (FIXTURES / name).read_bytes().replace(original.encode(), session.encode())
        found.append((path, kind, body))
    return found


def post(port: int, path: str, kind: str, body: bytes) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", path, body, {"Content-Type": kind})
        reply = connection.getresponse()
        reply.read()
        if reply.status != 200:
            raise RuntimeError(f"{path}: HTTP {reply.status}")
    finally:
        connection.close()


def cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def wait_listening(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise pairs.SetupError(f"the sentinel exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise pairs.SetupError("the sentinel did not listen within 60 s")


def settle(process: psutil.Process, quiet: float = 0.3) -> None:
    """Wait until the process burns no CPU for `quiet` seconds (its cycles after a burst)."""
    last = cpu(process)
    while True:
        time.sleep(quiet)
        now = cpu(process)
        if now - last < 0.002:
            return
        last = now


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--agentwatch", default=str(Path(sys.executable).parent / "agentwatch"))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "otel.json")
    args = parser.parse_args()
    return pairs.main_guard(lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    agentwatch = pairs.need_executable(args.agentwatch, "agentwatch", "pip install -e .")
    before_load = pairs.load()
    port = free_port()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        config = folder / "config.yaml"
        # grace 1 s and interval 1 s: every session is classified within the round
        config.write_text(
            f"sentinels:\n  otel:\n    listen: 127.0.0.1:{port}\n    grace: 1\n    interval: 1\n"
        )
        spool, state = str(folder / "spool"), str(folder / "state")
        argv = [agentwatch, "--config", str(config), "sentinel", "otel",
                "--spool-dir", spool, "--state-dir", state]  # fmt: skip
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 env={"PATH": "/usr/bin:/bin", "HOME": scratch,
                                      "CLAUDE_CONFIG_DIR": str(folder / "claude")})  # fmt: skip
        try:
            wait_listening(port, child)
            process = psutil.Process(child.pid)
            one = session_bodies(str(uuid.uuid4()))
            for path, kind, body in one:  # warm up: imports, first session
                post(port, path, kind, body)
            settle(process)
            per_request: list[float] = []
            per_session: list[float] = []
            for _ in range(args.rounds):
                before = cpu(process)
                for index in range(args.requests):
                    path, kind, body = one[index % len(one)]
                    post(port, path, kind, body)
                settle(process)
                per_request.append((cpu(process) - before) / args.requests)
                runs = [session_bodies(str(uuid.uuid4())) for _ in range(args.sessions)]
                before = cpu(process)
                for run in runs:
                    for path, kind, body in run:
                        post(port, path, kind, body)
                time.sleep(1.5)  # past the grace: the classification cycles count too
                settle(process)
                per_session.append((cpu(process) - before) / args.sessions)
        finally:
            child.terminate()
            child.wait(timeout=30)
    print(f"otel receiver, whole process, {args.rounds} rounds; "
          f"{pairs.load_line(before_load, pairs.load())}")  # fmt: skip
    print(pairs.spread_line(f"  CPU per request ({args.requests} a round)", per_request, "ms",
                            1000))  # fmt: skip
    print(pairs.spread_line(f"  CPU per session ({args.sessions} a round, 4 requests each)",
                            per_session, "ms", 1000))  # fmt: skip
    checks = [
        pairs.median_check("CPU per request, s", per_request, TARGET_REQUEST),
        pairs.median_check("CPU per session, s", per_session, TARGET_SESSION),
    ]
    data = {"per_request_s": per_request, "per_session_s": per_session}
    return pairs.verdict(checks, args.out, data)


if __name__ == "__main__":
    sys.exit(main())
