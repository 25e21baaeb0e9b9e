"""GitHub Copilot CLI's OpenTelemetry files read the way `ccusage copilot daily` 20.0.24
reads them (rust/crates/ccusage/src/adapter/copilot/{paths,loader,parser}.rs).

Copilot CLI's file exporter appends OTel records as JSON lines: every `*.jsonl` below
`~/.copilot/otel`, and the file `$COPILOT_OTEL_FILE_EXPORTER_PATH`. A record with
`attributes` carrying `gen_ai.usage.*` counts when it is a chat span; an inference log, an
agent-turn log or an invoke_agent span only when no record of a higher kind in the same file
shares its trace or response id (one response is reported at several levels). Input is
`gen_ai.usage.input_tokens` less the cache reads inside it; reasoning tokens are inside
`output_tokens` (as the 20.0.24 binary counts them, not as its 20.0.11 source did); a total
beyond the parts is output when output is 0 (else extra, output here). Nothing
states a cost. ccusage deduplicates nothing across files; a record's key is its file, its
OTel identity (trace and span id, ...) and how many records of that identity came before it
in the file, so appends and re-reads count nothing twice and duplicates count as in ccusage.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ccusage_rules as rules
from .base import AgentUsage, ReadResult

AGENT = "copilot"
DATA_DIR_ENV = "COPILOT_OTEL_FILE_EXPORTER_PATH"  # a file, not a folder
PRICES = rules.PriceTable(Path(__file__).with_name("copilot_prices.json"))
CHAT, INFERENCE, TURN, SUMMARY = range(4)  # parser.rs CopilotUsageSource, by priority
MODEL_ATTRS = ("gen_ai.response.model", "gen_ai.request.model")
SESSION_ATTRS = (("gen_ai.conversation.id", 3), ("copilot_chat.session_id", 3),
                 ("copilot_chat.chat_session_id", 3), ("session.id", 3),
                 ("github.copilot.interaction_id", 2), ("gen_ai.response.id", 1))  # fmt: skip
U63 = 2**63 - 1


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """~/.copilot/otel when it exists, and the exporter's file when it is one."""
    found = [home / ".copilot" / "otel"] if (home / ".copilot" / "otel").is_dir() else []
    raw = env.get(DATA_DIR_ENV, "").strip(rules.RUST_WHITESPACE)
    if raw and Path(raw).is_file() and Path(raw) not in found:
        found.append(Path(raw))
    return found


def files(root: Path) -> list[Path]:
    if os.path.isfile(root):
        return [root]
    return rules.walk(root, rules.extension("jsonl"))


# ----------------------------------------------------------------------------- values


def _text(value: Any) -> str | None:
    return rules.text(value)


def _number(value: Any) -> int | None:
    """parser.rs number_value: a non-negative integer, or a string of one."""
    if type(value) is int:
        return value if 0 <= value <= rules.U64_MAX else None
    if isinstance(value, str):
        text = value.strip(rules.RUST_WHITESPACE)
        digits = text[1:] if text.startswith("+") else text
        if digits.isascii() and digits.isdigit() and int(digits) <= rules.U64_MAX:
            return int(digits)
    return None


def _attr_number(attributes: dict[str, Any], *keys: str) -> int:
    """The first of these attributes above 0 (parser.rs attr_number_first)."""
    for key in keys:
        value = _number(attributes.get(key)) or 0
        if value > 0:
            return value
    return 0


def _parts_time(value: Any) -> float | None:
    if not isinstance(value, list) or not value:
        return None
    seconds = _number(value[0])
    nanos = _number(value[1]) if len(value) > 1 else None
    if seconds is None or nanos is None:
        return None
    millis = seconds * 1000 + nanos // 1_000_000
    return min(millis, U63) / 1000 if millis <= rules.U64_MAX else None


def _scalar_time(value: Any) -> float | None:
    raw = _number(value)
    if raw is None:
        return None
    if raw >= 10**17:
        millis = raw // 1_000_000
    elif raw >= 10**14:
        millis = raw // 1000
    elif raw >= 10**11:
        millis = raw
    else:
        millis = raw * 1000
    return min(millis, U63) / 1000


def _time(record: dict[str, Any]) -> float | None:
    for key in ("endTime", "startTime", "hrTime", "_hrTime", "time"):
        found = _parts_time(record.get(key))
        if found is not None:
            return found
    for key in ("timestamp", "observedTimestamp"):
        found = _scalar_time(record.get(key))
        if found is not None:
            return found
    raw = _number(record.get("timeUnixNano"))
    return min(raw // 1_000_000, U63) / 1000 if raw else None


def _nested(record: dict[str, Any], name: str) -> str | None:
    return _text(record.get(name)) or (
        _text(record["spanContext"].get(name))
        if isinstance(record.get("spanContext"), dict)
        else None
    )


def _is_span(record: dict[str, Any]) -> bool:
    kind = record.get("type")
    if isinstance(kind, str):
        return kind == "span"
    return _text(record.get("name")) is not None and (
        _text(record.get("spanId")) is not None or _text(record.get("traceId")) is not None
        or any(key in record for key in ("startTime", "endTime", "duration", "kind"))
    )  # fmt: skip


def _source(record: dict[str, Any], attributes: dict[str, Any]) -> int | None:
    operation = _text(attributes.get("gen_ai.operation.name"))
    name = _text(record.get("name")) or ""
    event = _text(attributes.get("event.name"))
    body = _text(record.get("body")) or _text(record.get("_body")) or ""
    if _is_span(record):
        if operation == "chat" or name.startswith("chat "):
            return CHAT
        if operation == "invoke_agent" or name.startswith("invoke_agent "):
            return SUMMARY
        return None
    if event == "gen_ai.client.inference.operation.details" or body.startswith("GenAI inference:"):
        return INFERENCE
    if event == "copilot_chat.agent.turn" or body.startswith("copilot_chat.agent.turn"):
        return TURN
    return None


def _session(attributes: dict[str, Any]) -> tuple[str, int] | None:
    """parser.rs best_session_attr: the highest priority; of equals, the last (max_by_key)."""
    best: tuple[str, int] | None = None
    for key, priority in SESSION_ATTRS:
        value = _text(attributes.get(key))
        if value is not None and (best is None or priority >= best[1]):
            best = (value, priority)
    return best


# ----------------------------------------------------------------------------- records


@dataclass
class _Candidate:
    """A usage record found, before duplicates are dropped."""

    source: int
    trace: str | None
    response: str | None
    identity: str
    entry: AgentUsage


def read_files(paths: Iterable[Path]) -> ReadResult:
    result = ReadResult()
    for path in paths:
        try:
            content = path.read_bytes().decode("utf-8")
            mtime = path.stat().st_mtime_ns // 1_000_000 / 1000
        except OSError:
            result.reject("unreadable")
            continue
        except UnicodeDecodeError:  # ccusage stops the whole report on such a file
            result.reject("not_utf8")
            continue
        result.entries.extend(_file(content, str(path), mtime, result))
    return result


def _file(content: str, where: str, mtime: float, result: ReadResult) -> list[AgentUsage]:
    records: list[dict[str, Any]] = []
    for line in content.split("\n"):
        if '"attributes"' not in line:
            continue
        try:
            value = rules.loads(line.removesuffix("\r"))
        except ValueError:
            result.reject("bad_json")
            continue
        if isinstance(value, dict):
            records.append(value)
    contexts: dict[str, list[Any]] = {}  # trace -> [model, session, priority]
    for record in records:
        trace, attributes = _nested(record, "traceId"), record.get("attributes")
        if trace is None or not isinstance(attributes, dict):
            continue
        context = contexts.setdefault(trace, [None, None, 0])
        if context[0] is None:
            context[0] = next(filter(None, map(_text, map(attributes.get, MODEL_ATTRS))), None)
        best = _session(attributes)
        if best is not None and best[1] > context[2]:
            context[1], context[2] = best
    candidates = [found for index, record in enumerate(records)
                  if (found := _candidate(record, index, mtime, contexts)) is not None]  # fmt: skip
    traces = [{c.trace for c in candidates if c.source == s and c.trace} for s in range(3)]
    responses = [{c.response for c in candidates if c.source == s and c.response}
                 for s in range(3)]  # fmt: skip
    kept, seen = [], dict[str, int]()
    for candidate in candidates:
        higher = range(candidate.source)
        if any(candidate.trace in traces[s] or candidate.response in responses[s] for s in higher):
            continue
        count = seen.get(candidate.identity, 0)
        seen[candidate.identity] = count + 1
        key = rules.response_key(AGENT, where, candidate.identity, count)
        kept.append(_with_key(candidate.entry, key))
    return kept


def _with_key(entry: AgentUsage, key: str) -> AgentUsage:
    return AgentUsage(entry.agent, key, entry.timestamp, entry.session, entry.project,
                      entry.model, entry.input, entry.output, entry.cache_read,
                      entry.cache_creation)  # fmt: skip


def _candidate(
    record: dict[str, Any], index: int, mtime: float, contexts: dict[str, list[Any]]
) -> _Candidate | None:
    attributes = record.get("attributes")
    if not isinstance(attributes, dict):
        return None
    source = _source(record, attributes)
    if source is None:
        return None
    fresh = _number(attributes.get("gen_ai.usage.input_tokens")) or 0
    output = _number(attributes.get("gen_ai.usage.output_tokens")) or 0
    read = _number(attributes.get("gen_ai.usage.cache_read.input_tokens")) or 0
    creation = _attr_number(attributes, "gen_ai.usage.cache_write.input_tokens",
                            "gen_ai.usage.cache_creation.input_tokens")  # fmt: skip
    # Reasoning tokens are inside gen_ai.usage.output_tokens (OTel's convention): the 20.0.11
    # source added them as extra, the 20.0.24 binary does not, in totals or cost.
    total = _attr_number(attributes, "gen_ai.usage.total_tokens", "gen_ai.usage.total.token_count")
    input = fresh - min(fresh, read)
    output, extra = rules.total_fallback(input, output, creation, read, total)
    if input + output + creation + read + extra == 0:
        return None
    trace = _nested(record, "traceId")
    context = contexts.get(trace) if trace is not None else None
    model = (next(filter(None, map(_text, map(attributes.get, MODEL_ATTRS))), None)
             or (context[0] if context else None) or "unknown")  # fmt: skip
    best = _session(attributes)
    session = (best[0] if best else None) or (context[1] if context else None) or trace
    session = session or "unknown-session"
    when = _time(record)
    span = _nested(record, "spanId")
    if when is None:
        if trace is None or span is None or source == TURN:
            return None  # ccusage: the file's mtime, and a key that moves with it
        when = mtime
    if source in (CHAT, SUMMARY, INFERENCE) and trace is not None and span is not None:
        identity = f"{'log' if source == INFERENCE else 'span'}:{trace}:{span}"
    elif source == TURN:
        turn = _number(attributes.get("turn.index"))
        turn = turn if turn is not None else _number(attributes.get("copilot_chat.turn.index"))
        label = str(turn) if turn is not None else f"idx-{index}"
        identity = (
            f"agent-turn:{trace}:{label}" if trace else f"agent-turn:{session}:{label}:{index}"
        )
    else:
        identity = f"{source}:{session}:{int(when * 1000)}:{index}"
    entry = AgentUsage(AGENT, "", when, session, "copilot", model, input, output + extra,
                       read, creation)  # fmt: skip
    response = _text(attributes.get("gen_ai.response.id"))
    return _Candidate(source, trace, response, identity, entry)


def price(entry: AgentUsage) -> float | None:
    """The model's rates (copilot_prices.json); None: unpriced."""
    return PRICES.cost(entry.model, entry.input, entry.output, entry.cache_read,
                       entry.cache_creation)  # fmt: skip
