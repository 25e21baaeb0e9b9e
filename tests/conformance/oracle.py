"""An independent price oracle for the requests where the ledger deliberately differs from
ccusage: the long-context rule of Sonnet 4 and Sonnet 4.5, and models ccusage 20.0.24 leaves
unpriced (docs/ledger-rules.md, differences 7 and 8).

Written from Anthropic's pricing page, not from the ledger's pricing.py or pricing.json:
https://docs.anthropic.com/en/docs/about-claude/pricing (the stored copy shows no date), whose
long-context table for these models reads

    ≤ 200K input tokens | > 200K input tokens
    Input: $3 / MTok    | Input: $6 / MTok
    Output: $15 / MTok  | Output: $22.50 / MTok

with the page's prompt-caching multipliers on the input price (5-minute write 1.25x, 1-hour
write 2x, cache hit 0.1x). The threshold counts the request's input: input tokens, cache reads
and cache writes; once it is exceeded, every token of the request is billed at the right-hand
column. ccusage instead charges only the part of each token class above 200,000 at the higher
rate (`marginal` below, its rule as docs/ledger-rules.md states it), so a request differs when
its input exceeds 200k or one of its classes does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

THRESHOLD = 200_000
PER_MILLION = 1e6
# USD per million tokens: (input, output), below and above the threshold.
BASE = (3.0, 15.0)
LONG = (6.0, 22.5)
FAMILIES = ("claude-sonnet-4-5", "claude-sonnet-4")  # the page names these, longest first
_DATE = re.compile(r"-\d{8}")


@dataclass(frozen=True)
class Request:
    """One counted response as the page prices it, and where it sits in ccusage's report:
    the day (YYYY-MM-DD) and model id of a cell that holds this request alone."""

    day: str
    model: str
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_5m: int = 0
    cache_1h: int = 0

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_5m + self.cache_1h

    @property
    def tokens(self) -> int:
        return self.prompt + self.output


def governed(model: str) -> bool:
    """Is this an Anthropic API id of Sonnet 4 or 4.5 (with a provider prefix, a date, `[1m]`
    or a word suffix)? Cloud providers' ids (Bedrock's `anthropic.` and `:` forms, Vertex's
    `@` ones) are priced by their own tables, not by this page."""
    if "@" in model or ":" in model or "anthropic." in model:
        return False
    name = re.sub(r"(\d)\.(\d)", r"\1-\2", model.rsplit("/", 1)[-1])
    for family in FAMILIES:
        if not name.startswith(family):
            continue
        rest = name[len(family) :]
        if not rest or rest[0] == "[" or _DATE.match(rest):
            return True
        return rest[0] == "-" and len(rest) > 1 and not rest[1].isdigit()
    return False


def _rates(row: tuple[float, float]) -> tuple[float, float, float, float, float]:
    """input, output, cache read, 5-minute write, 1-hour write; USD per token."""
    inp, out = row[0] / PER_MILLION, row[1] / PER_MILLION
    return inp, out, 0.1 * inp, 1.25 * inp, 2 * inp


def anthropic(request: Request) -> float:
    """USD the page bills for the request."""
    inp, out, read, five, hour = _rates(LONG if request.prompt > THRESHOLD else BASE)
    return (request.input * inp + request.output * out + request.cache_read * read
            + request.cache_5m * five + request.cache_1h * hour)  # fmt: skip


def marginal(request: Request) -> float:
    """USD by ccusage's rule: per class, the tokens above 200,000 at the higher rate."""
    base, long = _rates(BASE), _rates(LONG)
    counts = (request.input, request.output, request.cache_read, request.cache_5m,
              request.cache_1h)  # fmt: skip
    total = 0.0
    for count, low, high in zip(counts, base, long, strict=True):
        total += min(count, THRESHOLD) * low + max(count - THRESHOLD, 0) * high
    return total


def differs(request: Request) -> bool:
    """Would ccusage price this request differently from the page?"""
    big = max(request.input, request.output, request.cache_read, request.cache_5m,
              request.cache_1h)  # fmt: skip
    return governed(request.model) and (request.prompt > THRESHOLD or big > THRESHOLD)


# Models ccusage 20.0.24 leaves at $0, with the rates of their Anthropic page (USD per
# million tokens: input, output, 5-minute write, 1-hour write, cache read). Claude Code 2.1.328
# uses Opus 5.5 by default. https://platform.claude.com/docs/zh-CN/models/opus-5-5/overview
# (no date on the stored page): "Input $4 / MTok, Output $20 / MTok, 5m cache write $5 / MTok,
# 1h cache write $8 / MTok, Cache read $0.20 / MTok".
UNPRICED_BY_CCUSAGE = {"claude-opus-5-5": (4.0, 20.0, 5.0, 8.0, 0.20)}


def page_price(model: str, usage: dict[str, Any]) -> float | None:
    """USD for an API usage object of a model ccusage leaves unpriced; None for others."""
    rates = UNPRICED_BY_CCUSAGE.get(model)
    if rates is None:
        return None
    split = usage.get("cache_creation") or {}
    counts = (
        usage["input_tokens"],
        usage["output_tokens"],
        split.get("ephemeral_5m_input_tokens", usage.get("cache_creation_input_tokens", 0)),
        split.get("ephemeral_1h_input_tokens", 0),
        usage.get("cache_read_input_tokens", 0),
    )
    return sum(count * rate for count, rate in zip(counts, rates, strict=True)) / PER_MILLION
