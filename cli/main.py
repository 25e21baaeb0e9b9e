"""The `agentwatch` command: one entry point, one module per subcommand (this folder)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from agentwatch.cli import (
    ack,
    classify_pane,
    common,
    configuration,
    controller,
    exporter,
    hash_password,
    hook,
    install,
    prices,
    run_budget,
    sentinel,
    status,
    statusline,
    up,
)
from agentwatch.core import paths

# Commands that run from a loaded config: name -> module with add(commands) and run(args, cfg).
WITH_CONFIG = {
    "exporter": exporter,
    "sentinel": sentinel,
    "up": up,
    "status": status,
    "controller": controller,
    "ack": ack,
    "classify-pane": classify_pane,
    "run-budget": run_budget,
    "prices": prices,
}


class _Version(argparse.Action):
    """--version, with the version looked up only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from agentwatch.core import __version__

        print(f"agentwatch {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentwatch",
        description="Watch AI coding agents: sentinels measure, the exporter serves Prometheus, "
        "the controller throttles the orchestrator from the alerts.",
        epilog=f"Config file: {paths.default_config_file()} (every key optional; "
        "`agentwatch config show` prints them all).",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    parser.add_argument("--config", type=Path, help="config file to use instead of the default")
    parser.add_argument(
        "--log-level", choices=["debug", "info", "warning", "error"], help="override log_level"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (exporter, sentinel, up, status, controller, ack, run_budget, hash_password):
        module.add(commands)
    prices.add(commands)
    install.add(commands)
    configuration.add(commands)
    classify_pane.add(commands)
    hook.add(commands)
    statusline.add(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "config":
        return configuration.run(args)
    if args.command == "hash-password":
        return hash_password.run(args)
    if args.command in ("install", "uninstall"):
        return install.run(args)
    if args.command in ("hook", "statusline"):  # reached via `python -m` or main(argv)
        command = hook if args.command == "hook" else statusline
        return command.main(["--state-dir", str(args.state_dir)] if args.state_dir else [])
    cfg = common.load(args)
    if cfg is None:
        return 2
    return int(WITH_CONFIG[args.command].run(args, cfg))


if __name__ == "__main__":
    sys.exit(main())
