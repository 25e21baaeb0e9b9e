"""Follow the event spool by (inode, offset): new complete lines only, each line once.

The writers append to `events.jsonl` and rename it to `events.jsonl.1` when it is full
(core/claude_events.py). The position is the identity of the file being read and the offset
of the first unread byte; when `events.jsonl` is no longer that file, the rest of it is read
from `events.jsonl.1` before the new file is begun at 0. A follower that fell two rotations
behind cannot finish its file: that is counted (`lost`), never guessed at.

An inode number alone is not an identity: the inode of a rotated file that was replaced is
free again, and the next `events.jsonl` often gets it. So an identity is the inode and a hash
of the file's first bytes (up to MARK of them: what log shippers call a fingerprint), and the
position also remembers the last file it finished, so that one is never read again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from agentwatch.core import bounded, claude_events

CHUNK = 256 * bounded.KiB  # bytes read in one step; a cycle reads up to its budget of steps
MARK = 256  # bytes of a file's start that identify it together with its inode


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Found:
    """One look at a spool file: its inode, its first bytes, a chunk from the offset."""

    inode: int
    size: int
    head: bytes
    data: bytes


@dataclass
class Identity:
    inode: int = 0
    mark_length: int = 0  # how many of the file's first bytes `mark` hashes
    mark: str = ""

    def of(self, found: Found | None) -> bool:
        """Whether `found` is this file."""
        if found is None or not self.inode or found.inode != self.inode:
            return False
        return self.mark_length == 0 or _digest(found.head[: self.mark_length]) == self.mark


@dataclass
class Position:
    file: Identity  # inode 0: nothing read yet (start with events.jsonl.1, then events.jsonl)
    offset: int = 0
    done: Identity | None = None  # the last file read to its end

    @classmethod
    def start(cls) -> Position:
        return cls(Identity())

    def begin(self, found: Found) -> None:
        self.file, self.offset = Identity(found.inode), 0


class Follower:
    """Reads the complete new lines of the spool from a saved position."""

    def __init__(self, folder: Path, position: Position):
        self.current = folder / claude_events.EVENTS
        self.rotated = folder / claude_events.ROTATED
        self.position = position
        self.lost = 0  # files gone (rotated away, or replaced) before they were read to the end
        self.truncated = 0  # times the followed file became shorter than the offset
        self.too_long = 0  # chunks without a line end, skipped
        self.refused: bounded.FileRefused | None = None  # a spool file that is not a file

    def read(self, steps: int = 16) -> tuple[list[bytes], bool]:
        """New lines (without their line ends), and whether more may be waiting."""
        lines: list[bytes] = []
        self.refused = None
        for _ in range(steps):
            try:
                if not self._step(lines):
                    return lines, False
            except OSError:
                if lines:  # the position has moved past them: they must be applied now
                    return lines, True
                raise
        return lines, True

    def _look(self, path: Path, offset: int) -> Found | None:
        """None when the file does not exist, or was replaced between the two reads (the
        next step looks again)."""
        try:
            info, head = bounded.read_from(path, 0, MARK)
            again, data = bounded.read_from(path, offset, CHUNK)
        except FileNotFoundError:
            return None
        except bounded.FileRefused as refused:  # a FIFO or a device put there: never read,
            self.refused = refused  # and it must not keep the other file from being read
            return None
        if again.st_ino != info.st_ino:
            return None
        return Found(info.st_ino, again.st_size, head, data)

    def _step(self, lines: list[bytes]) -> bool:
        """One read; whether it made progress (so another step may find more)."""
        position = self.position
        current = self._look(self.current, position.offset)
        if not position.file.inode:
            older = self._look(self.rotated, 0)
            done = position.done is not None and position.done.of(older)
            if older is not None and not done and (current is None or older.inode != current.inode):
                position.begin(older)  # the older file first
            elif current is not None:
                position.begin(current)
            else:
                return False
            return True
        if position.file.of(current):
            assert current is not None
            if current.size < position.offset:  # truncated in place
                self.truncated += 1
                position.begin(current)
                return True
            return self._take(current, lines, final=False)
        # The followed file is no longer events.jsonl: finish it as events.jsonl.1.
        older = self._look(self.rotated, position.offset)
        if position.file.of(older):
            assert older is not None
            if len(older.data) >= CHUNK:
                return self._take(older, lines, final=False)
            self._take(older, lines, final=True)
            if current is None:
                return False  # stay at its end until a new events.jsonl appears
            position.done = position.file
            position.begin(current)
            return True
        self.lost += 1  # ours is gone: read what is there and not read yet
        position.file, position.offset = Identity(), 0
        return True

    def _take(self, found: Found, lines: list[bytes], final: bool) -> bool:
        """Consume the complete lines of the chunk (all of it when the file is finished)."""
        position = self.position
        data = found.data
        end = len(data) if final else data.rfind(b"\n") + 1
        if end == 0:
            if len(data) >= CHUNK:  # no line end in a whole chunk: not the writers' lines
                self.too_long += 1
                position.offset += len(data)
                return True
            return False
        lines.extend(line for line in data[:end].split(b"\n") if line)
        position.offset += end
        identity = position.file
        if identity.mark_length < MARK:
            identity.mark_length = min(position.offset, len(found.head), MARK)
            identity.mark = _digest(found.head[: identity.mark_length])
        return True
