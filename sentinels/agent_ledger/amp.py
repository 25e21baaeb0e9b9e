"""Amp's thread files read the way `ccusage amp daily` 20.0.24 reads them
(rust/crates/ccusage/src/adapter/amp/{paths,loader,parser}.rs).

Amp keeps one JSON file per thread under `~/.local/share/amp/threads/`, rewritten whole as
the thread grows. A thread with a non-empty `id` counts either its `usageLedger.events`
(each with a time in ccusage's one form, a model and `tokens.input`/`output`/`total`; its
cache tokens are those of the assistant message it points to by `toMessageId`) or, when it
has no ledger, the `usage` of its assistant messages (`inputTokens`, `outputTokens`,
`cacheCreationInputTokens`, `cacheReadInputTokens`, `totalTokens`). A total beyond the parts
is output (when output is 0) or extra, priced and counted as output. Nothing states a cost:
every response is priced. ccusage does not deduplicate Amp at all; a response's key is its
file, its place in the thread and its id, so the thread read again counts nothing twice,
and two files of one thread both count (as in ccusage).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from . import ccusage_rules as rules
from .base import AgentUsage, ReadResult

AGENT = "amp"
DATA_DIR_ENV = "AMP_DATA_DIR"
PRICES = rules.PriceTable(Path(__file__).with_name("amp_prices.json"))


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """AMP_DATA_DIR (comma-separated; set but blank: no folder, as ccusage) else
    ~/.local/share/amp."""
    default = home / ".local" / "share" / "amp"
    return rules.env_roots(env, DATA_DIR_ENV, [default], blank_means_unset=False)


def files(root: Path) -> list[Path]:
    """Every *.json below <root>/threads."""
    return rules.walk(root / "threads", rules.extension("json"))


def read_files(paths: Iterable[Path]) -> ReadResult:
    result = ReadResult()
    seen: set[str] = set()
    for path in paths:
        content = rules.read_utf8(path, result)
        if content is None:
            continue
        try:
            thread = rules.loads(content)
        except ValueError:
            result.reject("bad_json")
            continue
        if not isinstance(thread, dict):
            continue
        for entry in _entries(thread, str(path)):
            if entry.key not in seen:
                seen.add(entry.key)
                result.entries.append(entry)
    return result


def _entries(thread: dict[str, Any], where: str) -> list[AgentUsage]:
    thread_id = rules.text(thread.get("id"))
    if thread_id is None:
        return []
    messages = thread.get("messages")
    ledger = thread.get("usageLedger")
    events = ledger.get("events") if isinstance(ledger, dict) else None
    if isinstance(events, list):
        return _ledger(events, _cache_by_message(messages), thread_id, where)
    return _messages(messages, thread_id, where)


def _cache_by_message(messages: Any) -> dict[int, tuple[int, int]]:
    cache: dict[int, tuple[int, int]] = {}
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        message_id = rules.as_i64(message.get("messageId"))
        if message_id is None:
            continue
        usage = message.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        cache[message_id] = (
            rules.as_u64(usage.get("cacheCreationInputTokens")),
            rules.as_u64(usage.get("cacheReadInputTokens")),
        )
    return cache


def _get(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else None


def _ledger(
    events: list[Any], cache: dict[int, tuple[int, int]], thread_id: str, where: str
) -> list[AgentUsage]:
    found = []
    for place, event in enumerate(events):
        if not isinstance(event, dict):
            continue
        stamp = rules.text(event.get("timestamp"))
        when = rules.parse_ts(stamp) if stamp else None
        model = rules.text(event.get("model"))
        if when is None or model is None or "tokens" not in event:
            continue
        tokens = event["tokens"]
        target = rules.as_i64(event.get("toMessageId"))
        creation, read = cache.get(target, (0, 0)) if target is not None else (0, 0)
        entry = _usage(
            thread_id, (where, "event", place, rules.text(event.get("id"))), when, model,
            rules.as_u64(_get(tokens, "input")), rules.as_u64(_get(tokens, "output")),
            creation, read, rules.as_u64(_get(tokens, "total")),
        )  # fmt: skip
        if entry is not None:
            found.append(entry)
    return found


def _messages(messages: Any, thread_id: str, where: str) -> list[AgentUsage]:
    found = []
    for place, message in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        if "usage" not in message:
            continue
        usage = message["usage"]
        stamp = rules.text(_get(usage, "timestamp")) or rules.text(message.get("timestamp"))
        when = rules.parse_ts(stamp) if stamp else None
        model = rules.text(_get(usage, "model")) or rules.text(message.get("model"))
        if when is None or model is None:
            continue
        message_id = message.get("messageId")
        entry = _usage(
            thread_id,
            (where, "message", place, message_id if type(message_id) in (int, str) else None),
            when, model,
            rules.as_u64(_get(usage, "inputTokens")), rules.as_u64(_get(usage, "outputTokens")),
            rules.as_u64(_get(usage, "cacheCreationInputTokens")),
            rules.as_u64(_get(usage, "cacheReadInputTokens")),
            rules.as_u64(_get(usage, "totalTokens")),
        )  # fmt: skip
        if entry is not None:
            found.append(entry)
    return found


def _usage(
    thread_id: str, where: tuple[object, ...], when: float, model: str,
    input: int, output: int, creation: int, read: int, total: int,
) -> AgentUsage | None:  # fmt: skip
    output, extra = rules.total_fallback(input, output, creation, read, total)
    if input + output + creation + read + extra == 0:
        return None
    key = rules.response_key(AGENT, thread_id, *where)
    return AgentUsage(AGENT, key, when, thread_id, "amp", model, input, output + extra,
                      read, creation)  # fmt: skip


def price(entry: AgentUsage) -> float | None:
    """The model's rates (amp_prices.json), output with the extra total tokens (as ccusage)."""
    return PRICES.cost(
        entry.model, entry.input, entry.output, entry.cache_read, entry.cache_creation
    )
