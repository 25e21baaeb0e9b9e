"""Follow the event spool by (inode, offset): new complete lines only, each line once.

The writers append to `events.jsonl` and shift it down a chain of rotated files
(`events.jsonl.1` ... `.KEEP_ROTATED`) when it is full (core/claude_events.py). The position is
the identity of the file being read, the offset of the first unread byte and the lines read
from it; when `events.jsonl` is no longer that file, the rest of it is read from wherever it
moved in the chain before the next file is begun at 0. A follower that fell so far behind
that its file was deleted counts that (`lost`, per file) and goes on with the oldest file
left; how many events it never read comes from dropped.json (`account`).

An inode number alone is not an identity: the inode of a rotated file that was replaced is
free again, and the next `events.jsonl` often gets it. So an identity is the inode and a hash
of the file's first bytes (up to MARK of them: what log shippers call a fingerprint), and the
position also remembers the last file it finished, so that one is never read again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from agentwatch.core import bounded, claude_events

CHUNK = 256 * bounded.KiB  # bytes read in one step; a cycle reads up to its budget of steps
KEEP = claude_events.KEEP_ROTATED
MARK = claude_events.MARK  # bytes of a file's start that identify it with its inode
HISTORY = 2 * (claude_events.KEEP_ROTATED + 1)  # files left behind, kept until dropped


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
    """Which file a position belongs to: inode and a hash of its first bytes."""

    inode: int = 0
    mark_length: int = 0  # how many of the file's first bytes `mark` hashes
    mark: str = ""

    def of(self, found: Found | None) -> bool:
        """Whether `found` is this file."""
        if found is None or not self.inode or found.inode != self.inode:
            return False
        return self.mark_length == 0 or _digest(found.head[: self.mark_length]) == self.mark


@dataclass
class Left:
    """A file the follower left (finished, or lost mid-way) with the lines it read of it, kept
    until dropped.json says it was deleted, so its unread rest can be counted exactly."""

    file: Identity
    lines: int


@dataclass
class Position:
    """How far a spool chain has been read, kept across restarts."""

    file: Identity  # inode 0: nothing read yet (start with the oldest file of the chain)
    offset: int = 0
    done: Identity | None = None  # the last file read to its end
    lines: int = 0  # lines read from `file`
    left: list[Left] = field(default_factory=list)  # at most HISTORY, newest last
    dropped_files: int = 0  # dropped.json's totals as last accounted
    dropped_lines: int = 0

    @classmethod
    def start(cls) -> Position:
        return cls(Identity())

    def begin(self, found: Found) -> None:
        self.file, self.offset, self.lines = Identity(found.inode), 0, 0

    def leave(self) -> None:
        """Remember the file being left with what was read of it."""
        if self.file.inode:
            self.left = [*self.left, Left(self.file, self.lines)][-HISTORY:]


class Follower:
    """Reads the complete new lines of the spool from a saved position."""

    def __init__(self, folder: Path, position: Position):
        self.folder = folder
        self.current = folder / claude_events.EVENTS
        # newest first: events.jsonl.1, .2, ...
        self.chain = [claude_events.rotated(folder, n) for n in range(1, KEEP + 1)]
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
            info, head = bounded.read_from(path, 0, MARK, follow=False)
            again, data = bounded.read_from(path, offset, CHUNK, follow=False)
        except FileNotFoundError:
            return None
        except bounded.FileRefused as refused:  # a FIFO, a symlink or a device put there:
            self.refused = refused  # never read, and it must not keep the others from being read
            return None
        if again.st_ino != info.st_ino:
            return None
        return Found(info.st_ino, again.st_size, head, data)

    def _step(self, lines: list[bytes]) -> bool:
        """One read; whether it made progress (so another step may find more)."""
        position = self.position
        if not position.file.inode:
            return self._begin()
        current = self._look(self.current, position.offset)
        if position.file.of(current):
            assert current is not None
            if current.size < position.offset:  # truncated in place
                self.truncated += 1
                position.begin(current)
                return True
            return self._take(current, lines, final=False)
        # The followed file is no longer events.jsonl: finish it where it moved to.
        for path in self.chain:
            older = self._look(path, position.offset)
            if not position.file.of(older):
                continue
            assert older is not None
            if len(older.data) >= CHUNK:
                return self._take(older, lines, final=False)
            self._take(older, lines, final=True)
            position.leave()
            position.done, position.file = position.file, Identity()
            position.offset = position.lines = 0
            return True
        self.lost += 1  # ours is gone: read what is there and not read yet
        position.leave()
        position.file, position.offset, position.lines = Identity(), 0, 0
        return True

    def _begin(self) -> bool:
        """Begin the oldest file of the chain newer than the last one finished (the oldest
        of all when that one is gone too); False when there is none yet."""
        position = self.position
        files = [self._look(path, 0) for path in reversed(self.chain)]
        files.append(self._look(self.current, 0))
        present = [found for found in files if found is not None]
        start = 0
        for index, found in enumerate(present):
            if position.done is not None and position.done.of(found):
                start = index + 1
        if start >= len(present):
            return False
        position.begin(present[start])
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
        taken = [line for line in data[:end].split(b"\n") if line]
        lines.extend(taken)
        position.lines += len(taken)
        position.offset += end
        identity = position.file
        if identity.mark_length < MARK:
            identity.mark_length = min(position.offset, len(found.head), MARK)
            identity.mark = _digest(found.head[: identity.mark_length])
        return True


def account(folder: Path, position: Position) -> int:
    """Events the writers deleted (dropped.json) since the last look that this reader never
    read: each newly dropped file's lines, less those read of it. Exact while dropped.json
    lists every file dropped since the last look (MAX_DROPPED_RECORDS, far more than a cycle
    sees); beyond that a file's lines all count as lost."""
    dropped = claude_events.read_dropped(folder)
    new_files = dropped["files"] - position.dropped_files
    if new_files <= 0:
        if new_files < 0 or dropped["lines"] < position.dropped_lines:  # the file was reset
            position.dropped_files, position.dropped_lines = dropped["files"], dropped["lines"]
        return 0
    lost = dropped["lines"] - position.dropped_lines
    for entry in dropped["recent"][-new_files:]:
        read = _read_of(position, entry)
        lost -= min(read, entry["lines"])
    position.dropped_files, position.dropped_lines = dropped["files"], dropped["lines"]
    return max(lost, 0)


def _read_of(position: Position, entry: dict[str, object]) -> int:
    """The lines this reader read of the dropped file `entry` (0 if none), forgetting it."""

    def same(identity: Identity) -> bool:
        if identity.inode != entry["inode"]:
            return False
        if identity.mark_length == entry["mark_length"]:
            return identity.mark == entry["mark"]
        return identity.mark_length < MARK  # read too little to tell: the inode decides

    if position.file.inode and same(position.file):
        read, position.lines = position.lines, 0  # deleted under us: the rest never comes
        return read
    for index, left in enumerate(position.left):
        if same(left.file):
            del position.left[index]
            return left.lines
    return 0
