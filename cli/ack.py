"""`agentwatch ack ALERTNAME`: acknowledge an alert with an Alertmanager silence."""

from __future__ import annotations

import argparse

from agentwatch.cli import common, locate
from agentwatch.core import config


def add(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "ack",
        help="acknowledge an alert: silence it in Alertmanager (the controller then ignores it)",
        description="Create a silence for ALERTNAME (POST /api/v2/silences) on the first "
        "configured Alertmanager that answers; silences gossip to the other HA peers.",
    )
    parser.add_argument("alertname", metavar="ALERTNAME", help="the alert's alertname label")
    parser.add_argument(
        "--for", dest="duration", default="1h", help="how long, e.g. 30m, 1h, 2d (default 1h)"
    )
    parser.add_argument("--comment", help="why (shown in Alertmanager)")
    parser.add_argument(
        "--match",
        action="append",
        metavar="LABEL=VALUE",
        help="silence only the alerts with this label value too (repeatable)",
    )
    parser.add_argument(
        "--alertmanager",
        action="append",
        metavar="URL",
        help="Alertmanager to post to, repeatable (default: the running `agentwatch up`'s, "
        "else controller.alertmanagers and stack.alertmanager_listen)",
    )
    common.add_dirs(parser)


def run(args: argparse.Namespace, cfg: config.Config) -> int:
    from agentwatch.controller.ack import run as run_ack

    if not args.alertmanager:  # the stack's own, wherever `up` or the config put it
        _, state_dir = common.dirs(args, cfg)
        args.alertmanager = locate.find(cfg, state_dir).alertmanagers()
    return run_ack(cfg, args)
