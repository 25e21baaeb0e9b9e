"""`agentwatch report daily|weekly|monthly|session|blocks`: the reports ccusage users type,
from the ledgers' own databases (every agent, read-only, no rescan).

The tokens are the ledgers', which equal `ccusage claude daily` on the same transcripts
(docs/ledger-rules.md); the JSON keeps ccusage's field names where they mean the same. The
cost is the ledgers' too, which follows Anthropic's pricing page where ccusage differs (the
long-context rule, models ccusage leaves unpriced): every report says so in `costNote`.
"""

from __future__ import annotations

import argparse
import functools
import json
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from agentwatch.cli import common, locate, report_rows
from agentwatch.cli.report_rows import Row
from agentwatch.core import claude, config
from agentwatch.sentinels.agent_ledger.readers import READERS
from agentwatch.sentinels.token_ledger import blocks as block_rules

KINDS = ("daily", "weekly", "monthly", "session", "blocks")
AGENTS = (claude.AGENT, *(plug.agent for plug in READERS))  # every agent a ledger counts
COST_NOTE = (
    "cost as the ledgers count it: Anthropic's pricing page where ccusage differs (a request "
    "above 200k input tokens on Sonnet 4/4.5 is billed whole at the long-context rate; models "
    "ccusage leaves unpriced are priced); tokens equal ccusage's (docs/reports.md)"
)
_TYPES = (("inputTokens", "input"), ("outputTokens", "output"),
          ("cacheCreationTokens", "cache_creation"), ("cacheReadTokens", "cache_read"))  # fmt: skip


def add(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "report",
        help="usage reports like ccusage's (daily, weekly, monthly, session, blocks), every "
        "agent, from the ledgers' databases",
        description="Tokens and cost the token ledger (Claude Code) and the agent ledger "
        "(Codex, Gemini, OpenCode and the other agents it reads) counted, grouped by local "
        "day, week (from Sunday), month, session or 5-hour billing block. Read-only from "
        "their SQLite databases: fast, and safe while the sentinels run. Tokens equal "
        "ccusage's; the cost follows Anthropic's pricing page where ccusage differs "
        "(docs/reports.md).",
    )
    parser.add_argument("kind", choices=KINDS, help="how to group")
    parser.add_argument("--json", action="store_true", help="print JSON (ccusage's field names)")
    parser.add_argument(
        "--agent", action="append", choices=AGENTS, help="only this agent (repeatable)"
    )
    parser.add_argument("--since", type=_day, help="from this local date (YYYYMMDD or YYYY-MM-DD)")
    parser.add_argument("--until", type=_day, help="until this local date, inclusive")
    common.add_dirs(parser)


def _day(text: str) -> date:
    digits = text.replace("-", "")
    try:
        if len(digits) != 8 or not digits.isdigit():
            raise ValueError
        return date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYYMMDD)") from None


QUARTER_MS = 900_000  # every time zone's offset is a multiple of 15 minutes


@functools.lru_cache(maxsize=65_536)
def _quarter_day(quarter: int) -> date:
    moment = time.localtime(quarter * QUARTER_MS / 1000)
    return date(moment.tm_year, moment.tm_mon, moment.tm_mday)


def local_day(ms: int) -> date:
    """The local date of a time: one localtime() per quarter hour, not per row."""
    return _quarter_day(ms // QUARTER_MS)


def iso_ms(ms: int) -> str:
    """UTC time with milliseconds, as ccusage writes it."""
    t = time.gmtime(ms // 1000)  # the year with four digits (strftime writes year 1 as "1")
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:"
            f"{t.tm_sec:02d}.{ms % 1000:03d}Z")  # fmt: skip


@dataclass
class Sums:
    """Tokens by type and cost, overall and per model."""

    tokens: dict[str, int] = field(default_factory=lambda: {k: 0 for _, k in _TYPES})
    cost: float = 0.0
    entries: int = 0
    models: dict[str, Sums] = field(default_factory=dict)
    agents: set[str] = field(default_factory=set)

    def add(self, row: Row, by_model: bool = True) -> None:
        self.tokens["input"] += row.input
        self.tokens["output"] += row.output
        self.tokens["cache_read"] += row.cache_read
        self.tokens["cache_creation"] += row.cache_creation
        self.cost += row.cost
        self.entries += row.entries
        self.agents.add(row.agent)
        if by_model:
            self.models.setdefault(row.model, Sums()).add(row, by_model=False)

    @property
    def total(self) -> int:
        return sum(self.tokens.values())

    def counts(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: self.tokens[key] for name, key in _TYPES}
        return out

    def as_json(self) -> dict[str, Any]:
        out = self.counts()
        out.update(totalTokens=self.total, totalCost=self.cost)
        if self.models:
            ranked = sorted(self.models.items(), key=lambda item: -item[1].cost)
            out["modelsUsed"] = [name for name, _ in ranked]
            out["modelBreakdowns"] = [{"modelName": name, **sums.counts(), "cost": sums.cost}
                                      for name, sums in ranked]  # fmt: skip
            out["agents"] = sorted(self.agents)
        return out


def _grouped(rows: Iterable[Row], key: Callable[[Row], Any]) -> dict[Any, Sums]:
    groups: dict[Any, Sums] = {}
    for row in rows:
        groups.setdefault(key(row), Sums()).add(row)
    return dict(sorted(groups.items()))


def _week(row: Row) -> str:
    day = local_day(row.ms)  # weeks from Sunday
    start = day.toordinal() - (day.weekday() + 1) % 7
    # 0001-01-01 is a Monday: its week starts in year 0, which ccusage writes as 0000-12-31
    return date.fromordinal(start).isoformat() if start >= 1 else f"0000-12-{31 + start:02d}"


PERIODS: dict[str, tuple[str, Callable[[Row], str]]] = {
    "daily": ("date", lambda row: local_day(row.ms).isoformat()),
    "weekly": ("week", _week),
    "monthly": ("month", lambda row: local_day(row.ms).isoformat()[:7]),
}


def periods(kind: str, rows: list[Row]) -> list[dict[str, Any]]:
    name, key = PERIODS[kind]
    return [{name: period, **sums.as_json()} for period, sums in _grouped(rows, key).items()]


def sessions(ledgers: report_rows.Ledgers, rows: list[Row]) -> list[dict[str, Any]]:
    """One entry per agent and session, the most recently active last (as ccusage sorts)."""
    found: dict[tuple[str, str], tuple[Sums, str, int, int]] = {}
    for row in rows:
        key = (row.agent, row.session)
        sums, project, first, last = found.get(key) or (Sums(), row.project, row.ms, row.ms)
        sums.add(row)
        found[key] = (sums, project, min(first, row.ms), max(last, row.ms))
    out = []
    for (agent, session), (sums, project, first, last) in found.items():
        known = ledgers.activity.get((agent, session))
        if known is not None:  # the ledger's own first/last entry times, to the millisecond
            first, last = round(known[0] * 1000), round(known[1] * 1000)
        out.append({"sessionId": session, "agent": agent, "project": project,
                    "firstActivity": iso_ms(first), "lastActivity": iso_ms(last),
                    **sums.as_json()})  # fmt: skip
    return sorted(out, key=lambda item: (item["lastActivity"], item["sessionId"]))


def blocks(rows: list[Row], now_ms: int) -> list[dict[str, Any]]:
    """ccusage's 5-hour billing blocks (docs/ledger-rules.md), gaps left out."""
    out: list[dict[str, Any]] = []
    current: block_rules.Block | None = None
    sums = Sums()
    last = 0
    for row in rows:
        minute = -(-row.ms // block_rules.MINUTE_MS)
        if current is None or minute * block_rules.MINUTE_MS > current.end_ms:
            if current is not None:
                out.append(_block(current, sums, last, now_ms))
            current, sums = block_rules.Block(block_rules.floor_hour(row.ms), 0.0), Sums()
        sums.add(row)
        last = max(last, row.ms)
    if current is not None:
        out.append(_block(current, sums, last, now_ms))
    return out


def _block(block: block_rules.Block, sums: Sums, last: int, now_ms: int) -> dict[str, Any]:
    counts = sums.counts()
    return {
        "id": iso_ms(block.start_ms), "startTime": iso_ms(block.start_ms),
        "endTime": iso_ms(block.end_ms), "lastActivity": iso_ms(last),
        "isActive": block.start_ms <= now_ms < block.end_ms, "isGap": False,
        "entries": sums.entries,
        "tokenCounts": {"inputTokens": counts["inputTokens"],
                        "outputTokens": counts["outputTokens"],
                        "cacheCreationInputTokens": counts["cacheCreationTokens"],
                        "cacheReadInputTokens": counts["cacheReadTokens"]},
        "totalTokens": sums.total, "costUSD": sums.cost,
        "models": sorted(sums.models), "agents": sorted(sums.agents),
    }  # fmt: skip


def select(rows: list[Row], agents: list[str] | None, since: date | None,
           until: date | None) -> list[Row]:  # fmt: skip
    return [row for row in rows
            if (not agents or row.agent in agents)
            and (since is None or local_day(row.ms) >= since)
            and (until is None or local_day(row.ms) <= until)]  # fmt: skip


def build(kind: str, ledgers: report_rows.Ledgers, rows: list[Row], now: float) -> dict[str, Any]:
    """The report as JSON: its entries under ccusage's key, the totals, the cost note."""
    totals = Sums()
    for row in rows:
        totals.add(row, by_model=False)
    if kind in PERIODS:
        entries = periods(kind, rows)
    elif kind == "session":
        entries = sessions(ledgers, rows)
    else:
        entries = blocks(rows, int(now * 1000))
    key = {"daily": "daily", "weekly": "weekly", "monthly": "monthly", "session": "sessions",
           "blocks": "blocks"}[kind]  # fmt: skip
    return {key: entries, "totals": totals.as_json(), "costNote": COST_NOTE,
            "databases": [str(path) for path in ledgers.databases]}  # fmt: skip


def table(kind: str, report: dict[str, Any]) -> str:
    """A plain table: one line per entry, then the totals and the cost note."""
    entries = next(value for key, value in report.items() if isinstance(value, list))
    label = {"daily": "date", "weekly": "week", "monthly": "month", "session": "sessionId",
             "blocks": "startTime"}[kind]  # fmt: skip
    header = (label.upper(), "AGENTS", "INPUT", "OUTPUT", "CACHE WRITE", "CACHE READ", "TOTAL",
              "COST $")  # fmt: skip
    lines: list[tuple[str, ...]] = [header]
    for item in entries:
        counts = item.get("tokenCounts") or item
        lines.append((
            str(item[label]) + (" (active)" if item.get("isActive") else ""),
            ",".join(item.get("agents", [])),
            *(f"{counts[name]:,}" for name in (
                "inputTokens", "outputTokens",
                "cacheCreationInputTokens" if "tokenCounts" in item else "cacheCreationTokens",
                "cacheReadInputTokens" if "tokenCounts" in item else "cacheReadTokens")),
            f"{item['totalTokens']:,}", f"{item.get('totalCost', item.get('costUSD', 0.0)):.2f}",
        ))  # fmt: skip
    totals = report["totals"]
    lines.append(("TOTAL", "", *(f"{totals[name]:,}" for name, _ in _TYPES[:2]),
                  f"{totals['cacheCreationTokens']:,}", f"{totals['cacheReadTokens']:,}",
                  f"{totals['totalTokens']:,}", f"{totals['totalCost']:.2f}"))  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(width) if i < 2 else cell.rjust(width)
                      for i, (cell, width) in enumerate(zip(line, widths, strict=True)))
            for line in lines]  # fmt: skip
    return "\n".join(line.rstrip() for line in text) + f"\nnote: {COST_NOTE}"


def run(args: argparse.Namespace, cfg: config.Config) -> int:
    _, state_dir = common.dirs(args, cfg)
    folder = locate.find(cfg, Path(state_dir)).sentinel_state
    try:
        ledgers = report_rows.read(folder)
    except sqlite3.Error as error:
        print(f"agentwatch report: cannot read the ledgers in {folder}: {error}", file=sys.stderr)
        return 1
    if not ledgers.databases:
        print(f"agentwatch report: no ledger database in {folder}: the token-ledger and "
              "agent-ledger sentinels have not run with this state folder yet",
              file=sys.stderr)  # fmt: skip
        return 1
    rows = select(ledgers.rows, args.agent, args.since, args.until)
    report = build(args.kind, ledgers, rows, time.time())
    print(json.dumps(report, indent=2) if args.json else table(args.kind, report))
    return 0
