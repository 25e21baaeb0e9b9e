"""`agentwatch controller`: read alerts back from Alertmanager and throttle the orchestrator."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentwatch.cli import common
from agentwatch.core import config

if TYPE_CHECKING:  # argparse itself only when the command line needs it (cli/main.py)
    import argparse


def add(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "controller",
        help="read alerts back from Alertmanager and throttle the orchestrator",
        description="Read GET /api/v2/alerts from every configured Alertmanager, turn the "
        "actionable alerts' agentwatch_action labels into one decision (concurrency, pause, "
        "breaker, stop, deferred tiers, failed tasks, nudges), push it to the orchestrator, "
        "write it to the state file, serve it on GET /throttle and write controller.prom.",
    )
    parser.add_argument(
        "--once", action="store_true", help="one read-decide-write cycle, then exit 0"
    )
    parser.add_argument(
        "--alertmanager",
        action="append",
        metavar="URL",
        help="Alertmanager to read, repeat for each HA peer (default: controller.alertmanagers)",
    )
    parser.add_argument(
        "--state-file", type=Path, help="decision JSON (default: controller.state_file)"
    )
    parser.add_argument("--listen", help="HOST:PORT of /throttle (default: controller.listen)")
    common.add_dirs(parser)


def run(args: argparse.Namespace, cfg: config.Config) -> int:
    from agentwatch.controller.main import run as run_controller

    return run_controller(cfg, args)
