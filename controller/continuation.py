"""Bernstein's commit-completion retries (`agent.retry_continuation`), counted by reason.

Bernstein 3.23.0 announces a continuation retry (an agent exited 0 without moving HEAD, so it
is resumed once with a nudge to commit) only through its lifecycle hook registry: each script
`<project>/.bernstein/hooks/agent.retry_continuation.sh` gets the event as one JSON object on
stdin (`LifecycleContext.to_payload()`: event, task, session_id, workdir, env, timestamp and
data {session_id, reason, attempt}), run in the orchestrator's folder. HOOK_SCRIPT appends
that line to EVENTS_FILE; the controller reads what was appended since its last cycle (the
offset is kept in its state file, so a restart never counts a line twice) and counts
`agentwatch_controller_continuation_retries_total{reason}`. Lines that are not such an event
are counted as malformed and logged through a gate, never as retries.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

from agentwatch.controller.state import Memory
from agentwatch.core.log import FailureGate

log = logging.getLogger("agentwatch.controller")

EVENT = "agent.retry_continuation"
# decide_retry's reasons in 3.23.0; only needs_retry launches (and announces) a retry today.
REASONS = ("needs_retry", "other")
EVENTS_FILE = Path(".sdd") / "runtime" / "agentwatch" / "retry_continuation.jsonl"
HOOK_NAME = "agent.retry_continuation.sh"
HOOK_SCRIPT = f"""#!/bin/sh
# agentwatch: keep Bernstein's {EVENT} events (one JSON object on stdin) for the controller
mkdir -p {EVENTS_FILE.parent} && {{ cat; echo; }} >> {EVENTS_FILE}
"""
READ_LIMIT = 1 << 20  # bytes read per cycle; the rest waits for the next one
MEMO = "bernstein_continuation"  # the reader's offset in the state file's adapter memos


def events_file(bernstein_config_file: Path | None) -> Path | None:
    """The events file of the Bernstein project whose bernstein.yaml is configured."""
    return None if bernstein_config_file is None else bernstein_config_file.parent / EVENTS_FILE


def reason_of(line: bytes) -> str | None:
    """The reason label of one event line, or None when it is not a retry_continuation event."""
    try:
        payload: Any = json.loads(line)
    except ValueError:
        return None
    if not isinstance(payload, dict) or payload.get("event") != EVENT:
        return None
    data = payload.get("data")
    if not isinstance(data, dict):
        return None
    reason = data.get("reason")
    return reason if reason in REASONS else "other"


class ContinuationReader:
    """Counts the events appended to the file since the last cycle (whole lines only)."""

    def __init__(self, path: Path | None, memory: Memory):
        self.path = path
        self.memory = memory
        self.gate = FailureGate(log, f"Bernstein events {path}")

    def _memo(self) -> dict[str, Any]:
        memo = self.memory.adapter.get(MEMO)
        offset = memo.get("offset") if isinstance(memo, dict) else None
        if not isinstance(memo, dict) or not isinstance(offset, int) or isinstance(offset, bool):
            memo = self.memory.adapter[MEMO] = {"offset": 0}
        elif offset < 0:
            memo["offset"] = 0
        return memo

    def read(self) -> None:
        if self.path is None:
            return
        memo = self._memo()
        try:
            chunk = self._chunk(memo)
        except FileNotFoundError:
            memo["offset"] = 0  # not there (yet): a file made later is read from its start
            self.gate.succeeded()
            return
        except OSError as err:
            self.gate.failed(f"unreadable ({type(err).__name__}); will retry")
            return
        end = chunk.rfind(b"\n") + 1  # a line still being written waits for its newline
        bad, lines = 0, chunk[:end].splitlines()
        if end == 0 and len(chunk) == READ_LIMIT:  # one line longer than a whole read: skipped
            end, bad = len(chunk), 1
        for line in lines:
            if not line.strip():
                continue
            reason = reason_of(line)
            if reason is None:
                bad += 1
            else:
                self.memory.count("continuation_retries", reason)
        memo["offset"] += end
        if bad:
            self.memory.count("continuation_malformed", "", bad)
            self.gate.failed(f"{bad} line(s) that are not {EVENT} events; counted, skipped")
        else:
            self.gate.succeeded()

    def _chunk(self, memo: dict[str, Any]) -> bytes:
        assert self.path is not None
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise IsADirectoryError(f"{self.path} is not a regular file")
            if info.st_size < memo["offset"]:
                memo["offset"] = 0  # truncated or replaced: read the new file whole
            os.lseek(fd, memo["offset"], os.SEEK_SET)
            return os.read(fd, READ_LIMIT)
        finally:
            os.close(fd)
