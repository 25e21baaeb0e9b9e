"""Benchmark of the resources sentinel: CPU of its loop with many agent sessions alive.

    python bench/bench_resources.py [--sessions 50] [--per-session 10] [--seconds 60] [--no-tmux]

Starts SESSIONS fake agent sessions (a `claude` — a copy of /bin/sh — with PER_SESSION - 1
sleeping `node` children each), by default each in its own window of a private tmux server so
the pane attribution runs too, then runs `agentwatch sentinel resources` as a loop at its
default interval (15 s) and measures its CPU time (its own plus its reaped children's, i.e. the
tmux queries) from its first published file to SECONDS later, as % of one core. Target < 1 %.
Every process it started is killed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from generators.processes import fake_bin, kill_tree, session_script, spawn_session
from prometheus_client.parser import text_string_to_metric_families


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system + times.children_user + times.children_system


def wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)


def start_sessions(
    folder: Path, count: int, per_session: int, sock: str | None
) -> list[subprocess.Popen]:
    bindir = folder / "bin"
    sleepers = ("node",) * (per_session - 1)
    if sock is None:
        return [spawn_session(bindir, sleepers=sleepers) for _ in range(count)]
    agent = fake_bin(bindir, "claude", "/bin/sh")
    command = f"exec {shlex.quote(str(agent))} -c {shlex.quote(session_script(bindir, sleepers))}"
    base = ["tmux", "-f", "/dev/null", "-S", sock]
    subprocess.run([*base, "new-session", "-d", "-s", "bench", command], check=True, timeout=10)
    for _ in range(count - 1):
        subprocess.run([*base, "new-window", "-d", "-t", "bench", command], check=True, timeout=10)
    return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--per-session", type=int, default=10, help="processes per session")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured loop time")
    parser.add_argument("--interval", type=float, default=None, help="default: the config's 15 s")
    parser.add_argument("--no-tmux", action="store_true", help="sessions outside tmux")
    args = parser.parse_args()
    use_tmux = not args.no_tmux and shutil.which("tmux") is not None
    folder = Path(tempfile.mkdtemp(prefix="aw-bench-"))
    sock = str(folder / "tmux.sock") if use_tmux else None
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    os.environ.pop("TMUX", None)
    roots: list[subprocess.Popen] = []
    sentinel: subprocess.Popen | None = None
    try:
        started = time.monotonic()
        roots = start_sessions(folder, args.sessions, args.per_session, sock)
        expected = args.sessions * args.per_session

        def ours() -> list[psutil.Process]:
            bindir = str(folder / "bin")
            found = []
            for proc in psutil.process_iter(["exe"]):
                if (proc.info["exe"] or "").startswith(bindir):
                    found.append(proc)
            return found

        wait_for(lambda: len(ours()) >= expected, 60, f"{expected} processes did not start")
        print(
            f"started {args.sessions} sessions × {args.per_session} processes"
            f"{' in tmux' if use_tmux else ''} in {time.monotonic() - started:.1f} s; "
            f"{len(psutil.pids())} processes on the host"
        )
        spool_dir, state_dir = folder / "spool", folder / "state"
        config = folder / "config.yaml"
        lines = [f"agents: {{tmux_sockets: [{sock}]}}"] if sock else []
        lines += ["sentinels:", "  resources:"]
        if args.interval:
            lines.append(f"    interval: {args.interval}")
        config.write_text("\n".join(lines) + "\n")
        command = [sys.executable, "-m", "agentwatch.cli", "--config", str(config)]
        command += ["sentinel", "resources", "--spool-dir", str(spool_dir)]
        command += ["--state-dir", str(state_dir)]
        sentinel = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)
        spool_file = spool_dir / "resources.prom"
        wait_for(spool_file.exists, 60, "the sentinel wrote no file")
        handle = psutil.Process(sentinel.pid)
        cpu0, wall0 = cpu_seconds(handle), time.monotonic()
        writes, last_mtime = 0, spool_file.stat().st_mtime_ns
        while time.monotonic() - wall0 < args.seconds:  # count the cycles in the window
            time.sleep(0.2)
            mtime = spool_file.stat().st_mtime_ns
            writes, last_mtime = writes + (mtime != last_mtime), mtime
        cpu1, wall1 = cpu_seconds(handle), time.monotonic()
        values = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(spool_file.read_text())
            for sample in family.samples
        }
        sessions = values.get(("agentwatch_agent_sessions", (("agent", "claude"),)), 0)
        sizes = [
            value
            for (name, _labels), value in values.items()
            if name == "agentwatch_agent_session_processes"
        ]
        scan = values.get(("agentwatch_resources_scan_duration_seconds", ()), 0.0)
        mine = sum(1 for size in sizes if size == args.per_session)
        percent = 100.0 * (cpu1 - cpu0) / (wall1 - wall0)
        interval = args.interval or 15.0
        cycles = max(1, writes)
        print(
            f"sentinel reports {sessions:.0f} claude sessions, {mine} of them with "
            f"{args.per_session} processes; last scan {scan * 1000:.0f} ms wall"
        )
        print(
            f"resources sentinel CPU: {percent:.3f} % of one core over {wall1 - wall0:.0f} s "
            f"at a {interval:g} s interval ({writes} cycles, "
            f"≈ {1000 * (cpu1 - cpu0) / cycles:.0f} ms CPU each, tmux queries included); "
            f"target < 1 %: "
            f"{'met' if percent < 1.0 else 'NOT met'}"
        )
        return 0 if percent < 1.0 else 1
    finally:
        if sentinel is not None:
            sentinel.send_signal(signal.SIGTERM)
            try:
                sentinel.wait(timeout=10)
            except subprocess.TimeoutExpired:
                sentinel.kill()
                sentinel.wait()
        for root in roots:
            kill_tree(root)
        if sock:
            subprocess.run(
                ["tmux", "-S", sock, "kill-server"], timeout=10, check=False, capture_output=True
            )
        bindir = str(folder / "bin")
        for proc in psutil.process_iter(["exe"]):
            with contextlib.suppress(psutil.Error):
                if (proc.info["exe"] or "").startswith(bindir):
                    proc.kill()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
