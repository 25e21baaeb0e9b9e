"""Prices: families, dated ids, the 200k tier, 1-hour cache writes, fast mode, unknowns."""

from __future__ import annotations

import pytest

from agentwatch.sentinels.token_ledger.pricing import PriceBook

BOOK = PriceBook.load()


def _cost(model: str, **usage: int) -> float | None:
    args = {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read": 0,
        "cache_write_5m": 0,
        "cache_write_1h": 0,
        "fast": False,
    }
    args.update(usage)
    return BOOK.cost(model, **args)  # type: ignore[arg-type]


def test_reference_example() -> None:
    cost = _cost(
        "claude-sonnet-4-5-20250929",
        input_tokens=1000,
        output_tokens=500,
        cache_write_5m=2000,
        cache_read=10000,
    )
    assert cost == pytest.approx(0.021)


@pytest.mark.parametrize(
    ("model", "per_million_input"),
    [
        ("claude-opus-4-5-20251101", 5),
        ("claude-opus-4-1-20250805", 15),
        ("claude-opus-4-20250514", 15),
        ("claude-sonnet-4-6", 3),
        ("claude-haiku-4-5-20251001", 1),
        ("claude-3-5-haiku-20241022", 0.8),
        ("claude-sonnet-4-5-thinking", 3),
        ("anthropic/claude-sonnet-4.5", 3),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 3.3),
    ],
)
def test_families_and_ids(model: str, per_million_input: float) -> None:
    assert _cost(model, input_tokens=100_000) == pytest.approx(per_million_input / 10)


@pytest.mark.parametrize(
    "model", ["claude-opus-4-9", "claude-opus-4-0", "Claude-Sonnet-4-5", "foo", "unknown"]
)
def test_unknown_models_are_not_guessed(model: str) -> None:
    assert _cost(model, input_tokens=1000) is None


def test_long_context_tier_is_per_class_and_marginal() -> None:
    at = _cost("claude-sonnet-4-5-20250929", input_tokens=200_000)
    above = _cost("claude-sonnet-4-5-20250929", input_tokens=200_001)
    assert at == pytest.approx(0.6) and above == pytest.approx(0.6 + 6e-6)
    split = _cost("claude-sonnet-4-5-20250929", input_tokens=150_000, cache_read=150_000)
    assert split == pytest.approx(0.45 + 0.045)  # no class is above 200k: no tier
    assert _cost("claude-sonnet-4-5@20250929", input_tokens=300_000) == pytest.approx(0.9)
    assert _cost("claude-opus-4-5", input_tokens=300_000) == pytest.approx(1.5)


def test_one_hour_cache_write_costs_twice_input() -> None:
    assert _cost("claude-sonnet-4-5", cache_write_1h=100_000) == pytest.approx(0.6)
    assert _cost("claude-sonnet-4-5", cache_write_5m=100_000) == pytest.approx(0.375)
    # Above 200k the 1-hour part tiers at twice the long-context input price.
    assert _cost("claude-sonnet-4-5", cache_write_1h=300_000) == pytest.approx(1.2 + 1.2)


def test_fast_multiplier() -> None:
    base = _cost("claude-opus-4-6", input_tokens=1_000_000)
    assert _cost("claude-opus-4-6", input_tokens=1_000_000, fast=True) == pytest.approx(6 * base)
    assert _cost("claude-opus-4-8", input_tokens=1_000_000, fast=True) == pytest.approx(2 * base)
    assert _cost("claude-sonnet-4-5", input_tokens=100_000, fast=True) == pytest.approx(0.3)


def test_config_overrides_win() -> None:
    book = PriceBook.load(overrides={"my-model": {"input": 2, "output": 4}})
    assert book.cost("my-model", 1_000_000, 0, 1_000_000, 0, 0, False) == pytest.approx(2.2)
