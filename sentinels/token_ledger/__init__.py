"""The token ledger: tokens, cost and API errors from Claude Code transcripts, counted once."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentwatch.core.config import (
    Key,
    choice,
    duration,
    int_range,
    missing_path,
    non_negative_number,
    optional_path,
)
from agentwatch.sentinels.contract import Context, Sentinel

if TYPE_CHECKING:
    from agentwatch.core.loop import Work

PRICE_KEYS = (
    "input",
    "output",
    "cache_write",
    "cache_read",
    "input_above_200k",
    "output_above_200k",
    "cache_write_above_200k",
    "cache_read_above_200k",
    "fast_multiplier",
)


def price_table(value: Any) -> dict[str, dict[str, float]]:
    """Model -> {input, output, cache_write, cache_read, ...} in USD per million tokens."""
    if not isinstance(value, Mapping):
        raise ValueError("expected a mapping of model name to prices")
    table: dict[str, dict[str, float]] = {}
    for model, prices in value.items():
        if not isinstance(prices, Mapping):
            raise ValueError(f"{model}: expected a mapping of prices")
        unknown = set(prices) - set(PRICE_KEYS)
        if unknown:
            raise ValueError(f"{model}: unknown price key(s) {', '.join(sorted(unknown))}")
        for name, price in prices.items():
            if isinstance(price, bool) or not isinstance(price, int | float) or price < 0:
                raise ValueError(f"{model}.{name}: expected a non-negative number")
        if "input" not in prices or "output" not in prices:
            raise ValueError(f"{model}: 'input' and 'output' prices are required")
        table[str(model)] = {name: float(price) for name, price in prices.items()}
    return table


def minutes_map(value: Any) -> dict[str, float]:
    """Project folder name -> minutes (a per-project time-box; 0 switches it off)."""
    if not isinstance(value, Mapping):
        raise ValueError("expected a mapping of project name to minutes")
    found: dict[str, float] = {}
    for project, minutes in value.items():
        if not isinstance(project, str) or not project or len(project) > 255:
            raise ValueError("project names must be non-empty strings")
        if isinstance(minutes, bool) or not isinstance(minutes, int | float) or minutes < 0:
            raise ValueError(f"{project}: expected a non-negative number of minutes")
        found[project] = float(minutes)
    return found


def pricing_file(value: Any) -> Path | None:
    """A price table replacing the shipped one, refused with its problem when it exists and
    cannot be priced from (a missing file only warns: it may be created later)."""
    path = optional_path(value)
    if path is None or not path.is_file():
        return path
    from agentwatch.sentinels.token_ledger.pricing import PriceBook

    try:
        PriceBook.load(path)
    except (OSError, ValueError, KeyError, TypeError) as error:  # PricingError is a ValueError
        detail = f"missing key {error}" if isinstance(error, KeyError) else str(error)
        raise ValueError(f"{path}: not a usable price table: {detail}") from None
    return path


def _build(context: Context) -> Work:
    from agentwatch.sentinels.token_ledger.main import TokenLedger

    return TokenLedger(context)


SENTINEL = Sentinel(
    name="token-ledger",
    summary="tokens, cost and API errors from Claude Code transcripts",
    interval=60.0,
    keys={
        "reconcile_interval": Key(
            300.0, duration, "full rescan for changes inotify missed (events are instant)"
        ),
        "session_ttl": Key(7200.0, duration, "per-session series expire this long after activity"),
        "pricing_file": Key(
            None, pricing_file, "a JSON price table replacing the shipped one", missing_path
        ),
        "prices": Key({}, price_table, "per-model price overrides, USD per million tokens"),
        "progress_interval": Key(5.0, duration, "seconds between backfill progress lines"),
        "max_projects": Key(
            50, int_range(1, 1_000_000), "projects with series of their own; the rest show as other"
        ),
        "max_models": Key(
            25, int_range(1, 1_000_000), "models with series of their own; the rest show as other"
        ),
        "max_sessions": Key(
            100,
            int_range(1, 1_000_000),
            "recent sessions with series of their own (the rest: other)",
        ),
        "workers": Key(
            0, int_range(0, 64), "processes parsing a large backfill (0: up to 2 cores)"
        ),
        "block_token_limit": Key(
            0,
            int_range(0, 10**15),
            "tokens per 5-hour block (0: the plan's, else estimated from the completed blocks)",
        ),
        "plan": Key(
            "none",
            choice("none", "pro", "max5", "max20"),
            "subscription plan: its tokens per 5-hour block (pro 44k, max5 88k, max20 220k) "
            "when block_token_limit is 0",
        ),
        "block_limit_estimate": Key(
            "p90",
            choice("p90", "max"),
            "without a limit or plan: the 90th percentile or the largest of the completed blocks",
        ),
        "timebox_minutes": Key(
            0.0,
            non_negative_number,
            "each session's time-box from its first message, for "
            "agentwatch_session_deadline_timestamp_seconds (0: none)",
        ),
        "project_timebox_minutes": Key(
            {}, minutes_map, "time-boxes per project folder name, over timebox_minutes"
        ),
    },
    metrics=(
        "agentwatch_tokens_total",
        "agentwatch_cost_usd_total",
        "agentwatch_api_responses_total",
        "agentwatch_api_errors_total",
        "agentwatch_api_error_last_timestamp_seconds",
        "agentwatch_usage_limit_reset_timestamp_seconds",
        "agentwatch_session_tokens_total",
        "agentwatch_session_cost_usd_total",
        "agentwatch_session_first_activity_timestamp_seconds",
        "agentwatch_session_last_activity_timestamp_seconds",
        "agentwatch_session_deadline_timestamp_seconds",
        "agentwatch_ledger_files_tracked",
        "agentwatch_ledger_unread_bytes",
        "agentwatch_ledger_lines_read_total",
        "agentwatch_ledger_bytes_read_total",
        "agentwatch_ledger_lines_rejected_total",
        "agentwatch_ledger_duplicate_copies_total",
        "agentwatch_ledger_file_resets_total",
        "agentwatch_ledger_unpriced_tokens_total",
        "agentwatch_ledger_read_errors_total",
        "agentwatch_ledger_database_bytes",
        "agentwatch_ledger_roots",
        "agentwatch_ledger_roots_missing",
        "agentwatch_ledger_roots_polled",
        "agentwatch_ledger_store_full",
        "agentwatch_ledger_fast_scanner_available",
        "agentwatch_ledger_folded_series",
        "agentwatch_ledger_unreadable_dirs",
        "agentwatch_block_tokens",
        "agentwatch_block_start_timestamp_seconds",
        "agentwatch_block_end_timestamp_seconds",
        "agentwatch_block_limit_tokens",
        "agentwatch_block_session_tokens",
        "agentwatch_spend_usd",
        "agentwatch_run_started_timestamp_seconds",
        "agentwatch_ledger_commit_duration_seconds",
    ),
    build=_build,
)
