"""What the sentinel remembers between cycles, kept in the state folder so `--once` works too.

Per live pane: the tail's digest and since when it is unchanged (the throttle settle rule),
the state and since when (exported). Plus the counters, so a timer running `--once` keeps
them monotonic. The file holds digests and states only, never pane text; it is written
atomically, and a corrupt or unreadable file is replaced by an empty memory.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentwatch.core.files import write_atomic
from agentwatch.sentinels.idle_error.classify import Observation
from agentwatch.sentinels.idle_error.patterns import STATES

log = logging.getLogger("agentwatch.idle_error")

FILE_NAME = "idle-error.json"
VERSION = 1


@dataclass
class Memory:
    panes: dict[str, Observation] = field(default_factory=dict)
    fired: Counter[str] = field(default_factory=Counter)
    suppressed: Counter[str] = field(default_factory=Counter)
    capture_errors: Counter[str] = field(default_factory=Counter)

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
            },
            separators=(",", ":"),
        )


def _counter(raw: Any) -> Counter[str]:
    if not isinstance(raw, dict):
        raise ValueError("counter is not an object")
    counts: Counter[str] = Counter()
    for name, value in raw.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"counter {name!r} is not a count")
        counts[str(name)] = value
    return counts


def _observation(raw: Any) -> Observation:
    digest, unchanged, state, since = raw
    if not isinstance(digest, str) or state not in STATES:
        raise ValueError("bad pane entry")
    return Observation(digest, float(unchanged), state, float(since))


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
    )


class Store:
    """Loads once at start; saves only when the content changed (a quiet pane costs no write)."""

    def __init__(self, state_dir: Path):
        self.path = state_dir / FILE_NAME
        self._written: str | None = None

    def load(self) -> Memory:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Memory()
        except (OSError, UnicodeDecodeError) as error:
            log.warning("cannot read %s (%s): starting with an empty memory", self.path, error)
            return Memory()
        try:
            memory = parse(text)
        except (ValueError, TypeError, KeyError) as error:
            log.warning("%s is corrupt (%s): replacing it", self.path, str(error)[:200])
            return Memory()
        self._written = text
        return memory

    def save(self, memory: Memory) -> None:
        text = memory.as_json()
        if text == self._written:
            return
        write_atomic(self.path, text)
        self._written = text
