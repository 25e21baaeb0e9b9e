"""Nudge a stalled agent pane: one "please continue" per alert episode, then check it resumed.

Opt-in (`controller.nudge.enabled`) and only for tmux sessions named in
`controller.nudge.allow_sessions`. An episode is the time a `nudge` alert for one pane stays
actionable; it gets at most one message, sent as literal keys then Enter through tmux (argv,
timeout). Before sending, the pane must still belong to the session the alert names (pane ids
are reused after a tmux restart).

Did it resume? `verify_after` seconds after the message, the pane's transcripts must have grown:
the `*.jsonl` files under `<projects root>/<slug of the pane's working directory>` (the Claude
config dirs the token ledger reads), or under `nudge.transcript_dir` when configured. If they
did not grow, the nudge is escalated: `agentwatch_controller_nudges_total{result="escalated"}`
and one warning line. Nudges to the same pane are spaced by `backoff`, doubled after every
escalation; after `max_attempts` escalations in a row the pane is left to humans (skipped) until
its transcript grows again. No pane text is ever read.

Never into a working session: an alert lags the pane by its `for:` and a scrape or two, so
right before sending, the pane's current state is read from the idle-error sentinel's own spool
file (through core/spool_readers.py). A pane it sees `working` or `idle` again gets no message
(the alert will resolve); a pane it does not know (no fresh file) is nudged as the alert says.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentwatch.controller.policy import NudgeTarget
from agentwatch.controller.state import Memory
from agentwatch.core import claude, spool_readers
from agentwatch.core.log import FailureGate

log = logging.getLogger("agentwatch.controller")

RESULTS = ("sent", "grew", "escalated", "skipped")
TMUX_TIMEOUT = 5.0
MAX_BACKOFF = 86400.0
FORGET_AFTER = 86400.0
FRESH_FOR = 60.0  # an older file says nothing about now
BUSY = ("working", "idle")  # not stalled (any more): a message would land in a live turn


class TmuxError(Exception):
    pass


@dataclass(frozen=True)
class PaneInfo:
    """A tmux pane the nudge may type into: its session and working folder."""

    session: str
    path: str


class Tmux:
    """The few tmux calls a nudge needs, as argv lists with a timeout."""

    def __init__(self, socket: str | None = None, timeout: float = TMUX_TIMEOUT):
        # A path (as the sentinels take) is -S; a bare name is a -L socket name.
        option = "-S" if socket and "/" in socket else "-L"
        self.base = ["tmux", *([option, socket] if socket else [])]
        self.timeout = timeout

    def _run(self, *args: str) -> str:
        try:
            result = subprocess.run(
                [*self.base, *args],
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise TmuxError(f"tmux {args[0]} timed out") from err
        except OSError as err:
            raise TmuxError(f"cannot run tmux: {err.strerror}") from err
        if result.returncode != 0:
            raise TmuxError(f"tmux {args[0]} exited with status {result.returncode}")
        return result.stdout

    def pane(self, pane: str) -> PaneInfo | None:
        """The session and working directory of a pane, or None when it does not exist."""
        try:
            out = self._run(
                "display-message", "-p", "-t", pane, "#{session_name}\t#{pane_current_path}"
            )
        except TmuxError:
            return None
        session, _, path = out.rstrip("\n").partition("\t")
        return PaneInfo(session, path)

    def send(self, pane: str, message: str) -> None:
        self._run("send-keys", "-t", pane, "-l", message)
        self._run("send-keys", "-t", pane, "Enter")


def pane_state(spool_dir: Path | None, session: str, pane: str, now: float) -> str | None:
    """The pane's state as the idle-error sentinel last wrote it, or None when unknown."""
    if spool_dir is None:
        return None
    return spool_readers.pane_state(spool_dir, session, pane, now, FRESH_FOR)


def transcript_bytes(folders: Iterable[Path]) -> int:
    """Total size of the `*.jsonl` files under the folders (symlinks not followed)."""
    total = 0
    for folder in folders:
        for directory, _dirs, files in os.walk(folder):
            for name in files:
                if name.endswith(".jsonl"):
                    try:
                        total += os.stat(os.path.join(directory, name)).st_size
                    except OSError:
                        continue
    return total


def _well_formed(record: Any) -> bool:
    numbers = ("sent_at", "size_at_send", "next_at", "failures")
    return isinstance(record, dict) and all(
        isinstance(record.get(name, 0), int | float) and not isinstance(record.get(name), bool)
        for name in numbers
    )


class Nudger:
    """Runs the nudge episodes; its bookkeeping lives in the controller's memory."""

    def __init__(
        self,
        settings: dict[str, Any],
        projects_roots: list[Path],
        memory: Memory,
        tmux: Tmux | None = None,
        spool_dir: Path | None = None,
    ):
        self.enabled = bool(settings["enabled"])
        self.allow = set(settings["allow_sessions"])
        self.message = str(settings["message"])
        self.backoff = float(settings["backoff"])
        self.verify_after = float(settings["verify_after"])
        self.max_attempts = int(settings["max_attempts"])
        self.transcript_dir: Path | None = settings.get("transcript_dir")
        self.roots = projects_roots
        self.memory = memory
        self.tmux = tmux or Tmux(settings.get("tmux_socket"))
        self.spool_dir = spool_dir
        self.gate = FailureGate(log, "nudge through tmux")

    @property
    def records(self) -> dict[str, dict[str, Any]]:
        """Per `session\tpane` bookkeeping; anything malformed (a hand-edited file) is dropped."""
        panes = self.memory.nudge.get("panes")
        if not isinstance(panes, dict):
            panes = self.memory.nudge["panes"] = {}
        for key in [k for k, v in panes.items() if "\t" not in k or not _well_formed(v)]:
            del panes[key]
        return panes

    def _folders(self, path: str) -> list[Path]:
        if self.transcript_dir is not None:
            return [self.transcript_dir]
        return [root / claude.slug(path) for root in self.roots] if path else []

    def _verify(self, key: str, record: dict[str, Any], now: float) -> None:
        sent_at = record.get("sent_at")
        if not record.get("verify") or not isinstance(sent_at, int | float):
            record["verify"] = False
            return
        if now < sent_at + self.verify_after:
            return
        record["verify"] = False
        size = transcript_bytes(self._folders(record.get("path", "")))
        session, pane = key.split("\t", 1)
        if size > record.get("size_at_send", 0):
            self.memory.count("nudges", "grew")
            record["failures"] = 0
            log.info("tmux session %s pane %s resumed after the nudge", session, pane)
            return
        record["failures"] = int(record.get("failures", 0)) + 1
        self.memory.count("nudges", "escalated")
        log.warning(
            "tmux session %s pane %s did not resume %.0fs after nudge %d of %d: needs a human",
            session,
            pane,
            self.verify_after,
            record["failures"],
            self.max_attempts,
        )

    def _skip(self, record: dict[str, Any], why: str, target: NudgeTarget) -> None:
        record["handled"] = True
        self.memory.count("nudges", "skipped")
        log.info(
            "nudge of tmux session %s pane %s skipped: %s", target.tmux_session, target.pane, why
        )

    def _handle(self, target: NudgeTarget, record: dict[str, Any], now: float) -> None:
        if record.get("handled") or record.get("verify"):
            return  # one message per episode; never two before the first is verified
        if not self.enabled:
            return self._skip(record, "nudging is disabled (controller.nudge.enabled)", target)
        if target.tmux_session not in self.allow:
            return self._skip(record, "session not in controller.nudge.allow_sessions", target)
        if int(record.get("failures", 0)) >= self.max_attempts:
            return self._skip(record, f"{self.max_attempts} nudges did not help", target)
        if now < float(record.get("next_at", 0)):
            return  # backoff: this episode is handled once the wait is over
        info = self.tmux.pane(target.pane)
        if info is None or info.session != target.tmux_session:
            return self._skip(record, "the pane no longer belongs to that session", target)
        now_state = pane_state(self.spool_dir, target.tmux_session, target.pane, time.time())
        if now_state in BUSY:
            log.debug(
                "nudge of %s %s held: the pane is %s", target.tmux_session, target.pane, now_state
            )
            return  # the stall is over; the alert resolves by itself
        size = transcript_bytes(self._folders(info.path))
        try:
            self.tmux.send(target.pane, self.message)
        except TmuxError as err:
            self.gate.failed(err)
            return
        self.gate.succeeded()
        failures = int(record.get("failures", 0))
        record.update(
            handled=True,
            verify=True,
            sent_at=now,
            size_at_send=size,
            path=info.path,
            next_at=now + min(MAX_BACKOFF, self.backoff * 2**failures),
        )
        self.memory.count("nudges", "sent")
        log.info(
            "nudged tmux session %s pane %s (alert %s)",
            target.tmux_session,
            target.pane,
            target.alert,
        )

    def step(self, targets: Iterable[NudgeTarget], live: bool, now: float) -> None:
        """One cycle. `live` is False while no Alertmanager answers: episodes then neither
        start nor end, only pending verifications run."""
        records = self.records
        wanted = {f"{t.tmux_session}\t{t.pane}": t for t in targets}
        for key, record in list(records.items()):
            self._verify(key, record, now)
            if live and key not in wanted:
                record["handled"] = False  # the episode is over
                idle = (
                    not record.get("verify")
                    and not record.get("failures")
                    and now >= float(record.get("next_at", 0))
                )
                stale = now - float(record.get("sent_at", now)) > FORGET_AFTER
                if idle or stale:
                    del records[key]
        if not live:
            return
        for key, target in wanted.items():
            self._handle(target, records.setdefault(key, {}), now)
