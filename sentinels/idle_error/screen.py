"""A captured pane as lines the classifier can reason about: colours gone, lead glyphs split off.

Who printed a line is read from how it starts: Claude Code leads its own output with a glyph
(⏺ ⎿ ● ✻ …, or a box-drawing frame), a prompt or menu line starts with `>` (or U+276F,
U+203A), and text indented without a glyph is the body of a message or of a tool's output.
Matching only the start of the text after the lead keeps tokens quoted in prose, logs or code
from firing.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from agentwatch.sentinels.idle_error.patterns import Patterns

# CSI (colours, cursor moves), OSC (titles, hyperlinks) and the other two-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
MAX_LINE = 200  # characters of a matched line kept for the classify-pane debugging output


@dataclass(frozen=True)
class Line:
    """One non-empty line of the tail."""

    raw: str  # without colours and trailing blanks
    text: str  # after the lead (blanks and glyphs) and a trailing frame are stripped
    lead: str  # "column0", "glyph", "prompt" or "indent"
    first_glyph: str  # the first non-blank character when the line is glyph- or prompt-led
    from_end: int  # 1 = the last non-empty line of the capture


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def meaningful_lines(text: str, rows: int) -> list[str]:
    """The last `rows` lines of the capture, colours removed, trailing blank lines dropped.

    A carriage return inside a line keeps what a terminal would show last (the text after it).
    """
    lines = []
    for line in strip_ansi(text.replace("\r\n", "\n")).split("\n"):
        if "\r" in line:
            line = line.rsplit("\r", 1)[1]
        lines.append(_CONTROL.sub("", line).rstrip())
    while lines and not lines[-1].strip():
        lines.pop()
    return lines[-rows:] if rows > 0 else lines


def tail_hash(lines: list[str]) -> str:
    """A digest of the tail: tells "unchanged since" without keeping any pane text."""
    return hashlib.blake2b("\n".join(lines).encode(), digest_size=12).hexdigest()


def _split(raw: str, patterns: Patterns) -> tuple[str, str, str]:
    """(lead kind, first glyph, text) of one line."""
    index, first = 0, ""
    glyph_led = False
    while index < len(raw):
        char = raw[index]
        if char.isspace():
            index += 1
            continue
        if char in patterns.lead_glyphs:
            glyph_led = True
            first = first or char
            index += 1
            continue
        break
    text = raw[index:].rstrip()
    while text and (text[-1].isspace() or text[-1] in patterns.lead_glyphs):
        text = text[:-1]
    if text and text[0] in patterns.prompt_glyphs and (len(text) == 1 or text[1].isspace()):
        return "prompt", first or text[0], text[1:].lstrip()
    if glyph_led:
        return "glyph", first, text
    if index == 0:
        return "column0", "", text
    return "indent", "", text


def parse(lines: list[str], patterns: Patterns) -> list[Line]:
    """The non-empty lines, bottom one last, each with its lead and distance from the end."""
    kept = [raw for raw in lines if raw.strip()]
    parsed = []
    for position, raw in enumerate(kept):
        lead, first, text = _split(raw, patterns)
        parsed.append(Line(raw, text, lead, first, len(kept) - position))
    return parsed
