"""Kimi CLI's wire logs read the way `ccusage kimi daily` 20.0.24 reads them
(rust/crates/ccusage/src/adapter/kimi/{paths,loader,parser}.rs).

Kimi CLI appends JSON lines to `~/.kimi/sessions/<group>/<session>/wire.jsonl`. A line that
mentions `"StatusUpdate"` and `"token_usage"`, parses, and whose `message` is a StatusUpdate
with `payload.token_usage` counts: `input_other` is input, `output` output,
`input_cache_read` and `input_cache_creation` the cache classes, a `total` beyond the parts
output (when output is 0) or extra (counted as output here). Its time is `timestamp`,
seconds since the epoch. The model is `model` of `<root>/config.json` (else
"kimi-for-coding", priced as Moonshot's kimi-k2.5 before 2026-04-20 16:48:10 UTC and
kimi-k2.6 after); it is priced as `moonshot/<model>`, `kimi/<model>` or `<model>`. The same
response (session, message id, time, tokens) in several files is counted once. The key
leaves out the model ccusage dedups on too: it comes from config.json, and a changed config
would otherwise count every response again. A record with no usable time is not counted:
ccusage dates it by the file's mtime, which moves with every append.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from . import ccusage_rules as rules
from .base import AgentUsage, ReadResult

AGENT = "kimi"
DATA_DIR_ENV = "KIMI_DATA_DIR"
DEFAULT_MODEL = "kimi-for-coding"
K2_6_CUTOFF = 1_776_698_890.072  # parser.rs KIMI_FOR_CODING_K2_6_CUTOFF_MS, in seconds
PRICES = rules.PriceTable(Path(__file__).with_name("kimi_prices.json"))


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """KIMI_DATA_DIR (comma-separated; set but blank: no folder) else ~/.kimi."""
    return rules.env_roots(env, DATA_DIR_ENV, [home / ".kimi"], blank_means_unset=False)


def files(root: Path) -> list[Path]:
    """<root>/sessions/<group>/<session>/wire.jsonl, exactly that deep."""
    sessions = root / "sessions"
    return [
        path
        for path in rules.walk(sessions, rules.extension("jsonl"))
        if path.name == "wire.jsonl" and len(path.relative_to(sessions).parts) == 3
    ]


def _model(path: Path) -> str:
    """`model` of config.json four levels above the wire file, else the default."""
    try:
        config = rules.loads(path.parents[3].joinpath("config.json").read_bytes().decode())
    except (OSError, ValueError, IndexError):
        return DEFAULT_MODEL
    model = rules.text(config.get("model")) if isinstance(config, dict) else None
    return model or DEFAULT_MODEL


def read_files(paths: Iterable[Path]) -> ReadResult:
    result = ReadResult()
    seen: set[str] = set()
    for path in paths:
        content = rules.read_utf8(path, result)
        if content is None:
            continue
        model, session = _model(path), path.parent.name or "unknown"
        for line in content.split("\n"):
            if '"StatusUpdate"' not in line or '"token_usage"' not in line:
                continue
            try:
                value = rules.loads(line.removesuffix("\r"))
            except ValueError:
                result.reject("bad_json")
                continue
            entry = _entry(value, session, model, result)
            if entry is not None and entry.key not in seen:
                seen.add(entry.key)
                result.entries.append(entry)
    return result


def _get(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else None


def _time(value: Any) -> float | None:
    seconds = rules.as_f64(value)
    if seconds is None or not math.isfinite(seconds):
        return None
    millis = math.trunc(seconds * 1000.0)
    return millis / 1000 if -(2**63) <= millis < 2**63 else None


def _entry(value: Any, session: str, model: str, result: ReadResult) -> AgentUsage | None:
    if not isinstance(value, dict) or value.get("type") == "metadata":
        return None
    message = value.get("message")
    if _get(message, "type") != "StatusUpdate":
        return None
    payload = _get(message, "payload")
    if not isinstance(payload, dict) or "token_usage" not in payload:
        return None
    usage = payload["token_usage"]
    input, output = rules.as_u64(_get(usage, "input_other")), rules.as_u64(_get(usage, "output"))
    creation = rules.as_u64(_get(usage, "input_cache_creation"))
    read = rules.as_u64(_get(usage, "input_cache_read"))
    output, extra = rules.total_fallback(input, output, creation, read,
                                         rules.as_u64(_get(usage, "total")))  # fmt: skip
    if input + output + creation + read + extra == 0:
        return None
    when = _time(value.get("timestamp"))
    if when is None:
        result.reject("no_timestamp")
        return None
    stamp = dt.datetime.fromtimestamp(when, dt.UTC).isoformat()
    message_id = rules.text(payload.get("message_id")) or ""
    key = rules.response_key(AGENT, session, message_id, stamp, input, output, creation, read,
                             extra)  # fmt: skip
    return AgentUsage(AGENT, key, when, session, "kimi", model, input, output + extra, read,
                      creation)  # fmt: skip


def candidates(model: str, when: float) -> list[str]:
    """parser.rs model_candidates: the names a model is priced as, in order."""
    names = []
    if model == DEFAULT_MODEL:
        names.append("moonshot/kimi-k2.5" if when < K2_6_CUTOFF else "moonshot/kimi-k2.6")
    names += [f"moonshot/{model}", f"kimi/{model}", model]
    return list(dict.fromkeys(names))


def price(entry: AgentUsage) -> float | None:
    """The first candidate kimi_prices.json has; None: unpriced."""
    for name in candidates(entry.model, entry.timestamp):
        cost = PRICES.cost(name, entry.input, entry.output, entry.cache_read,
                           entry.cache_creation)  # fmt: skip
        if cost is not None:
            return cost
    return None
