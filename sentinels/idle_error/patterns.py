"""The pane patterns as data: the shipped `patterns.json`, loaded and compiled once.

Keeping what Claude Code prints in a data file means a new error wording is a one-line change,
and the set of pattern classes (a metric label) is bounded by what the file names.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

# Beside this module in the installed package (not importlib.resources: 1 MiB of private
# memory in the resident sentinel for reading one file).
SHIPPED = Path(__file__).with_name("patterns.json")

STATES = (
    "working",
    "idle",
    "api_error",
    "rate_limited",
    "usage_limit",
    "context_wedge",
    "context_too_long",
    "approval_prompt",
)
# States that mean "stalled on something to act on"; the rest are normal operation.
STALL_STATES = STATES[2:]
APPROVAL_CLASS = "approval_menu"  # the approval menu is a layout rule in code, not a regex
_CLASS = re.compile(r"^[a-z][a-z0-9_]*$")
_FLAGS = re.IGNORECASE


class PatternError(ValueError):
    """The pattern file is unusable; the message names the entry."""


@dataclass(frozen=True)
class Rule:
    """A harness line (`start`, anchored) or a refinement (`search`, anywhere in the message)."""

    cls: str
    state: str
    regex: re.Pattern[str]
    column0: bool = False  # may fire from an unindented line without a lead glyph
    refine: bool = False  # the message is refined by the `refine` rules
    refine_only: frozenset[str] = frozenset()  # ...by those of these classes only (empty: all)


@dataclass(frozen=True)
class Patterns:
    """The loaded pattern file: glyphs and rules by class."""

    lead_glyphs: frozenset[str]
    prompt_glyphs: frozenset[str]
    message_glyphs: frozenset[str]
    harness: tuple[Rule, ...]  # matched at the start of a line's text; searched for suppressions
    refine: tuple[Rule, ...]
    policy_class: str
    policy_min_lines: int
    policy_becomes: tuple[str, str]  # (class, state)
    signals: dict[str, re.Pattern[str]]

    @property
    def classes(self) -> frozenset[str]:
        return frozenset(
            [rule.cls for rule in (*self.harness, *self.refine)]
            + [self.policy_becomes[0], APPROVAL_CLASS]
        )


SIGNALS = (
    "spinner",
    "retry_spinner",
    "interrupted",
    "idle_footer",
    "compaction",
    "approval_question",
    "approval_cancel",
    "approval_selector",
)


def _compile(text: Any, where: str) -> re.Pattern[str]:
    if not isinstance(text, str) or not text:
        raise PatternError(f"{where}: expected a non-empty regex string")
    try:
        return re.compile(text, _FLAGS)
    except re.error as err:
        raise PatternError(f"{where}: bad regex: {err}") from err


def _rule(raw: Any, where: str, key: str) -> Rule:
    if not isinstance(raw, dict):
        raise PatternError(f"{where}: expected an object")
    cls, state = raw.get("class"), raw.get("state")
    if not isinstance(cls, str) or not _CLASS.match(cls):
        raise PatternError(f"{where}: 'class' must be a lower_snake_case name")
    if state not in STALL_STATES:
        raise PatternError(f"{where}: 'state' must be one of {', '.join(STALL_STATES)}")
    refine = raw.get("refine", False)
    only: list[Any] = refine if isinstance(refine, list) else []
    if not isinstance(refine, bool) and not (
        only and all(isinstance(name, str) and _CLASS.match(name) for name in only)
    ):
        raise PatternError(f"{where}: 'refine' must be true, false or a list of class names")
    return Rule(
        cls=cls,
        state=state,
        regex=_compile(raw.get(key), f"{where}.{key}"),
        column0=bool(raw.get("column0", False)),
        refine=bool(refine),
        refine_only=frozenset(only),
    )


def _glyphs(raw: dict[str, Any]) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    lead = set(str(raw.get("lead", "")))
    for pair in raw.get("lead_ranges", []):
        low, high = (int(bound, 16) for bound in pair)
        lead.update(chr(code) for code in range(low, high + 1))
    prompt = frozenset(str(raw.get("prompt", "")))
    return frozenset(lead - prompt), prompt, frozenset(str(raw.get("message", "")))


def parse(data: Any) -> Patterns:
    if not isinstance(data, dict):
        raise PatternError("expected a JSON object")
    try:
        lead, prompt, message = _glyphs(data.get("glyphs") or {})
    except (TypeError, ValueError) as err:
        raise PatternError(f"glyphs: {err}") from err
    harness = tuple(
        _rule(raw, f"harness[{index}]", "start")
        for index, raw in enumerate(data.get("harness") or [])
    )
    if not harness:
        raise PatternError("harness: at least one rule is needed")
    refine = tuple(
        _rule(raw, f"refine[{index}]", "search") for index, raw in enumerate(data.get("refine", []))
    )
    refined = {rule.cls for rule in refine}
    for index, rule in enumerate(harness):
        unknown = sorted(rule.refine_only - refined)
        if unknown:
            raise PatternError(f"harness[{index}].refine: no refinement of class {unknown[0]}")
    policy = data.get("policy_wedge") or {}
    signals_raw = data.get("signals") or {}
    missing = [name for name in SIGNALS if name not in signals_raw]
    if missing:
        raise PatternError(f"signals: missing {', '.join(missing)}")
    signals = {name: _compile(signals_raw[name], f"signals.{name}") for name in SIGNALS}
    becomes_state = policy.get("becomes_state", "context_wedge")
    if becomes_state not in STALL_STATES:
        raise PatternError("policy_wedge.becomes_state: not a stall state")
    return Patterns(
        lead_glyphs=lead,
        prompt_glyphs=prompt,
        message_glyphs=message,
        harness=harness,
        refine=refine,
        policy_class=str(policy.get("class", "usage_policy")),
        policy_min_lines=int(policy.get("min_lines", 2)),
        policy_becomes=(str(policy.get("becomes_class", "policy_wedge")), becomes_state),
        signals=signals,
    )


@cache
def shipped() -> Patterns:
    """The patterns shipped with the package (read once per process)."""
    text = SHIPPED.read_text(encoding="utf-8")
    return parse(json.loads(text))
