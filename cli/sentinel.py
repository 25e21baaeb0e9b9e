"""`agentwatch sentinel NAME`: run one sentinel, as a loop or one cycle (`--once`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentwatch.cli import common
from agentwatch.core import config
from agentwatch.sentinels import registry

if TYPE_CHECKING:  # argparse itself only when the command line needs it (cli/main.py)
    import argparse


def add(commands: argparse._SubParsersAction) -> None:
    known = registry.sentinels()
    parser = commands.add_parser(
        "sentinel",
        help="run one sentinel",
        description="Run one sentinel as a loop, or one cycle with --once. Sentinels: "
        + "; ".join(f"{name}: {item.summary}" for name, item in known.items()),
    )
    parser.add_argument("name", choices=list(known), help="which sentinel")
    parser.add_argument(
        "--once", action="store_true", help="one cycle: write the spool file and exit 0"
    )
    common.add_dirs(parser)


def run(args: argparse.Namespace, cfg: config.Config) -> int:
    spool_dir, state_dir = common.dirs(args, cfg)
    return registry.run(args.name, cfg, spool_dir, state_dir, args.once)
