"""The demo workload: simulated agent sessions in tmux panes, as many as the orchestrator allows.

`agentwatch up` runs this when the machine has no transcripts (or with --demo). Each session
is a `demo_agent` process in its own window of a private tmux server; one burns tokens for a
while, one stalls on an API error until it is nudged. New sessions start only while the demo
orchestrator's `max_agents` allows (none while it drains); a running one is never closed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from agentwatch.demo.claude_sessions import REAL_ROSTER, RealRole, RealSessions

log = logging.getLogger("agentwatch.demo")
SESSION = "agentwatch-demo"
TMUX_TIMEOUT = 5.0


@dataclass(frozen=True)
class Role:
    project: str
    model: str
    tokens_per_turn: int
    pace: float  # multiple of the configured seconds per turn
    burns: bool = False
    stalls: bool = False


ROSTER = (
    Role("webshop", "claude-sonnet-4-5-20250929", 3_000, 1.0),
    Role("data-pipeline", "claude-opus-4-5-20251101", 4_000, 0.5, burns=True),
    Role("docs-site", "claude-haiku-4-5-20251001", 1_500, 1.0, stalls=True),
    Role("mobile-app", "claude-sonnet-4-5-20250929", 2_500, 1.5),
    Role("infra", "claude-haiku-4-5-20251001", 1_000, 2.0),
    Role("api-gateway", "claude-sonnet-4-5-20250929", 2_000, 1.2),
)


@dataclass(frozen=True)
class Settings:
    claude_dir: Path
    socket: Path
    orchestrator_state: Path | None
    seconds_per_turn: float
    burn_seconds: float
    stall_after_turns: int
    default_agents: int = 4
    orchestrator_url: str | None = None
    claude: str | None = None  # the real Claude Code binary: real sessions instead
    otel_listen: str | None = None  # where real sessions export their telemetry (otel sentinel)


def roster(settings: Settings) -> tuple[Role | RealRole, ...]:
    return REAL_ROSTER if settings.claude else ROSTER


def desired_agents(settings: Settings) -> int:
    """How many sessions the orchestrator allows now (its state file; a default without it)."""
    if settings.orchestrator_state is None:
        return settings.default_agents
    try:
        state = json.loads(settings.orchestrator_state.read_text())
    except (OSError, ValueError):
        return settings.default_agents
    if not isinstance(state, dict):
        return settings.default_agents
    if state.get("draining") or state.get("paused"):
        return 0
    wanted = state.get("max_agents")
    if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted >= 0:
        return min(wanted, len(roster(settings)))
    return settings.default_agents


class Tmux:
    """The private tmux server of the demo (argv only, never a shell)."""

    def __init__(self, socket: Path):
        self.socket = socket

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", str(self.socket), *args],
            capture_output=True,
            text=True,
            timeout=TMUX_TIMEOUT,
            check=False,
        )

    def windows(self) -> list[str]:
        listed = self.run("list-windows", "-t", f"={SESSION}", "-F", "#{window_name}")
        return listed.stdout.split() if listed.returncode == 0 else []

    def open(self, name: str, argv: list[str]) -> None:
        """A window running argv directly (tmux execs several arguments without a shell)."""
        if self.run("has-session", "-t", f"={SESSION}").returncode != 0:
            made = self.run("new-session", "-d", "-s", SESSION, "-n", name, "-x", "160", "-y",
                            "45", *argv)  # fmt: skip
        else:
            made = self.run("new-window", "-d", "-t", f"={SESSION}:", "-n", name, *argv)
        if made.returncode != 0:
            log.warning("tmux could not open %s: %s", name, made.stderr.strip()[:200])

    def capture(self, name: str) -> str:
        shown = self.run("capture-pane", "-p", "-J", "-t", f"={SESSION}:{name}")
        return shown.stdout if shown.returncode == 0 else ""

    def send(self, name: str, text: str) -> None:
        """Type a line into a window, as a person would: the text, then Enter."""
        self.run("send-keys", "-t", f"={SESSION}:{name}", "-l", text)
        time.sleep(0.3)  # Claude Code takes a pasted burst and its Enter apart
        self.run("send-keys", "-t", f"={SESSION}:{name}", "Enter")

    def stop(self) -> None:
        """End the server and make sure no simulated session outlives it."""
        listed = self.run("list-panes", "-a", "-F", "#{pane_pid}")
        pids = [int(pid) for pid in listed.stdout.split() if pid.isdigit()]
        self.run("kill-server")  # the panes get SIGHUP
        deadline = time.monotonic() + 3.0
        while pids and time.monotonic() < deadline:
            pids = [pid for pid in pids if _alive(pid)]
            time.sleep(0.05)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def agent_argv(role: Role, settings: Settings, seed: int) -> list[str]:
    argv = [
        sys.executable, "-m", "agentwatch.demo.agent", str(settings.claude_dir),
        "--project", role.project, "--model", role.model,
        "--tokens", str(role.tokens_per_turn),
        "--every", str(settings.seconds_per_turn * role.pace), "--seed", str(seed),
    ]  # fmt: skip
    if role.burns:
        argv += ["--burn-seconds", str(settings.burn_seconds)]
    if role.stalls:
        argv += ["--stall-after", str(settings.stall_after_turns)]
    return argv


def report(settings: Settings, agents: int) -> None:
    """Tell the demo orchestrator how many agents run (what its /status then shows)."""
    if settings.orchestrator_url is None:
        return
    try:
        requests.post(f"{settings.orchestrator_url}/usage", json={"agents": agents}, timeout=1.0)
    except requests.RequestException as err:
        log.debug("demo orchestrator not reachable: %s", err)


def reconcile(
    tmux: Tmux,
    settings: Settings,
    wanted: int,
    seeds: dict[str, int],
    real: RealSessions | None = None,
) -> None:
    """Open missing roles of the roster while fewer than `wanted` run. A running session is
    never closed: a drain or a lower limit stops new ones only, as agentwatch promises of any
    orchestrator (and as Bernstein's drain does), so the demo's loops play out."""
    running = set(tmux.windows())
    report(settings, len(running))
    room = wanted - len(running)
    for index, role in enumerate(roster(settings)):
        if role.project in running:
            continue
        if room <= 0:
            break
        room -= 1
        if isinstance(role, RealRole):
            assert real is not None
            argv = real.argv(role)
        else:
            seeds[role.project] = seeds.get(role.project, index) + len(ROSTER)
            argv = agent_argv(role, settings, seeds[role.project])
        tmux.open(role.project, argv)
        log.info("demo: started session %s", role.project)


def run(settings: Settings) -> int:
    stopping = [False]

    def request_stop(*_: object) -> None:
        stopping[0] = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    settings.socket.parent.mkdir(parents=True, exist_ok=True)
    (settings.claude_dir / "projects").mkdir(parents=True, exist_ok=True)
    tmux = Tmux(settings.socket)
    seeds: dict[str, int] = {}
    real = None
    if settings.claude:
        demo_dir = settings.socket.parent
        real = RealSessions(settings.claude, settings.claude_dir, demo_dir / "work",
                            demo_dir / "served.jsonl", settings.burn_seconds,
                            settings.stall_after_turns, settings.otel_listen)  # fmt: skip
        real.start()
        log.info("demo: real Claude Code sessions against the scripted API at %s", real.api.url)
    try:
        while not stopping[0]:
            reconcile(tmux, settings, desired_agents(settings), seeds, real)
            if real is not None:
                real.drive(tmux.capture, tmux.send)
            time.sleep(1.0)
    finally:
        tmux.stop()
        if real is not None:
            real.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentwatch.demo.workload",
        description="Run simulated Claude Code sessions in tmux panes (the demo workload).",
    )
    parser.add_argument("claude_dir", type=Path, help="the demo's CLAUDE_CONFIG_DIR")
    parser.add_argument("--tmux-socket", type=Path, required=True)
    parser.add_argument("--orchestrator-state", type=Path, help="demo orchestrator state JSON")
    parser.add_argument("--orchestrator-url", help="demo orchestrator URL (agents are reported)")
    parser.add_argument("--seconds-per-turn", type=float, default=4.0)
    parser.add_argument("--burn-seconds", type=float, default=900.0)
    parser.add_argument("--stall-after", type=int, default=8)
    parser.add_argument("--agents", type=int, default=4, help="sessions without an orchestrator")
    parser.add_argument(
        "--claude", help="the real Claude Code binary: run real sessions against a scripted API"
    )
    parser.add_argument(
        "--otel-listen", help="HOST:PORT of the otel sentinel the real sessions export to"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    settings = Settings(
        args.claude_dir, args.tmux_socket, args.orchestrator_state, args.seconds_per_turn,
        args.burn_seconds, args.stall_after, args.agents, args.orchestrator_url, args.claude,
        args.otel_listen,
    )  # fmt: skip
    return run(settings)


if __name__ == "__main__":
    sys.exit(main())
