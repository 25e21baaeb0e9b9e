"""The small rules ccusage 20.0.24 shares across its agent adapters, in Python.

The readers of the agents added after Codex, Gemini and OpenCode (pi, Amp, OpenClaw, ...) are
each a page of ccusage's Rust (rust/crates/ccusage/src/adapter/<agent>/parser.rs); the helpers
they all call live here, each named after its Rust original (utils.rs, date_utils.rs,
cost.rs, claude/paths.rs), so that a reader reads like its source.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import ReadResult

U64_MAX = 2**64 - 1
TIER_THRESHOLD = 200_000  # cost.rs tiered_cost
# What Rust's str::trim removes (Unicode White_Space); Python's strip() also takes \x1c-\x1f.
RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)


# ----------------------------------------------------------------------------- JSON values


def as_u64(value: Any) -> int:
    """utils.rs json_value_u64: a JSON integer from 0 to 2^64-1, else 0 (floats, negatives,
    strings and booleans are 0, as serde_json's as_u64 gives None for them)."""
    if type(value) is int and 0 <= value <= U64_MAX:
        return value
    return 0


def as_i64(value: Any) -> int | None:
    """serde_json's as_i64: a JSON integer within i64."""
    if type(value) is int and -(2**63) <= value < 2**63:
        return value
    return None


def as_f64(value: Any) -> float | None:
    """serde_json's as_f64: any JSON number (an integer too), never a boolean."""
    if type(value) in (int, float):
        try:
            return float(value)
        except OverflowError:
            return None
    return None


def text(value: Any) -> str | None:
    """utils.rs non_empty_json_string: a string, trimmed, when something is left."""
    if not isinstance(value, str):
        return None
    value = value.strip(RUST_WHITESPACE)
    return value or None


def loads(data: str | bytes) -> Any:
    """json.loads that raises ValueError for anything serde_json would refuse that Python
    takes (NaN, Infinity) and for nesting past Python's limit."""

    def refuse(constant: str) -> Any:
        raise ValueError(constant)

    try:
        return json.loads(data, parse_constant=refuse)
    except RecursionError as error:
        raise ValueError("too deep") from error


# ----------------------------------------------------------------------------- time


def _digits(part: str) -> int | None:
    return int(part) if part.isascii() and part.isdigit() else None


def parse_ts(value: str) -> float | None:
    """date_utils.rs parse_ts_timestamp: `YYYY-MM-DDTHH:MM:SS[.mmm](Z|±HH:MM)` exactly
    (20, 24, 25 or 29 bytes), epoch seconds; anything else None."""
    raw = value.encode("utf-8", "surrogatepass")
    size = len(raw)
    if size in (20, 25) and raw[19:20] in (b"Z", b"+", b"-"):
        millis, zone_at = 0, 19
    elif size in (24, 29) and raw[19:20] == b".":
        parsed = _digits(raw[20:23].decode("latin-1"))
        if parsed is None:
            return None
        millis, zone_at = parsed, 23
    else:
        return None
    if (raw[4:5], raw[7:8], raw[10:11], raw[13:14], raw[16:17]) != (b"-", b"-", b"T", b":", b":"):
        return None
    spans = ((0, 4), (5, 7), (8, 10), (11, 13), (14, 16), (17, 19))
    fields = [_digits(raw[a:b].decode("latin-1")) for a, b in spans]
    if any(field is None for field in fields):
        return None
    year, month, day, hour, minute, second = (int(field or 0) for field in fields)
    if hour > 23 or minute > 59 or second > 59:
        return None
    zone = raw[zone_at:]
    if zone == b"Z":
        offset = 0
    else:
        if len(zone) != 6 or zone[0:1] not in (b"+", b"-") or zone[3:4] != b":":
            return None
        hours, minutes = _digits(zone[1:3].decode("latin-1")), _digits(zone[4:6].decode("latin-1"))
        if hours is None or minutes is None:
            return None
        offset = (hours * 60 + minutes) * (1 if zone[0:1] == b"+" else -1)
    days = _days_from_civil(year, month, day)
    if days is None:
        return None
    millis_total = (((days * 24 + hour) * 60 + minute) * 60 + second) * 1000 + millis
    return (millis_total - offset * 60_000) / 1000


def _days_from_civil(year: int, month: int, day: int) -> int | None:
    """Days since 1970-01-01 of a valid proleptic Gregorian date (date_utils.rs IsoDate)."""
    if not 1 <= month <= 12:
        return None
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    length = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
    if not 1 <= day <= length:
        return None
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


# ----------------------------------------------------------------------------- tokens


def total_fallback(
    input: int, output: int, cache_creation: int, cache_read: int, total: int, extra: int = 0
) -> tuple[int, int]:
    """utils.rs apply_total_token_fallback: tokens a stated total holds beyond the parts are
    output when output is 0, else `extra` (counted in the total, in no class); returns
    (output, extra)."""
    known = min(input + output + cache_creation + cache_read + extra, U64_MAX)
    missing = max(total - known, 0)
    if missing == 0:
        return output, extra
    if output == 0:
        return missing, extra
    return output, min(extra + missing, U64_MAX)


def response_key(agent: str, *identity: object) -> str:
    """A record's dedup key: the agent and a hash of what identifies it (no text kept)."""
    digest = hashlib.sha256("\x00".join(map(str, identity)).encode("utf-8", "surrogatepass"))
    return f"{agent}:{digest.hexdigest()[:32]}"


# ----------------------------------------------------------------------------- where


def env_roots(
    env: Mapping[str, str], name: str, defaults: list[Path], blank_means_unset: bool = True
) -> list[Path]:
    """A comma-separated list of folders in `name` (each trimmed, existing, once), else the
    defaults that exist. ccusage's adapters differ on a set but blank variable: most treat it
    as unset (`blank_means_unset`), Amp's reads it and finds no folder."""
    raw = env.get(name)
    if raw is not None and (raw.strip(RUST_WHITESPACE) or not blank_means_unset):
        found: list[Path] = []
        for part in raw.split(","):
            part = part.strip(RUST_WHITESPACE)
            path = Path(part)
            if part and path.is_dir() and path not in found:
                found.append(path)
        return found
    return [path for path in defaults if path.is_dir()]


def walk(root: Path, wanted: Callable[[str], bool]) -> list[Path]:
    """claude/paths.rs collect_files_with_extension: every regular file below root whose
    name `wanted` takes; symlinks (to files or folders) are neither followed nor read."""
    found: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False):
                    if wanted(entry.name):
                        found.append(Path(entry.path))
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
            except OSError:
                continue
    return sorted(found)


def extension(suffix: str) -> Callable[[str], bool]:
    """A name whose last extension is `suffix` (Rust's Path::extension: not a dotfile)."""

    def wanted(name: str) -> bool:
        stem, dot, ext = name.rpartition(".")
        return bool(dot and stem and ext == suffix)

    return wanted


# ----------------------------------------------------------------------------- prices


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per token of one model, as ccusage's cost.rs applies them."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    input_above_200k: float | None = None
    output_above_200k: float | None = None
    cache_read_above_200k: float | None = None
    cache_write_above_200k: float | None = None


def tiered(tokens: int, base: float, above: float | None) -> float:
    """cost.rs tiered_cost: each class's tokens past 200,000 at the higher rate."""
    if tokens == 0:
        return 0.0
    if above is not None and tokens > TIER_THRESHOLD:
        return TIER_THRESHOLD * base + (tokens - TIER_THRESHOLD) * above
    return tokens * base


class PriceTable:
    """An agent's `<agent>_prices.json`: `models` (USD per million tokens, each entry with
    its source) and `aliases` (a name as the files write it -> a model of the table). A
    model found in neither is unpriced: None, never a guess."""

    def __init__(self, path: Path) -> None:
        data = json.loads(path.read_text())
        self.models = {name: self._rates(entry) for name, entry in data["models"].items()}
        self.aliases: dict[str, str] = dict(data.get("aliases", {}))

    @staticmethod
    def _rates(entry: Mapping[str, Any]) -> Rates:
        def rate(name: str) -> float | None:
            value = entry.get(name)
            return None if value is None else float(value) / 1_000_000

        return Rates(
            input=rate("input") or 0.0,
            output=rate("output") or 0.0,
            cache_read=rate("cache_read") or 0.0,
            cache_write=rate("cache_write") or 0.0,
            input_above_200k=rate("input_above_200k"),
            output_above_200k=rate("output_above_200k"),
            cache_read_above_200k=rate("cache_read_above_200k"),
            cache_write_above_200k=rate("cache_write_above_200k"),
        )

    def rates(self, model: str) -> Rates | None:
        return self.models.get(model) or self.models.get(self.aliases.get(model, ""))

    def cost(
        self, model: str, input: int, output: int, cache_read: int, cache_write: int
    ) -> float | None:
        """cost.rs calculate_cost_from_tokens for a model of the table; None: unpriced."""
        rates = self.rates(model)
        if rates is None:
            return None
        return (
            tiered(input, rates.input, rates.input_above_200k)
            + tiered(output, rates.output, rates.output_above_200k)
            + tiered(cache_write, rates.cache_write, rates.cache_write_above_200k)
            + tiered(cache_read, rates.cache_read, rates.cache_read_above_200k)
        )


def read_utf8(path: Path, result: ReadResult) -> str | None:
    """A file's text, or None with its reject counted: `unreadable`, or `not_utf8` (ccusage
    stops its whole report on such a file; the ledger skips just that file)."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError:
        result.reject("unreadable")
    except UnicodeDecodeError:
        result.reject("not_utf8")
    return None
