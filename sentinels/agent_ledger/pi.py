"""pi's session files read the way `ccusage pi daily` 20.0.24 reads them
(rust/crates/ccusage/src/adapter/pi/{paths,loader,parser}.rs).

pi (pi-agent) appends one JSON record a line to
`~/.pi/agent/sessions/<project>/<x>_<session>.jsonl`.
A line counts when it mentions both `"usage"` and `"message"`, parses, is not of a `type` other
than "message", and its `message` is an assistant's with a `usage`: `input`, `output`,
`cacheRead`, `cacheWrite` (integers; anything else 0), `totalTokens` beyond the parts is output
when output is 0, else extra (counted as output here); a timestamp in ccusage's one form is
required, and a line with no tokens at all is skipped. `usage.cost.total` is the cost when
present, else the model is priced. The same record (project, session, time, model, tokens,
cost) in several files is counted once: the key is a hash of exactly what ccusage dedups on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from . import ccusage_rules as rules
from .base import AgentUsage, ReadResult

AGENT = "pi"
DATA_DIR_ENV = "PI_AGENT_DIR"
PRICES = rules.PriceTable(Path(__file__).with_name("pi_prices.json"))


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """PI_AGENT_DIR (comma-separated; blank: unset) else ~/.pi/agent/sessions."""
    return rules.env_roots(env, DATA_DIR_ENV, [home / ".pi" / "agent" / "sessions"])


def files(root: Path) -> list[Path]:
    return rules.walk(root, rules.extension("jsonl"))


def _session(path: Path) -> str:
    stem = path.stem if path.suffix else path.name
    return stem.split("_", 1)[1] if "_" in stem else stem


def _project(path: Path) -> str:
    parts = path.parts
    for index, part in enumerate(parts[:-1]):
        if part == "sessions":
            return parts[index + 1]
    return "unknown"


def read_files(paths: Iterable[Path]) -> ReadResult:
    result = ReadResult()
    seen: set[str] = set()
    for path in paths:
        content = rules.read_utf8(path, result)
        if content is None:
            continue
        project, session = _project(path), _session(path)
        for line in content.split("\n"):
            if '"usage"' not in line or '"message"' not in line:
                continue
            try:
                value = rules.loads(line.removesuffix("\r"))
            except ValueError:
                result.reject("bad_json")
                continue
            entry = _entry(value, project, session)
            if entry is not None and entry.key not in seen:
                seen.add(entry.key)
                result.entries.append(entry)
    return result


def _entry(value: object, project: str, session: str) -> AgentUsage | None:
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    message = value.get("message")
    if isinstance(kind, str) and kind != "message":
        return None
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    if "usage" not in message:
        return None
    stamp = rules.text(value.get("timestamp"))
    when = rules.parse_ts(stamp) if stamp else None
    if stamp is None or when is None:
        return None
    usage = message["usage"]
    usage = usage if isinstance(usage, dict) else {}
    input, output = rules.as_u64(usage.get("input")), rules.as_u64(usage.get("output"))
    cache_read, cache_write = (
        rules.as_u64(usage.get("cacheRead")),
        rules.as_u64(usage.get("cacheWrite")),
    )
    output, extra = rules.total_fallback(input, output, cache_write, cache_read,
                                         rules.as_u64(usage.get("totalTokens")))  # fmt: skip
    if input + output + cache_read + cache_write + extra == 0:
        return None
    model = rules.text(message.get("model")) or ""
    cost_object = usage.get("cost")
    cost = rules.as_f64(cost_object.get("total")) if isinstance(cost_object, dict) else None
    shown_cost = cost if cost is not None else _price(model, input, output, cache_read, cache_write)
    key = rules.response_key(AGENT, project, session, stamp, model, input, output, cache_write,
                             cache_read, extra, shown_cost)  # fmt: skip
    return AgentUsage(AGENT, key, when, session, project, model, input, output + extra,
                      cache_read, cache_write, cost)  # fmt: skip


def _price(model: str, input: int, output: int, cache_read: int, cache_write: int) -> float:
    return PRICES.cost(model, input, output, cache_read, cache_write) or 0.0


def price(entry: AgentUsage) -> float | None:
    """The model's rates (pi_prices.json); None: unpriced (a model ccusage names `[pi] <model>`)."""
    return PRICES.cost(
        entry.model, entry.input, entry.output, entry.cache_read, entry.cache_creation
    )
