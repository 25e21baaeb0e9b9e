"""Codebuff's chat logs read the way `ccusage codebuff daily` 20.0.24 reads them
(rust/crates/ccusage/src/adapter/codebuff/{paths,loader,parser}.rs).

Codebuff (formerly Manicode) rewrites `~/.config/manicode/projects/<project>/chats/<chat>/
chat-messages.json` whole, a JSON array of messages. An assistant message (`variant` or
`role` "ai", "agent" or "assistant") counts the first non-zero of each class across
`metadata.usage`, `metadata.codebuff.usage` and the latest assistant entries of
`metadata.runState...messageHistory` (their `providerOptions`): input (`inputTokens`,
`promptTokens`, ...), output, cache read (also `promptTokensDetails.cachedTokens`), cache
creation, and a total beyond the parts (output when output is 0, else extra, output here;
ccusage prices it as output). Time: the message's `timestamp`, `createdAt` or
`metadata.timestamp` (text or epoch seconds/ms), else the chat folder's name. The model is
priced as itself, else `<provider>/<model>`. A message with an `id` is keyed by its session
and id (the last copy wins, as in ccusage, and the ledger adds what it grew by); one without
by its session, time, model, place and tokens. A message with no usable time is not counted:
ccusage dates it by the file's mtime, which moves with every rewrite.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ccusage_rules as rules
from .base import AgentUsage, ReadResult

AGENT = "codebuff"
DATA_DIR_ENV = "CODEBUFF_DATA_DIR"
CHANNELS = ("manicode", "manicode-dev", "manicode-staging")
DEFAULT_MODEL = "codebuff-unknown"
PRICES = rules.PriceTable(Path(__file__).with_name("codebuff_prices.json"))
INPUT = ("inputTokens", "input_tokens", "promptTokens", "prompt_tokens")
OUTPUT = ("outputTokens", "output_tokens", "completionTokens", "completion_tokens")
CACHE_READ = ("cacheReadInputTokens", "cache_read_input_tokens")
CACHE_CREATION = ("cacheCreationInputTokens", "cache_creation_input_tokens",
                  "cacheCreationTokens", "cache_creation_tokens", "cachedTokensCreated",
                  "cached_tokens_created")  # fmt: skip
TOTAL = ("totalTokens", "total_tokens", "total")


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """CODEBUFF_DATA_DIR (comma-separated; set but blank: none) else ~/.config/manicode{,-dev,
    -staging}; each root's `projects` folder (the root itself when it is one)."""
    if DATA_DIR_ENV in env:
        parts = [part.strip(rules.RUST_WHITESPACE) for part in env[DATA_DIR_ENV].split(",")]
        candidates = [Path(part) for part in parts if part]
    else:
        candidates = [home / ".config" / channel for channel in CHANNELS]
    found: list[Path] = []
    for root in candidates:
        projects = root if root.name == "projects" else root / "projects"
        if projects.is_dir() and projects not in found:
            found.append(projects)
    return found


def files(root: Path) -> list[Path]:
    return [path for path in rules.walk(root, rules.extension("json"))
            if path.name == "chat-messages.json"]  # fmt: skip


@dataclass(slots=True)
class _Tokens:
    """One Codebuff message's model, credits and tokens."""

    model: str | None = None
    credits: float = 0.0
    input: int = 0
    output: int = 0
    creation: int = 0
    read: int = 0
    extra: int = 0

    def signal(self) -> bool:
        return bool(self.input or self.output or self.creation or self.read or self.extra
                     or self.credits > 0)  # fmt: skip

    def fill(self, other: _Tokens) -> None:
        """parser.rs merge_fallback: each zero (or missing) field taken from `other`."""
        self.input = self.input or other.input
        self.output = self.output or other.output
        self.creation = self.creation or other.creation
        self.read = self.read or other.read
        self.extra = self.extra or other.extra
        self.credits = self.credits if self.credits > 0 else other.credits
        self.model = self.model if self.model is not None else other.model


def _object(value: Any, key: str) -> dict[str, Any] | None:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else None


def _pick(record: dict[str, Any] | None, keys: tuple[str, ...]) -> int:
    """The first of these fields that is a positive integer."""
    for key in keys:
        if record is not None and key in record and rules.as_u64(record[key]) > 0:
            return rules.as_u64(record[key])
    return 0


def _credits(record: dict[str, Any], key: str) -> float:
    value = rules.as_f64(record.get(key))
    return value if value is not None and math.isfinite(value) and value > 0 else 0.0


def _usage(value: Any) -> _Tokens:
    """parser.rs parse_usage_object."""
    if not isinstance(value, dict):
        return _Tokens()
    cached = max(
        _pick(value, CACHE_READ),
        _pick(_object(value, "promptTokensDetails"), ("cachedTokens",)),
        _pick(_object(value, "prompt_tokens_details"), ("cached_tokens",)),
    )
    tokens = _Tokens(
        input=_pick(value, INPUT),
        output=_pick(value, OUTPUT),
        creation=_pick(value, CACHE_CREATION),
        read=cached,
    )
    tokens.output, tokens.extra = rules.total_fallback(
        tokens.input, tokens.output, tokens.creation, tokens.read, _pick(value, TOTAL)
    )
    tokens.credits = _credits(value, "credits")
    tokens.model = rules.text(value.get("model"))
    return tokens


def _run_state(metadata: dict[str, Any]) -> _Tokens | None:
    history: Any = metadata
    for key in ("runState", "sessionState", "mainAgentState", "messageHistory"):
        history = history.get(key) if isinstance(history, dict) else None
    if not isinstance(history, list):
        return None
    tokens, found = _Tokens(), False
    for item in reversed(history):
        if not isinstance(item, dict) or rules.text(item.get("role")) != "assistant":
            continue
        options = _object(item, "providerOptions")
        if options is None:
            continue
        entry = _Tokens()
        entry.fill(_usage(options.get("usage")))
        codebuff = _object(options, "codebuff")
        if codebuff is not None:
            entry.fill(_usage(codebuff.get("usage")))
            entry.model = rules.text(codebuff.get("model")) or entry.model
        found = found or entry.signal() or entry.model is not None
        tokens.fill(entry)
    return tokens if found else None


def _message_tokens(message: dict[str, Any]) -> _Tokens:
    tokens = _Tokens()
    metadata = _object(message, "metadata")
    if metadata is not None:
        tokens.model = rules.text(metadata.get("model"))
        tokens.fill(_usage(metadata.get("usage")))
        tokens.fill(_usage(_object(metadata, "codebuff") and metadata["codebuff"].get("usage")))
        state = _run_state(metadata)
        if state is not None:
            tokens.fill(state)
    credits = _credits(message, "credits")
    if credits > 0 and tokens.credits <= 0:
        tokens.credits = credits
    return tokens


def _time(value: Any) -> float | None:
    if isinstance(value, str):
        return rules.parse_ts(value)
    raw = rules.as_i64(value)
    if raw is None:
        return None
    millis = raw * 1000 if raw < 10_000_000_000 else raw
    if not -(2**63) <= millis < 2**63:
        return None
    return millis / 1000 if millis > 0 else None


def _chat_time(chat_id: str) -> float | None:
    date, t, rest = chat_id.partition("T")
    if not t:
        return None
    rest = rest.replace("-", ":", 2)
    return rules.parse_ts(f"{date}T{rest}")


def _context(path: Path) -> tuple[str, str]:
    """(chat id, session `channel/project/chat`), as parser.rs derive_context."""
    parents = path.parents

    def name(index: int, default: str) -> str:
        return (parents[index].name if len(parents) > index else "") or default

    chat = name(0, "unknown")
    return chat, f"{name(4, 'manicode')}/{name(2, 'unknown')}/{chat}"


def read_files(paths: Iterable[Path]) -> ReadResult:
    result = ReadResult()
    kept: dict[str, AgentUsage] = {}
    for path in sorted(set(paths)):
        content = rules.read_utf8(path, result)
        if content is None:
            continue
        try:
            messages = rules.loads(content)
        except ValueError:
            result.reject("bad_json")
            continue
        if not isinstance(messages, list):
            continue
        chat, session = _context(path)
        for place, message in enumerate(messages):
            entry = _entry(message, place, chat, session, result)
            if entry is not None:
                kept.pop(entry.key, None)  # the last copy wins
                kept[entry.key] = entry
    result.entries.extend(kept.values())
    return result


def _entry(
    message: Any, place: int, chat: str, session: str, result: ReadResult
) -> AgentUsage | None:
    if not isinstance(message, dict):
        return None
    kind = rules.text(message.get("variant")) or rules.text(message.get("role"))
    if kind not in ("ai", "agent", "assistant"):
        return None
    tokens = _message_tokens(message)
    if not tokens.signal():
        return None
    metadata = _object(message, "metadata")
    when = next(
        (
            found
            for found in (
                _time(message.get("timestamp")),
                _time(message.get("createdAt")),
                _time(metadata.get("timestamp") if metadata else None),
                _chat_time(chat),
            )
            if found is not None
        ),
        None,
    )
    if when is None:
        result.reject("no_timestamp")
        return None
    model = tokens.model or DEFAULT_MODEL
    message_id = rules.text(message.get("id"))
    if message_id is not None:
        key = rules.response_key(AGENT, session, message_id)
    else:
        key = rules.response_key(AGENT, session, when, model, place, tokens.input, tokens.output,
                                 tokens.read, tokens.creation, tokens.extra)  # fmt: skip
    project = session.split("/")[1]
    return AgentUsage(AGENT, key, when, session, project, model, tokens.input,
                      tokens.output + tokens.extra, tokens.read, tokens.creation)  # fmt: skip


def provider(model: str) -> str:
    """parser.rs infer_provider."""
    lower = "".join(c.lower() if c.isascii() else c for c in model)
    if lower.startswith(("claude-", "anthropic/", "anthropic.")):
        return "anthropic"
    if lower.startswith(("gpt-", "o1", "o3", "o4", "openai/")):
        return "openai"
    if lower.startswith(("gemini", "google/")):
        return "google"
    if lower.startswith(("grok", "xai/")):
        return "xai"
    return "openrouter" if lower.startswith("openrouter/") else "unknown"


def price(entry: AgentUsage) -> float | None:
    """The model's rates, else `<provider>/<model>`'s (codebuff_prices.json); None: unpriced."""
    args = (entry.input, entry.output, entry.cache_read, entry.cache_creation)
    cost = PRICES.cost(entry.model, *args)
    origin = provider(entry.model)
    if cost or origin == "unknown" or entry.model.startswith(f"{origin}/"):
        return cost
    return PRICES.cost(f"{origin}/{entry.model}", *args)
