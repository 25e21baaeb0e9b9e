"""The whole kit at rest against node_exporter: summed memory and idle CPU.

Issue 29's target: agentwatch's own processes under `agentwatch up --no-demo` (the exporter,
every sentinel, the controller and `up` itself, which serves the webhook sink; Prometheus and
Alertmanager are the peer's too, so they are left out) hold at most 120 MiB of PSS together
(shared pages counted once: PSS divides each page among the processes that map it) and use at
most 0.3 % of one core at rest. The peer is Debian's `prometheus-node-exporter` with its
default collectors, scraped every 15 s as Prometheus would (the kit's own Prometheus scrapes
it every 15 s).

`--units` measures the installed kit instead: `agentwatch install` into a scratch home, then
the command of every resident unit it wrote (the exporter, one `agentwatch-sentinel@NAME` per
looping sentinel, the controller; not the release-readiness timer's oneshot, not Prometheus or
Alertmanager), each started as its own interpreter as systemd starts it, so no pages are shared
between them. The targets are the same.

Each pair starts one side, lets it settle, samples its PSS three times over the window and its
CPU across the window (/proc, per process), stops it, then the other side (order alternating).
The kit's listeners get free ports, and a run where a child of `up` restarted is no
measurement. Exit 0 both targets met, 1 one missed, 2 a peer or agentwatch not installed (or
an unsound run).

    .venv/bin/python bench/bench_kit.py [--units] [--pairs 3] [--settle 30] [--window 60]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pairs  # bench/ is on sys.path when a bench runs as `python bench/NAME.py`
from pairs import free_port

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


def trees_of(processes: list[subprocess.Popen[bytes]]) -> list[int]:
    return [pid for process in processes for pid in tree_of(process.pid)]


def free_ports_config() -> str:
    """A config putting each of `up`'s listeners on a port free now."""
    listens = {"exporter": "listen", "controller": "listen"}
    lines = [f"{section}:\n  {key}: 127.0.0.1:{free_port()}" for section, key in listens.items()]
    lines.append("stack:\n" + "".join(f"  {key}: 127.0.0.1:{free_port()}\n" for key in
                                       ("prometheus_listen", "alertmanager_listen",
                                        "webhook_listen")).rstrip("\n"))  # fmt: skip
    lines.append(f"sentinels:\n  otel:\n    listen: 127.0.0.1:{free_port()}")
    return "\n".join(lines) + "\n"


def measure(start: Callable[[], list[subprocess.Popen[bytes]]], settle: float, window: float,
            scrape: str | None = None,
            check: Callable[[], None] | None = None) -> pairs.Sample:  # fmt: skip
    """Start a side (one or more processes, each its own session), settle, then PSS at the
    start, middle and end of the window and the CPU its processes used across it (processes
    that came and went count only while seen); `check` then says whether the run was sound
    (SetupError when not)."""
    processes = start()
    stop = threading.Event()

    def scraper() -> None:
        while scrape and not stop.wait(15):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(scrape, timeout=10).read()

    threading.Thread(target=scraper, daemon=True).start()
    try:
        time.sleep(settle)
        for process in processes:
            if process.poll() is not None:
                raise pairs.SetupError(
                    f"{' '.join(map(str, process.args))} exited {process.returncode} while settling"
                )
        pids = trees_of(processes)
        cpu_before, began = cpu_s(pids), time.monotonic()
        samples = [pss_mib(pids)]
        time.sleep(window / 2)
        samples.append(pss_mib(trees_of(processes)))
        time.sleep(window / 2)
        pids = trees_of(processes)
        samples.append(pss_mib(pids))
        spent = cpu_s(pids) - cpu_before
        span = time.monotonic() - began
        if check is not None:
            check()
    finally:
        stop.set()
        for process in processes:
            pairs.kill_group(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                pairs.kill_group(process.pid)
                process.wait(10)
    median_pss = sorted(samples)[1]
    return pairs.Sample(span, spent, median_pss,
                        extra={"pss_mib": median_pss, "cpu_pct": 100 * spent / span})  # fmt: skip


def scratch_home(folder: Path) -> tuple[Path, dict[str, str]]:
    """A fresh home (and runtime folder) and the environment a user manager would give."""
    home = Path(tempfile.mkdtemp(dir=folder))
    (home / "run").mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTWATCH_", "XDG_"))}
    return home, dict(env, HOME=str(home), XDG_RUNTIME_DIR=str(home / "run"))


def unit_commands(agentwatch: str, folder: Path) -> tuple[list[list[str]], dict[str, str]]:
    """`agentwatch install` into a scratch home (its own ports, so nothing else running here
    is reached), then the ExecStart= of each resident unit it wrote, %h and %i expanded, and
    the environment to run them in."""
    home, env = scratch_home(folder)
    config = home / ".config" / "agentwatch" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f"exporter: {{listen: '127.0.0.1:{free_port()}'}}\n"
        f"controller: {{listen: '127.0.0.1:{free_port()}', "
        f"alertmanagers: ['http://127.0.0.1:{free_port()}']}}\n"
        f"sentinels: {{otel: {{listen: '127.0.0.1:{free_port()}'}}}}\n"
    )
    units = home / "units"
    done = subprocess.run([agentwatch, "install", "--unit-dir", str(units), "--no-claude-hooks"],
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    enable = [line for line in done.stdout.splitlines() if "systemctl --user enable" in line]
    if done.returncode != 0 or not enable:
        raise pairs.SetupError(f"agentwatch install failed:\n{done.stdout}{done.stderr}")
    # Every unit the next steps enable, optional ones too (the controller), minus the stack's
    # engines and the timers (release readiness is a oneshot, not resident).
    names = {word for line in enable for word in line.split() if word.endswith(".service")}
    names -= {"agentwatch-prometheus.service", "agentwatch-alertmanager.service"}
    commands = []
    for name in sorted(names):
        template, _, instance = name.partition("@")
        source = units / (f"{template}@.service" if instance else name)
        line = next(x for x in source.read_text().splitlines() if x.startswith("ExecStart="))
        words = line.removeprefix("ExecStart=").split()
        instance = instance.removesuffix(".service")
        commands.append([w.replace("%h", str(home)).replace("%i", instance) for w in words])
    return commands, env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--units", action="store_true",
                        help="the installed units' commands, each its own interpreter, "
                        "instead of `agentwatch up`")  # fmt: skip
    parser.add_argument("--pairs", type=int, default=3, help="interleaved pairs (default 3)")
    parser.add_argument("--settle", type=float, default=30, help="seconds before measuring")
    parser.add_argument("--window", type=float, default=60, help="seconds measured (default 60)")
    args = parser.parse_args()
    agentwatch = pairs.need_executable(str(AGENTWATCH), "agentwatch", "run scripts/setup")
    node = pairs.need_executable(shutil.which("prometheus-node-exporter"), "node_exporter",
                                 "apt install prometheus-node-exporter")  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="bench-kit-"))

    homes: list[Path] = []

    def kit() -> list[subprocess.Popen[bytes]]:
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
            return [subprocess.Popen([agentwatch, "up", "--no-demo"], env=env,
                                     start_new_session=True, stdout=out,
                                     stderr=subprocess.STDOUT)]  # fmt: skip

    def kit_sound() -> None:
        said = (homes[-1] / "up.log").read_text(errors="replace")
        if "restarting" in said or "cannot listen" in said:
            raise pairs.SetupError(f"a child of `up` failed while measured: {homes[-1]}/up.log")

    def units() -> list[subprocess.Popen[bytes]]:
        commands, env = unit_commands(agentwatch, folder)
        print(f"  {len(commands)} units: " + ", ".join(" ".join(c[1:]) for c in commands),
              flush=True)  # fmt: skip
        return [subprocess.Popen(command, env=env, start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for command in commands]  # fmt: skip

    port = free_port()

    def node_exporter() -> list[subprocess.Popen[bytes]]:
        return [subprocess.Popen([node, f"--web.listen-address=127.0.0.1:{port}"],
                                 start_new_session=True, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)]  # fmt: skip

    scrape = f"http://127.0.0.1:{port}/metrics"
    side, check = (units, None) if args.units else (kit, kit_sound)
    result = pairs.run_pairs(
        ("agentwatch", lambda: measure(side, args.settle, args.window, check=check)),
        ("node_exporter", lambda: measure(node_exporter, 10, args.window, scrape)),
        args.pairs,
    )
    print(pairs.table(result, ("pss_mib", "cpu_pct")))
    ours = result.a
    what = "installed units" if args.units else "kit"
    checks = [
        pairs.Check(f"{what} PSS MiB, median of pairs",
                    pairs.spread(s.value("pss_mib") for s in ours)[1], PSS_LIMIT_MIB),
        pairs.Check(f"{what} idle CPU % of one core, median of pairs",
                    pairs.spread(s.value("cpu_pct") for s in ours)[1], CPU_LIMIT_PERCENT),
    ]  # fmt: skip
    shutil.rmtree(folder, ignore_errors=True)  # an unsound run never gets here: its logs stay
    out = ROOT / "bench" / "out" / ("kit-units.json" if args.units else "kit.json")
    return pairs.verdict(checks, out, result.as_dict())


if __name__ == "__main__":
    sys.exit(pairs.main_guard(main))
