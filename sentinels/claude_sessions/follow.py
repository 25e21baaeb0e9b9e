"""Follow the event spool by (inode, offset): new complete lines only, each line once.

The writers append to `events.jsonl` and rename it to `events.jsonl.1` when it is full
(core/claude_events.py). The position is the inode of the file being read and the offset of
the first unread byte; when `events.jsonl` is no longer that inode, the rest of the old file is
read from `events.jsonl.1` before the new file is begun at 0. A follower that fell two
rotations behind cannot finish its file: that is counted (`lost`), never guessed at.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agentwatch.core import bounded, claude_events

CHUNK = 256 * bounded.KiB  # bytes read in one step; a cycle reads up to its budget of steps


@dataclass
class Position:
    inode: int = 0  # 0: nothing read yet (start with events.jsonl.1, then events.jsonl)
    offset: int = 0


class Follower:
    """Reads the complete new lines of the spool from a saved position."""

    def __init__(self, folder: Path, position: Position):
        self.current = folder / claude_events.EVENTS
        self.rotated = folder / claude_events.ROTATED
        self.position = position
        self.lost = 0  # files rotated away before they were read to the end
        self.truncated = 0  # times the followed file became shorter than the offset
        self.too_long = 0  # chunks without a line end, skipped

    def read(self, steps: int = 16) -> tuple[list[bytes], bool]:
        """New lines (without their line ends), and whether more may be waiting."""
        lines: list[bytes] = []
        for _ in range(steps):
            if not self._step(lines):
                return lines, False
        return lines, True

    def _open(self, path: Path, offset: int) -> tuple[os.stat_result, bytes] | None:
        try:
            return bounded.read_from(path, offset, CHUNK)
        except FileNotFoundError:
            return None

    def _step(self, lines: list[bytes]) -> bool:
        """One read; whether it made progress (so another step may find more)."""
        position = self.position
        current = self._open(self.current, position.offset)
        if position.inode == 0:
            older = self._open(self.rotated, 0)
            if older is not None and (current is None or older[0].st_ino != current[0].st_ino):
                position.inode = older[0].st_ino  # the older file first
            elif current is not None:
                position.inode = current[0].st_ino
            else:
                return False
            return True
        if current is not None and current[0].st_ino == position.inode:
            info, data = current
            if info.st_size < position.offset:  # truncated or replaced in place
                self.truncated += 1
                position.offset = 0
                return True
            return self._take(data, lines, final=False)
        # The followed file is no longer events.jsonl: finish it as events.jsonl.1.
        older = self._open(self.rotated, position.offset)
        if older is not None and older[0].st_ino == position.inode:
            if len(older[1]) >= CHUNK:
                return self._take(older[1], lines, final=False)
            self._take(older[1], lines, final=True)
            if current is None:
                return False  # stay at its end until a new events.jsonl appears
        elif older is not None:  # ours is gone entirely; events.jsonl.1 is newer, unread
            self.lost += 1
            position.inode, position.offset = older[0].st_ino, 0
            return True
        else:
            self.lost += 1
            if current is None:
                position.inode, position.offset = 0, 0
                return False
        assert current is not None
        position.inode, position.offset = current[0].st_ino, 0
        return True

    def _take(self, data: bytes, lines: list[bytes], final: bool) -> bool:
        """Consume the complete lines of `data` (all of it when the file is finished)."""
        end = len(data) if final else data.rfind(b"\n") + 1
        if end == 0:
            if len(data) >= CHUNK:  # no line end in a whole chunk: not the writers' lines
                self.too_long += 1
                self.position.offset += len(data)
                return True
            return False
        lines.extend(line for line in data[:end].split(b"\n") if line)
        self.position.offset += end
        return True
