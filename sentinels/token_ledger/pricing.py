"""Token prices: a shipped table, overridable from the config, matched like the reference reader.

A model's price may change over time, so a model holds effective-dated entries and a line is
priced by its own timestamp. Two long-context rules exist: Anthropic's (`long_context`: once a
request's input, cache reads and writes included, exceeds the threshold, every token of it is
billed at the long-context rates) and the reference reader's per-class marginal tier
(`*_above_200k`, kept for the cloud providers' ids it prices from its own table).
An unknown model is never guessed: it costs 0 and the caller reports it as unpriced.
"""

from __future__ import annotations

import bisect
import calendar
import itertools
import json
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

# Beside this module in the installed package (not importlib.resources: 1 MiB of private
# memory in the resident sentinel for reading one file).
SHIPPED = Path(__file__).with_name("pricing.json")

PER_MILLION = 1_000_000
TIER_THRESHOLD = 200_000
_DATE = re.compile(r"\d{8}")
_DOTTED = re.compile(r"(\d)\.(\d)")
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_RATES = ("input", "output", "cache_write", "cache_read")


class PricingError(ValueError):
    """The pricing file is not what the ledger can price from (the message says where)."""


@dataclass(frozen=True)
class Rates:
    """USD per token of each class."""

    input: float
    output: float
    cache_write: float
    cache_read: float

    @classmethod
    def from_table(cls, row: dict[str, Any]) -> Rates:
        base = row["input"] / PER_MILLION
        write, read = row.get("cache_write"), row.get("cache_read")
        return cls(
            input=base,
            output=row["output"] / PER_MILLION,
            cache_write=1.25 * base if write is None else write / PER_MILLION,
            cache_read=0.1 * base if read is None else read / PER_MILLION,
        )


@dataclass(frozen=True)
class Price:
    """One entry of a model: its rates from `start` (inclusive) to `end` (exclusive), seconds."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    input_above: float | None = None
    output_above: float | None = None
    cache_write_above: float | None = None
    cache_read_above: float | None = None
    long_context_above: int = 0  # Anthropic's whole-request rule: input above this (tokens)
    long_context: Rates | None = None
    fast: float | None = None
    start: float = float("-inf")
    end: float = float("inf")
    source: dict[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def from_table(cls, row: dict[str, Any], where: str = "") -> Price:
        try:
            rates = Rates.from_table(row)

            def per_token(name: str) -> float | None:
                value = row.get(name)
                return None if value is None else value / PER_MILLION

            long = row.get("long_context")
            return cls(
                rates.input, rates.output, rates.cache_write, rates.cache_read,
                input_above=per_token("input_above_200k"),
                output_above=per_token("output_above_200k"),
                cache_write_above=per_token("cache_write_above_200k"),
                cache_read_above=per_token("cache_read_above_200k"),
                long_context_above=0 if long is None else int(long["above"]),
                long_context=None if long is None else Rates.from_table(long),
                fast=row.get("fast", row.get("fast_multiplier")),  # the config's name
                start=_day(row.get("from"), float("-inf"), where),
                end=_day(row.get("until"), float("inf"), where),
                source={k: str(row[k]) for k in ("source", "page_date", "note") if k in row},
            )  # fmt: skip
        except (KeyError, TypeError) as error:
            raise PricingError(f"{where}: bad price entry ({error!r})") from None

    def describe(self) -> dict[str, Any]:
        """The entry as `agentwatch prices` shows it: USD per million tokens, dates, source."""

        def mtok(value: float | None) -> float | None:
            return None if value is None else round(value * PER_MILLION, 6)

        out: dict[str, Any] = {name: mtok(getattr(self, name)) for name in _RATES}
        out["cache_write_1h"] = mtok(2 * self.input)
        if self.long_context is not None:
            out["long_context"] = {"above_input_tokens": self.long_context_above} | {
                name: mtok(getattr(self.long_context, name)) for name in _RATES
            }
        if self.input_above is not None:
            out["tier_above_200k_per_class"] = {
                "input": mtok(self.input_above), "output": mtok(self.output_above),
                "cache_write": mtok(self.cache_write_above),
                "cache_read": mtok(self.cache_read_above),
            }  # fmt: skip
        if self.fast is not None:
            out["fast_multiplier"] = self.fast
        out["from"] = None if self.start == float("-inf") else _iso(self.start)
        out["until"] = None if self.end == float("inf") else _iso(self.end)
        return out | self.source


def _day(value: object, default: float, where: str) -> float:
    """'YYYY-MM-DD' -> that day's 00:00 UTC in seconds."""
    if value is None:
        return default
    if not isinstance(value, str) or not _ISO_DAY.fullmatch(value):
        raise PricingError(f"{where}: dates are YYYY-MM-DD, got {value!r}")
    year, month, day = (int(part) for part in value.split("-"))
    return float(calendar.timegm((year, month, day, 0, 0, 0)))


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(seconds))


@dataclass(frozen=True)
class Dated:
    """All entries of one model, oldest first; picks the one in force at a time."""

    entries: tuple[Price, ...]
    starts: tuple[float, ...]

    @classmethod
    def from_table(cls, name: str, value: object) -> Dated:
        rows = value if isinstance(value, list) else [value]
        if not rows or not all(isinstance(row, dict) for row in rows):
            raise PricingError(f"{name}: expected a price entry or a list of dated entries")
        entries = sorted(
            (Price.from_table(row, name) for row in rows),  # type: ignore[arg-type]
            key=lambda price: price.start,
        )
        for before, after in itertools.pairwise(entries):
            if after.start == before.start or after.start < before.end != float("inf"):
                raise PricingError(f"{name}: dated entries overlap")
        return cls(tuple(entries), tuple(price.start for price in entries))

    def at(self, when: float | None) -> Price:
        """The entry in force at `when` (seconds); the newest without a time. Before the first
        entry the first applies, after the last one ends the last (a price is never dropped)."""
        entries = self.entries
        if len(entries) == 1:
            return entries[0]
        if when is None:
            return entries[-1]
        index = bisect.bisect_right(self.starts, when) - 1
        return entries[max(index, 0)]

    @property
    def current(self) -> Price:
        return self.entries[-1]


def _normalise(model: str) -> str:
    """anthropic/claude-sonnet-4.5 -> claude-sonnet-4-5: no provider prefix, dashed versions."""
    return _DOTTED.sub(r"\1-\2", model.rsplit("/", 1)[-1])


def _tiered(tokens: int, base: float, above: float | None) -> float:
    if above is None or tokens <= TIER_THRESHOLD:
        return tokens * base
    return TIER_THRESHOLD * base + (tokens - TIER_THRESHOLD) * above


def _double(price: float | None) -> float | None:
    return None if price is None else 2 * price


class PriceBook:
    """Looks up a model's price by family and computes the cost of one request."""

    def __init__(
        self,
        families: dict[str, Any],
        exact: dict[str, Any] | None = None,
        fast_multipliers: dict[str, float] | None = None,
    ):
        self._families = {name: Dated.from_table(name, row) for name, row in families.items()}
        self._exact = {name: Dated.from_table(name, row) for name, row in (exact or {}).items()}
        # Longest family first, so claude-opus-4-1 wins over claude-opus-4.
        self._ordered = sorted(self._families, key=len, reverse=True)
        self._fast = dict(fast_multipliers or {})
        self.resolve = lru_cache(maxsize=1024)(self._resolve)
        self.fast_multiplier = lru_cache(maxsize=1024)(self._fast_multiplier)

    @classmethod
    def load(
        cls, pricing_file: Path | None = None, overrides: dict[str, dict[str, float]] | None = None
    ) -> PriceBook:
        if pricing_file is not None:
            data: dict[str, Any] = json.loads(pricing_file.read_text(encoding="utf-8"))
        else:
            data = json.loads(SHIPPED.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
            raise PricingError("expected a JSON object with a 'models' object")
        if not isinstance(data.get("exact", {}), dict):
            raise PricingError("'exact' must be an object of model ids")
        families = dict(data["models"])
        exact = dict(data.get("exact", {}))
        for name, row in (overrides or {}).items():  # an override wins as id and as family
            families[name] = exact[name] = row
        return cls(families, exact, data.get("fast_multipliers"))

    def _fast_multiplier(self, model: str) -> float:
        model = _normalise(model)
        for fragment, multiplier in self._fast.items():
            if fragment in model:
                return multiplier
        return 1.0

    def _resolve(self, model: str) -> tuple[str, Dated] | None:
        """The table key a model id is priced by (exact id or family), and its entries."""
        for key in (model, _normalise(model)):
            found = self._exact.get(key)
            if found is not None:
                return key, found
            if key is model and model in self._families:
                return model, self._families[model]
        model = _normalise(model)
        for family in self._ordered:
            if not model.startswith(family):
                continue
            rest = model[len(family) :]
            if not rest or rest[0] in "[@":
                return family, self._families[family]
            if rest[0] == "-" and len(rest) > 1:
                tail = rest[1:]
                if _DATE.match(tail) or not tail[0].isdigit():
                    return family, self._families[family]
            return None  # e.g. claude-opus-4-9: an unknown minor version, not a neighbour
        return None

    def lookup(self, model: str, at: float | None = None) -> Price | None:
        """The entry that prices `model` at time `at` (seconds), or None when unknown."""
        found = self.resolve(model)
        return None if found is None else found[1].at(at)

    def cost(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cache_read: int,
        cache_write_5m: int,
        cache_write_1h: int,
        fast: bool,
        *,
        at: float | None = None,
    ) -> float | None:
        """USD for one request at time `at` (seconds), or None when the model has no price."""
        found = self.resolve(model)
        if found is None:
            return None
        price = found[1].at(at)
        long = price.long_context
        if long is not None and (
            input_tokens + cache_read + cache_write_5m + cache_write_1h > price.long_context_above
        ):
            total = (
                input_tokens * long.input + output_tokens * long.output
                + cache_read * long.cache_read + cache_write_5m * long.cache_write
                + cache_write_1h * 2 * long.input
            )  # fmt: skip
        elif long is not None or price.input_above is None:
            total = (
                input_tokens * price.input + output_tokens * price.output
                + cache_read * price.cache_read + cache_write_5m * price.cache_write
                + cache_write_1h * 2 * price.input
            )  # fmt: skip
        else:
            total = (
                _tiered(input_tokens, price.input, price.input_above)
                + _tiered(output_tokens, price.output, price.output_above)
                + _tiered(cache_read, price.cache_read, price.cache_read_above)
                + _tiered(cache_write_5m, price.cache_write, price.cache_write_above)
                + _tiered(cache_write_1h, 2 * price.input, _double(price.input_above))
            )
        if not fast:
            return total
        multiplier = price.fast if price.fast is not None else self.fast_multiplier(model)
        return total * multiplier
