"""Reading a growing file line by line from a saved position, safely.

Works on bytes: a line is decoded only once complete, so a UTF-8 character split across
reads is never broken. Long lines that cannot hold usage (file snapshots, big tool results)
pass through without being kept in memory.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass

MARKER = b'"usage":{'
HEAD_BYTES = 1024
TAIL_BYTES = 256  # fingerprinted just before the read position
CHUNK = 1024 * 1024
LONG_LINE = 1024 * 1024  # a partial line longer than this is skimmed, not kept
MAX_LINE = 256 * 1024 * 1024  # a candidate line longer than this is counted, not parsed


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
    tail: bytes = b""  # fingerprint of the TAIL_BYTES before `offset` (empty: not known)


@dataclass
class Skim:
    """How far a long partial line has been scanned, so that the next read goes on from
    there instead of scanning it again from its start (a 10 GB line without a newline)."""

    line_start: int
    scanned: int  # offset up to which the line holds no newline
    candidate: bool  # the marker was seen in it
    tail: bytes  # its last bytes, for a marker split across reads


@dataclass
class ReadResult:
    """What one read of a transcript's new bytes found."""

    candidates: list[tuple[int, bytes]]  # (offset of line start, raw line without newline)
    lines: int  # complete lines consumed
    end: int  # offset after the last complete line
    oversize: int = 0  # complete lines longer than max_line, skipped unread
    skim: Skim | None = None  # where a long partial line's scan stopped (resumable reads)
    progress: int = 0  # new bytes consumed or scanned (0: nothing more to do for now)


def same_file(fd: int, stat: os.stat_result, pos: Position) -> bool:
    """True when the open file is the one `pos` describes and was not truncated or replaced."""
    if (stat.st_dev, stat.st_ino) != (pos.dev, pos.ino) or stat.st_size < pos.offset:
        return False
    if pos.head_len and head_hash(os.pread(fd, pos.head_len, 0)) != pos.head:
        return False
    # A file rewritten in place that kept its first lines and grew past the old position:
    # the bytes just before the position tell it apart.
    return not pos.tail or _tail_hash(fd, pos.offset) == pos.tail


def _tail_hash(fd: int, offset: int) -> bytes:
    start = max(offset - TAIL_BYTES, 0)
    return head_hash(os.pread(fd, offset - start, start))


def refresh_head(fd: int, stat: os.stat_result, pos: Position) -> None:
    """Fingerprint up to HEAD_BYTES of the file start (grows until it is full) and the bytes
    just before the read position (call after moving `pos.offset`)."""
    if pos.head_len < HEAD_BYTES and stat.st_size > pos.head_len:
        data = os.pread(fd, HEAD_BYTES, 0)
        pos.head_len = len(data)
        pos.head = head_hash(data)
    pos.tail = _tail_hash(fd, pos.offset) if pos.offset else b""


def read_lines(
    fd: int,
    start: int,
    limit: int,
    max_line: int = MAX_LINE,
    tail_is_complete: Callable[[bytes], bool] | None = None,
    resume: Skim | None = None,
    resumable: bool = False,
) -> ReadResult:
    """Read complete lines from `start`; stop after about `limit` bytes at a line boundary.

    A partial last line is left for the next call (its offset is not consumed) unless
    `tail_is_complete` says it is whole already (a writer that never ends its last line).
    Memory stays near CHUNK however long a line is: a partial line longer than LONG_LINE is
    skimmed, remembering only whether it holds the marker; a candidate is then read whole
    once it is complete, unless it is longer than `max_line` (counted as oversize).
    When `resumable`, a long partial line is scanned for about `limit` bytes only, and where
    the scan stopped is returned (`skim`) to be passed back as `resume`: a huge line is read
    in bounded slices, each byte once.
    """
    if start > 0 and os.pread(fd, 1, start - 1) != b"\n" and os.pread(fd, 1, start) == b"\n":
        start += 1  # the newline owed by a whole last line taken earlier: not a new line
    result = ReadResult(candidates=[], lines=0, end=start)
    keep = len(MARKER) - 1
    position = start  # where the next read starts
    line_start = start  # file offset of the current partial line
    buf = b""  # the partial line, unless skimming
    skimming = candidate = False
    tail = b""  # while skimming: the last bytes seen, so a marker split across reads is found
    if resume is not None and resume.line_start == start and resume.scanned > start:
        position, skimming, candidate, tail = resume.scanned, True, resume.candidate, resume.tail
    read_from = position
    while position - read_from < limit or (result.end == start and not (resumable and skimming)):
        data = os.pread(fd, CHUNK, position)
        if not data:
            if buf and MARKER in buf and tail_is_complete and tail_is_complete(buf):
                result.lines += 1
                result.candidates.append((line_start, buf))
                result.end = line_start + len(buf)
            break
        data_start = position
        position += len(data)
        if skimming:
            newline = data.find(b"\n")
            upto = len(data) if newline < 0 else newline
            # The marker in this read's part of the line (searched in place: the line can be
            # gigabytes), or across the previous read's end
            across = tail + data[: min(keep, upto)]
            candidate = candidate or has_marker(data, 0, upto) or has_marker(across, 0, len(across))
            if newline < 0:
                tail = (tail + data[max(upto - keep, 0) : upto])[-keep:]
                continue
            length = data_start + newline - line_start
            result.lines += 1
            if candidate and length > max_line:
                result.oversize += 1
            elif candidate:
                result.candidates.append((line_start, os.pread(fd, length, line_start)))
            line_start = result.end = data_start + newline + 1
            skimming = False
            data = data[newline + 1 :]
        last_nl = data.rfind(b"\n")
        if last_nl >= 0:
            # Only the line that spans the two reads is joined: the rest is searched where it
            # lies (no copy of each megabyte).
            base = line_start + len(buf)  # file offset of data[0]
            begin = 0
            if buf:
                begin = data.find(b"\n") + 1
                joined = buf + data[:begin]
                result.lines += 1
                if has_marker(joined, 0, len(joined)):
                    result.candidates.append((line_start, joined[:-1]))
            result.lines += collect(data, begin, last_nl + 1, base, result.candidates)
            line_start = result.end = base + last_nl + 1
            buf = data[last_nl + 1 :]
        else:
            buf = buf + data if buf else data
        if len(buf) > LONG_LINE:
            skimming, candidate = True, has_marker(buf, 0, len(buf))
            tail, buf = buf[-keep:], b""
    if skimming:
        result.skim = Skim(line_start, position, candidate, tail)
        result.progress = position - read_from
    else:
        result.progress = result.end - start
    return result


def collect_in_python(
    block: bytes, begin: int, stop: int, base: int, out: list[tuple[int, bytes]]
) -> int:
    """The newlines in block[begin:stop]; appends (base + start, line) to `out` for each line
    there that holds the marker (`begin` is a line start, block[stop - 1] a newline).
    `_fastline.collect` is the same in C; this is what runs without it, and its reference."""
    find, rfind = block.find, block.rfind
    lines = 0
    at = find(b"\n", begin, stop)
    while at >= 0:  # a memchr-driven loop: faster than bytes.count on long lines
        lines += 1
        at = find(b"\n", at + 1, stop)
    pos = find(MARKER, begin, stop)
    while pos >= 0:
        start = rfind(b"\n", begin, pos) + 1 or begin
        end = find(b"\n", pos)
        out.append((base + start, block[start:end]))
        pos = find(MARKER, end, stop)
    return lines


def find_in_python(block: bytes, begin: int, stop: int) -> int:
    """Where the marker starts in block[begin:stop], or -1: `_fastline.find`'s reference."""
    return block.find(MARKER, begin, stop)


def has_marker(block: bytes, begin: int, stop: int) -> bool:
    return find(block, begin, stop) >= 0


try:  # built with the package: the same with a SIMD search for the marker
    from agentwatch.sentinels.token_ledger._fastline import collect, find
except ImportError:  # pragma: no cover - tests/test_fastline.py requires it
    collect, find = collect_in_python, find_in_python
