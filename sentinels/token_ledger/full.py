"""A full state file system is a state the ledger waits out, not a crash.

SQLite answers SQLITE_FULL ("database or disk is full") on a COMMIT, or on opening the
database, when the file system holding the state (or `PRAGMA max_page_count`) has no room. The
open batch is then dropped whole (ledger.discard): the positions saved with it are not either,
so the same bytes are read again and nothing is lost or counted twice. The retries back off
(1 s doubling to a minute), the state is a metric, and the log says it once per episode.
"""

from __future__ import annotations

import errno
import logging
import sqlite3

from agentwatch.core.log import FailureGate

FIRST_RETRY = 1.0
LAST_RETRY = 60.0


def is_full(err: BaseException) -> bool:
    """True for "no room" from SQLite or the OS (both can surface from a commit)."""
    if isinstance(err, sqlite3.OperationalError):
        code = getattr(err, "sqlite_errorcode", None)
        return code == sqlite3.SQLITE_FULL or "disk is full" in str(err)
    return isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)


class StoreFull:
    """Tracks one episode of a full store: the gate logs it, `retry_in` backs off."""

    def __init__(self, logger: logging.Logger, what: str):
        self.gate = FailureGate(logger, what, remind_every=1000)
        self.delay = 0.0

    @property
    def full(self) -> bool:
        return self.gate.failing

    def failed(self, err: BaseException) -> float:
        """Note a failed write; seconds until the next try."""
        self.gate.failed(f"{err}; keeping the last committed position, retrying with backoff")
        self.delay = min(max(self.delay * 2, FIRST_RETRY), LAST_RETRY)
        return self.delay

    def committed(self) -> None:
        """A write went through: the episode is over (logged once)."""
        self.gate.succeeded()
        self.delay = 0.0
