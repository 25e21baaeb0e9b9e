"""The contract every agent reader keeps: one `AgentUsage` per counted API response.

A reader is pure: files in, records and reject counts out. Keys are stable across re-reads
of the same files, so a ledger that stores them can read a file again after a crash, a
truncation or a rewrite without counting anything twice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from agentwatch.core import claude

AGENTS = (claude.AGENT, "codex", "gemini", "opencode")  # values of the `agent` label
TOKEN_TYPES = ("input", "output", "cache_read", "cache_creation")


@dataclass(frozen=True, slots=True)
class AgentUsage:
    """One API response of an agent, its tokens mapped onto the ledger's four types."""

    agent: str  # one of AGENTS
    key: str  # unique per response and stable across re-reads (the dedup key)
    timestamp: float  # epoch seconds, UTC
    session: str  # the agent's session id ("" when the file names none)
    project: str  # the working directory's last component ("" when unknown)
    model: str
    input: int  # fresh input: cached input is not in here
    output: int  # output, with reasoning tokens counted as the reference reader counts them
    cache_read: int
    cache_creation: int
    cost_usd: float | None = None  # a cost the file itself states; None: priced from the table

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_creation


@dataclass
class ReadResult:
    """What reading some files produced; rejects are counted by bounded reason, never text."""

    entries: list[AgentUsage] = field(default_factory=list)
    rejects: dict[str, int] = field(default_factory=dict)

    def reject(self, reason: str) -> None:
        self.rejects[reason] = self.rejects.get(reason, 0) + 1


Pricer = Callable[[AgentUsage], float | None]


def daily_totals(
    entries: Iterable[AgentUsage], timezone: str, price: Pricer
) -> dict[str, dict[str, float]]:
    """Per local day (YYYY-MM-DD): the four token types and the cost, the shape the
    conformance tests compare with `ccusage <agent> daily --json --offline`."""
    zone = ZoneInfo(timezone)
    days: dict[str, dict[str, float]] = {}
    for entry in entries:
        day = dt.datetime.fromtimestamp(entry.timestamp, zone).strftime("%Y-%m-%d")
        row = days.setdefault(day, dict.fromkeys((*TOKEN_TYPES, "cost_usd"), 0))
        for kind in TOKEN_TYPES:
            row[kind] += getattr(entry, kind)
        cost = entry.cost_usd if entry.cost_usd is not None else price(entry)
        row["cost_usd"] += cost or 0.0
    return days
