"""Factory Droid's session settings read the way `ccusage droid daily` 20.0.24 reads them
(rust/crates/ccusage/src/adapter/droid/{paths,loader,parser}.rs).

Droid keeps `~/.factory/sessions/**/<session>.settings.json` per session, its `tokenUsage`
the session's running totals: `inputTokens`, `outputTokens`, `cacheCreationTokens`,
`cacheReadTokens`, `thinkingTokens` (output here; ccusage: extra total tokens, priced as
output) and a `totalTokens` beyond the parts. ccusage counts each session once, as of its
latest snapshot (the file with the latest `providerLockTimestamp`, else mtime, among files of
the same session name), so this reader's rules look ACROSS files, and the session is the
key: the ledger adds what a later snapshot grew by. The model is the settings' `model`
(normalised: no `[...]`, lower case, `.`/spaces as `-`), else a `Model:` line of the sidecar
`<session>.jsonl`, else a default from `providerLock`; it is priced as itself, then with the
provider's prefixes (`anthropic/`, `openrouter/anthropic/`, ...), the first that prices > 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ccusage_rules as rules
from .base import AgentUsage, ReadResult

AGENT = "droid"
DATA_DIR_ENV = "DROID_SESSIONS_DIR"
SUFFIX = ".settings.json"
PRICES = rules.PriceTable(Path(__file__).with_name("droid_prices.json"))
PREFIXES = {
    "anthropic": ("anthropic/", "openrouter/anthropic/"),
    "openai": ("openai/", "openrouter/openai/"),
    "google": ("google/", "vertex_ai/", "openrouter/google/"),
    "xai": ("xai/", "openrouter/x-ai/"),
    "unknown": (),
}
DEFAULT_MODELS = {"anthropic": "claude-unknown", "openai": "gpt-unknown",
                  "google": "gemini-unknown", "xai": "grok-unknown"}  # fmt: skip


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """DROID_SESSIONS_DIR (comma-separated; set but blank: no folder) else ~/.factory/sessions."""
    default = home / ".factory" / "sessions"
    return rules.env_roots(env, DATA_DIR_ENV, [default], blank_means_unset=False)


def files(root: Path) -> list[Path]:
    return [path for path in rules.walk(root, rules.extension("json"))
            if path.name.endswith(SUFFIX)]  # fmt: skip


def normalize_model(model: str) -> str:
    """parser.rs normalize_droid_model_name."""
    raw = model.removeprefix("custom:")
    kept, depth = [], 0
    for char in raw:
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(depth - 1, 0)
        elif depth == 0:
            kept.append(char)
    lower = "".join(kept).strip(rules.RUST_WHITESPACE).rstrip("-")
    lower = "".join(c.lower() if c.isascii() else c for c in lower)
    out: list[str] = []
    for char in lower:
        dash = char in ".-" or char.isspace()
        if dash:
            if not out or out[-1] != "-":
                out.append("-")
        else:
            out.append(char)
    return "".join(out).strip("-")


def _provider(value: Any) -> str:
    if not isinstance(value, str):
        return "unknown"
    name = value.strip(rules.RUST_WHITESPACE)
    name = "".join(c.lower() if c.isascii() else c for c in name).replace("-", "_")
    aliases = {"": "unknown", "claude": "anthropic", "google_ai": "google", "gemini": "google",
               "vertex": "google", "vertex_ai": "google", "x_ai": "xai", "grok": "xai"}  # fmt: skip
    return aliases.get(name, name)


def _infer_provider(model: str) -> str:
    if any(word in model for word in ("claude", "opus", "sonnet", "haiku")):
        return "anthropic"
    if (model.startswith("gpt-") or "-gpt-" in model or "chatgpt" in model
            or (model[:1] == "o" and model[1:2].isascii() and model[1:2].isdigit())):  # fmt: skip
        return "openai"
    if "gemini" in model:
        return "google"
    return "xai" if "grok" in model else "unknown"


def _sidecar_model(path: Path) -> str | None:
    sidecar = path.with_name(path.name.removesuffix(SUFFIX) + ".jsonl")
    try:
        content = sidecar.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in content.split("\n")[:500]:
        if "Model:" not in line:
            continue
        tail = line.split("Model:", 1)[1]
        for stop in ('"', "\\", "["):
            tail = tail.split(stop, 1)[0]
        raw = tail.strip(rules.RUST_WHITESPACE)
        if raw and normalize_model(raw):
            return normalize_model(raw)
    return None


def _string(settings: dict[str, Any], key: str) -> str | None:
    value = settings.get(key)
    if not isinstance(value, str):
        return None
    return value.strip(rules.RUST_WHITESPACE) or None


def read_files(paths: Iterable[Path]) -> ReadResult:
    result = ReadResult()
    parsed: list[AgentUsage] = []
    for path in sorted(set(paths)):
        entry = _read(path, result)
        if entry is not None:
            parsed.append(entry)
    parsed.sort(key=lambda entry: entry.timestamp)
    seen: set[str] = set()
    for entry in reversed(parsed):  # the latest snapshot of a session wins
        if entry.session not in seen:
            seen.add(entry.session)
            result.entries.append(entry)
    return result


def _read(path: Path, result: ReadResult) -> AgentUsage | None:
    try:
        data = path.read_bytes()
        stat = path.stat()
    except FileNotFoundError:
        return None
    except OSError:
        result.reject("unreadable")
        return None
    try:
        settings = rules.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):  # ccusage stops the whole report here
        result.reject("bad_json")
        return None
    if not isinstance(settings, dict) or not isinstance(settings.get("tokenUsage"), dict):
        return None
    usage = settings["tokenUsage"]
    input, output = rules.as_u64(usage.get("inputTokens")), rules.as_u64(usage.get("outputTokens"))
    creation = rules.as_u64(usage.get("cacheCreationTokens"))
    read = rules.as_u64(usage.get("cacheReadTokens"))
    output, thinking = rules.total_fallback(
        input, output, creation, read, rules.as_u64(usage.get("totalTokens")),
        rules.as_u64(usage.get("thinkingTokens")),
    )  # fmt: skip
    if input + output + creation + read + thinking == 0:
        return None
    provider = _provider(settings.get("providerLock"))
    named = _string(settings, "model")
    model = normalize_model(named) if named is not None else _sidecar_model(path)
    model = model or DEFAULT_MODELS.get(provider, "unknown")
    if provider == "unknown":
        provider = _infer_provider(model)
    stamp = _string(settings, "providerLockTimestamp")
    when = rules.parse_ts(stamp) if stamp else None
    if when is None:  # ccusage dates the session by the file's mtime then
        when = int(stat.st_mtime_ns // 1_000_000) / 1000
    session = path.name.removesuffix(SUFFIX)
    return _Usage(AGENT, rules.response_key(AGENT, session), when, session, "droid", model,
                  input, output + thinking, read, creation, None, provider)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Usage(AgentUsage):
    """A session's usage and the provider its price candidates come from."""

    provider: str = "unknown"


def candidates(model: str, provider: str) -> list[str]:
    prefixes = PREFIXES.get(provider, (f"{provider}/", f"openrouter/{provider}/"))
    return list(dict.fromkeys([model, *(prefix + model for prefix in prefixes)]))


def price(entry: AgentUsage) -> float | None:
    """The first candidate droid_prices.json prices above 0; None: unpriced."""
    provider = getattr(entry, "provider", "unknown")
    for name in candidates(entry.model, provider):
        cost = PRICES.cost(name, entry.input, entry.output, entry.cache_read,
                           entry.cache_creation)  # fmt: skip
        if cost:
            return cost
    return None
