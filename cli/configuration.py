"""`agentwatch config check` and `config show`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentwatch.core import config, paths, secretfiles
from agentwatch.sentinels import registry


def add(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "config",
        help="check or show the configuration",
        description="`check` validates the config file and everything it names (each problem "
        "with its key; exit 1 on a problem, warnings do not fail); `show` prints every key "
        "with its default and meaning.",
    )
    actions = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    actions.add_parser(
        "check",
        help="validate the config file; print each problem and warning with its key",
        description="Validate the config file: unknown keys, wrong types, contradictions "
        "(e.g. min_agents above max_agents, two listeners on one address) and unusable web "
        "configs are problems (exit 1); paths that do not exist and secret files others can "
        "read are warnings.",
    )
    actions.add_parser("show", help="print every key with its default, as commented YAML")


def run(args: argparse.Namespace) -> int:
    if args.config_command == "show":
        print(registry.defaults_as_yaml(), end="")
        return 0
    return check(args.config)


def check(path: Path | None) -> int:
    from agentwatch.core import webconfig

    try:
        loaded = registry.load_config(path)
    except config.ConfigError as err:
        for problem in err.problems:
            print(f"problem: {problem}", file=sys.stderr)
        return 1
    problems = []
    for section in ("exporter", "controller"):
        web_file = loaded[section]["web_config_file"]
        if web_file is not None and web_file.exists():
            try:
                webconfig.load(web_file)
            except webconfig.WebConfigError as err:
                problems.append(f"{section}.web_config_file: {err}")
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    for warning in loaded.warnings + secretfiles.audit(registry.secret_files(loaded)):
        print(f"warning: {warning}", file=sys.stderr)
    if problems:
        return 1
    where = loaded.source or f"{path or paths.default_config_file()} (absent: all defaults)"
    print(f"config OK: {where}")
    return 0
