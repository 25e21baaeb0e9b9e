"""Qwen Code's chat logs read the way `ccusage qwen daily` 20.0.24 reads them
(rust/crates/ccusage/src/adapter/qwen/{paths,loader}.rs).

Qwen Code appends JSON lines to `~/.qwen/projects/<project>/chats/<chat>.jsonl`. A line of
`type` "assistant" with a `usageMetadata` counts: `promptTokenCount` is input,
`candidatesTokenCount` output, `cachedContentTokenCount` cache read, `thoughtsTokenCount`
and any `totalTokenCount` beyond the parts are output here (ccusage keeps them as extra
total tokens and prices them as output). Nothing states a cost: the model is priced (as
`<model>`, else `qwen/<model>`, else `alibaba/<model>`). The same record (session, time,
model, tokens) in several files is counted once. A record with no usable time is not
counted: ccusage dates it by the file's mtime, which moves with every append.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from . import ccusage_rules as rules
from .base import AgentUsage, ReadResult

AGENT = "qwen"
DATA_DIR_ENV = "QWEN_DATA_DIR"
DEFAULT_MODEL = "unknown"
PRICES = rules.PriceTable(Path(__file__).with_name("qwen_prices.json"))


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """QWEN_DATA_DIR (comma-separated; set but blank: no folder) else ~/.qwen."""
    return rules.env_roots(env, DATA_DIR_ENV, [home / ".qwen"], blank_means_unset=False)


def files(root: Path) -> list[Path]:
    """<root>/projects/<project>/chats/<chat>.jsonl, exactly that deep."""
    projects = root / "projects"
    return [
        path
        for path in rules.walk(projects, rules.extension("jsonl"))
        if len(path.relative_to(projects).parts) == 3 and path.parent.name == "chats"
    ]


def read_files(paths: Iterable[Path]) -> ReadResult:
    result = ReadResult()
    seen: set[str] = set()
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError:
            result.reject("unreadable")
            continue
        project = path.parent.parent.name
        for raw in data.split(b"\n"):
            try:
                value = rules.loads(raw.removesuffix(b"\r").decode("utf-8"))
            except UnicodeDecodeError:
                result.reject("not_utf8")
                continue
            except ValueError:
                if raw.strip():
                    result.reject("bad_json")
                continue
            entry = _entry(value, path, project, result)
            if entry is not None and entry.key not in seen:
                seen.add(entry.key)
                result.entries.append(entry)
    return result


def _entry(value: Any, path: Path, project: str, result: ReadResult) -> AgentUsage | None:
    if not isinstance(value, dict) or value.get("type") != "assistant":
        return None
    if "usageMetadata" not in value:
        return None
    usage = value["usageMetadata"]
    usage = usage if isinstance(usage, dict) else {}
    input = rules.as_u64(usage.get("promptTokenCount"))
    output = rules.as_u64(usage.get("candidatesTokenCount"))
    reasoning = rules.as_u64(usage.get("thoughtsTokenCount"))
    cache_read = rules.as_u64(usage.get("cachedContentTokenCount"))
    total = rules.as_u64(usage.get("totalTokenCount"))
    output, extra = rules.total_fallback(input, output, 0, cache_read, total, reasoning)
    if input + output + cache_read + extra == 0:
        return None
    stamp = rules.text(value.get("timestamp"))
    when = rules.parse_ts(stamp) if stamp else None
    if stamp is None or when is None:
        result.reject("no_timestamp")
        return None
    stem = path.stem if path.suffix else path.name
    session = rules.text(value.get("sessionId")) or f"{project}-{stem}"
    model = rules.text(value.get("model")) or DEFAULT_MODEL
    identity = json.dumps([session, stamp, model, input, output, cache_read, extra])
    key = rules.response_key(AGENT, identity)
    return AgentUsage(AGENT, key, when, session, project, model, input, output + extra,
                      cache_read, 0)  # fmt: skip


def price(entry: AgentUsage) -> float | None:
    """The first of `<model>`, `qwen/<model>`, `alibaba/<model>` qwen_prices.json has."""
    for name in (entry.model, f"qwen/{entry.model}", f"alibaba/{entry.model}"):
        cost = PRICES.cost(name, entry.input, entry.output, entry.cache_read, 0)
        if cost is not None:
            return cost
    return None
