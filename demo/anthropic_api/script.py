"""What the stand-in answers: scripts of steps, chosen per Claude Code session.

A script file (YAML or JSON) holds a `default` list of steps and a list of `sessions`, each
matched by `session_id` or by `prompt_contains` (a substring of the session's first prompt;
the prompt itself is never stored). Every request of Claude Code's main loop (one that offers
tools) takes the session's next step; side requests (titles, summaries) get a small answer that
takes no step. When a session's steps run out it goes on with `then`: `repeat_last` (the
default), `cycle` or `default`.

Steps (one key each, plus the optional `delay` seconds before answering):
- `answer: {text, usage, model}`; `tool_use: {name, input, text, usage}`;
- `error: {status, type, message, headers}`: the API's JSON error body with that status;
- `hang: true` (never answers), `drop: true` (closes the connection unanswered),
  `cut: {after_events: N, text, usage}` (a stream that stops after N events).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens")
CACHE_KEYS = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")
KINDS = ("answer", "tool_use", "error", "hang", "drop", "cut")
THEN = ("repeat_last", "cycle", "default")
DEFAULT_USAGE = {"input_tokens": 1200, "output_tokens": 60}


class ScriptError(ValueError):
    """A script that cannot be followed; the message names the place and the fix."""


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_5m: int = 0
    cache_1h: int = 0

    def as_api(self) -> dict[str, Any]:
        """The usage object of a message as the API sends it."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_5m + self.cache_1h,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.cache_5m,
                "ephemeral_1h_input_tokens": self.cache_1h,
            },
            "output_tokens": self.output_tokens,
            "service_tier": "standard",
        }


@dataclass(frozen=True)
class Step:
    kind: str
    text: str = "Done."
    usage: Usage = Usage()
    model: str | None = None
    tool_name: str = ""
    tool_input: dict[str, Any] = field(default_factory=dict)
    status: int = 200
    error_type: str = ""
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    after_events: int = 0


@dataclass(frozen=True)
class SessionScript:
    steps: tuple[Step, ...]
    session_id: str | None = None
    prompt_contains: str | None = None
    then: str = "repeat_last"


@dataclass(frozen=True)
class Script:
    default: tuple[Step, ...]
    sessions: tuple[SessionScript, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)  # sent with every response

    def choose(self, session_id: str, first_prompt: str) -> SessionScript:
        for candidate in self.sessions:
            if candidate.session_id is not None and candidate.session_id == session_id:
                return candidate
            if candidate.prompt_contains is not None and candidate.prompt_contains in first_prompt:
                return candidate
        return SessionScript(self.default, then="repeat_last")


def load(path: Path) -> Script:
    """Read a script file (YAML or JSON; JSON is YAML)."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ScriptError(f"{path}: cannot read the script: {err}") from err
    return parse(raw, str(path))


def parse(raw: Any, where: str = "script") -> Script:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: expected a mapping with `default` and `sessions`")
    default = _steps(raw.get("default", [{"answer": {}}]), f"{where}.default")
    sessions = []
    for index, item in enumerate(raw.get("sessions") or []):
        place = f"{where}.sessions[{index}]"
        if not isinstance(item, dict) or not ({"session_id", "prompt_contains"} & item.keys()):
            raise ScriptError(f"{place}: needs `session_id` or `prompt_contains`, and `steps`")
        then = str(item.get("then", "repeat_last"))
        if then not in THEN:
            raise ScriptError(f"{place}.then: one of {', '.join(THEN)}, not {then!r}")
        sessions.append(
            SessionScript(
                steps=_steps(item.get("steps"), f"{place}.steps"),
                session_id=_optional_text(item.get("session_id")),
                prompt_contains=_optional_text(item.get("prompt_contains")),
                then=then,
            )
        )
    return Script(default, tuple(sessions), _headers(raw.get("headers"), f"{where}.headers"))


def _steps(raw: Any, where: str) -> tuple[Step, ...]:
    if not isinstance(raw, list) or not raw:
        raise ScriptError(f"{where}: expected a non-empty list of steps")
    return tuple(_step(item, f"{where}[{index}]") for index, item in enumerate(raw))


def _step(raw: Any, where: str) -> Step:
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: a step is a mapping such as {{answer: {{text: hi}}}}")
    kinds = [kind for kind in KINDS if kind in raw]
    unknown = set(raw) - set(KINDS) - {"delay"}
    if len(kinds) != 1 or unknown:
        raise ScriptError(f"{where}: exactly one of {', '.join(KINDS)} (plus `delay`)")
    kind = kinds[0]
    body = raw[kind] if isinstance(raw[kind], dict) else {}
    delay = _number(raw.get("delay", 0), f"{where}.delay")
    common: dict[str, Any] = {"kind": kind, "delay": delay}
    if kind in ("answer", "tool_use", "cut"):
        common["text"] = str(body.get("text", "Done." if kind != "tool_use" else ""))
        common["usage"] = _usage(body.get("usage", DEFAULT_USAGE), f"{where}.{kind}.usage")
        common["model"] = _optional_text(body.get("model"))
    if kind == "tool_use":
        if not isinstance(body.get("name"), str) or not isinstance(body.get("input", {}), dict):
            raise ScriptError(f"{where}.tool_use: needs `name` (e.g. Bash) and an `input` mapping")
        common["tool_name"] = body["name"]
        common["tool_input"] = body.get("input", {})
    if kind == "cut":
        common["after_events"] = int(_number(body.get("after_events", 2), f"{where}.cut"))
    if kind == "error":
        status = body.get("status")
        if not isinstance(status, int) or not 400 <= status < 600:
            raise ScriptError(f"{where}.error.status: an HTTP error status such as 529")
        common.update(
            status=status,
            error_type=str(body.get("type", "api_error")),
            message=str(body.get("message", "Internal server error")),
            headers=_headers(body.get("headers"), f"{where}.error.headers"),
        )
    return Step(**common)


def _usage(raw: Any, where: str) -> Usage:
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: a mapping of token counts")
    counts = {key: raw.get(key, 0) for key in USAGE_KEYS}
    cache = raw.get("cache_creation") or {}
    if not isinstance(cache, dict):
        raise ScriptError(f"{where}.cache_creation: a mapping of {', '.join(CACHE_KEYS)}")
    if "cache_creation_input_tokens" in raw and not cache:  # no breakdown: a 5-minute write
        cache = {"ephemeral_5m_input_tokens": raw["cache_creation_input_tokens"]}
    counts.update({key: cache.get(key, 0) for key in CACHE_KEYS})
    for key, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ScriptError(f"{where}.{key}: a whole number of tokens >= 0")
    return Usage(
        counts["input_tokens"],
        counts["output_tokens"],
        counts["cache_read_input_tokens"],
        counts["ephemeral_5m_input_tokens"],
        counts["ephemeral_1h_input_tokens"],
    )


def _headers(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: a mapping of header names to values")
    return {str(name): str(value) for name, value in raw.items()}


def _number(raw: Any, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw < 0:
        raise ScriptError(f"{where}: a number >= 0")
    return float(raw)


def _optional_text(raw: Any) -> str | None:
    return None if raw is None else str(raw)
