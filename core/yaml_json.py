"""A YAML config file whose text is JSON, read without the YAML parser.

JSON is almost YAML: a config written by a script (`json.dumps` into config.yaml, as the
agent-ledger benches do) reads the same both ways, and importing PyYAML is 12-15 ms of a short
command's start (issue 29: `sentinel agent-ledger --once` against `ccusage codex daily`).
But PyYAML reads YAML 1.1, where some JSON differs: `1e3` and `1.5e3` are strings, `\\ud83d`
escapes are not joined into one character, DEL and C1 characters are refused, a key cut from
its colon by a line break or more than 1024 characters is an error, a tab is no separator,
and yamlsafe refuses nesting deeper than 64. So `parse` takes a text only where none of these
can arise, and answers NOT_YAML_SAME for everything else, which the caller hands to the YAML
parser: its answer is always what `yamlsafe.load` gives (tests/test_yaml_json.py compares
them on generated documents)."""

from __future__ import annotations

import json
import re
from typing import Any

NOT_YAML_SAME = object()  # parse could not vouch: the YAML parser reads the text
LONGEST = 1024 * 1024  # characters; yamlsafe.MAX_EXPANDED is 4 MiB of scalars and nodes
DEEPEST = 60  # nested objects and arrays; yamlsafe.MAX_DEPTH is 64 nodes
LONGEST_KEY = 900  # PyYAML forgets a key more than 1024 characters before its colon
# Characters PyYAML refuses (outside its printable set), reads as a line break inside a
# string (NEL, LS, PS), or does not take for a separator (tab); a backslash starts an escape,
# whose reading differs for surrogate pairs. (The complement, a class of what is allowed,
# takes 5 ms to compile.)
_UNSAFE = "[\x00-\x09\x0b\x0c\x0e-\x1f\\\\\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]"
# A key's closing quote, then a line break, or more than a few spaces, before its colon.
_KEY_APART = '"(?: *[\r\n]| {32})[ \r\n]*:'


class _Differs(ValueError):
    """The JSON holds something YAML 1.1 reads otherwise (or might)."""


def parse(text: str) -> Any:
    """The JSON object `text` as a dict, when YAML reads it the same; else NOT_YAML_SAME."""
    if len(text) > LONGEST or not text.lstrip(" \r\n").startswith("{"):
        return NOT_YAML_SAME
    if _unsafe(text) or (_spread(text) and re.search(_KEY_APART, text)):
        return NOT_YAML_SAME
    try:
        value = json.loads(
            text, object_pairs_hook=_mapping, parse_float=_float, parse_constant=_constant
        )
    except (ValueError, RecursionError):  # _Differs included
        return NOT_YAML_SAME
    if not isinstance(value, dict) or _deeper_than(value, DEEPEST):
        return NOT_YAML_SAME
    return value


def _unsafe(text: str) -> bool:
    if text.isascii():  # without a regular expression to compile, for the usual text
        return "\\" in text or not text.replace("\n", "").replace("\r", "").isprintable()
    return re.search(_UNSAFE, text) is not None


def _spread(text: str) -> bool:
    """Whether a key could be apart from its colon: `json.dumps` without indent is not."""
    return "\n" in text or "\r" in text or " " * 32 in text


def _mapping(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs) or any(len(key) > LONGEST_KEY for key in mapping):
        raise _Differs("a duplicate or long key")
    return mapping


def _float(literal: str) -> float:
    """A JSON number with a fraction or an exponent: YAML 1.1 reads it as a float only with a
    '.' and, if there is an exponent, a signed one (`1e3`, `1.5e3` are strings to it)."""
    mantissa, e, exponent = literal.lower().partition("e")
    if "." not in mantissa or (e and exponent[:1] not in ("+", "-")):
        raise _Differs("a number YAML 1.1 reads otherwise")
    return float(literal)


def _constant(literal: str) -> Any:
    raise _Differs(f"{literal} is not JSON")  # NaN, Infinity, -Infinity


def _deeper_than(value: Any, levels: int) -> bool:
    if levels < 0:
        return True
    items = value.values() if isinstance(value, dict) else value
    return any(_deeper_than(item, levels - 1) for item in items if isinstance(item, (dict, list)))
