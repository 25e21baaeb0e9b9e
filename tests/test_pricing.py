"""Prices: families, dated ids, the 200k tier, 1-hour cache writes, fast mode, unknowns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentwatch.sentinels.token_ledger.pricing import PriceBook, PricingError

BOOK = PriceBook.load()


def _cost(model: str, at: float | None = None, **usage: int) -> float | None:
    args = {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read": 0,
        "cache_write_5m": 0,
        "cache_write_1h": 0,
        "fast": False,
    }
    args.update(usage)
    return BOOK.cost(model, **args, at=at)  # type: ignore[arg-type]


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


def test_long_context_bills_the_whole_request_at_premium_rates() -> None:
    """Anthropic's rule: input + cache reads + writes above 200k reprices every token."""
    sonnet = "claude-sonnet-4-5-20250929"
    assert _cost(sonnet, input_tokens=300_000) == pytest.approx(1.80)  # the example
    assert _cost(sonnet, input_tokens=200_000) == pytest.approx(0.6)  # not above: base
    assert _cost(sonnet, input_tokens=200_001) == pytest.approx(200_001 * 6e-6)
    split = _cost(sonnet, input_tokens=150_000, cache_read=150_000, output_tokens=1000)
    assert split == pytest.approx(150_000 * 6e-6 + 150_000 * 0.6e-6 + 1000 * 22.5e-6)
    # Output does not count toward the threshold (and costs the base rate below it).
    assert _cost(sonnet, input_tokens=1000, output_tokens=300_000) == pytest.approx(
        1000 * 3e-6 + 300_000 * 15e-6
    )
    assert _cost("claude-sonnet-4-20250514[1m]", cache_write_5m=250_000) == pytest.approx(
        250_000 * 7.5e-6
    )
    # Cloud-provider ids keep the reference reader's table: marginal per class, or none.
    bedrock = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    marginal = 200_000 * 3.3e-6 + 100_000 * 6.6e-6
    assert _cost(bedrock, input_tokens=300_000) == pytest.approx(marginal)
    assert _cost("claude-sonnet-4-5@20250929", input_tokens=300_000) == pytest.approx(0.9)
    assert _cost("claude-opus-4-5", input_tokens=300_000) == pytest.approx(1.5)  # no premium


def test_haiku_5_5_prompt_band_reprices_the_request() -> None:
    assert _cost("claude-haiku-5-5", input_tokens=100_000, output_tokens=1000) == pytest.approx(
        100_000 * 0.1e-6 + 1000 * 0.5e-6
    )
    above = _cost("claude-haiku-5-5", input_tokens=1, cache_read=100_000, output_tokens=1000)
    assert above == pytest.approx(1 * 0.5e-6 + 100_000 * 0.05e-6 + 1000 * 2.5e-6)


def test_dated_entries_price_a_line_by_its_timestamp() -> None:
    before, after = 1_790_000_000.0, 1_800_000_000.0  # 2026-09-21 and 2027-01-15
    cut = _stamp("2026-10-07")
    kwargs = {"cache_read": 1_000_000}
    assert _cost("claude-sonnet-5-5", at=before, **kwargs) == pytest.approx(0.2)
    assert _cost("claude-sonnet-5-5", at=cut - 0.001, **kwargs) == pytest.approx(0.2)
    assert _cost("claude-sonnet-5-5", at=cut, **kwargs) == pytest.approx(0.1)
    assert _cost("claude-sonnet-5-5", at=after, **kwargs) == pytest.approx(0.1)
    assert _cost("claude-sonnet-5-5", **kwargs) == pytest.approx(0.1)  # no time: the newest
    assert _cost("claude-sonnet-5-5-20261001[1m]", at=before, **kwargs) == pytest.approx(0.2)


def test_sonnet_4_6_had_a_long_context_premium_until_march_13_2026() -> None:
    day = _stamp("2026-03-13")
    assert _cost("claude-sonnet-4-6", at=day - 1, input_tokens=300_000) == pytest.approx(1.8)
    assert _cost("claude-sonnet-4-6", at=day, input_tokens=300_000) == pytest.approx(0.9)


def _stamp(day: str) -> float:
    import calendar
    import time

    return float(calendar.timegm(time.strptime(day, "%Y-%m-%d")))


@pytest.mark.parametrize(
    ("model", "per_million_input", "per_million_cache_read"),
    [
        ("claude-fable-5-1-20260901", 10, 0.25),  # a newer minor version's dated id
        ("claude-fable-5-1[1m]", 10, 0.25),
        ("claude-fable-5", 10, 1.0),
        ("claude-opus-5-5[1m]", 4, 0.2),
        ("claude-opus-5-5-20260922", 4, 0.2),
        ("claude-fable-5-2", 8, 0.2),
        ("claude-mythos-5-2-20261120", 8, 0.2),
        ("claude-mythos-5-1", 10, 0.25),
    ],
)
def test_suffixed_ids_resolve_to_their_own_model(
    model: str, per_million_input: float, per_million_cache_read: float
) -> None:
    assert _cost(model, input_tokens=100_000) == pytest.approx(per_million_input / 10)
    assert _cost(model, cache_read=100_000) == pytest.approx(per_million_cache_read / 10)


@pytest.mark.parametrize(
    ("model", "multiplier"),
    [("claude-opus-4-6", 6), ("claude-opus-4-7", 6), ("claude-opus-4-8", 2),
     ("claude-opus-5", 2), ("claude-opus-5-5[1m]", 2), ("claude-sonnet-5-5", 1)],
)  # fmt: skip
def test_fast_multiplier_per_model(model: str, multiplier: float) -> None:
    base = _cost(model, input_tokens=1_000_000)
    assert _cost(model, input_tokens=1_000_000, fast=True) == pytest.approx(multiplier * base)


def test_bad_pricing_files_say_what_is_wrong(tmp_path: Path) -> None:
    bad = tmp_path / "prices.json"
    bad.write_text(json.dumps({"models": {"m": [{"input": 1, "output": 2, "from": "1/2/2026"}]}}))
    with pytest.raises(PricingError, match="m: dates are YYYY-MM-DD"):
        PriceBook.load(bad)
    overlap = [{"input": 1, "output": 2, "until": "2026-02-01"},
               {"input": 1, "output": 2, "from": "2026-01-01"}]  # fmt: skip
    bad.write_text(json.dumps({"models": {"m": overlap}}))
    with pytest.raises(PricingError, match="m: dated entries overlap"):
        PriceBook.load(bad)
    bad.write_text(json.dumps({"models": {"m": {"output": 2}}}))
    with pytest.raises(PricingError, match="m: bad price entry"):
        PriceBook.load(bad)


def test_one_hour_cache_write_costs_twice_input() -> None:
    assert _cost("claude-sonnet-4-5", cache_write_1h=100_000) == pytest.approx(0.6)
    assert _cost("claude-sonnet-4-5", cache_write_5m=100_000) == pytest.approx(0.375)
    # Above 200k the whole request, 1-hour part included, is at the long-context rates.
    assert _cost("claude-sonnet-4-5", cache_write_1h=300_000) == pytest.approx(300_000 * 12e-6)


def test_fast_multiplier() -> None:
    base = _cost("claude-opus-4-6", input_tokens=1_000_000)
    assert _cost("claude-opus-4-6", input_tokens=1_000_000, fast=True) == pytest.approx(6 * base)
    assert _cost("claude-opus-4-8", input_tokens=1_000_000, fast=True) == pytest.approx(2 * base)
    assert _cost("claude-sonnet-4-5", input_tokens=100_000, fast=True) == pytest.approx(0.3)


def test_config_overrides_win() -> None:
    book = PriceBook.load(overrides={"my-model": {"input": 2, "output": 4}})
    assert book.cost("my-model", 1_000_000, 0, 1_000_000, 0, 0, False) == pytest.approx(2.2)


def test_a_configured_pricing_file_is_checked_when_the_config_loads(tmp_path: Path) -> None:
    from agentwatch.core import config
    from agentwatch.sentinels import registry

    table = tmp_path / "prices.json"
    settings = tmp_path / "c.yaml"
    settings.write_text(f"sentinels:\n  token-ledger:\n    pricing_file: {table}\n")
    table.write_text(json.dumps({"models": {"m": {"input": 1, "output": 2, "fast_multiplier": 3}}}))
    loaded = registry.load_config(settings).sentinel("token-ledger")
    book = PriceBook.load(loaded["pricing_file"], loaded["prices"])
    assert book.cost("m", 1_000_000, 0, 0, 0, 0, True) == pytest.approx(3.0)  # fast x3
    for bad, problem in [("[1]", "a 'models' object"), ("{", "Expecting property name"),
                         ('{"models": {"m": {"input": 1}}}', "m: bad price entry")]:  # fmt: skip
        table.write_text(bad)
        with pytest.raises(config.ConfigError) as caught:
            registry.load_config(settings)
        assert any(f"{table}: not a usable price table" in p and problem in p
                   for p in caught.value.problems), caught.value.problems  # fmt: skip
