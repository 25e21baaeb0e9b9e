"""The ground truth: one JSONL line per request the stand-in answered.

Each line holds the time, the Claude Code session, the step kind, the HTTP status and, for a
message, its id, model and usage as served — never prompt or answer text. The token ledger's
tests compare their totals against the usage of the served messages that Claude Code recorded.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any


class ServedLog:
    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.Lock()
        self.records: list[dict[str, Any]] = []
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    def add(self, **record: Any) -> None:
        record = {"time": round(time.time(), 3), **record}
        with self._lock:
            self.records.append(record)
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(record, separators=(",", ":")) + "\n")


def read(path: Path) -> list[dict[str, Any]]:
    """The served records of a log file, oldest first."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
