"""OpenClaw's session files read the way `ccusage openclaw daily` 20.0.24 reads them
(rust/crates/ccusage/src/adapter/openclaw/{paths,loader,parser}.rs).

OpenClaw (and its earlier names Clawdbot, Moltbot) appends JSON lines to
`~/.openclaw/agents/<agent>/sessions/<session>.jsonl` (also `.jsonl.deleted.<t>` and
`.jsonl.reset.<t>` once archived). A `model_change` line (or a `custom` `model-snapshot`)
sets the model of the lines after it; a `message` line whose `message` is an assistant's
with a `usage` object counts: `input`, `output`, `cacheRead`, `cacheWrite`, `totalTokens`
(beyond the parts: output when output is 0, else extra, counted as output here), the model
of the message or the last change (else "unknown"), `usage.cost.total` as the cost when
present. The same record in several files is counted once (the key is a hash of what
ccusage dedups on). A record with no usable time is not counted: ccusage dates it by the
file's mtime, which moves with every append (docs/agents/openclaw.md).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from . import ccusage_rules as rules
from .base import AgentUsage, ReadResult

AGENT = "openclaw"
DATA_DIR_ENV = "OPENCLAW_DIR"
FOLDERS = (".openclaw", ".clawdbot", ".moltbot", ".moldbot")
PRICES = rules.PriceTable(Path(__file__).with_name("openclaw_prices.json"))
MARKERS = ('"model_change"', '"model-snapshot"', '"usage"')


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """OPENCLAW_DIR (comma-separated; blank: unset) else ~/.openclaw, ~/.clawdbot, ..."""
    return rules.env_roots(env, DATA_DIR_ENV, [home / name for name in FOLDERS])


def is_session_file(name: str) -> bool:
    """`*.jsonl`, `*.jsonl.deleted.*`, `*.jsonl.reset.*` (paths.rs is_openclaw_session_file)."""
    index = name.find(".jsonl")
    if index < 0:
        return False
    suffix = name[index:]
    return suffix == ".jsonl" or suffix.startswith((".jsonl.deleted.", ".jsonl.reset."))


def files(root: Path) -> list[Path]:
    return rules.walk(root, is_session_file)


def _session(path: Path) -> str:
    name = path.name
    index = name.find(".jsonl")
    return name[:index] if index > 0 else name


def read_files(paths: Iterable[Path]) -> ReadResult:
    result = ReadResult()
    seen: set[str] = set()
    for path in paths:
        content = rules.read_utf8(path, result)
        if content is None:
            continue
        session = _session(path)
        model: str | None = None
        for line in content.split("\n"):
            if not any(marker in line for marker in MARKERS):
                continue
            try:
                record = rules.loads(line.removesuffix("\r"))
            except ValueError:
                result.reject("bad_json")
                continue
            if not isinstance(record, dict):
                continue
            if _is_model_change(record):
                data = record.get("data")
                source = data if isinstance(data, dict) else record
                model = (
                    rules.text(source.get("modelId")) or rules.text(source.get("model")) or model
                )
                continue
            entry = _entry(record, session, model, result)
            if entry is not None and entry.key not in seen:
                seen.add(entry.key)
                result.entries.append(entry)
    return result


def _is_model_change(record: dict[str, Any]) -> bool:
    kind = record.get("type")
    return kind == "model_change" or (
        kind == "custom" and record.get("customType") == "model-snapshot"
    )


def _time(value: Any) -> float | None:
    """parser.rs timestamp_from_value: epoch milliseconds (an i64) or ccusage's text form."""
    millis = rules.as_i64(value)
    if millis is not None:
        return millis / 1000
    return rules.parse_ts(value) if isinstance(value, str) else None


def _rfc3339_millis(when: float) -> str:
    moment = dt.datetime.fromtimestamp(when, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _entry(
    record: dict[str, Any], session: str, current: str | None, result: ReadResult
) -> AgentUsage | None:
    if record.get("type") != "message":
        return None
    message = record.get("message")
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    input, output = rules.as_u64(usage.get("input")), rules.as_u64(usage.get("output"))
    cache_read = rules.as_u64(usage.get("cacheRead"))
    cache_write = rules.as_u64(usage.get("cacheWrite"))
    output, extra = rules.total_fallback(
        input, output, cache_write, cache_read, rules.as_u64(usage.get("totalTokens"))
    )
    if input + output + cache_read + cache_write + extra == 0:
        return None
    stamp = message["timestamp"] if "timestamp" in message else record.get("timestamp")
    when = _time(stamp)
    if when is None:
        result.reject("no_timestamp")
        return None
    name = (
        rules.text(message.get("modelId")) or rules.text(message.get("model")) or current
    ) or "unknown"
    cost_object = usage.get("cost")
    cost = rules.as_f64(cost_object.get("total")) if isinstance(cost_object, dict) else None
    shown = (
        cost
        if cost is not None
        else (PRICES.cost(name, input, output, cache_read, cache_write) or 0.0)
    )
    key = rules.response_key(AGENT, session, _rfc3339_millis(when), name, input, output,
                             cache_write, cache_read, extra, shown)  # fmt: skip
    return AgentUsage(AGENT, key, when, session, "openclaw", name, input, output + extra,
                      cache_read, cache_write, cost)  # fmt: skip


def price(entry: AgentUsage) -> float | None:
    """The model's rates (openclaw_prices.json; ccusage names it `[openclaw] <model>`)."""
    return PRICES.cost(
        entry.model, entry.input, entry.output, entry.cache_read, entry.cache_creation
    )
