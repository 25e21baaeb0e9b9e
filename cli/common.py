"""What several commands share: the --spool-dir/--state-dir options and loading the config."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from agentwatch.core import config, log
from agentwatch.sentinels import registry

if TYPE_CHECKING:  # argparse itself only when the command line needs it (cli/main.py)
    import argparse


def add_dirs(parser: argparse.ArgumentParser, state: bool = True) -> None:
    parser.add_argument(
        "--spool-dir", type=Path, help="folder of sentinel *.prom files (default: from config)"
    )
    if state:
        parser.add_argument(
            "--state-dir", type=Path, help="folder of durable state (default: from config)"
        )


def dirs(args: argparse.Namespace, cfg: config.Config) -> tuple[Path, Path]:
    """(spool folder, state folder): the options, else the config's."""
    spool_dir = getattr(args, "spool_dir", None) or cfg.spool_dir
    state_dir = getattr(args, "state_dir", None) or cfg.state_dir
    return spool_dir, state_dir


def load(args: argparse.Namespace) -> config.Config | None:
    """The config (every sentinel's section included) with logging set up from it; None after
    printing each problem (the caller exits 2)."""
    try:
        cfg = registry.load_config(args.config)
    except config.ConfigError as err:
        for problem in err.problems:
            print(f"agentwatch: config problem: {problem}", file=sys.stderr)
        return None
    log.setup(args.log_level or cfg["log_level"])
    return cfg
