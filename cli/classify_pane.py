"""`agentwatch classify-pane`: the idle-error classifier on one captured pane, and why."""

from __future__ import annotations

import argparse
import sys

from agentwatch.core import config


def add(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "classify-pane",
        help="classify one captured pane text and print why, as JSON",
        description="Run the idle-error classifier on one captured pane (e.g. `tmux "
        "capture-pane -p -J -t %3 -S -45 > pane.txt`) and print one JSON object: state, "
        "pattern, line_from_end (1 = last non-empty line), the deciding line and the "
        "matches that were suppressed, with their reason. Uses the sentinels.idle-error "
        "settings of the config.",
    )
    parser.add_argument(
        "file", nargs="?", default="-", metavar="FILE", help="captured pane text; - for stdin"
    )
    parser.add_argument(
        "--unchanged-for",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="treat the tail as unchanged for this long (a throttle fires once settled)",
    )
    parser.add_argument(
        "--now", type=float, metavar="UNIX_TIME", help="the capture's time (for reset times)"
    )


def run(args: argparse.Namespace, cfg: config.Config) -> int:
    from agentwatch.sentinels.idle_error import explain
    from agentwatch.sentinels.idle_error.main import settings_of

    if args.unchanged_for < 0:
        print("agentwatch classify-pane: --unchanged-for must not be negative", file=sys.stderr)
        return 2
    return explain.run(args.file, settings_of(cfg), args.unchanged_for, args.now)
