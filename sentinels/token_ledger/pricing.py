"""Token prices: a shipped table, overridable from the config, matched like the reference reader.

An unknown model is never guessed: it costs 0 and the caller reports it as unpriced.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

PER_MILLION = 1_000_000
TIER_THRESHOLD = 200_000
_DATE = re.compile(r"\d{8}")
_DOTTED = re.compile(r"(\d)\.(\d)")


@dataclass(frozen=True)
class Price:
    """USD per token for one model family."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    input_above: float | None = None
    output_above: float | None = None
    cache_write_above: float | None = None
    cache_read_above: float | None = None

    @classmethod
    def from_table(cls, row: dict[str, float]) -> Price:
        def per_token(name: str) -> float | None:
            value = row.get(name)
            return None if value is None else value / PER_MILLION

        base_input = row["input"] / PER_MILLION
        return cls(
            input=base_input,
            output=row["output"] / PER_MILLION,
            cache_write=per_token("cache_write") or 1.25 * base_input,
            cache_read=per_token("cache_read") or 0.1 * base_input,
            input_above=per_token("input_above_200k"),
            output_above=per_token("output_above_200k"),
            cache_write_above=per_token("cache_write_above_200k"),
            cache_read_above=per_token("cache_read_above_200k"),
        )


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
        families: dict[str, dict[str, float]],
        exact: dict[str, dict[str, float]] | None = None,
        fast_multipliers: dict[str, float] | None = None,
    ):
        self._families = {name: Price.from_table(row) for name, row in families.items()}
        self._exact = {name: Price.from_table(row) for name, row in (exact or {}).items()}
        # Longest family first, so claude-opus-4-1 wins over claude-opus-4.
        self._ordered = sorted(self._families, key=len, reverse=True)
        self._fast = dict(fast_multipliers or {})
        self.lookup = lru_cache(maxsize=1024)(self._lookup)
        self.fast_multiplier = lru_cache(maxsize=1024)(self._fast_multiplier)

    @classmethod
    def load(
        cls, pricing_file: Path | None = None, overrides: dict[str, dict[str, float]] | None = None
    ) -> PriceBook:
        if pricing_file is not None:
            data: dict[str, Any] = json.loads(pricing_file.read_text(encoding="utf-8"))
        else:
            shipped = resources.files("agentwatch.sentinels.token_ledger") / "pricing.json"
            data = json.loads(shipped.read_text(encoding="utf-8"))
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

    def _lookup(self, model: str) -> Price | None:
        found = self._exact.get(model) or self._families.get(model)
        if found is not None:
            return found
        model = _normalise(model)
        found = self._exact.get(model)
        if found is not None:
            return found
        for family in self._ordered:
            if not model.startswith(family):
                continue
            rest = model[len(family) :]
            if not rest:
                return self._families[family]
            if rest[0] in "[@":
                return self._families[family]
            if rest[0] == "-" and len(rest) > 1:
                tail = rest[1:]
                if _DATE.match(tail) or not tail[0].isdigit():
                    return self._families[family]
            return None  # e.g. claude-opus-4-9: an unknown minor version, not a neighbour
        return None

    def cost(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cache_read: int,
        cache_write_5m: int,
        cache_write_1h: int,
        fast: bool,
    ) -> float | None:
        """USD for one request, or None when the model has no price."""
        price = self.lookup(model)
        if price is None:
            return None
        total = (
            _tiered(input_tokens, price.input, price.input_above)
            + _tiered(output_tokens, price.output, price.output_above)
            + _tiered(cache_read, price.cache_read, price.cache_read_above)
            + _tiered(cache_write_5m, price.cache_write, price.cache_write_above)
            + _tiered(cache_write_1h, 2 * price.input, _double(price.input_above))
        )
        return total * self.fast_multiplier(model) if fast else total
