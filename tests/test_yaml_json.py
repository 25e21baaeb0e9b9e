"""core/yaml_json.py reads a YAML config whose text is JSON without PyYAML: wherever it takes a
text, its value is exactly (types, key order, the sign of a zero) what yamlsafe.load gives,
and it never takes a text the YAML side refuses. Checked on generated JSON (numbers in every
JSON form, strings with any character, keys that repeat or run long, whitespace of every kind
between the tokens) and on hand-picked texts where YAML 1.1 and JSON part ways."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentwatch.core import yaml_json, yamlsafe

NUMBER = st.from_regex(r"\A-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,6})?([eE][+-]?[0-9]{1,3})?\Z")
# whitespace between tokens, JSON's (and a few it refuses) in the runs a writer would leave
GAP = st.sampled_from(["", "", " ", "  ", "\n", "\n  ", "\r\n", "\t", " " * 40, "\n\n    ", "\x0c"])
TEXT = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=6),
    st.sampled_from(["true", "1e3", "null", "<<", "#x", "- a", "a: b", "---", "...", "&a", "*a"]),
    st.integers(880, 1100).map(lambda n: "k" * n),
)
KEY = st.one_of(st.sampled_from(["a", "b", "agents", "c"]), TEXT)


def same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (True is not 1, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    return bool(a == b)


def yaml_reads(text: str) -> tuple[bool, Any]:
    """(True, value) as yamlsafe reads the text, or (False, None) when it refuses it."""
    try:
        return True, yamlsafe.load(text)
    except (yaml.YAMLError, yamlsafe.YamlRefused, ValueError, RecursionError):
        return False, None


def check(text: str) -> bool:
    """The property on one text; True when the fast path took it."""
    fast = yaml_json.parse(text)
    if fast is yaml_json.NOT_YAML_SAME:
        return False
    ok, value = yaml_reads(text)
    assert ok, f"taken by the fast path, refused by YAML: {text!r}"
    assert same(fast, value), f"{text!r}: fast {fast!r} != yaml {value!r}"
    return True


def string_token(draw: st.DrawFn, value: str) -> str:
    how = draw(st.sampled_from(["dumps", "ascii", "raw"]))
    if how == "raw":
        return f'"{value}"'
    return json.dumps(value, ensure_ascii=how == "ascii")


@st.composite
def document(draw: st.DrawFn, depth: int = 0, top: bool = True) -> str:
    """JSON text with a random gap around every token; an object at the top mostly."""
    gap = lambda: draw(GAP)  # noqa: E731
    kind = "object" if top and draw(st.integers(0, 9)) else None
    if kind is None:
        choices = ["number", "string", "literal"] + (["object", "array"] if depth < 4 else [])
        kind = draw(st.sampled_from(choices))
    if kind == "number":
        return draw(NUMBER)
    if kind == "literal":
        return draw(st.sampled_from(["true", "false", "null", "NaN", "Infinity", "-Infinity"]))
    if kind == "string":
        return string_token(draw, draw(TEXT))
    if kind == "array":
        items = draw(st.lists(document(depth + 1, top=False), max_size=4))
        return "[" + gap() + ("," + gap()).join(items) + gap() + "]"
    pairs = draw(st.lists(st.tuples(KEY, document(depth + 1, top=False)), max_size=4))
    body = ("," + gap()).join(
        string_token(draw, key) + gap() + ":" + gap() + value for key, value in pairs
    )
    return gap() + "{" + gap() + body + gap() + "}" + gap()


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(document())
def test_generated_documents_read_as_yaml_reads_them(text: str) -> None:
    check(text)


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    ),
    st.sampled_from([None, 0, 2, 4]),
    st.booleans(),
)
def test_json_dumps_output_reads_as_yaml_reads_it(
    value: Any, indent: int | None, ascii_: bool
) -> None:
    """What a script writes: json.dumps of any value, indented or not."""
    check(json.dumps({"sentinels": value}, indent=indent, ensure_ascii=ascii_))


TAKEN = [
    '{"sentinels": {"agent-ledger": {"agents": ["codex"]}}}',
    '{\n  "log_level": "info",\n  "a": [1, 2.5, -0.0, 1.5e+3, 1.5E-3, 0.5, -0, true, null]\n}\n',
    '\r\n{"a"  :  1\r\n, "b":\n{}}',
    '{"a":1,"b":[],"c":{"d":"é ✓ 𝄞"}}',
    '{"a": "# not a comment", "b": "---", "c": "&x *x", "d": "!!int 1", "<<": {"e": 1}}',
    '{"a": 123456789012345678901234567890, "b": 1.0e+999, "c": "yes", "d": "~"}',
    "{" + '"k": ' * 0 + '"' + "k" * 900 + '": 1}',
    '{"a": ' * 60 + "1" + "}" * 60,
]
REFUSED = [
    '{"a": 1e3}',  # YAML 1.1: the string "1e3"
    '{"a": 1.5e3}',  # unsigned exponent: a string to YAML
    '{"a": 1E+3}',  # no '.': a string to YAML
    '{"a": NaN}',
    '{"a": -Infinity}',
    '{"a": "\\u00e9"}',  # any escape
    '{"a": "\\ud83d\\ude00"}',  # YAML keeps the two surrogates apart
    '{"a":\t1}',  # no separator to YAML
    '{"a": 1, "a": 2}',
    '["a"]',
    '"a"',
    "3",
    '{"a": "x\x7fy"}',  # DEL: YAML refuses it
    '{"a": "x\x85y"}',  # NEL: a line break to YAML
    '{"a": "x\u2028y"}',
    '\ufeff{"a": 1}',
    '{"a"\n: 1}',  # YAML: the key is cut from its colon
    '{"' + "k" * 1100 + '": 1}',  # past PyYAML's 1024 characters from key to colon
    '{"a"' + " " * 1100 + ": 1}",
    '{"a": ' * 70 + "1" + "}" * 70,  # deeper than yamlsafe's 64
    '{"a": 01}',
    "{}\n---\n{}",
    '{"a": 1} # a comment',
    "a: 1",
    "",
]


@pytest.mark.parametrize("text", TAKEN)
def test_what_a_writer_leaves_is_taken(text: str) -> None:
    assert check(text)


@pytest.mark.parametrize("text", REFUSED)
def test_what_yaml_reads_otherwise_goes_to_yaml(text: str) -> None:
    assert yaml_json.parse(text) is yaml_json.NOT_YAML_SAME
