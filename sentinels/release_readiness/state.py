"""The last successful check per repository, kept in the state dir across `--once` runs.

A small JSON file written atomically (temp file + rename). A file that cannot be read or is
not the expected shape is replaced on the next save, with one log line saying so.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable
from pathlib import Path

from agentwatch.core.files import write_atomic

log = logging.getLogger("agentwatch.release_readiness")

FILE_NAME = "release-readiness.json"
VERSION = 1


class LastSuccess:
    """Repository name -> wall time of its last successful check."""

    def __init__(self, state_dir: Path):
        self.path = state_dir / FILE_NAME
        self._replace = False  # set when the file on disk is corrupt and must be rewritten
        self.times: dict[str, float] = self._load()
        self._saved = dict(self.times)

    def _load(self) -> dict[str, float]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError, ValueError) as err:
            log.warning("state file %s is unreadable (%s); replacing it", self.path, err)
            self._replace = True
            return {}
        times = raw.get("last_success") if isinstance(raw, dict) else None
        if not isinstance(times, dict) or raw.get("version") != VERSION:
            log.warning("state file %s is not in the expected shape; replacing it", self.path)
            self._replace = True
            return {}
        return {
            str(name): float(value)
            for name, value in times.items()
            if isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
        }

    def record(self, name: str, when: float) -> None:
        self.times[name] = when

    def keep_only(self, names: Iterable[str]) -> None:
        """Forget repositories that are no longer configured (their series are gone too)."""
        wanted = set(names)
        self.times = {name: when for name, when in self.times.items() if name in wanted}

    def save(self) -> None:
        """Write the file when something changed; a failure is logged, never raised."""
        if self.times == self._saved and self.path.exists() and not self._replace:
            return
        text = json.dumps({"version": VERSION, "last_success": self.times}, sort_keys=True)
        try:
            write_atomic(self.path, text, durable=True)
        except OSError as err:
            log.warning("cannot save state file %s: %s", self.path, err)
            return
        self._saved, self._replace = dict(self.times), False
