"""The last successful check per repository, kept in the state dir across `--once` runs.

A small JSON file written atomically (temp file + rename). The state folder is writable by
anything running as the user, so the file is read through core.bounded: a FIFO, a link to
/dev/zero, a file past STATE_LIMIT, bad UTF-8, JSON nested too deep or not in the expected
shape is treated as missing — one log line, a count by reason in the file itself (so a timer's
`--once` runs keep it monotonic), and the file is replaced on the next save.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentwatch.core import bounded
from agentwatch.core.files import write_atomic

log = logging.getLogger("agentwatch.release_readiness")

FILE_NAME = "release-readiness.json"
VERSION = 1
# Why a state file was set aside: not a regular file, over the cap, unreadable, not our JSON.
REJECT_REASONS = ("not_regular", "too_large", "unreadable", "corrupt")
MAX_COUNT = 2**53  # a count past this in the file is not one we wrote
MAX_TIMESTAMP = 2.0**40  # the year 36812: a later (or negative, NaN, infinite) time is not ours


class LastSuccess:
    """Repository name -> wall time of its last successful check."""

    def __init__(self, state_dir: Path):
        self.path = state_dir / FILE_NAME
        self._replace = False  # set when the file on disk is corrupt and must be rewritten
        self.rejected: Counter[str] = Counter()
        self.times: dict[str, float] = self._load()
        self._saved = dict(self.times)

    def _load(self) -> dict[str, float]:
        try:
            raw = json.loads(bounded.read_text(self.path, bounded.STATE_LIMIT))
        except FileNotFoundError:
            return {}
        except bounded.FileRefused as err:
            return self._reject(err.reason, str(err))
        except OSError as err:
            return self._reject("unreadable", f"{self.path}: {err.strerror or type(err).__name__}")
        except (ValueError, RecursionError) as err:  # bad UTF-8 or JSON; their names only
            return self._reject("corrupt", f"{self.path}: {type(err).__name__}")
        times = raw.get("last_success") if isinstance(raw, dict) else None
        if not isinstance(times, dict) or raw.get("version") != VERSION:
            return self._reject("corrupt", f"{self.path}: not in the expected shape")
        if not all(_is_time(value) for value in times.values()):
            return self._reject("corrupt", f"{self.path}: a time out of range")
        self.rejected = _counts(raw.get("rejected"))
        return {str(name): float(value) for name, value in times.items()}

    def _reject(self, reason: str, detail: str) -> dict[str, float]:
        """Treat the file as missing: one log line, counted, rewritten on the next save."""
        log.warning("state file %s (%s): starting without it, replacing it", detail, reason)
        self.rejected[reason] += 1
        self._replace = True
        return {}

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
        content: dict[str, Any] = {"version": VERSION, "last_success": self.times}
        if self.rejected:
            content["rejected"] = dict(sorted(self.rejected.items()))
        text = json.dumps(content, sort_keys=True)
        try:
            write_atomic(self.path, text, durable=True)
        except OSError as err:
            log.warning("cannot save state file %s: %s", self.path, err)
            return
        self._saved, self._replace = dict(self.times), False


def _is_time(value: Any) -> bool:
    """A wall-clock time as we write it: not a bool, NaN, infinite, negative or far future
    (the range check also keeps float() off a 400-digit integer)."""
    return (
        isinstance(value, float | int)
        and not isinstance(value, bool)
        and 0 <= value < MAX_TIMESTAMP
    )


def _counts(raw: Any) -> Counter[str]:
    """The rejection counts kept in the file: known reasons with sane counts, nothing else."""
    if not isinstance(raw, dict):
        return Counter()
    return Counter(
        {
            reason: value
            for reason, value in raw.items()
            if reason in REJECT_REASONS
            and isinstance(value, int)
            and not isinstance(value, bool)
            and 0 <= value < MAX_COUNT
        }
    )
