"""Benchmark of the footprint scan against Debian's prometheus-process-exporter, same run.

    python bench/bench_footprint.py [--extra 2000] [--scans 50] [--scrapes 20]

Starts `--extra` processes (copies of sleep under varied names, agent CLIs, node, MCP-server
command lines, Playwright-like browser executables), then measures in the same run:

- agentwatch: CPU time (time.process_time, in this process) per footprint scan, warm (the
  classification cache filled by a first scan, as in the loop), plus the full cycle (scan,
  families, spool render and write), and the cold first scan (what `--once` pays);
- process-exporter: started on 127.0.0.1 with a config that groups the same way (regexes on
  comm/cmdline per kind, `-children=false` so children are not folded into their parent's
  group), scraped `--scrapes` times after warm-up; its CPU time delta (psutil) per scrape.
  Once with Debian's defaults (threads and smaps on), once lean (`-threads=false
  -gather-smaps=false`), once with `-recheck` (re-matches every scrape, as we do).

Prints both, and the ratio agentwatch / process-exporter (target <= 1.0). Every process the
benchmark started is killed at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import psutil

from agentwatch.core import spool
from agentwatch.sentinels.footprint import classify
from agentwatch.sentinels.footprint.metrics import State, families
from agentwatch.sentinels.footprint.scan import Scanner

EXPORTER = "/usr/bin/prometheus-process-exporter"
TARGET = 1.0

SHIPPED = json.loads(
    (resources.files("agentwatch.sentinels.footprint") / "signatures.json").read_text()
)


def comms(signature_id: str) -> list[str]:
    """The literal names of a shipped signature's comm alternation (process-exporter's comm
    matcher takes exact names, not regexes)."""
    rule = next(r for r in SHIPPED["signatures"] if r["id"] == signature_id)
    return [name for name in rule["comm"].split("|") if re.fullmatch(r"[\w. :-]+", name)]


AGENT_COMMS = comms("agent-by-name")
IGNORE_COMMS = comms("viewers-and-tools")
LAUNCHERS = [*comms("mcp-by-launcher"), "python", "python3", "python3.11", "python3.12"]
BROWSER_COMMS = comms("browser-automated-chrome")
ELECTRON_COMMS = ["electron", "code", "code-insiders", "cursor", "windsurf", "slack", "discord"]
NODE_COMMS = comms("other-node-by-comm")


def exporter_config() -> dict:
    """The shipped signatures, expressed in process-exporter's matchers (first match wins,
    comm is an exact-name list, cmdline RE2 regexes that must all match)."""
    return {
        "process_names": [
            {"name": "ignore", "comm": IGNORE_COMMS},
            {"name": "mcp_server", "comm": AGENT_COMMS, "cmdline": [r"\smcp(-server|\s+serve)\b"]},
            {"name": "agent_cli", "comm": AGENT_COMMS},
            {"name": "agent_cli", "cmdline": [r"/claude/versions/[^/ ]+( |$)"]},
            {
                "name": "agent_cli",
                "comm": ["node", "nodejs", "bun", "deno"],
                "cmdline": [
                    r"^\S+((\s+-\S+)*\s+\S*(@anthropic-ai/claude-code|@openai/codex|"
                    r"@google/gemini-cli|@qwen-code/qwen-code|@sourcegraph/amp|opencode-ai)/|"
                    r"(\s+-\S+)*\s+(\S*/)?(claude|codex|gemini|qwen|amp|opencode)(\s|$))"
                ],
            },
            {
                "name": "agent_cli",
                "comm": ["python", "python3", "python3.11", "python3.12"],
                "cmdline": [r"^\S+(\s+-\S+)*\s+(-m\s+aider(\.main)?|\S*/aider)(\s|$)"],
            },
            {"name": "mcp_server", "cmdline": [r"^(\S*/)?(\S*[-_])?mcp([-_]\S*)?( |$)"]},
            {
                "name": "mcp_server",
                "comm": LAUNCHERS,
                "cmdline": [
                    r"(?i)(@modelcontextprotocol/|@playwright/mcp|mcp-remote|mcp-stdio-entry|"
                    r"fastmcp|(^|[\s/@._-])mcp([-_/@.]\S|\s|$))"
                ],
            },
            {
                "name": "browser",
                "cmdline": [r"^\S*(/ms-playwright/|/\.cache/puppeteer/|chrome-headless-shell)"],
            },
            {
                "name": "browser",
                "comm": BROWSER_COMMS,
                "cmdline": [
                    r"\s--(headless|remote-debugging-pipe|enable-automation)\b|"
                    r"\s--user-data-dir=\S*(playwright|puppeteer)"
                ],
            },
            {"name": "electron", "comm": ELECTRON_COMMS},
            {"name": "electron", "cmdline": [r"\s--type=(zygote|renderer|gpu-process|utility)\b"]},
            {"name": "other_node", "comm": NODE_COMMS},
        ]
    }


class Fleet:
    """The extra processes: started in their own process groups, all killed at the end."""

    def __init__(self, root: Path):
        self.root = root
        self.processes: list[subprocess.Popen] = []
        self.expected: dict[int, str | None] = {}  # pid -> the kind it must be counted as
        self.read_fd, self.write_fd = os.pipe()  # never written: scripts block reading it

    def copy(self, source: str, relative: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            shutil.copy2(source, path)
        return path

    def script(self, relative: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("read _\n")
        return path

    def start(self, argv: list[str], executable: Path, kind: str | None) -> None:
        process = subprocess.Popen(
            argv,
            executable=str(executable),
            stdin=self.read_fd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.processes.append(process)
        self.expected[process.pid] = kind

    def populate(self, count: int) -> None:
        """Mostly neutral sleepers with varied names, plus each kind the signatures know."""
        sleep, dash = shutil.which("sleep") or "/bin/sleep", "/bin/dash"
        node_sh = self.copy(dash, "bin/node")
        chrome = self.copy(dash, "ms-playwright/chromium-1/chrome-linux/chrome")
        for index in range(count):
            slot = index % 20
            if slot < 2:
                name = AGENT_COMMS[index % 3]
                binary = self.copy(sleep, f"bin/{name}")
                self.start([str(binary), "3600"], binary, "agent_cli")
            elif slot < 4:
                package = f"server-{index % 7}"
                js = self.script(f"lib/node_modules/@modelcontextprotocol/{package}/dist/index.js")
                self.start(
                    [str(node_sh), str(js), "--root", f"/srv/{index}"], node_sh, "mcp_server"
                )
            elif slot < 6:
                js = self.script(f"app{index % 11}/server.js")
                self.start([str(node_sh), str(js)], node_sh, "other_node")
            elif slot == 6:
                profile = f"--user-data-dir=/tmp/playwright_chromiumdev_profile-{index}"
                flags = ["--headless", "--remote-debugging-pipe", profile, "--no-sandbox"]
                page = self.script("ms-playwright/about-blank.sh")
                self.start([str(chrome), str(page), *flags], chrome, "browser")
            else:
                name = f"worker-{index % 50}"
                self.start([name, "3600"], self.copy(sleep, f"bin/{name}"), None)

    def misclassified(self, pids_by_kind: dict[str, list[int]]) -> int:
        """How many of our processes a scan put under another kind than planned."""
        seen = {pid: kind for kind, pids in pids_by_kind.items() for pid in pids}
        return sum(seen.get(pid) != kind for pid, kind in self.expected.items())

    def stop(self) -> None:
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGKILL)
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        self.processes.clear()
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scrape(port: int) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        body = response.read().decode()
        if response.status != 200:
            raise RuntimeError(f"process-exporter answered {response.status}")
        return body
    finally:
        connection.close()


@contextlib.contextmanager
def process_exporter(config: Path, flags: list[str]) -> Iterator[tuple[int, psutil.Process]]:
    port = free_port()
    argv = [EXPORTER, "-web.listen-address", f"127.0.0.1:{port}", "-config.path", str(config)]
    child = subprocess.Popen([*argv, *flags], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                scrape(port)
                break
            except OSError:
                if time.monotonic() > deadline or child.poll() is not None:
                    raise RuntimeError("process-exporter did not come up") from None
                time.sleep(0.1)
        yield port, psutil.Process(child.pid)
    finally:
        child.kill()
        child.wait(timeout=10)


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def measure_exporter(config: Path, flags: list[str], scrapes: int) -> dict[str, float]:
    with process_exporter(config, flags) as (port, process):
        for _ in range(3):  # warm-up: the first scrapes discover and match every process
            scrape(port)
        before = cpu_seconds(process)
        started = time.perf_counter()
        for _ in range(scrapes):
            body = scrape(port)
        wall = time.perf_counter() - started
        cpu = cpu_seconds(process) - before
        groups = {
            line.split('groupname="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
            for line in body.splitlines()
            if line.startswith("namedprocess_namegroup_num_procs{")
        }
        rss = process.memory_info().rss
    return {
        "cpu_per_scrape_s": cpu / scrapes,
        "wall_per_scrape_s": wall / scrapes,
        "rss_bytes": rss,
        "groups": groups,
    }


def measure_agentwatch(scans: int, spool_dir: Path, fleet: Fleet) -> dict[str, object]:
    classifier = classify.load()
    scanner = Scanner(classifier)
    cold_started = time.process_time()
    first = scanner.scan()
    cold = time.process_time() - cold_started
    started = time.process_time()
    for _ in range(scans):
        result = scanner.scan()
    per_scan = (time.process_time() - started) / scans
    state = State(kinds=classifier.kinds)
    started = time.process_time()
    for _ in range(scans):
        state.record(scanner.scan())
        spool.write(spool_dir, "footprint", 60.0, lambda: families(state))
    per_cycle = (time.process_time() - started) / scans
    checker = Scanner(classifier, keep_pids=True)
    checker.scan()
    return {
        "misclassified": fleet.misclassified(checker.last_pids),
        "cpu_per_scan_s": per_scan,
        "cpu_per_cycle_s": per_cycle,
        "cpu_cold_first_scan_s": cold,
        "processes_seen": result.processes_seen,
        "counts": result.counts,
        "first_counts": first.counts,
        "planned": {k: list(fleet.expected.values()).count(k) for k in classifier.kinds},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extra", type=int, default=2000, help="processes to start")
    parser.add_argument("--scans", type=int, default=50, help="footprint scans to time")
    parser.add_argument("--scrapes", type=int, default=20, help="process-exporter scrapes")
    parser.add_argument("--out", type=Path, help="write the results as JSON here too")
    args = parser.parse_args()
    if not os.access(EXPORTER, os.X_OK):
        print(f"{EXPORTER} is missing (apt-get install prometheus-process-exporter)")
        return 2
    work = Path(tempfile.mkdtemp(prefix="aw-bench-footprint-"))
    fleet = Fleet(work / "fleet")
    results: dict[str, object] = {"extra": args.extra}
    try:
        started = time.perf_counter()
        fleet.populate(args.extra)
        print(f"started {args.extra} processes in {time.perf_counter() - started:.1f} s")
        config = work / "process-exporter.yml"
        config.write_text(json.dumps(exporter_config()))  # JSON is YAML
        results["agentwatch"] = measure_agentwatch(args.scans, work / "spool", fleet)
        variants = {
            "defaults": ["-children=false"],
            "lean": ["-children=false", "-threads=false", "-gather-smaps=false"],
            "recheck": ["-children=false", "-recheck"],
        }
        for label, flags in variants.items():
            results[f"process_exporter_{label}"] = measure_exporter(config, flags, args.scrapes)
    finally:
        fleet.stop()
        shutil.rmtree(work, ignore_errors=True)
    report(results)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0


def report(results: dict) -> None:
    ours = results["agentwatch"]
    print(f"host processes seen: {ours['processes_seen']}")
    print(
        f"our processes by planned kind: {ours['planned']}; misclassified: {ours['misclassified']}"
    )
    print(f"host-wide counts (others' processes included): {ours['counts']}")
    print(f"agentwatch footprint: {ours['cpu_per_scan_s'] * 1e3:7.2f} ms CPU per scan (warm)")
    print(f"                      {ours['cpu_per_cycle_s'] * 1e3:7.2f} ms CPU per cycle (+ write)")
    print(f"                      {ours['cpu_cold_first_scan_s'] * 1e3:7.2f} ms CPU first scan")
    for label in ("defaults", "lean", "recheck"):
        peer = results[f"process_exporter_{label}"]
        ratio = ours["cpu_per_cycle_s"] / peer["cpu_per_scrape_s"]
        verdict = "ok" if ratio <= TARGET else "MISSED"
        print(
            f"process-exporter {label:8}: {peer['cpu_per_scrape_s'] * 1e3:7.2f} ms CPU per scrape, "
            f"RSS {peer['rss_bytes'] / 1e6:.0f} MB; ratio (our cycle / its scrape) "
            f"{ratio:.2f} (target <= {TARGET}) {verdict}"
        )
        print(f"    its groups: {peer['groups']}")


if __name__ == "__main__":
    sys.exit(main())
