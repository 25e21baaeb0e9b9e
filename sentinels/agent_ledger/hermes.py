"""Hermes Agent's state database read the way `ccusage hermes daily` 20.0.24 reads it
(rust/crates/ccusage/src/adapter/hermes/{paths,loader,parser}.rs).

Hermes keeps `~/.hermes/state.db`, table `sessions`, one row per session with its running
totals: `input_tokens`, `output_tokens`, `cache_read_tokens`, `cache_write_tokens` and
`reasoning_tokens` (output here; ccusage: extra total tokens, priced as output). A row needs
an `id`, a non-blank `model` and a `started_at` (epoch seconds or ms), which dates the whole
session. Its cost is `actual_cost_usd` when above 0; else the model is priced as
`<provider>/<model>` then `<model>` (provider: `billing_provider`, else from the model's
name), the first above 0. Values are read as SQLite converts them (NULL is 0, text its
leading number), as ccusage's `sqlite` crate reads them: `estimated_cost_usd` therefore never
applies (a NULL actual cost reads as 0, not as missing), which ccusage 20.0.24 shows too.
A session id counts once across databases (the first database's row), so the rules look
ACROSS files; the key is the session id, and the ledger adds what its totals grew by.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ccusage_rules as rules
from .base import AgentUsage, ReadResult

AGENT = "hermes"
DATA_DIR_ENV = "HERMES_HOME"
DATABASE = "state.db"
PRICES = rules.PriceTable(Path(__file__).with_name("hermes_prices.json"))
QUERY = """
SELECT id, model, billing_provider, started_at, message_count, input_tokens, output_tokens,
       cache_read_tokens, cache_write_tokens, reasoning_tokens, estimated_cost_usd,
       actual_cost_usd
FROM sessions
WHERE model IS NOT NULL AND TRIM(model) != ''
"""
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
PROVIDERS = {"claude": "anthropic", "openai_codex": "openai", "google_ai": "google",
             "gemini": "google", "vertex": "google", "vertex_ai": "google"}  # fmt: skip


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """HERMES_HOME (comma-separated; set but blank: none) else ~/.hermes; the folders whose
    state.db exists, each once."""
    found = rules.env_roots(env, DATA_DIR_ENV, [home / ".hermes"], blank_means_unset=False)
    return [root for root in found if (root / DATABASE).is_file()]


def files(root: Path) -> list[Path]:
    path = root / DATABASE
    return [path] if path.is_file() else []


@dataclass(frozen=True, slots=True)
class HermesUsage(AgentUsage):
    """A session and the provider its first price candidate names."""

    provider: str = "hermes"


def _double(value: Any) -> float:
    """What sqlite3_column_double makes of a value: NULL 0, text its leading number."""
    if type(value) in (int, float):
        return float(value)
    if isinstance(value, (str, bytes)):
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        match = _NUMBER.match(text.lstrip())
        return float(match.group()) if match else 0.0
    return 0.0


def _count(value: Any) -> int:
    """parser.rs read_u64: sqlite3_column_int64's value, negatives 0."""
    if type(value) is int:
        number = value
    elif type(value) is float:
        number = int(value) if math.isfinite(value) and abs(value) < 2**63 else 0
    else:
        number = int(_double(value)) if math.isfinite(_double(value)) else 0
    return max(number, 0)


def read_files(paths: Iterable[Path]) -> ReadResult:
    result = ReadResult()
    seen: set[str] = set()
    for path in paths:
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
                db.text_factory = lambda data: data.decode("utf-8", "surrogateescape")
                rows = db.execute(QUERY).fetchall()
        except sqlite3.Error:
            result.reject("unreadable")
            continue
        for row in rows:
            entry = _entry(row)
            if entry is not None and entry.session not in seen:
                seen.add(entry.session)
                result.entries.append(entry)
    return result


def _provider(value: Any, model: str) -> str:
    if isinstance(value, str) and value.strip(rules.RUST_WHITESPACE):
        name = value.strip(rules.RUST_WHITESPACE)
        name = "".join(c.lower() if c.isascii() else c for c in name).replace("-", "_")
        return PROVIDERS.get(name, name)
    lower = "".join(c.lower() if c.isascii() else c for c in model)
    if lower.startswith(("claude-", "claude/")):
        return "anthropic"
    if lower.startswith(("gpt", "chatgpt")) or (lower[:1] == "o" and lower[1:2].isdigit()):
        return "openai"
    return "google" if lower.startswith(("gemini-", "gemini/")) else "hermes"


def _entry(row: tuple[Any, ...]) -> HermesUsage | None:
    session = str(row[0]) if type(row[0]) is int else row[0]
    if not isinstance(session, str) or not isinstance(row[1], str):
        return None
    model = row[1].strip(rules.RUST_WHITESPACE)
    if not session or not model:
        return None
    started = _double(row[3])
    millis = started if started > 1e12 else started * 1000.0
    if not math.isfinite(millis) or millis <= 0:
        return None
    when = math.trunc(millis) / 1000
    input, output, read, creation, reasoning = (_count(row[i]) for i in range(5, 10))
    actual = _double(row[11])
    cost = max(actual, 0.0) if math.isfinite(actual) else float(_count(row[11]))
    if input + output + read + creation + reasoning == 0 and cost == 0:
        return None
    return HermesUsage(AGENT, rules.response_key(AGENT, session), when, session, "hermes", model,
                       input, output + reasoning, read, creation, cost if cost > 0 else None,
                       _provider(row[2], model))  # fmt: skip


def candidates(model: str, provider: str) -> list[str]:
    names = [f"{provider}/{model}"] if provider != "hermes" else []
    return list(dict.fromkeys([*names, model]))


def price(entry: AgentUsage) -> float | None:
    """The first candidate hermes_prices.json prices above 0; None: unpriced."""
    for name in candidates(entry.model, getattr(entry, "provider", "hermes")):
        cost = PRICES.cost(name, entry.input, entry.output, entry.cache_read,
                           entry.cache_creation)  # fmt: skip
        if cost:
            return cost
    return None
