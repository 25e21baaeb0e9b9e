"""Reading a growing file line by line from a saved position, safely.

Works on bytes: a line is decoded only once complete, so a UTF-8 character split across
reads is never broken. Lines that cannot hold usage are skipped without being kept in
memory past a bound (MAX_LINE): such a line is skipped and counted, never fatal.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass

MARKER = b'"usage":{'
HEAD_BYTES = 1024
CHUNK = 4 * 1024 * 1024
MAX_LINE = 256 * 1024 * 1024


def head_hash(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=8).digest()


@dataclass
class Position:
    """Where reading stopped in a file, and how to recognise the same file again."""

    dev: int = 0
    ino: int = 0
    offset: int = 0
    head_len: int = 0
    head: bytes = b""


@dataclass
class ReadResult:
    candidates: list[tuple[int, bytes]]  # (offset of line start, raw line without newline)
    lines: int  # complete lines consumed
    end: int  # offset after the last complete line
    oversize: int = 0  # complete lines longer than max_line, skipped unread


def same_file(fd: int, stat: os.stat_result, pos: Position) -> bool:
    """True when the open file is the one `pos` describes and was not truncated or replaced."""
    if (stat.st_dev, stat.st_ino) != (pos.dev, pos.ino) or stat.st_size < pos.offset:
        return False
    if pos.head_len == 0:
        return True
    return head_hash(os.pread(fd, pos.head_len, 0)) == pos.head


def refresh_head(fd: int, stat: os.stat_result, pos: Position) -> None:
    """Fingerprint up to HEAD_BYTES of the file start (grows until it is full)."""
    if pos.head_len < HEAD_BYTES and stat.st_size > pos.head_len:
        data = os.pread(fd, HEAD_BYTES, 0)
        pos.head_len = len(data)
        pos.head = head_hash(data)


def read_lines(
    fd: int,
    start: int,
    limit: int,
    max_line: int = MAX_LINE,
    tail_is_complete: Callable[[bytes], bool] | None = None,
) -> ReadResult:
    """Read complete lines from `start`; stop after about `limit` bytes at a line boundary.

    A partial last line is left for the next call (its offset is not consumed) unless
    `tail_is_complete` says it is whole already (a writer that never ends its last line).
    A line longer than `max_line` is skipped without buffering it and counted as oversize.
    """
    if start > 0 and os.pread(fd, 1, start - 1) != b"\n" and os.pread(fd, 1, start) == b"\n":
        start += 1  # the newline owed by a whole last line taken earlier: not a new line
    result = ReadResult(candidates=[], lines=0, end=start)
    offset = start  # file offset of buf[0]
    buf = b""
    skipping = False  # inside an oversize line
    read_total = 0
    while read_total < limit or result.end == start:
        data = os.pread(fd, CHUNK, offset + len(buf))
        if not data:
            if (
                buf
                and not skipping
                and MARKER in buf
                and tail_is_complete
                and tail_is_complete(buf)
            ):
                result.lines += 1
                result.candidates.append((offset, buf))
                result.end = offset + len(buf)
            break
        read_total += len(data)
        if skipping:
            newline = data.find(b"\n")
            if newline < 0:
                offset += len(data)
                continue
            skipping = False
            offset += newline + 1
            result.lines += 1
            result.oversize += 1
            result.end = offset
            data = data[newline + 1 :]
        buf += data
        last_nl = buf.rfind(b"\n")
        if last_nl < 0:
            if len(buf) > max_line:
                skipping = True
                offset += len(buf)
                buf = b""
            continue
        result.lines += _count_lines(buf, last_nl + 1)
        _collect(buf, last_nl + 1, offset, result.candidates)
        offset += last_nl + 1
        result.end = offset
        buf = buf[last_nl + 1 :]
    return result


def _count_lines(block: bytes, stop: int) -> int:
    """Newlines in block[:stop]: a memchr-driven find loop is several times faster here than
    bytes.count, because transcript lines are long."""
    find = block.find
    lines = 0
    at = find(b"\n", 0, stop)
    while at >= 0:
        lines += 1
        at = find(b"\n", at + 1, stop)
    return lines


def _collect(block: bytes, stop: int, base: int, out: list[tuple[int, bytes]]) -> None:
    """Append (offset, line) for each line in block[:stop] that contains the marker."""
    find = block.find
    rfind = block.rfind
    pos = find(MARKER, 0, stop)
    while pos >= 0:
        start = rfind(b"\n", 0, pos) + 1
        end = find(b"\n", pos)
        out.append((base + start, block[start:end]))
        pos = find(MARKER, end, stop)
