"""One log format on stderr for every component, and the loud-failure/quiet-log gate."""

from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT, datefmt="%Y-%m-%dT%H:%M:%S%z"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


class FailureGate:
    """Logs an input's failure once when it starts, every Nth repeat, and once on recovery.

    A loop that retries forever would otherwise write one line per attempt; this keeps the
    log readable while the failure stays visible (callers also export `failing` as a metric).
    """

    def __init__(self, logger: logging.Logger, what: str, remind_every: int = 100):
        self.logger = logger
        self.what = what
        self.remind_every = remind_every
        self.consecutive = 0

    @property
    def failing(self) -> bool:
        return self.consecutive > 0

    def failed(self, error: object) -> None:
        self.consecutive += 1
        if self.consecutive == 1:
            self.logger.warning("%s failing: %s", self.what, error)
        elif self.consecutive % self.remind_every == 0:
            self.logger.warning(
                "%s still failing after %d attempts: %s", self.what, self.consecutive, error
            )

    def succeeded(self) -> None:
        if self.consecutive:
            self.logger.info("%s recovered after %d failed attempts", self.what, self.consecutive)
        self.consecutive = 0
