"""`agentwatch status`: each sentinel's health straight from the spool, and the controller's
decision with the alerts behind it, from its state file (no exporter needed)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agentwatch.cli import common, locate, session_states
from agentwatch.cli.exporter import spool_collector
from agentwatch.controller import report
from agentwatch.core import config

if TYPE_CHECKING:
    from agentwatch.exporter.collector import SentinelHealth


def add(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "status",
        help="show each sentinel's health and the controller's decision (exit 1 if a "
        "sentinel is down, 3 when nothing runs)",
        description="Read the spool folder directly (no exporter needed) and show per "
        "sentinel: up, stale, parse errors, age of its file; one state per Claude Code "
        "session (from its hooks, or its pane's classifier where that shows a stall) with "
        "the source of each; then the controller's decision and the alerts behind it, from "
        "its state file. When neither `agentwatch up` nor a ledger sentinel runs on the state "
        "folder it says 'stopped' and exits 3 (the files left behind are not shown as live).",
    )
    common.add_dirs(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def decision_files(cfg: config.Config, state_dir: Path) -> list[Path]:
    """Where a decision may be: the controller's configured state file, and the one of
    `agentwatch up --demo` (its demo keeps its state apart, under <state>/demo)."""
    configured = cfg["controller"]["state_file"] or state_dir / "controller.json"
    return [configured, state_dir / "demo" / "controller.json"]


def newest_decision(files: list[Path]) -> tuple[Path, dict | None]:
    """The most recently written readable decision, and its file."""
    found = [(path, report.read_decision(path)) for path in files]
    readable = [(path, decision) for path, decision in found if decision is not None]
    if not readable:
        return files[0], None
    return max(readable, key=lambda item: float(item[1].get("updated_at") or 0.0))


def age(seconds: float) -> str:
    """How long ago, never negative (clocks of two processes can be a hair apart)."""
    return f"{max(seconds, 0.0):.0f}s ago"


def state_word(item: SentinelHealth) -> str:
    if item.up:
        return "up"
    if not item.present:
        return "missing"
    return "error" if item.error else "stale"


STOPPED = 3  # the LSB status code of "program is not running"


def stopped(place: locate.Place, spool_dir: Path, as_json: bool) -> int:
    """Nothing runs: say so, instead of reading the files left behind as live."""
    why = (f"no `agentwatch up` on {place.state_dir} and no ledger sentinel on "
           f"{place.sentinel_state}")  # fmt: skip
    if as_json:
        print(json.dumps({"state": "stopped", "reason": why, "spool": str(spool_dir)}, indent=2))
    else:
        print(f"agentwatch: stopped ({why}); start it with `agentwatch up`")
    return STOPPED


def run(args: argparse.Namespace, cfg: config.Config) -> int:
    spool_dir, state_dir = common.dirs(args, cfg)
    place = locate.find(cfg, state_dir)
    if not place.running:
        return stopped(place, spool_dir, args.json)
    now = time.time()
    _, health = spool_collector(cfg, spool_dir).snapshot(now)
    decision_file, decision = newest_decision(decision_files(cfg, state_dir))
    sessions = session_states.merged(spool_dir)
    if args.json:
        items = [item.as_dict(now) for item in health]
        report.attach(items, decision)
        for entry in items:  # the list stays a list: sessions ride on their sentinel's entry
            if entry.get("sentinel") == session_states.HOOK_SENTINEL:
                entry["sessions"] = [row.as_dict() for row in sessions]
        print(json.dumps(items, indent=2))
    else:
        print(f"spool: {spool_dir}")
        for item in health:
            when = "never" if item.last_write is None else age(now - item.last_write)
            line = f"  {item.sentinel:<20} {state_word(item):<8} last write {when}"
            print(line + (f"  ({item.error})" if item.error else ""))
        if sessions:
            print("sessions:")
        for row in sessions:
            since = "" if row.since is None else f" since {age(now - row.since)}"
            where = f" pane {row.pane}" if row.pane else " headless" if row.source != "pane" else ""
            project = f" {row.project}" if row.project else ""
            print(f"  {row.session:<36} {row.state:<22} ({row.source}){project}{where}{since}")
        if decision is None:
            print(f"controller: no decision yet ({decision_file} does not exist)")
        else:
            print("\n".join(report.lines(decision, decision_file, now)))
    return 0 if health and all(item.up for item in health) else 1
