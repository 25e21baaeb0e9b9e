"""The `agentwatch` command: one entry point, one module per subcommand (this folder).

A subcommand's module is imported only when it runs (or when the whole list is shown), so a
sentinel's start does not pay for every other command's imports (about 0.1 s)."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from agentwatch.core import paths

# Every subcommand -> the module (of this folder) with add(commands) and run(...), in the
# order `--help` lists them.
COMMANDS = {
    "exporter": "exporter",
    "sentinel": "sentinel",
    "up": "up",
    "status": "status",
    "controller": "controller",
    "ack": "ack",
    "run-budget": "run_budget",
    "hash-password": "hash_password",
    "prices": "prices",
    "report": "report",
    "install": "install",
    "uninstall": "install",
    "config": "configuration",
    "classify-pane": "classify_pane",
    "hook": "hook",
    "statusline": "statusline",
    "mcp": "mcp_server",
}
# Commands that run from a loaded config (run(args, cfg)); the others run(args) alone.
WITH_CONFIG = {
    "exporter", "sentinel", "up", "status", "controller", "ack", "classify-pane",
    "run-budget", "prices", "report", "mcp",
}  # fmt: skip
# Commands that stay running (each installed unit runs one); `--once` makes one a cycle.
RESIDENT = {"exporter", "sentinel", "controller"}
_VALUED = ("--config", "--log-level")  # the top-level options that take a value


class _Version(argparse.Action):
    """--version, with the version looked up only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from agentwatch.core import __version__

        print(f"agentwatch {__version__}")
        parser.exit()


def _module(name: str) -> ModuleType:
    """A module of this folder, imported now."""
    return importlib.import_module(f"agentwatch.cli.{name}")


def command_in(argv: list[str]) -> str | None:
    """The subcommand named on this command line, if any (top-level options skipped)."""
    args = iter(argv)
    for arg in args:
        if arg in _VALUED:
            next(args, None)
        elif not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or only the subcommand `only` (the one about to run)."""
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
    modules = [COMMANDS[only]] if only else list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        _module(name).add(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(command_in(argv)).parse_args(argv)
    command = args.command
    module = _module(COMMANDS[command])
    if command in ("hook", "statusline"):  # reached via `python -m` or main(argv)
        return int(module.main(["--state-dir", str(args.state_dir)] if args.state_dir else []))
    if command not in WITH_CONFIG:
        return int(module.run(args))
    from agentwatch.cli import common
    from agentwatch.core import config

    # The resident commands (the installed units) leave the YAML parser to a child.
    config.YAML_APART = command in RESIDENT and not getattr(args, "once", False)
    cfg = common.load(args)
    if cfg is None:
        return 2
    return int(module.run(args, cfg))


if __name__ == "__main__":
    sys.exit(main())
