"""The `agentwatch` command: one entry point, one module per subcommand (this folder).

A subcommand's module is imported only when it runs (or when the whole list is shown), so a
sentinel's start does not pay for every other command's imports (about 0.1 s). The command
lines of the resident commands (`agentwatch [--config FILE] exporter|controller|sentinel NAME
[--once] [--state-dir D]...`: the installed units' and a `--once` run's) are read without
argparse (`unit_args`): with gettext, locale and shutil it is 0.85 MiB of private memory in
each of nine resident processes, and 5 ms of a `--once` run's start (issue 29)."""

from __future__ import annotations

import gc
import importlib
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

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
LOG_LEVELS = ("debug", "info", "warning", "error")


def _version_action() -> type[argparse.Action]:
    import argparse

    class _Version(argparse.Action):
        """--version, with the version looked up only when asked for."""

        def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
            super().__init__(option_strings, dest, nargs=0, **kwargs)

        def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
            from agentwatch.core import __version__

            print(f"agentwatch {__version__}")
            parser.exit()

    return _Version


class _Plain(Exception):
    """A subcommand declares something `_Recorder` does not read: argparse reads its line."""


# An option as `unit_args` reads it: (dest, action, type, choices).
_Option = tuple[str, str, Any, Any]
# The top-level options `unit_args` reads (--version and --help are argparse's).
_TOP: dict[str, _Option] = {
    "--config": ("config", "store", Path, None),
    "--log-level": ("log_level", "store", None, LOG_LEVELS),
}


# What _Recorder reads of an add_argument call; anything else (nargs, required...) is _Plain.
_PLAIN = frozenset({"action", "help", "metavar", "default", "type", "choices", "dest"})


class _Recorder:
    """Stands in for argparse while a subcommand's `add()` declares its arguments, recording
    each option's default, action and type and each positional's choices, so that `unit_args`
    builds the same namespace argparse would (tests/test_unit_imports.py compares)."""

    def __init__(self) -> None:
        self.defaults: dict[str, Any] = {}
        self.positionals: list[tuple[str, Any]] = []
        self.options: dict[str, _Option] = {}

    def add_parser(self, _name: str, **_: Any) -> _Recorder:
        return self

    def add_argument(self, *names: str, **options: Any) -> None:
        action = options.get("action", "store")
        if action not in ("store", "store_true", "append") or options.keys() - _PLAIN:
            raise _Plain
        if "type" in options and "choices" in options:  # argparse converts, then checks
            raise _Plain
        if not names[0].startswith("-"):
            if "type" in options:
                raise _Plain
            self.positionals.append((options.get("dest", names[0]), options.get("choices")))
            return
        default = options.get("default", False if action == "store_true" else None)
        if isinstance(default, str):  # argparse would pass it through `type`
            raise _Plain
        name = next((n for n in names if n.startswith("--")), names[0])
        dest = options.get("dest") or name.lstrip("-").replace("-", "_")
        self.defaults[dest] = default
        for option in names:
            self.options[option] = (dest, action, options.get("type"), options.get("choices"))


def unit_args(argv: list[str]) -> SimpleNamespace | None:
    """The namespace of a resident command's line (`[--config F] [--log-level L] exporter|
    controller|sentinel NAME [its options]`: what the installed units and a `--once` run
    say), read without argparse; None for any other line, or anything in it this does not
    read exactly as argparse would (an abbreviation, a value starting with '-', --help...):
    argparse then reads it, with its checks and messages."""
    values: dict[str, Any] = {"version": None, "config": None, "log_level": None}
    at = 0
    while at < len(argv) and argv[at].startswith("-"):
        after = _option(argv, at, _TOP, values)
        if after is None:
            return None
        at = after
    if at == len(argv) or argv[at] not in RESIDENT:
        return None
    values["command"] = argv[at]
    recorder = _Recorder()
    try:
        _module(COMMANDS[argv[at]]).add(recorder)
    except _Plain:
        return None
    values.update(recorder.defaults)
    given: list[str] = []
    at += 1
    while at < len(argv):
        if not argv[at].startswith("-"):
            given.append(argv[at])
            at += 1
            continue
        after = _option(argv, at, recorder.options, values)
        if after is None:
            return None
        at = after
    if len(given) != len(recorder.positionals):
        return None
    for value, (dest, choices) in zip(given, recorder.positionals, strict=True):
        if choices is not None and value not in choices:
            return None
        values[dest] = value
    return SimpleNamespace(**values)


def _option(
    argv: list[str], at: int, options: dict[str, _Option], values: dict[str, Any]
) -> int | None:
    """Reads the option at argv[at] (`--name`, `--name VALUE` or `--name=VALUE`, only as
    declared, no abbreviation) into `values`: the index after it, or None to leave the line
    to argparse."""
    name, equals, inline = argv[at].partition("=")
    option = options.get(argv[at]) or (options.get(name) if equals else None)
    if option is None:
        return None
    dest, action, convert, choices = option
    if action == "store_true" and not equals:
        values[dest] = True
        return at + 1
    if action != "store":
        return None
    if equals:
        value, after = inline, at + 1
    elif at + 1 < len(argv) and not argv[at + 1].startswith("-"):
        value, after = argv[at + 1], at + 2
    else:
        return None
    if choices is not None and value not in choices:
        return None
    try:
        values[dest] = value if convert is None else convert(value)
    except (TypeError, ValueError):
        return None
    return after


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
    import argparse

    parser = argparse.ArgumentParser(
        prog="agentwatch",
        description="Watch AI coding agents: sentinels measure, the exporter serves Prometheus, "
        "the controller throttles the orchestrator from the alerts.",
        epilog=f"Config file: {paths.default_config_file()} (every key optional; "
        "`agentwatch config show` prints them all).",
    )
    parser.add_argument("--version", action=_version_action(), help="print the version and exit")
    parser.add_argument("--config", type=Path, help="config file to use instead of the default")
    parser.add_argument("--log-level", choices=list(LOG_LEVELS), help="override log_level")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules = [COMMANDS[only]] if only else list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        _module(name).add(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args: Any = unit_args(argv) or build_parser(command_in(argv)).parse_args(argv)
    command = args.command
    module = _module(COMMANDS[command])
    if command in ("hook", "statusline"):  # reached via `python -m` or main(argv)
        gc.enable()
        return int(module.main(["--state-dir", str(args.state_dir)] if args.state_dir else []))
    if command not in WITH_CONFIG:
        gc.enable()  # off while the command started (cli/entry.py)
        return int(module.run(args))
    from agentwatch.cli import common
    from agentwatch.core import config

    # The resident commands (the installed units) leave the YAML parser to a child.
    config.YAML_APART = command in RESIDENT and not getattr(args, "once", False)
    cfg = common.load(args)
    if cfg is None:
        return 2
    if command != "sentinel":  # a sentinel's loop turns it on when it has built (core/loop.py)
        gc.enable()
    return int(module.run(args, cfg))


if __name__ == "__main__":
    sys.exit(main())
