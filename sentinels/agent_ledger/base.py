"""The contract every agent reader keeps: one `AgentUsage` per counted API response.

A reader is pure: files in, records and reject counts out. Keys are stable across re-reads
of the same files, so a ledger that stores them can read a file again after a crash, a
truncation or a rewrite without counting anything twice.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from agentwatch.core import claude

# Values of the `agent` label the first readers wrote; every reader's AGENT is one too
# (readers.py READERS lists them all).
AGENTS = (claude.AGENT, "codex", "gemini", "opencode")
TOKEN_TYPES = ("input", "output", "cache_read", "cache_creation")
# The bounds a record must keep to be counted; the readers follow ccusage, which counts any
# u64 (its sums saturate), so the ledger checks what they return (`out_of_bounds`).
# The token ledger's bound on one count (token_ledger/records.py MAX_TOKENS): a counter is a
# float64, exact only up to 2**53; no real response comes near it (context windows ~10**6).
MAX_TOKENS = 1 << 53
# One response's cost, stated by the file or priced: the dearest real one today is a few
# hundred dollars (a full context of the dearest model's input and output rates), so $10,000
# is far beyond any of them and far below what a poisoned count or cost field makes (1e308,
# or 2**62 tokens priced), which would otherwise drive every budget alert for good.
MAX_COST_USD = 10_000.0


@dataclass(frozen=True, slots=True)
class AgentUsage:
    """One API response of an agent, its tokens mapped onto the ledger's four types."""

    agent: str  # the reader's AGENT
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

    def counts(self) -> tuple[int, ...]:
        """Every token count the record carries (a reader's subclass adds its own)."""
        return (self.input, self.output, self.cache_read, self.cache_creation)


class _Unfrozen:
    """AgentUsage's slots in its order, without its frozen `__setattr__`: `usage` fills one
    with plain attribute stores and then gives it AgentUsage's class (the same layout, so
    Python allows the swap)."""

    __slots__ = AgentUsage.__slots__

    def __init__(
        self, agent: str, key: str, timestamp: float, session: str, project: str,
        model: str, input: int, output: int, cache_read: int, cache_creation: int,
        cost_usd: float | None,
    ) -> None:  # fmt: skip
        self.agent = agent
        self.key = key
        self.timestamp = timestamp
        self.session = session
        self.project = project
        self.model = model
        self.input = input
        self.output = output
        self.cache_read = cache_read
        self.cache_creation = cache_creation
        self.cost_usd = cost_usd


_TO_CLASS = object.__dict__["__class__"].__set__


def usage(
    agent: str, key: str, timestamp: float, session: str, project: str, model: str,
    input: int, output: int, cache_read: int, cache_creation: int,
    cost_usd: float | None = None,
) -> AgentUsage:  # fmt: skip
    """`AgentUsage(...)` with the same arguments, the same object (equal, hashed alike,
    frozen), at a quarter of the cost: the frozen dataclass's `__init__` sets each field
    through `object.__setattr__` (1.1 us an entry against 0.3 us; a 256 MiB backfill makes
    a few hundred thousand). For readers of the base class; a subclass has its own layout."""
    entry = _Unfrozen(agent, key, timestamp, session, project, model, input, output,
                      cache_read, cache_creation, cost_usd)  # fmt: skip
    _TO_CLASS(entry, AgentUsage)
    return entry  # type: ignore[return-value]


def out_of_bounds(entry: AgentUsage, cost: float | None) -> str | None:
    """The reject reason of a record the ledger must not count, None for a good one:
    `bad_token_count` for a count that is not an integer from 0 to MAX_TOKENS (the token
    ledger's reason), `bad_cost` for a cost (stated, or priced: `cost`) that is not a finite
    number from 0 to MAX_COST_USD."""
    for count in entry.counts():
        if type(count) is not int or not 0 <= count <= MAX_TOKENS:
            return "bad_token_count"
    if cost is not None and not (
        type(cost) in (int, float) and math.isfinite(cost) and 0 <= cost <= MAX_COST_USD
    ):
        return "bad_cost"
    return None


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
    from zoneinfo import ZoneInfo  # here: the sentinel never needs it (tests and reports do)

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
