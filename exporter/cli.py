"""The `agentwatch` command: one entry point, a subcommand per component."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import time
from pathlib import Path

from agentwatch.exporter import __version__, config, paths
from agentwatch.exporter import log as logsetup

log = logging.getLogger("agentwatch")

# Sentinel name -> (module with run(config, spool_dir, state_dir, once), one-line purpose).
SENTINELS: dict[str, tuple[str, str]] = {
    "token-ledger": (
        "agentwatch.sentinels.token_ledger.main",
        "tokens, cost and API errors from Claude Code transcripts",
    ),
    "resources": (
        "agentwatch.sentinels.resources.main",
        "CPU, memory and processes of each agent session's whole process tree",
    ),
    "footprint": (
        "agentwatch.sentinels.footprint.main",
        "host-wide count and memory of agent-related processes by kind",
    ),
}


def _add_dirs(parser: argparse.ArgumentParser, state: bool = True) -> None:
    parser.add_argument(
        "--spool-dir", type=Path, help="folder of sentinel *.prom files (default: from config)"
    )
    if state:
        parser.add_argument(
            "--state-dir", type=Path, help="folder of durable state (default: from config)"
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentwatch",
        description="Watch AI coding agents: sentinels measure, the exporter serves Prometheus.",
        epilog=f"Config file: {paths.default_config_file()} (every key optional; "
        "`agentwatch config show` prints them all).",
    )
    parser.add_argument("--version", action="version", version=f"agentwatch {__version__}")
    parser.add_argument("--config", type=Path, help="config file to use instead of the default")
    parser.add_argument(
        "--log-level", choices=["debug", "info", "warning", "error"], help="override log_level"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    exporter = commands.add_parser(
        "exporter",
        help="serve /metrics (spool merged + sentinel health), / and /healthz",
        description="Serve the spool files merged on /metrics, a landing page on / and "
        "/healthz. Binds 127.0.0.1 unless --listen says otherwise.",
    )
    _add_dirs(exporter, state=False)
    exporter.add_argument("--listen", help="HOST:PORT to bind (default: exporter.listen)")

    sentinel = commands.add_parser(
        "sentinel",
        help="run one sentinel",
        description="Run one sentinel as a loop, or one cycle with --once. Sentinels: "
        + "; ".join(f"{name}: {purpose}" for name, (_, purpose) in SENTINELS.items()),
    )
    sentinel.add_argument("name", choices=sorted(SENTINELS), help="which sentinel")
    sentinel.add_argument(
        "--once", action="store_true", help="one cycle: write the spool file and exit 0"
    )
    _add_dirs(sentinel)

    up = commands.add_parser(
        "up",
        help="run the exporter and every enabled sentinel in the foreground",
        description="Start the exporter and every enabled sentinel as child processes, print "
        "where to look and a live status; Ctrl-C stops them all. With no transcripts on this "
        "machine (or --demo) a demo workload writes simulated Claude Code sessions.",
    )
    _add_dirs(up)
    up.add_argument("--listen", help="HOST:PORT of the exporter (default: exporter.listen)")
    up.add_argument(
        "--demo",
        action="store_true",
        help="run the demo workload even if real transcripts exist (the demo uses its own folder)",
    )
    up.add_argument("--no-demo", action="store_true", help="never start the demo workload")
    up.add_argument(
        "--for",
        dest="duration",
        type=float,
        metavar="SECONDS",
        help="stop by itself after this many seconds",
    )

    status = commands.add_parser(
        "status",
        help="show each sentinel's health from the spool (exit 1 if any is down)",
        description="Read the spool folder directly (no exporter needed) and show per "
        "sentinel: up, stale, parse errors, age of its file.",
    )
    _add_dirs(status, state=False)
    status.add_argument("--json", action="store_true", help="print JSON instead of a table")

    config_cmd = commands.add_parser("config", help="check or show the configuration")
    config_sub = config_cmd.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    config_sub.add_parser("check", help="validate the config file; print each problem with its key")
    config_sub.add_parser("show", help="print every key with its default, as commented YAML")
    return parser


def _dirs(args: argparse.Namespace, cfg: config.Config) -> tuple[Path, Path]:
    spool_dir = getattr(args, "spool_dir", None) or cfg.spool_dir
    state_dir = getattr(args, "state_dir", None) or cfg.state_dir
    return spool_dir, state_dir


def expected_sentinels(cfg: config.Config) -> list[str]:
    return [name for name in SENTINELS if cfg.sentinel(name)["enabled"]]


def _cmd_exporter(args: argparse.Namespace, cfg: config.Config) -> int:
    from agentwatch.exporter.server import SpoolCollector, serve

    spool_dir, _ = _dirs(args, cfg)
    listen = args.listen or cfg["exporter"]["listen"]
    collector = SpoolCollector(
        spool_dir,
        expected=expected_sentinels(cfg),
        stale_after_intervals=cfg["exporter"]["stale_after_intervals"],
    )
    try:
        server = serve(collector, listen)
    except OSError as err:
        log.error("cannot listen on %s: %s", listen, err)
        return 2
    log.info("serving %s on http://%s/metrics", spool_dir, listen)
    try:
        server.serve_forever(poll_interval=3600)  # woken by requests and signals, not a timer
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _cmd_sentinel(args: argparse.Namespace, cfg: config.Config) -> int:
    spool_dir, state_dir = _dirs(args, cfg)
    paths.ensure_dir(state_dir)
    paths.ensure_dir(spool_dir, mode=0o755)
    module = importlib.import_module(SENTINELS[args.name][0])
    return int(module.run(cfg, spool_dir, state_dir, args.once))


def _cmd_status(args: argparse.Namespace, cfg: config.Config) -> int:
    from agentwatch.exporter.server import SpoolCollector

    spool_dir, _ = _dirs(args, cfg)
    collector = SpoolCollector(
        spool_dir,
        expected=expected_sentinels(cfg),
        stale_after_intervals=cfg["exporter"]["stale_after_intervals"],
    )
    now = time.time()
    _, health = collector.snapshot(now)
    if args.json:
        print(json.dumps([item.as_dict(now) for item in health], indent=2))
    else:
        print(f"spool: {spool_dir}")
        for item in health:
            age = "never" if item.last_write is None else f"{now - item.last_write:.0f}s ago"
            state = (
                "up"
                if item.up
                else ("missing" if not item.present else "error" if item.error else "stale")
            )
            line = f"  {item.sentinel:<20} {state:<8} last write {age}"
            print(line + (f"  ({item.error})" if item.error else ""))
    return 0 if health and all(item.up for item in health) else 1


def _cmd_config(args: argparse.Namespace, cfg_path: Path | None) -> int:
    if args.config_command == "show":
        print(config.defaults_as_yaml(), end="")
        return 0
    path = cfg_path or paths.default_config_file()
    try:
        loaded = config.load(cfg_path)
    except config.ConfigError as err:
        for problem in err.problems:
            print(f"problem: {problem}", file=sys.stderr)
        return 1
    where = loaded.source or f"{path} (absent: all defaults)"
    print(f"config OK: {where}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "config":
        return _cmd_config(args, args.config)
    try:
        cfg = config.load(args.config)
    except config.ConfigError as err:
        for problem in err.problems:
            print(f"agentwatch: config problem: {problem}", file=sys.stderr)
        return 2
    logsetup.setup(args.log_level or cfg["log_level"])
    if args.command == "exporter":
        return _cmd_exporter(args, cfg)
    if args.command == "sentinel":
        return _cmd_sentinel(args, cfg)
    if args.command == "status":
        return _cmd_status(args, cfg)
    if args.command == "up":
        from agentwatch.exporter.up import run_up

        return run_up(args, cfg)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
