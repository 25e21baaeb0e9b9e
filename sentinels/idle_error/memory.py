"""What the sentinel remembers between cycles, kept in the state folder so `--once` works too.

Per live pane: the tail's digest and since when it is unchanged (the throttle settle rule),
the state and since when (exported). Plus the counters, so a timer running `--once` keeps
them monotonic. The file holds digests and states only, never pane text; it is written
atomically. It is read through core.bounded (the state folder is anyone's with our uid): a FIFO,
a link to /dev/zero, a file past STATE_LIMIT or one that does not parse as ours is treated as
missing — one log line, counted by reason in `state_rejected` — and replaced on the next save.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentwatch.core import bounded
from agentwatch.core.files import write_atomic
from agentwatch.sentinels.idle_error.classify import Observation
from agentwatch.sentinels.idle_error.patterns import STATES

log = logging.getLogger("agentwatch.idle_error")

FILE_NAME = "idle-error.json"
VERSION = 1
# Why a state file was set aside: not a regular file, over the cap, unreadable, not ours.
REJECT_REASONS = ("not_regular", "too_large", "unreadable", "corrupt")
MAX_COUNT = 2**53  # a count past this is not one we wrote (and would not render exactly)
MAX_TIMESTAMP = 2.0**40


@dataclass
class Memory:
    """What the sentinel remembers between cycles: panes and counters."""

    panes: dict[str, Observation] = field(default_factory=dict)
    fired: Counter[str] = field(default_factory=Counter)
    suppressed: Counter[str] = field(default_factory=Counter)
    capture_errors: Counter[str] = field(default_factory=Counter)
    state_rejected: Counter[str] = field(default_factory=Counter)

    def as_json(self) -> str:
        return json.dumps(
            {
                "version": VERSION,
                "panes": {
                    key: [obs.tail_hash, obs.unchanged_since, obs.state, obs.since]
                    for key, obs in sorted(self.panes.items())
                },
                "fired": dict(sorted(self.fired.items())),
                "suppressed": dict(sorted(self.suppressed.items())),
                "capture_errors": dict(sorted(self.capture_errors.items())),
                "state_rejected": dict(sorted(self.state_rejected.items())),
            },
            separators=(",", ":"),
        )


def _counter(raw: Any, known: tuple[str, ...] | None = None) -> Counter[str]:
    """Counts by name; with `known`, other names are dropped (they would be new labels)."""
    if not isinstance(raw, dict):
        raise ValueError("counter is not an object")
    counts: Counter[str] = Counter()
    for name, value in raw.items():
        if known is not None and name not in known:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < MAX_COUNT:
            raise ValueError("a counter is not a count")
        counts[str(name)] = value
    return counts


def _observation(raw: Any) -> Observation:
    digest, unchanged, state, since = raw
    if not isinstance(digest, str) or len(digest) > 64 or state not in STATES:
        raise ValueError("bad pane entry")
    return Observation(digest, _time(unchanged), state, _time(since))


def _time(raw: Any) -> float:
    """A wall-clock time as we write it; anything else (a bool, a 400-digit int, NaN, a
    negative or far-future time) is not."""
    if not isinstance(raw, int | float) or isinstance(raw, bool) or not 0 <= raw < MAX_TIMESTAMP:
        raise ValueError("bad pane time")
    return float(raw)


def parse(text: str) -> Memory:
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise ValueError("not an idle-error state file of this version")
    panes = data.get("panes", {})
    if not isinstance(panes, dict):
        raise ValueError("panes is not an object")
    return Memory(
        panes={str(key): _observation(value) for key, value in panes.items()},
        fired=_counter(data.get("fired", {})),
        suppressed=_counter(data.get("suppressed", {})),
        capture_errors=_counter(data.get("capture_errors", {})),
        state_rejected=_counter(data.get("state_rejected", {}), REJECT_REASONS),
    )


class Store:
    """Loads once at start; saves only when the content changed (a quiet pane costs no write)."""

    def __init__(self, state_dir: Path):
        self.path = state_dir / FILE_NAME
        self._written: str | None = None

    def load(self) -> Memory:
        try:
            text = bounded.read_text(self.path, bounded.STATE_LIMIT)
        except FileNotFoundError:
            return Memory()
        except bounded.FileRefused as error:
            return self._reject(error.reason, str(error))
        except OSError as error:
            return self._reject("unreadable", f"{self.path}: {error.strerror or error}")
        except UnicodeDecodeError:
            return self._reject("corrupt", f"{self.path}: not UTF-8")
        try:
            memory = parse(text)
        except (ValueError, TypeError, KeyError, RecursionError) as error:
            # our own messages name no content; json's give a position only
            detail = str(error)[:200] if isinstance(error, ValueError) else type(error).__name__
            return self._reject("corrupt", f"{self.path}: {detail}")
        self._written = text
        return memory

    def _reject(self, reason: str, detail: str) -> Memory:
        """Start from an empty memory that counts why: one log line, replaced on save."""
        log.warning("state file %s (%s): starting empty, replacing it", detail, reason)
        return Memory(state_rejected=Counter({reason: 1}))

    def save(self, memory: Memory) -> None:
        text = memory.as_json()
        if text == self._written:
            return
        write_atomic(self.path, text)
        self._written = text
