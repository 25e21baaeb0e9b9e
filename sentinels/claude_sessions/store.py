"""The sentinel's state file: the session table, its counters and the spool position, saved
together in one atomic write, so a restart (even after SIGKILL) goes on from a consistent
point: what was counted is exactly what lies before the saved position.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agentwatch.core import bounded
from agentwatch.core.files import write_atomic
from agentwatch.sentinels.claude_sessions.follow import HISTORY, Identity, Left, Position
from agentwatch.sentinels.claude_sessions.sessions import Table

log = logging.getLogger("agentwatch.claude-sessions")
FORMAT = 1
NAME = "claude-sessions.json"


class Store:
    def __init__(self, state_dir: Path):
        self.path = state_dir / NAME
        self.rejected = 0  # state files set aside as unreadable

    def load(self, table: Table, counts: Counter[str]) -> Position:
        """Fill `table` and `counts` from the file; the position to read on from."""
        try:
            raw: Any = json.loads(bounded.read_text(self.path, bounded.STATE_LIMIT, follow=False))
        except FileNotFoundError:
            return Position.start()
        except (OSError, ValueError, RecursionError) as err:
            return self._reject(err)
        try:
            if raw["format"] != FORMAT:
                raise ValueError(f"format {raw['format']!r}")
            table.load(raw["table"])
            counts.update({str(k): int(v) for k, v in raw["counts"].items()})
            return _position(raw["position"])
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            table.sessions.clear()
            counts.clear()
            return self._reject(err)

    def _reject(self, err: Exception) -> Position:
        """An unreadable state file is set aside and the spool read again from its start."""
        self.rejected += 1
        log.warning("state file %s is unusable (%s): set aside, starting afresh", self.path, err)
        with contextlib.suppress(OSError):  # a file we cannot move is replaced at the next save
            self.path.replace(self.path.with_name(NAME + ".rejected"))
        return Position.start()

    def save(self, table: Table, counts: Counter[str], position: Position) -> None:
        data = {
            "format": FORMAT,
            "position": asdict(position),
            "counts": dict(counts),
            "table": table.dump(),
        }
        write_atomic(self.path, json.dumps(data, separators=(",", ":")), 0o600, durable=True)


def _identity(raw: dict[str, Any]) -> Identity:
    return Identity(int(raw["inode"]), int(raw["mark_length"]), str(raw["mark"]))


def _position(raw: dict[str, Any]) -> Position:
    """The saved position; the fields a state file of an older version lacks (lines read,
    the files left behind, dropped.json's totals) start at nothing."""
    done = None if raw["done"] is None else _identity(raw["done"])
    offset = int(raw["offset"])
    numbers = [int(raw.get(key, 0)) for key in ("lines", "dropped_files", "dropped_lines")]
    if offset < 0 or min(numbers) < 0:
        raise ValueError("negative offset or count")
    left = [Left(_identity(item["file"]), int(item["lines"])) for item in raw.get("left", [])]
    return Position(_identity(raw["file"]), offset, done, numbers[0], left[-HISTORY:], *numbers[1:])
