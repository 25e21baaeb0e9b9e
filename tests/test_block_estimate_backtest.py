"""The block limit's estimate without an official reading, back-tested on the rules' history.

The four days of tests/test_rules_backtest.py (its token spend per minute: the working day's
fresh tokens and cache reads, the daily context load, the day-2 burn and the day-1 retry loop)
are cut into 5-hour blocks by the ledger's own block builder, and at every block's start the
limit is estimated from the blocks completed before it, as the ledger exports it: the largest
(`max_block`, ccusage's `--token-limit max`) and the 90th percentile (`p90_block`, the
default). What the history shows: the burn block becomes the largest and sets the maximum for
good, the percentile stays under it; both call a full working block full (the quota buckets
see it); and the percentile's exclusive method (Claude-Code-Usage-Monitor's) would overshoot
the largest block while there are few, which the inclusive method never does.
"""

from __future__ import annotations

import statistics

from agentwatch.sentinels.token_ledger import blocks, estimate
from tests import test_rules_backtest as history

BASE_MINUTE = 20_000 * 1440  # 2024-10-04 00:00 UTC: the history starts at midnight
FULL = 0.95  # used share at which a block counts as full (above quota_critical_ratio)


def history_blocks() -> list[blocks.Block]:
    """The history's spend as the ledger's minute buckets, cut into 5-hour blocks."""
    minutes = []
    for step in range(1, history.STEPS + 1):
        fresh, cache_reads = history.tokens_per_minute(step)
        loop = 700_000 if history.RETRY[0] <= step < history.RETRY[0] + history.RETRY[1] else 0
        if fresh + cache_reads + loop:
            minute = BASE_MINUTE + step
            minutes.append((minute, minute * 60_000 - 30_000, fresh + cache_reads + loop))
    return blocks.build(minutes)


def hour_of(block: blocks.Block) -> tuple[int, int]:
    """(day, hour) of a block's start in the history."""
    minute = block.start_ms // 60_000 - BASE_MINUTE
    return minute // 1440, minute % 1440 // 60


def test_the_percentile_is_not_set_by_the_burn_and_still_sees_full_blocks() -> None:
    found = history_blocks()
    assert [hour_of(b) for b in found] == [(d, h) for d in range(4) for h in (7, 12, 17)]
    burn = max(found, key=lambda b: b.tokens)
    assert hour_of(burn) == (2, 12)  # the day-2 afternoon, with the 45-minute burn
    for index in range(1, len(found)):
        done = [b.tokens for b in found[:index]]
        largest = estimate.block_limit(0, "none", "max", done)
        p90 = estimate.block_limit(0, "none", "p90", done)
        assert largest is not None and largest[1] == "max_block"
        assert p90 is not None and p90[1] == "p90_block"
        assert p90[0] <= largest[0]  # never above the largest block
        if burn in found[:index]:
            assert largest[0] == burn.tokens > p90[0]  # the outlier sets the maximum for good
        block = found[index]
        if hour_of(block)[1] == 12 and index >= 4:  # a full working afternoon, history known
            assert block.tokens / p90[0] >= block.tokens / largest[0] >= FULL


def test_the_exclusive_percentile_would_overshoot_the_largest_block() -> None:
    """After the first two blocks (494 M, 615 M tokens) statistics.quantiles' default method
    puts the 90th percentile at 699 M, above either block; the estimate stays within them."""
    done = [b.tokens for b in history_blocks()[:2]]
    exclusive = statistics.quantiles(done, n=10)[8]
    assert exclusive > max(done)
    assert min(done) <= (estimate.p90(done) or 0) <= max(done)


def test_a_configured_limit_wins_then_the_plan_then_the_blocks() -> None:
    done = [100.0, 300.0, 200.0]
    assert estimate.block_limit(5000, "max5", "p90", done) == (5000.0, "config")
    assert estimate.block_limit(0, "max5", "p90", done) == (88_000.0, "plan")
    assert estimate.block_limit(0, "pro", "max", []) == (44_000.0, "plan")
    assert estimate.block_limit(0, "max20", "max", []) == (220_000.0, "plan")
    assert estimate.block_limit(0, "none", "max", done) == (300.0, "max_block")
    assert estimate.block_limit(0, "none", "p90", done) == (280.0, "p90_block")
    assert estimate.block_limit(0, "none", "p90", []) is None
