"""Only the families a question needs, from a sentinel's spool file, without parsing the rest.

prometheus_client's parser takes about 0.25 s for the token ledger's file of a busy year
(3,000 lines with 1,000 sessions), and `agentwatch mcp` must answer within 100 ms. The files
are written by agentwatch itself (core/spool.py renders them, the exporter checks them on every
scrape), so here a line is read only when it starts with a wanted metric name, and it must then
have exactly the shape the renderer writes: `name{label="value",...} number`, values escaped
as in the exposition format. Anything else on such a line is an error, never a guess.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from agentwatch.core import bounded, spool, spool_readers

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')
_UNESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}

Samples = list[tuple[str, dict[str, str], float]]


class BadLine(ValueError):
    """A wanted line that is not what the renderer writes."""


def _labels(text: str, line: int) -> dict[str, str]:
    labels: dict[str, str] = {}
    at = 0
    while at < len(text):
        match = _LABEL.match(text, at)
        if match is None:
            raise BadLine(f'line {line}: labels are not name="value" pairs')
        value = _UNESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), match[2])
        labels[match[1]] = value
        at = match.end()
    return labels


def parse(text: str, names: tuple[str, ...], contains: str = "") -> Samples:
    """The samples of the lines whose metric name starts with one of `names` (and that hold
    `contains`, e.g. one session's label, so a year of sessions is not parsed for one)."""
    found: Samples = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.startswith(names) or contains not in line:
            continue
        match = _SAMPLE.match(line)
        if match is None:
            raise BadLine(f"line {number}: not a sample line")
        try:
            value = float(match[3])
        except ValueError:
            raise BadLine(f"line {number}: {match[3][:20]!r} is not a number") from None
        if not math.isnan(value):
            found.append((match[1], _labels(match[2] or "", number), value))
    return found


# (path, names, contains) -> (the file's signature when read, its samples): a sentinel
# rewrites its file once per interval (the ledger every 60 s), questions come far more often.
_CACHE: dict[tuple[str, tuple[str, ...], str], tuple[tuple[int, int, int], Samples]] = {}
CACHE_ENTRIES = 64


def read(
    spool_dir: Path, sentinel: str, names: tuple[str, ...], contains: str = ""
) -> Samples | None:
    """The wanted samples of a sentinel's file; None when it has none. OSError/ValueError
    (bad UTF-8, BadLine) when the file is there but unusable. A file unchanged since the
    same question (inode, size, mtime: sentinels replace their file, never edit it) is not
    read again."""
    path = spool_readers.path(spool_dir, sentinel)
    key = (str(path), names, contains)
    try:
        stat = os.stat(path)
        signature = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        cached = _CACHE.get(key)
        if cached is not None and cached[0] == signature:
            return list(cached[1])
        data = bounded.read_bytes(path, bounded.SPOOL_LIMIT)
    except FileNotFoundError:
        _CACHE.pop(key, None)
        return None
    found = parse(spool.decode(data), names, contains)
    if len(_CACHE) >= CACHE_ENTRIES:
        _CACHE.clear()
    _CACHE[key] = (signature, found)
    return list(found)
