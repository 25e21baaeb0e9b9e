"""Goose's session database read the way `ccusage goose daily` 20.0.24 reads it
(rust/crates/ccusage/src/adapter/goose/{paths,loader,parser}.rs).

Goose keeps `~/.local/share/goose/sessions/sessions.db` (also under `Block/goose` and macOS's
Application Support), table `sessions`, one row per session with its running totals:
`accumulated_input_tokens` (else `input_tokens`), `accumulated_output_tokens` (else
`output_tokens`) and `accumulated_total_tokens` (else `total_tokens`, else their sum); a total
beyond input and output is reasoning, output here (ccusage: extra total tokens, priced as
output). A row needs a `model_config_json` naming a `model_name` and a `created_at` (epoch
seconds or ms, or a date and time), which dates the whole session. Nothing states a cost:
the model is priced as itself, else `<provider>/<model>`. A session counts once per
database; the key is the database and the session id, and the ledger adds what a session's
totals grew by.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ccusage_rules as rules
from .base import AgentUsage, ReadResult

AGENT = "goose"
DATA_DIR_ENV = "GOOSE_PATH_ROOT"
DATABASE = "sessions.db"
FOLDERS = (".local/share/goose/sessions", "Library/Application Support/goose/sessions",
           ".local/share/Block/goose/sessions")  # fmt: skip
PRICES = rules.PriceTable(Path(__file__).with_name("goose_prices.json"))
QUERY = """
SELECT id, model_config_json, provider_name, created_at, total_tokens, input_tokens,
       output_tokens, accumulated_total_tokens, accumulated_input_tokens,
       accumulated_output_tokens
FROM sessions
WHERE model_config_json IS NOT NULL AND TRIM(model_config_json) != ''
"""
_INTEGER = re.compile(r"[+-]?[0-9]+")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """GOOSE_PATH_ROOT's data/sessions (blank: unset) else the default folders; the folders
    whose sessions.db exists, each once."""
    raw = env.get(DATA_DIR_ENV, "").strip(rules.RUST_WHITESPACE)
    folders = [Path(raw) / "data" / "sessions"] if raw else [home / name for name in FOLDERS]
    found: list[Path] = []
    for folder in folders:
        try:
            folder = folder.resolve(strict=True)
        except OSError:
            continue
        if (folder / DATABASE).is_file() and folder not in found:
            found.append(folder)
    return found


def files(root: Path) -> list[Path]:
    path = root / DATABASE
    return [path] if path.is_file() else []


@dataclass(frozen=True, slots=True)
class GooseUsage(AgentUsage):
    """A session and the provider its second price candidate names."""

    provider: str = "goose"


def read_files(paths: Iterable[Path]) -> ReadResult:
    result = ReadResult()
    for path in paths:
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
                db.text_factory = lambda data: data.decode("utf-8", "surrogateescape")
                rows = db.execute(QUERY).fetchall()
        except sqlite3.Error:
            result.reject("unreadable")
            continue
        for row in rows:
            entry = _entry(row, path)
            if entry is not None:
                result.entries.append(entry)
    return result


def _as_int(value: Any) -> int:
    """What sqlite3_column_int64 makes of a value: NULL 0, a real truncated, text's leading
    integer."""
    if type(value) is int:
        return value
    if type(value) is float:
        return int(value) if abs(value) < 2**63 else 0
    if isinstance(value, (str, bytes)):
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        match = _INTEGER.match(text.lstrip())
        return int(match.group()) if match and abs(int(match.group())) < 2**63 else 0
    return 0


def _tokens(row: tuple[Any, ...], first: int, then: int) -> int | None:
    for index in (first, then):
        value = _as_int(row[index])
        if value > 0:
            return value
    return None


def parse_time(value: str) -> float | None:
    """parser.rs parse_goose_timestamp."""
    text = value.strip(rules.RUST_WHITESPACE)
    if not text:
        return None
    if _INTEGER.fullmatch(text):
        number = int(text)
        millis = number if number > 1_000_000_000_000 else number * 1000
        return millis / 1000 if 0 < millis < 2**63 else None
    parsed = rules.parse_ts(text)
    if parsed is not None:
        return parsed
    if len(text) == 19 and text[4] == "-" and text[7] == "-" and text[10] in " T":
        return rules.parse_ts(f"{text[:10]}T{text[11:]}Z")
    if len(text) == 10 and text[4] == "-" and text[7] == "-":
        return rules.parse_ts(f"{text}T00:00:00Z")
    return None


def _provider(name: Any, model: str) -> str:
    if isinstance(name, str) and name.strip(rules.RUST_WHITESPACE):
        return name.strip(rules.RUST_WHITESPACE).replace("-", "_")
    if model.startswith("claude-"):
        return "anthropic"
    if model.startswith(("gpt-", "chatgpt-", "o")):
        return "openai"
    if model.startswith("gemini-"):
        return "google"
    return "openrouter" if model.lower().startswith("qwen") else "goose"


def _entry(row: tuple[Any, ...], path: Path) -> GooseUsage | None:
    session, config, provider, created = row[0], row[1], row[2], row[3]
    if isinstance(session, int):
        session = str(session)
    if not isinstance(session, str) or not isinstance(config, str):
        return None
    created_text = (
        created if isinstance(created, str) else (str(created) if type(created) is int else None)
    )
    when = parse_time(created_text) if created_text is not None else None
    try:
        settings = rules.loads(config)
    except ValueError:
        return None
    name = settings.get("model_name") if isinstance(settings, dict) else None
    model = name.strip(rules.RUST_WHITESPACE) if isinstance(name, str) else ""
    if when is None or not model:
        return None
    input = _tokens(row, 8, 5) or 0
    output = _tokens(row, 9, 6) or 0
    total = _tokens(row, 7, 4)
    total = total if total is not None else input + output
    if input == 0 and output == 0 and total == 0:
        return None
    reasoning = max(total - (input + output), 0)
    key = rules.response_key(AGENT, str(path), session)
    return GooseUsage(AGENT, key, when, session, "goose", model, input, output + reasoning, 0, 0,
                      None, _provider(provider, model))  # fmt: skip


def price(entry: AgentUsage) -> float | None:
    """The model's rates, else `<provider>/<model>`'s (goose_prices.json); None: unpriced."""
    cost = PRICES.cost(entry.model, entry.input, entry.output, 0, 0)
    provider = getattr(entry, "provider", "goose")
    if cost or provider == "goose":
        return cost
    return PRICES.cost(f"{provider}/{entry.model}", entry.input, entry.output, 0, 0)
