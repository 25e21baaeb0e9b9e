"""`agentwatch up`: the whole set in the foreground, for a quick start and the demo.

Each component runs as its own child process (as under systemd), supervised here: a child
that dies is reported and restarted; Ctrl-C stops them all cleanly.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentwatch.exporter import config, paths
from agentwatch.exporter.cli import expected_sentinels
from agentwatch.exporter.runtime import die_with_parent
from agentwatch.exporter.server import SpoolCollector
from agentwatch.sentinels.token_ledger import discovery

log = logging.getLogger("agentwatch.up")
STATUS_EVERY = 10.0
RESTART_DELAY = 2.0


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str]
    process: subprocess.Popen | None = None
    restarts: int = 0
    next_start: float = 0.0
    log_path: Path | None = field(default=None)

    def start(self) -> None:
        assert self.log_path is not None
        handle = self.log_path.open("ab")
        self.process = subprocess.Popen(  # no shell: argv is a list
            self.argv, env=self.env, stdout=handle, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # in the child before exec: no component outlives `up`, even a killed one
            preexec_fn=functools.partial(die_with_parent, signal.SIGTERM, os.getpid()),
        )  # fmt: skip
        handle.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()


def _have_transcripts(cfg: config.Config) -> bool:
    roots = discovery.projects_roots(configured=cfg.sentinel("token-ledger")["claude_config_dir"])
    return any(next(discovery.walk(root), None) is not None for root in roots)


def _base_argv(args: argparse.Namespace) -> list[str]:
    argv = [sys.executable, "-m", "agentwatch.exporter.cli"]
    if args.config:
        argv += ["--config", str(args.config)]
    if args.log_level:
        argv += ["--log-level", args.log_level]
    return argv


def plan(args: argparse.Namespace, cfg: config.Config, spool: Path, state: Path) -> list[Child]:
    """The children to run: exporter, enabled sentinels, and the demo when wanted."""
    base = _base_argv(args)
    env = dict(os.environ)
    listen = args.listen or cfg["exporter"]["listen"]
    demo = args.demo or (not args.no_demo and not _have_transcripts(cfg))
    children = [
        Child("exporter", [*base, "exporter", "--spool-dir", str(spool), "--listen", listen], env)
    ]
    sentinel_env = dict(env)
    if demo:
        claude_dir = state / "demo" / "claude"
        (claude_dir / "projects").mkdir(parents=True, exist_ok=True)
        sentinel_env["CLAUDE_CONFIG_DIR"] = str(claude_dir)
        children.append(Child("demo", [sys.executable, "-m", "agentwatch.exporter.demo",
                                       str(claude_dir)], env))  # fmt: skip
    for name in expected_sentinels(cfg):
        sentinel_state = state / "demo" if demo else state
        argv = [*base, "sentinel", name, "--spool-dir", str(spool),
                "--state-dir", str(sentinel_state)]  # fmt: skip
        children.append(Child(name, argv, sentinel_env))
    return children


def _status_line(collector: SpoolCollector) -> str:
    families, health = collector.snapshot()
    up = sum(1 for item in health if item.up)
    tokens = cost = 0.0
    for family in families:
        for sample in family.samples:
            if sample.name == "agentwatch_tokens_total":
                tokens += sample.value
            elif sample.name == "agentwatch_cost_usd_total":
                cost += sample.value
    down = [item.sentinel for item in health if not item.up]
    extra = f"; not up: {', '.join(down)}" if down else ""
    return (
        f"sentinels up {up}/{len(health)}; tokens counted {tokens:,.0f}; cost ${cost:,.2f}{extra}"
    )


def run_up(args: argparse.Namespace, cfg: config.Config) -> int:
    spool = args.spool_dir or cfg.spool_dir
    state = args.state_dir or cfg.state_dir
    paths.ensure_dir(state)
    paths.ensure_dir(spool, mode=0o755)
    logs = paths.ensure_dir(state / "logs")
    children = plan(args, cfg, spool, state)
    for child in children:
        child.log_path = logs / f"{child.name}.log"
        child.start()
    listen = args.listen or cfg["exporter"]["listen"]
    print(f"agentwatch is running ({', '.join(c.name for c in children)}).")
    print(f"  metrics:  http://{listen}/metrics")
    print(f"  overview: http://{listen}/")
    print(f"  spool:    {spool}")
    print(f"  state:    {state}   (logs in {logs})")
    if any(child.name == "demo" for child in children):
        print(f"  demo:     simulated sessions write to {state / 'demo' / 'claude'}")
    print("Press Ctrl-C to stop.", flush=True)

    stopping = False

    def request_stop(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    collector = SpoolCollector(
        spool,
        expected=expected_sentinels(cfg),
        stale_after_intervals=cfg["exporter"]["stale_after_intervals"],
    )
    deadline = time.monotonic() + args.duration if args.duration else None
    next_status = time.monotonic() + 3.0
    try:
        while not stopping and (deadline is None or time.monotonic() < deadline):
            now = time.monotonic()
            for child in children:
                _supervise(child, now)
            if now >= next_status:
                print(time.strftime("%H:%M:%S"), _status_line(collector), flush=True)
                next_status = now + STATUS_EVERY
            time.sleep(0.2)
    finally:
        _stop_all(children)
    print("agentwatch stopped.")
    return 0


def _supervise(child: Child, now: float) -> None:
    process = child.process
    if process is None:
        if now >= child.next_start:
            child.start()
        return
    code = process.poll()
    if code is None:
        return
    child.restarts += 1
    print(f"{child.name} exited with status {code}; restarting "
          f"(see {child.log_path})", flush=True)  # fmt: skip
    child.process = None
    child.next_start = now + RESTART_DELAY * min(child.restarts, 15)


def _stop_all(children: list[Child]) -> None:
    for child in children:
        child.stop()
    deadline = time.monotonic() + 10
    for child in children:
        if child.process is None:
            continue
        try:
            child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.process.kill()
            child.process.wait()
