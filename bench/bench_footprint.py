"""The footprint sentinel as a whole cold process against a process-exporter scrape, in pairs.

    python bench/bench_footprint.py [--extra 2000] [--pairs 10] [--peer-flags -children=false]

Starts `--extra` processes (copies of sleep under varied names, agent CLIs, node, MCP-server
command lines, Playwright-like browser executables) and Debian's prometheus-process-exporter
on 127.0.0.1 with a config that groups the same way (regexes on comm/cmdline per kind,
`-children=false` so children are not folded into their parent's group; warmed by 3
scrapes), then runs in interleaved pairs (pairs.py):

- ours: `agentwatch sentinel footprint --once` with a fresh state folder, a whole cold
  process (interpreter, imports, the first scan with every process classified, the spool
  write): what the sentinel pays at start, and more than one cycle of its loop;
- peer: one GET /metrics of the running process-exporter, its own CPU time from /proc.

Exit 1 when the median of the per-pair CPU ratios passes 1.0 (`--target`), 2 when
process-exporter is missing. Every process the benchmark started is killed at the end.
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
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import psutil
from pairs import (
    Sample,
    Side,
    command,
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

from agentwatch.sentinels.footprint import classify
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


def exporter_side(port: int, pid: int) -> Side:
    """One scrape of the running process-exporter: its wall, and its own CPU and RSS."""

    def run() -> Sample:
        before = cpu_of(pid)
        started = time.perf_counter()
        scrape(port)
        wall = time.perf_counter() - started
        return Sample(wall, cpu_of(pid) - before, rss_mib(pid))

    return run


def groups_of(body: str) -> dict[str, float]:
    return {
        line.split('groupname="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in body.splitlines()
        if line.startswith("namedprocess_namegroup_num_procs{")
    }


def misclassified(fleet: Fleet) -> int:
    """One untimed in-process scan: our processes counted under another kind than planned."""
    checker = Scanner(classify.load(), keep_pids=True)
    checker.scan()
    return fleet.misclassified(checker.last_pids)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--extra", type=int, default=2000, help="processes to start (2000)")
    parser.add_argument("--pairs", type=int, default=10, help="interleaved pairs (10)")
    parser.add_argument(
        "--peer-flags",
        default="-children=false",
        help="process-exporter's flags besides listen and config (default -children=false)",
    )
    parser.add_argument("--target", type=float, default=TARGET, help="max CPU ratio (1.0)")
    parser.add_argument(
        "--agentwatch",
        default=str(Path(sys.executable).parent / "agentwatch"),
        help="the agentwatch command (default: next to this Python)",
    )
    parser.add_argument("--out", type=Path, help="write the samples and verdict as JSON")
    args = parser.parse_args()
    return main_guard(lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    need_executable(EXPORTER, "process-exporter", "apt-get install prometheus-process-exporter")
    agentwatch = need_executable(args.agentwatch, "agentwatch", "pip install -e .")
    work = Path(tempfile.mkdtemp(prefix="aw-bench-footprint-"))
    fleet = Fleet(work / "fleet")
    try:
        started = time.perf_counter()
        fleet.populate(args.extra)
        print(f"started {args.extra} processes in {time.perf_counter() - started:.1f} s")
        config = work / "process-exporter.yml"
        config.write_text(json.dumps(exporter_config()))  # JSON is YAML
        (work / "home").mkdir()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work / "home")}
        ours_cmd = [agentwatch, "sentinel", "footprint", "--once", "--spool-dir",
                    str(work / "spool"), "--state-dir", str(work / "state")]  # fmt: skip
        flags = args.peer_flags.split()
        with process_exporter(config, flags) as (port, process):
            for _ in range(3):  # warm-up: the first scrapes discover and match every process
                scrape(port)
            print(f"ours: {' '.join(ours_cmd)}  (a whole cold process each time)")
            print(f"peer: {EXPORTER} {' '.join(flags)}: one GET /metrics, its CPU from /proc")
            result = run_pairs(
                ("footprint --once", command(ours_cmd, env=env)),
                ("process-exporter scrape", exporter_side(port, process.pid)),
                args.pairs,
            )
            groups = groups_of(scrape(port))
        wrong = misclassified(fleet)
    finally:
        fleet.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(table(result))
    print(f"process-exporter's groups: {groups}")
    print(f"our processes counted under another kind than planned: {wrong}")
    check = ratio_check(result, "cpu_s", args.target)
    return verdict([check], args.out, {"extra": args.extra, "pairs": result.as_dict()})


if __name__ == "__main__":
    sys.exit(main())
