"""The cycles of `agentwatch sentinel otel`: the receiver folds requests as they come (on its
own threads, under one lock, waking the loop); each cycle classifies the sessions whose grace
passed (a transcript where the token ledger reads, or none), reconciles the ones with a
transcript against the ledger's spool file, expires quiet ones and saves the state.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from prometheus_client.metrics_core import Metric

from agentwatch.core import claude, run_budget, spool_readers
from agentwatch.core.http import ListenError, Server
from agentwatch.core.log import FailureGate
from agentwatch.core.loop import Outcome
from agentwatch.core.spool import SpoolParseError
from agentwatch.sentinels.contract import Context, SentinelError
from agentwatch.sentinels.otel.decode import Batch
from agentwatch.sentinels.otel.fold import TRANSCRIPT, Fold
from agentwatch.sentinels.otel.intake import serve
from agentwatch.sentinels.otel.metrics import families
from agentwatch.sentinels.otel.store import Store, dump

log = logging.getLogger("agentwatch.otel")
SAVE_GAP = 1.0
# The loop is woken for a request at most this often; the requests in between are published by
# the cycle that follows it (a burst of exports costs one spool rewrite a second, not one each).
WAKE_GAP = 1.0
LEDGER = spool_readers.TOKEN_LEDGER  # whose spool file the reconciliation reads


def has_transcript(roots: Iterable[Path], session: str) -> bool:
    """Whether any project folder under the roots holds `<session>.jsonl` (Claude Code's
    transcript of that session; the token ledger reads the same roots)."""
    name = f"{session}.jsonl"
    if "/" in session or session.startswith("."):
        return False
    for root in roots:
        try:
            folders = list(os.scandir(root))
        except OSError:
            continue
        for folder in folders:
            if folder.is_dir(follow_symlinks=False) and os.path.isfile(
                os.path.join(folder.path, name)
            ):
                return True
    return False


class Otel:
    """The otel sentinel's work (see the module doc)."""

    def __init__(self, context: Context, clock: Callable[[], float] = time.time):
        settings = context.settings
        self.clock = clock
        self.ttl = settings["session_ttl"]
        self.max_shown = settings["max_shown_sessions"]
        self.lock = threading.Lock()
        self.fold = Fold(
            settings["max_sessions"], settings["max_models"], settings["max_tools"],
            settings["grace"],
        )  # fmt: skip
        self.store = Store(context.state_dir)
        self.store.load(self.fold)
        self.state_dir = context.state_dir
        self.spool_dir = context.spool_dir
        self.ledger_path = spool_readers.path(context.spool_dir, LEDGER)
        self.roots = claude.projects_roots(configured=context.config.claude_config_dirs)
        self.save_gate = FailureGate(log, f"saving {self.store.path}")
        self.ledger_gate = FailureGate(log, f"ledger tokens from {self.ledger_path}")
        self.wake = context.wake
        self.dirty = False
        self.saved_at = -SAVE_GAP
        self.ratios: dict[str, float] = {}
        self.received = 0  # requests folded, and how many the last cycle had seen
        self.seen = 0
        self.woken_at = -WAKE_GAP
        self.server: Server | None = None
        if not context.once:
            try:
                self.server, _ = serve(settings["listen"], self._received, self._rejected)
            except (ListenError, ValueError) as err:
                raise SentinelError(str(err)) from None
            log.info("receiving OTLP/HTTP on http://%s/v1/metrics and /v1/logs",
                     settings["listen"])  # fmt: skip

    # ---- from the receiver's threads
    def _received(self, signal: str, batch: Batch) -> None:
        with self.lock:
            self.fold.counts[f"requests.{signal}"] += 1
            self.fold.add(batch, self.clock())
            self._changed()

    def _rejected(self, reason: str) -> None:
        with self.lock:
            self.fold.counts[f"rejected.{reason}"] += 1
            self._changed()

    def _changed(self) -> None:
        """Under the lock: something arrived; wake the loop unless it was woken just now."""
        self.dirty = True
        self.received += 1
        now = time.monotonic()
        if now - self.woken_at >= WAKE_GAP:
            self.woken_at = now
            self.wake()

    # ---- the loop
    def cycle(self, due: bool = True) -> Outcome:
        now = self.clock()
        with self.lock:
            arrived, self.seen = self.received != self.seen, self.received
            due_sessions = self.fold.due(now)
            expiring = self.fold.expire(now, self.ttl)
        looked = {key: has_transcript(self.roots, key) for key in {*due_sessions, *expiring}}
        with self.lock:
            for key, found in looked.items():
                self.fold.classify(key, found)
            gone = [k for k, s in self.fold.sessions.items() if now - s.last_seen > self.ttl]
            self.fold.drop(gone)
            self.fold.prune_minutes(now)
            changed = arrived or self.dirty or bool(looked) or bool(gone)
            self.dirty = self.dirty or changed
            waiting = self.fold.next_due_in(now)
        if due:
            self._reconcile()
        self._save(force=due)
        # requests that came without waking the loop are published a WAKE_GAP later
        again = WAKE_GAP if arrived or self.dirty else None
        if waiting is not None:  # a session's grace ends: classify it then, not a cycle later
            again = waiting if again is None else min(again, waiting)
        return Outcome(changed=changed or due, again_in=again)

    def _reconcile(self) -> None:
        with self.lock:
            mine = {
                key: session.tokens
                for key, session in reversed(self.fold.sessions.items())
                if session.state == TRANSCRIPT
            }
        if not mine:
            self.ratios = {}
            return
        try:
            text = spool_readers.read_text(self.spool_dir, LEDGER)
            theirs = spool_readers.session_tokens(text, claude.AGENT)
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError, SpoolParseError) as err:
            self.ledger_gate.failed(f"{type(err).__name__}")
            return
        self.ledger_gate.succeeded()
        ratios: dict[str, float] = {}
        for key, tokens in mine.items():
            if key not in theirs or len(ratios) >= self.max_shown:
                continue
            larger = max(tokens, theirs[key])
            ratios[key] = abs(tokens - theirs[key]) / larger if larger > 0 else 0.0
        self.ratios = ratios

    def _spend(self, now: float) -> dict[str, float]:
        starts = run_budget.period_starts(now)
        started = run_budget.read(self.state_dir).started_at
        if started is not None:
            starts["run"] = started
        if not self.fold.shared:  # no session without a transcript has counted yet
            return {}
        return {period: self.fold.spend_since(start) for period, start in starts.items()}

    def families(self) -> Iterator[Metric]:
        with self.lock:
            spend = self._spend(self.clock())
            yield from families(self.fold, spend, self.ratios)

    def _save(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self.dirty or (not force and now - self.saved_at < SAVE_GAP):
            return
        with self.lock:
            data = dump(self.fold)
            self.dirty = False
        try:
            self.store.save(data)
        except OSError as err:
            self.save_gate.failed(err)
            self.dirty = True
            return
        self.save_gate.succeeded()
        self.saved_at = now

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        self.dirty = True
        self._save(force=True)
