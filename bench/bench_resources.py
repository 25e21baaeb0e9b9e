"""The resources sentinel's loop against process-exporter, in interleaved pairs of windows.

    python bench/bench_resources.py [--sessions 50] [--per-session 10] [--seconds 60]
                                    [--pairs 3] [--no-tmux]

Starts SESSIONS fake agent sessions (a `claude` — a copy of /bin/sh — with PER_SESSION - 1
sleeping `node` children each), by default each in its own window of a private tmux server so
the pane attribution runs too. Then pairs (pairs.py, order alternating) of two windows of
SECONDS each:
- ours: `agentwatch sentinel resources` as a loop at its interval (default the config's 15 s),
  its CPU (its own plus its reaped children's, i.e. the tmux queries) from its first published
  file to SECONDS later;
- peer: Debian's prometheus-process-exporter tracking every `claude` with its children folded
  in (the same per-session sums), scraped once at start and then every interval as Prometheus
  would, its own CPU over the same length of window (/proc).
Prints each side's median (min-max), the per-pair ratios and the load average. Targets: our
CPU below 1 % of one core (median of the windows) and at most the peer's (median CPU ratio
≤ 1.0); exit 1 on a miss, 2 without process-exporter (`apt-get install
prometheus-process-exporter`, `scripts/setup --test`). Every process it started is killed at
the end.
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
import urllib.request
from pathlib import Path

import pairs  # bench/ is on sys.path when a bench runs as `python bench/NAME.py`
import psutil
from generators.processes import fake_bin, kill_tree, session_script, spawn_session
from pairs import free_port
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
EXPORTER = "/usr/bin/prometheus-process-exporter"


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


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def our_window(command: list[str], env: dict[str, str], spool_dir: Path, seconds: float,
               info: dict[str, object]) -> pairs.Sample:  # fmt: skip
    """One window of the sentinel's loop, from its first published file on."""
    shutil.rmtree(spool_dir, ignore_errors=True)
    sentinel = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)
    try:
        spool_file = spool_dir / "resources.prom"
        wait_for(spool_file.exists, 60, "the sentinel wrote no file")
        handle = psutil.Process(sentinel.pid)
        cpu0, wall0 = cpu_seconds(handle), time.monotonic()
        writes, last_mtime = 0, spool_file.stat().st_mtime_ns
        while time.monotonic() - wall0 < seconds:  # count the cycles in the window
            time.sleep(0.2)
            mtime = spool_file.stat().st_mtime_ns
            writes, last_mtime = writes + (mtime != last_mtime), mtime
        cpu1, wall1 = cpu_seconds(handle), time.monotonic()
        rss = handle.memory_info().rss / (1 << 20)
    finally:
        stop(sentinel)
    info.update(spool=spool_file.read_text(), writes=writes)
    return pairs.Sample(wall1 - wall0, cpu1 - cpu0, rss,
                        extra={"percent": 100.0 * (cpu1 - cpu0) / (wall1 - wall0)})  # fmt: skip


def peer_window(config: Path, seconds: float, interval: float) -> pairs.Sample:
    """One window of process-exporter, scraped every interval after a first (warm) scrape."""
    port = free_port()
    argv = [EXPORTER, "-web.listen-address", f"127.0.0.1:{port}", "-config.path", str(config)]
    peer = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}/metrics"

    def get() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=10) as reply:
                reply.read()
            return True
        except OSError:
            return False

    try:
        wait_for(get, 60, "process-exporter did not answer")
        cpu0, wall0 = pairs.cpu_of(peer.pid), time.monotonic()
        while time.monotonic() - wall0 < seconds:
            time.sleep(min(interval, max(0.0, seconds - (time.monotonic() - wall0))))
            if time.monotonic() - wall0 < seconds and not get():
                raise RuntimeError("a process-exporter scrape failed")
        cpu1, wall1 = pairs.cpu_of(peer.pid), time.monotonic()
        rss = pairs.rss_mib(peer.pid)
    finally:
        stop(peer)
    return pairs.Sample(wall1 - wall0, cpu1 - cpu0, rss,
                        extra={"percent": 100.0 * (cpu1 - cpu0) / (wall1 - wall0)})  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--per-session", type=int, default=10, help="processes per session")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window")
    parser.add_argument("--pairs", type=int, default=3, help="interleaved pairs (default 3)")
    parser.add_argument("--interval", type=float, default=None, help="default: the config's 15 s")
    parser.add_argument("--no-tmux", action="store_true", help="sessions outside tmux")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "resources.json")
    args = parser.parse_args()
    return pairs.main_guard(lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    hint = "apt-get install prometheus-process-exporter (scripts/setup --test)"
    pairs.need_executable(EXPORTER, "process-exporter", hint)
    use_tmux = not args.no_tmux and shutil.which("tmux") is not None
    folder = Path(tempfile.mkdtemp(prefix="aw-bench-"))
    sock = str(folder / "tmux.sock") if use_tmux else None
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    os.environ.pop("TMUX", None)
    roots: list[subprocess.Popen] = []
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
        peer_config = folder / "process-exporter.yml"
        peer_config.write_text("process_names:\n  - name: '{{.Comm}}'\n    comm: [claude]\n")
        command = [sys.executable, "-m", "agentwatch.cli", "--config", str(config)]
        command += ["sentinel", "resources", "--spool-dir", str(spool_dir)]
        command += ["--state-dir", str(state_dir)]
        interval = args.interval or 15.0
        info: dict[str, object] = {}
        result = pairs.run_pairs(
            ("resources", lambda: our_window(command, env, spool_dir, args.seconds, info)),
            ("process-exporter", lambda: peer_window(peer_config, args.seconds, interval)),
            args.pairs,
        )
        values = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(str(info["spool"]))
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
        print(
            f"sentinel reports {sessions:.0f} claude sessions, {mine} of them with "
            f"{args.per_session} processes; last scan {scan * 1000:.0f} ms wall; "
            f"{info['writes']} cycles in its last {args.seconds:g} s window at a {interval:g} s "
            f"interval (tmux queries included in its CPU)"
        )
        print(pairs.table(result, ("cpu_s", "percent", "rss_mib")))
        percent = [sample.value("percent") for sample in result.a]
        missed = f"sessions of {args.per_session} processes the sentinel did not report"
        checks = [
            pairs.median_check("resources sentinel CPU, % of one core", percent, 1.0, strict=True),
            pairs.ratio_check(result, "cpu_s", 1.0),
            pairs.Check(missed, max(0, args.sessions - mine), 0),
        ]
        return pairs.verdict(checks, args.out, result.as_dict())
    finally:
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
