"""Kilo CLI's database read the way `ccusage kilo daily` 20.0.24 reads it
(rust/crates/ccusage/src/adapter/kilo/{paths,loader,parser}.rs).

Kilo (an OpenCode fork) keeps its messages in `~/.local/share/kilo/kilo.db`, table `message`
(`id`, `session_id`, `data`: the message as JSON). An assistant message with `tokens`
counts: `input`, `output`, `cache.read`, `cache.write`; `reasoning` and a `total` beyond the
parts are output here (ccusage: extra total tokens, priced as output). It needs a `modelID`
and a `time.created` (epoch seconds or milliseconds, > 0). `cost` is the cost when it is a
number, else the model is priced as `<providerID>/<modelID>` then `<modelID>`. A message id
(`data.id`, else the database path and row id) is counted once across databases, the first
database's copy winning, so this reader's rules look ACROSS files; the key is that id, and
the ledger adds what a rewritten row grew by.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ccusage_rules as rules
from .base import AgentUsage, ReadResult

AGENT = "kilo"
DATA_DIR_ENV = "KILO_DATA_DIR"
DATABASE = "kilo.db"
PRICES = rules.PriceTable(Path(__file__).with_name("kilo_prices.json"))


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """KILO_DATA_DIR (comma-separated; set but blank: no folder) else ~/.local/share/kilo."""
    default = home / ".local" / "share" / "kilo"
    return rules.env_roots(env, DATA_DIR_ENV, [default], blank_means_unset=False)


def files(root: Path) -> list[Path]:
    path = root / DATABASE
    return [path] if path.is_file() else []


@dataclass(frozen=True, slots=True)
class KiloUsage(AgentUsage):
    """A message and the provider its price candidates start with."""

    provider: str | None = None


def _rows(path: Path) -> list[tuple[Any, Any, Any]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
        db.text_factory = lambda data: data.decode("utf-8", "surrogateescape")
        return db.execute("SELECT id, session_id, data FROM message").fetchall()


def read_files(paths: Iterable[Path]) -> ReadResult:
    result = ReadResult()
    seen: set[str] = set()
    for path in paths:
        try:
            rows = _rows(path)
        except sqlite3.Error:
            result.reject("unreadable")
            continue
        for row_id, session_id, data in rows:
            if not all(isinstance(value, str) for value in (row_id, session_id, data)):
                result.reject("bad_row")
                continue
            try:
                value = rules.loads(data)
            except ValueError:
                result.reject("bad_json")
                continue
            entry = _entry(value, row_id, session_id, path)
            if entry is not None and entry.key not in seen:
                seen.add(entry.key)
                result.entries.append(entry)
    return result


def _time(value: Any) -> float | None:
    raw = rules.as_i64(value)
    if raw is None or raw <= 0:
        return None
    millis = raw * 1000 if raw < 1_000_000_000_000 else raw
    return millis / 1000 if millis < 2**63 else None


def _entry(value: Any, row_id: str, row_session: str, path: Path) -> KiloUsage | None:
    if not isinstance(value, dict) or value.get("role") != "assistant" or "tokens" not in value:
        return None
    tokens = value["tokens"]
    tokens = tokens if isinstance(tokens, dict) else {}
    cache = tokens.get("cache")
    cache = cache if isinstance(cache, dict) else {}
    input, output = rules.as_u64(tokens.get("input")), rules.as_u64(tokens.get("output"))
    creation, read = rules.as_u64(cache.get("write")), rules.as_u64(cache.get("read"))
    output, extra = rules.total_fallback(
        input, output, creation, read, rules.as_u64(tokens.get("total")),
        rules.as_u64(tokens.get("reasoning")),
    )  # fmt: skip
    if input + output + creation + read + extra == 0:
        return None
    model = rules.text(value.get("modelID"))
    time = value.get("time")
    when = _time(time.get("created")) if isinstance(time, dict) else None
    if model is None or when is None:
        return None
    session = rules.text(value.get("session_id")) or row_session
    message_id = rules.text(value.get("id")) or f"{path}:{row_id}"
    return KiloUsage(AGENT, rules.response_key(AGENT, message_id), when, session, "kilo", model,
                     input, output + extra, read, creation, rules.as_f64(value.get("cost")),
                     rules.text(value.get("providerID")))  # fmt: skip


def candidates(model: str, provider: str | None) -> list[str]:
    """parser.rs model_candidates."""
    names = []
    normal = provider.replace("-", "_") if provider is not None else None
    if normal is not None and normal not in ("unknown", "kilo"):
        names.append(f"{normal}/{model}")
    names.append(model)
    return list(dict.fromkeys(names))


def price(entry: AgentUsage) -> float | None:
    """The first candidate kilo_prices.json has; None: unpriced."""
    for name in candidates(entry.model, getattr(entry, "provider", None)):
        cost = PRICES.cost(name, entry.input, entry.output, entry.cache_read,
                           entry.cache_creation)  # fmt: skip
        if cost is not None:
            return cost
    return None
