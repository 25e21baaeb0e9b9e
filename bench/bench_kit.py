"""The whole kit at rest against node_exporter: summed memory and idle CPU.

Issue 29's target: agentwatch's own processes under `agentwatch up --no-demo` (the exporter,
every sentinel, the controller and `up` itself, which serves the webhook sink; Prometheus and
Alertmanager are the peer's too, so they are left out) hold at most 120 MiB of PSS together
(shared pages counted once: PSS divides each page among the processes that map it) and use at
most 0.3 % of one core at rest. The peer is Debian's `prometheus-node-exporter` with its
default collectors, scraped every 15 s as Prometheus would (the kit's own Prometheus scrapes
it every 15 s).

Each pair starts one side, lets it settle, samples its PSS three times over the window and its
CPU across the window (/proc, per process), stops it, then the other side (order alternating).
The kit's listeners get free ports, and a run where a child of `up` restarted is no
measurement. Exit 0 both targets met, 1 one missed, 2 a peer or agentwatch not installed (or
an unsound run).

    .venv/bin/python bench/bench_kit.py [--pairs 3] [--settle 30] [--window 60]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pairs  # bench/ is on sys.path when a bench runs as `python bench/NAME.py`

ROOT = Path(__file__).resolve().parents[1]
AGENTWATCH = ROOT / ".venv" / "bin" / "agentwatch"
PSS_LIMIT_MIB = 120.0
CPU_LIMIT_PERCENT = 0.3
LEFT_OUT = {"prometheus", "alertmanager", "prometheus-alertmanager"}  # the stack's engines


def _children(pid: int) -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for other in pairs._pids():
        stat = pairs._stat(other)
        if stat is not None:
            tree.setdefault(stat[0], []).append(other)
    return tree


def tree_of(root: int) -> list[int]:
    """root and its descendants, without the stack's Prometheus and Alertmanager."""
    tree, out, todo = _children(root), [], [root]
    while todo:
        pid = todo.pop()
        try:
            program = Path(os.readlink(f"/proc/{pid}/exe")).name
        except OSError:
            continue
        if program in LEFT_OUT:
            continue
        out.append(pid)
        todo += tree.get(pid, [])
    return out


def pss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("Pss:"))
        except (OSError, StopIteration):
            pass
    return total / 1024


def cpu_s(pids: list[int]) -> float:
    return sum(stat[1] for pid in pids if (stat := pairs._stat(pid)) is not None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_ports_config() -> str:
    """A config putting each of `up`'s listeners on a port free now."""
    listens = {"exporter": "listen", "controller": "listen"}
    lines = [f"{section}:\n  {key}: 127.0.0.1:{free_port()}" for section, key in listens.items()]
    lines.append("stack:\n" + "".join(f"  {key}: 127.0.0.1:{free_port()}\n" for key in
                                       ("prometheus_listen", "alertmanager_listen",
                                        "webhook_listen")).rstrip("\n"))  # fmt: skip
    lines.append(f"sentinels:\n  otel:\n    listen: 127.0.0.1:{free_port()}")
    return "\n".join(lines) + "\n"


def measure(start: Callable[[], subprocess.Popen[bytes]], settle: float, window: float,
            scrape: str | None = None,
            check: Callable[[], None] | None = None) -> pairs.Sample:  # fmt: skip
    """Start a side, settle, then PSS at the start, middle and end of the window and the CPU
    its processes used across it (processes that came and went count only while seen);
    `check` then says whether the run was sound (SetupError when not)."""
    process = start()
    stop = threading.Event()

    def scraper() -> None:
        while scrape and not stop.wait(15):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(scrape, timeout=10).read()

    threading.Thread(target=scraper, daemon=True).start()
    try:
        time.sleep(settle)
        if process.poll() is not None:
            raise pairs.SetupError(f"{process.args[0]} exited {process.returncode} while settling")
        pids = tree_of(process.pid)
        cpu_before, began = cpu_s(pids), time.monotonic()
        samples = [pss_mib(pids)]
        time.sleep(window / 2)
        samples.append(pss_mib(tree_of(process.pid)))
        time.sleep(window / 2)
        pids = tree_of(process.pid)
        samples.append(pss_mib(pids))
        spent = cpu_s(pids) - cpu_before
        span = time.monotonic() - began
        if check is not None:
            check()
    finally:
        stop.set()
        pairs.kill_group(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            pairs.kill_group(process.pid)
            process.wait(10)
    median_pss = sorted(samples)[1]
    return pairs.Sample(span, spent, median_pss,
                        extra={"pss_mib": median_pss, "cpu_pct": 100 * spent / span})  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=3, help="interleaved pairs (default 3)")
    parser.add_argument("--settle", type=float, default=30, help="seconds before measuring")
    parser.add_argument("--window", type=float, default=60, help="seconds measured (default 60)")
    args = parser.parse_args()
    agentwatch = pairs.need_executable(str(AGENTWATCH), "agentwatch", "run scripts/setup")
    node = pairs.need_executable(shutil.which("prometheus-node-exporter"), "node_exporter",
                                 "apt install prometheus-node-exporter")  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="bench-kit-"))

    homes: list[Path] = []

    def kit() -> subprocess.Popen[bytes]:
        home = Path(tempfile.mkdtemp(dir=folder))
        homes.append(home)
        (home / "run").mkdir(mode=0o700)
        (home / ".config" / "agentwatch").mkdir(parents=True)
        # every listener on a free port: a kit already running here (the user's own, another
        # bench) must not make this one's children fail to bind and restart while measured
        (home / ".config" / "agentwatch" / "config.yaml").write_text(free_ports_config())
        env = dict(os.environ, HOME=str(home), XDG_RUNTIME_DIR=str(home / "run"),
                   XDG_CONFIG_HOME=str(home / ".config"))  # fmt: skip
        with (home / "up.log").open("wb") as out:
            return subprocess.Popen([agentwatch, "up", "--no-demo"], env=env,
                                    start_new_session=True, stdout=out,
                                    stderr=subprocess.STDOUT)  # fmt: skip

    def kit_sound() -> None:
        said = (homes[-1] / "up.log").read_text(errors="replace")
        if "restarting" in said or "cannot listen" in said:
            raise pairs.SetupError(f"a child of `up` failed while measured: {homes[-1]}/up.log")

    port = free_port()

    def node_exporter() -> subprocess.Popen[bytes]:
        return subprocess.Popen([node, f"--web.listen-address=127.0.0.1:{port}"],
                                start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip

    scrape = f"http://127.0.0.1:{port}/metrics"
    result = pairs.run_pairs(
        ("agentwatch", lambda: measure(kit, args.settle, args.window, check=kit_sound)),
        ("node_exporter", lambda: measure(node_exporter, 10, args.window, scrape)),
        args.pairs,
    )
    print(pairs.table(result, ("pss_mib", "cpu_pct")))
    ours = result.a
    checks = [
        pairs.Check("kit PSS MiB, median of pairs",
                    pairs.spread(s.value("pss_mib") for s in ours)[1], PSS_LIMIT_MIB),
        pairs.Check("kit idle CPU % of one core, median of pairs",
                    pairs.spread(s.value("cpu_pct") for s in ours)[1], CPU_LIMIT_PERCENT),
    ]  # fmt: skip
    shutil.rmtree(folder, ignore_errors=True)  # an unsound run never gets here: its logs stay
    return pairs.verdict(checks, ROOT / "bench" / "out" / "kit.json", result.as_dict())


if __name__ == "__main__":
    sys.exit(pairs.main_guard(main))
