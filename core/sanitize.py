"""Text from outside made safe to show: as a label value, in an error message, in a log line.

Label values come from places an attacker on the same workstation controls (a project's cwd, a
model name in a transcript, a tmux session name, a repository path). `label_value` is the one
place they become safe: control characters turn into visible escapes (`\\x0d`), text that is not
valid UTF-8 into backslash escapes, and a value past `MAX_LABEL_LENGTH` is cut with a stable
short hash so that two long values stay two series. `preview` quotes at most a short prefix of a
bad value for an error message; `mask_urls` hides credentials and query strings in a log line.
"""

from __future__ import annotations

from agentwatch.core.lazy_re import Pattern

MAX_LABEL_LENGTH = 128
PREVIEW_LENGTH = 40
_HASH_LENGTH = 8

# C0, DEL, C1 and the Unicode line and paragraph separators: anything a line-based reader
# (or a terminal) could take for a line break or a command.
_CONTROLS = [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]
CONTROL_ESCAPES = {
    code: (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}") for code in _CONTROLS
}
_HAS_CONTROL = Pattern("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_HAS_SURROGATE = Pattern("[\ud800-\udfff]")


def label_value(value: str | bytes | None, limit: int = MAX_LABEL_LENGTH) -> str:
    """`value` as a label value that any exposition reader parses back unchanged: no control
    characters, valid UTF-8, at most `limit` characters (a longer value keeps its first part
    and a hash of the whole, so distinct values stay distinct)."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        text = value.decode("utf-8", "backslashreplace")
    else:
        text = value
        # os.fsdecode of a non-UTF-8 path, or JSON "\ud800"
        if not text.isascii() and _HAS_SURROGATE.search(text):
            text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    # printable ASCII (most values) has none, without a regular expression
    if not (text.isascii() and text.isprintable()) and _HAS_CONTROL.search(text):
        text = text.translate(CONTROL_ESCAPES)
    if len(text) <= limit:
        return text
    import hashlib  # only for long values: it costs the hook's every start 3 ms

    original = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(original).hexdigest()[:_HASH_LENGTH]
    return f"{text[: max(limit - _HASH_LENGTH - 1, 0)]}~{digest}"


def preview(value: object, limit: int = PREVIEW_LENGTH) -> str:
    """A bad value as an error message may quote it: its type, and a short, escaped prefix."""
    text = value if isinstance(value, str) else repr(value)
    shown = label_value(text, limit=10**9)
    if len(shown) > limit:
        return f"{shown[:limit]!r}… ({len(text)} characters)"
    return repr(shown) if isinstance(value, str) else shown


_CREDENTIALS = Pattern(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")
_QUERY = Pattern(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s?#]*)\?[^\s#'\"]*")


def mask_urls(text: str) -> str:
    """`text` with every URL's user:password@ and ?query replaced by `***` (tokens travel in
    both), for log lines that quote another program's error."""
    return _QUERY.sub(r"\1?***", _CREDENTIALS.sub(r"\1***@", text))
