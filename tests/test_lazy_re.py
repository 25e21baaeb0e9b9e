"""core/lazy_re.py compiles on first use and then answers as the compiled pattern does, and
label_value's way around the regular expressions for printable ASCII changes no value."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agentwatch.core import sanitize
from agentwatch.core.lazy_re import Pattern


def test_a_pattern_compiles_on_first_use_and_answers_as_re_does() -> None:
    lazy = Pattern(r"(?i)\b(a+)(b?)")
    assert "search" not in vars(lazy)  # nothing compiled yet
    compiled = re.compile(r"(?i)\b(a+)(b?)")
    text = "xx AAb a ab"
    assert lazy.search(text).group(1) == compiled.search(text).group(1)  # type: ignore[union-attr]
    assert "search" in vars(lazy)  # from now on the compiled pattern's own method
    assert lazy.sub(r"<\1>", text) == compiled.sub(r"<\1>", text)
    assert lazy.findall(text) == compiled.findall(text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert bool(lazy.match("ab")) and lazy.fullmatch("c") is None
    assert Pattern("x", re.I).search("X") is not None


def regex_only(text: str) -> str:
    """label_value for a str as it was before the ASCII shortcut (short values)."""
    if re.search("[\ud800-\udfff]", text):
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if re.search("[\x00-\x1f\x7f-\x9f\u2028\u2029]", text):
        text = text.translate(sanitize.CONTROL_ESCAPES)
    return text


@settings(max_examples=500, deadline=None)
@given(
    st.text(max_size=60)
    | st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=60)
    | st.text(alphabet=st.characters(categories=["Cs", "Cc", "Zl", "Zp", "Ll"]), max_size=20)
)
def test_label_values_are_what_the_regular_expressions_made_them(text: str) -> None:
    assert sanitize.label_value(text, limit=10**6) == regex_only(text)
