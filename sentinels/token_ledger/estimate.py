"""How many tokens a 5-hour block may use when no official reading says so.

Claude Code's statusline gives the official share of the five_hour window only to subscription
logins, and only while a session renders. Without it, the block's limit is estimated, in this
order (the source is exported with the value):
- `config`: `block_token_limit` above 0, the user's own number;
- `plan`: the plan preset `plan: pro|max5|max20`, tokens per 5-hour block as
  Claude-Code-Usage-Monitor ships them (src/claude_monitor/core/plans.py, "Updated Oct 2025":
  pro 44,000, max5 88,000, max20 220,000);
- `p90_block`: the 90th percentile of the completed blocks (`block_limit_estimate: p90`, the
  default; Claude-Code-Usage-Monitor's custom plan takes `statistics.quantiles(n=10)[8]`, whose
  default exclusive method extrapolates past the largest block while there are few — 699 M
  after blocks of 494 M and 615 M in the back-test — so the inclusive method is used here: the
  estimate never exceeds the largest completed block);
- `max_block`: the largest completed block (`block_limit_estimate: max`, ccusage's
  `--token-limit max`). One outlier block — a burn, a day on a bigger plan — raises it for good,
  and every ordinary block then looks far from its limit; the percentile lets a tenth of the
  blocks be outliers (tests/test_block_estimate_backtest.py).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

PLAN_TOKENS = {"pro": 44_000, "max5": 88_000, "max20": 220_000}
PLANS = ("none", *PLAN_TOKENS)
ESTIMATES = ("p90", "max")


def p90(values: Sequence[float]) -> float | None:
    """The 90th percentile, interpolated between the values (never above the largest);
    None without values."""
    if not values:
        return None
    if len(values) == 1:
        return float(values[0])
    return float(statistics.quantiles(values, n=10, method="inclusive")[8])


def block_limit(
    configured: int, plan: str, estimate: str, completed: Sequence[float]
) -> tuple[float, str] | None:
    """(tokens a block may use, its source), or None while nothing is known."""
    if configured > 0:
        return float(configured), "config"
    if plan in PLAN_TOKENS:
        return float(PLAN_TOKENS[plan]), "plan"
    if not completed:
        return None
    if estimate == "max":
        return float(max(completed)), "max_block"
    value = p90(completed)
    return (value, "p90_block") if value is not None else None
