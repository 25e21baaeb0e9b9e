"""The `agentwatch` command: one entry point, a subcommand per component."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agentwatch.exporter import __version__, config, paths
from agentwatch.exporter import log as logsetup

if TYPE_CHECKING:
    from agentwatch.exporter.server import SpoolCollector

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
    "release-readiness": (
        "agentwatch.sentinels.release_readiness.main",
        "unreleased commits per repository and whether publishing is blocked",
    ),
    "idle-error": (
        "agentwatch.sentinels.idle_error.main",
        "the state of each agent's tmux pane: working, idle, or stalled on an error or a prompt",
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
        help="run the whole set in the foreground: exporter, sentinels, Prometheus, "
        "Alertmanager, controller (and a demo workload when there are no transcripts)",
        description="Start the exporter, every enabled sentinel, Prometheus (loading rules/), "
        "Alertmanager (routing to a local webhook receiver that prints each message) and the "
        "controller as supervised child processes, print where to look and a live status; "
        "Ctrl-C stops them all. State lives under one folder (--state-dir). With no "
        "transcripts on this machine (or --demo) a demo workload runs simulated Claude Code "
        "sessions in tmux panes (one burns tokens, one stalls on an API error) and a demo "
        "orchestrator the controller steers.",
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
        "--no-stack",
        action="store_true",
        help="no Prometheus, Alertmanager, webhook sink or controller (exporter and sentinels)",
    )
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

    controller = commands.add_parser(
        "controller",
        help="read alerts back from Alertmanager and throttle the orchestrator",
        description="Read GET /api/v2/alerts from every configured Alertmanager, turn the "
        "actionable alerts' agentwatch_action labels into one decision (concurrency, pause, "
        "breaker, stop, deferred tiers, failed tasks, nudges), push it to the orchestrator, "
        "write it to the state file, serve it on GET /throttle and write controller.prom.",
    )
    controller.add_argument(
        "--once", action="store_true", help="one read-decide-write cycle, then exit 0"
    )
    controller.add_argument(
        "--alertmanager",
        action="append",
        metavar="URL",
        help="Alertmanager to read, repeat for each HA peer (default: controller.alertmanagers)",
    )
    controller.add_argument(
        "--state-file", type=Path, help="decision JSON (default: controller.state_file)"
    )
    controller.add_argument("--listen", help="HOST:PORT of /throttle (default: controller.listen)")
    _add_dirs(controller)

    ack = commands.add_parser(
        "ack",
        help="acknowledge an alert: silence it in Alertmanager (the controller then ignores it)",
        description="Create a silence for ALERTNAME (POST /api/v2/silences) on the first "
        "configured Alertmanager that answers; silences gossip to the other HA peers.",
    )
    ack.add_argument("alertname", metavar="ALERTNAME", help="the alert's alertname label")
    ack.add_argument(
        "--for", dest="duration", default="1h", help="how long, e.g. 30m, 1h, 2d (default 1h)"
    )
    ack.add_argument("--comment", help="why (shown in Alertmanager)")
    ack.add_argument(
        "--match",
        action="append",
        metavar="LABEL=VALUE",
        help="silence only the alerts with this label value too (repeatable)",
    )
    ack.add_argument(
        "--alertmanager",
        action="append",
        metavar="URL",
        help="Alertmanager to post to, repeatable (default: controller.alertmanagers)",
    )

    hash_password = commands.add_parser(
        "hash-password",
        help="print the bcrypt hash of a password, for basic_auth_users in a web config file",
        description="Read a password (prompted twice on a terminal, else the first line of "
        "stdin) and print its bcrypt hash, as `htpasswd -nBC 10` would; the hash goes under "
        "basic_auth_users in the file that exporter.web_config_file or "
        "controller.web_config_file names.",
    )
    hash_password.add_argument(
        "--cost", type=int, default=10, choices=range(4, 16), metavar="4..15", help="bcrypt cost"
    )

    _add_install_commands(commands)

    config_cmd = commands.add_parser("config", help="check or show the configuration")
    config_sub = config_cmd.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    config_sub.add_parser("check", help="validate the config file; print each problem with its key")
    config_sub.add_parser("show", help="print every key with its default, as commented YAML")

    classify_pane = commands.add_parser(
        "classify-pane",
        help="classify one captured pane text and print why, as JSON",
        description="Run the idle-error classifier on one captured pane (e.g. `tmux "
        "capture-pane -p -J -t %3 -S -45 > pane.txt`) and print one JSON object: state, "
        "pattern, line_from_end (1 = last non-empty line), the deciding line and the "
        "matches that were suppressed, with their reason. Uses the sentinels.idle-error "
        "settings of the config.",
    )
    classify_pane.add_argument(
        "file", nargs="?", default="-", metavar="FILE", help="captured pane text; - for stdin"
    )
    classify_pane.add_argument(
        "--unchanged-for",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="treat the tail as unchanged for this long (a throttle fires once settled)",
    )
    classify_pane.add_argument(
        "--now", type=float, metavar="UNIX_TIME", help="the capture's time (for reset times)"
    )
    return parser


def _add_install_commands(commands: argparse._SubParsersAction) -> None:
    for name, summary in (
        ("install", "write systemd user units, monitoring configs and an example config"),
        ("uninstall", "remove what `agentwatch install` wrote (never your config or state)"),
    ):
        command = commands.add_parser(
            name,
            help=summary,
            description=summary + ". Prints the `systemctl --user` commands to run; a "
            "manifest in the data folder records each file, and files you changed are kept.",
        )
        command.add_argument("--dry-run", action="store_true", help="show, write nothing")
        command.add_argument(
            "--unit-dir",
            type=Path,
            help="unit folder (default: $AGENTWATCH_UNIT_DIR or ~/.config/systemd/user)",
        )
        command.add_argument(
            "--prefix",
            type=Path,
            help="data folder (default: $AGENTWATCH_PREFIX or ~/.local/share/agentwatch)",
        )
        if name == "install":
            command.add_argument(
                "--force", action="store_true", help="also replace files changed since install"
            )


def _dirs(args: argparse.Namespace, cfg: config.Config) -> tuple[Path, Path]:
    spool_dir = getattr(args, "spool_dir", None) or cfg.spool_dir
    state_dir = getattr(args, "state_dir", None) or cfg.state_dir
    return spool_dir, state_dir


def expected_sentinels(cfg: config.Config) -> list[str]:
    return [name for name in SENTINELS if cfg.sentinel(name)["enabled"]]


def spool_collector(cfg: config.Config, spool_dir: Path) -> SpoolCollector:
    """The exporter's view of the spool, as every command that reads it needs it."""
    from agentwatch.exporter.server import SpoolCollector

    return SpoolCollector(
        spool_dir,
        expected=expected_sentinels(cfg),
        stale_after_intervals=cfg["exporter"]["stale_after_intervals"],
        thresholds=cfg["thresholds"],
    )


def _cmd_exporter(args: argparse.Namespace, cfg: config.Config) -> int:
    from agentwatch.exporter.server import serve
    from agentwatch.exporter.webconfig import WebConfigError, load_for

    spool_dir, _ = _dirs(args, cfg)
    listen = args.listen or cfg["exporter"]["listen"]
    try:
        web = load_for(cfg["exporter"]["web_config_file"], "exporter")
    except WebConfigError as err:
        log.error("exporter.web_config_file: %s", err)
        return 2
    collector = spool_collector(cfg, spool_dir)
    try:
        server = serve(collector, listen, web)
    except OSError as err:
        log.error("cannot listen on %s: %s", listen, err)
        return 2
    log.info("serving %s on %s://%s/metrics", spool_dir, web.scheme if web else "http", listen)
    from agentwatch.exporter import notify

    notifier = notify.Notifier()
    notify.stop_on_sigterm(notifier)
    try:
        # Pings systemd's watchdog (if any) from the serving loop, after listing the spool.
        notify.serve_forever(server, notifier, lambda: notify.list_dir(spool_dir))
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
    spool_dir, _ = _dirs(args, cfg)
    collector = spool_collector(cfg, spool_dir)
    now = time.time()
    _, health = collector.snapshot(now)
    from agentwatch.controller import report

    decision_file = report.state_file_of(cfg)
    decision = report.read_decision(decision_file)
    if args.json:
        items = [item.as_dict(now) for item in health]
        report.attach(items, decision)
        print(json.dumps(items, indent=2))
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
        if decision is not None:
            print("\n".join(report.lines(decision, decision_file, now)))
    return 0 if health and all(item.up for item in health) else 1


def _cmd_classify_pane(args: argparse.Namespace, cfg: config.Config) -> int:
    from agentwatch.sentinels.idle_error import explain
    from agentwatch.sentinels.idle_error.main import settings_of

    if args.unchanged_for < 0:
        print("agentwatch classify-pane: --unchanged-for must not be negative", file=sys.stderr)
        return 2
    return explain.run(args.file, settings_of(cfg), args.unchanged_for, args.now)


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
    from agentwatch.exporter import secretfiles, webconfig

    problems = []
    for section in ("exporter", "controller"):
        web_file = loaded[section]["web_config_file"]
        if web_file is not None:
            try:
                webconfig.load(web_file)
            except webconfig.WebConfigError as err:
                problems.append(f"{section}.web_config_file: {err}")
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    for warning in secretfiles.audit(loaded):
        print(f"warning: {warning}", file=sys.stderr)
    if problems:
        return 1
    where = loaded.source or f"{path} (absent: all defaults)"
    print(f"config OK: {where}")
    return 0


def _cmd_hash_password(args: argparse.Namespace) -> int:
    import getpass

    from agentwatch.exporter.webconfig import hash_password

    if sys.stdin.isatty():
        password = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != password:
            print("agentwatch hash-password: the passwords differ", file=sys.stderr)
            return 1
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        print("agentwatch hash-password: empty password", file=sys.stderr)
        return 1
    try:
        print(hash_password(password.encode("utf-8"), args.cost))
    except ValueError as err:
        print(f"agentwatch hash-password: {err}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "config":
        return _cmd_config(args, args.config)
    if args.command == "hash-password":
        return _cmd_hash_password(args)
    if args.command in ("install", "uninstall"):
        from agentwatch.exporter import install

        return install.run(args)
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
    if args.command == "classify-pane":
        return _cmd_classify_pane(args, cfg)
    if args.command == "controller":
        from agentwatch.controller.main import run as run_controller

        return run_controller(cfg, args)
    if args.command == "ack":
        from agentwatch.controller.ack import run as run_ack

        return run_ack(cfg, args)
    if args.command == "up":
        from agentwatch.exporter.up import run_up

        return run_up(args, cfg)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
