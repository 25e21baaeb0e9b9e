"""The ledger: turns new transcript bytes into counter increments, exactly once.

Each step reads a bounded slice of one file, decides every usage entry against what is
already counted (dedup, best copy, sidechain replays) and commits the counter changes and
the new file position in one transaction. Counters only ever grow: a better copy of an
already counted response adds just the difference.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentwatch.exporter.log import FailureGate
from agentwatch.sentinels.token_ledger import discovery, records
from agentwatch.sentinels.token_ledger.pricing import PriceBook
from agentwatch.sentinels.token_ledger.store import (
    CounterKey,
    ResponseRow,
    SessionDelta,
    Store,
)
from agentwatch.sentinels.token_ledger.tailer import Position, read_lines, refresh_head, same_file

log = logging.getLogger("agentwatch.token-ledger")

NO_REQUEST = 0  # req key of a response without requestId
SIDECHAIN = 1  # req key of a lone sidechain copy (deduped by message id alone)
BY_LOCATION = 2  # req key of an entry without message id (keyed by file, offset, content)
DROPPED = 2  # `side` of a sidechain row superseded by a main copy

TOKEN_TYPES = ("input", "output", "cache_read", "cache_creation")
STEP_BYTES = 16 * 1024 * 1024


def _hash(text: str) -> int:
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def project_name(cwd: str | None, slug: str) -> str:
    """The project label: the working directory's last component, else the folder slug."""
    if cwd:
        name = os.path.basename(cwd.rstrip("/"))
        if name:
            return name
    return slug or "unknown"


@dataclass
class TrackedFile:
    transcript: discovery.Transcript
    size: int = 0
    mtime: float = 0.0


@dataclass
class StepResult:
    bytes_read: int = 0
    lines: int = 0
    entries: int = 0


@dataclass
class Ledger:
    """In-memory view of the counters plus the logic that changes them."""

    store: Store
    prices: PriceBook
    roots: list[Path]
    session_ttl: float = 7200.0
    clock: Callable[[], float] = time.time
    counters: dict[CounterKey, float] = field(default_factory=dict)
    sessions: dict[str, list] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)
    files: dict[str, TrackedFile] = field(default_factory=dict)
    positions: dict[str, Position] = field(default_factory=dict)
    read_errors: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.counters = self.store.counters()
        self.positions = self.store.positions()
        self.gauges = self.store.gauges()
        since = self.clock() - self.session_ttl
        self.sessions = {s: list(row) for s, row in self.store.recent_sessions(since).items()}
        self._gates = {
            str(root): FailureGate(log, f"transcript root {root}") for root in self.roots
        }

    # ---- discovery
    def scan(self) -> None:
        """Reconcile with the file system: find new files, note sizes, forget vanished ones."""
        seen: dict[str, TrackedFile] = {}
        for root in self.roots:
            if not root.is_dir():
                continue
            for transcript in discovery.walk(root):
                key = str(transcript.path)
                if key in seen:
                    continue
                try:
                    stat = transcript.path.stat()
                except OSError:
                    continue
                tracked = self.files.get(key) or TrackedFile(transcript)
                tracked.size, tracked.mtime = stat.st_size, stat.st_mtime
                seen[key] = tracked
        self.files = seen

    def track(self, path: Path) -> TrackedFile | None:
        """Start tracking one file named by a file-system event (if it is a transcript)."""
        key = str(path)
        if key in self.files:
            return self.files[key]
        for root in self.roots:
            transcript = discovery.describe(root, path)
            if transcript is not None and not discovery.behind_symlink(root, path):
                tracked = TrackedFile(transcript)
                self.files[key] = tracked
                return tracked
        return None

    def pending(self) -> list[str]:
        """Files with unread bytes, most recently modified first (live sessions go first)."""
        waiting = [
            (tracked.mtime, key)
            for key, tracked in self.files.items()
            if tracked.size != self.positions.get(key, Position()).offset
        ]
        return [key for _, key in sorted(waiting, reverse=True)]

    def has_unread(self, key: str) -> bool:
        tracked = self.files.get(key)
        position = self.positions.get(key)
        return tracked is not None and position is not None and tracked.size > position.offset

    def unread_bytes(self) -> int:
        total = 0
        for key, tracked in self.files.items():
            position = self.positions.get(key)
            offset = position.offset if position else 0
            total += max(0, tracked.size - offset)
        return total

    # ---- reading
    def step(self, key: str, budget: int = STEP_BYTES) -> StepResult:
        """Read up to `budget` bytes of new complete lines from one file and commit them."""
        tracked = self.files.get(key)
        if tracked is None:
            return StepResult()
        try:
            fd = os.open(key, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            self._read_error("vanished")
            self.files.pop(key, None)
            return StepResult()
        except OSError:
            self._read_error("unreadable")
            tracked.size = self.positions.get(key, Position()).offset  # retry on next change
            return StepResult()
        try:
            return self._step_open(fd, key, tracked, budget)
        except OSError:
            self._read_error("unreadable")
            return StepResult()
        finally:
            os.close(fd)

    def _read_error(self, reason: str) -> None:
        self.read_errors[reason] = self.read_errors.get(reason, 0) + 1

    def _step_open(self, fd: int, key: str, tracked: TrackedFile, budget: int) -> StepResult:
        stat = os.fstat(fd)
        tracked.size, tracked.mtime = stat.st_size, stat.st_mtime
        deltas: dict[CounterKey, float] = {}
        known = self.positions.get(key)
        if known is not None and same_file(fd, stat, known):
            if stat.st_size == known.offset:
                return StepResult()
            position = Position(**vars(known))
        else:
            # New, truncated or replaced: read from the start; dedup keeps this exact.
            if known is not None:
                _add(deltas, ("agentwatch_ledger_file_resets", ()), 1)
            position = Position(dev=stat.st_dev, ino=stat.st_ino)
        start = position.offset
        result = read_lines(fd, start, budget, tail_is_complete=records.is_whole_object)
        refresh_head(fd, stat, position)
        position.offset = result.end
        batch = _Batch(self, tracked.transcript, key, deltas)
        for offset, line in result.candidates:
            batch.add_line(offset, line)
        batch.decide()
        _add(deltas, ("agentwatch_ledger_lines_read", ()), result.lines)
        _add(deltas, ("agentwatch_ledger_bytes_read", ()), result.end - start)
        _add(deltas, ("agentwatch_ledger_lines_rejected", ("oversize",)), result.oversize)
        self._commit(key, position, batch)
        return StepResult(bytes_read=result.end - start, lines=result.lines, entries=batch.entries)

    def _commit(self, key: str, position: Position, batch: _Batch) -> None:
        store = self.store
        store.begin()
        try:
            store.save_responses(batch.rows.values())
            store.add_counters(batch.deltas)
            store.add_sessions(batch.session_deltas)
            if batch.gauges:
                store.set_gauges(batch.gauges)
            store.save_position(key, position)
            store.commit()
        except BaseException:
            store.rollback()
            raise
        self.positions[key] = position
        for counter, value in batch.deltas.items():
            self.counters[counter] = self.counters.get(counter, 0.0) + value
        self.gauges.update(batch.gauges)
        cutoff = self.clock() - self.session_ttl
        for session, delta in batch.session_deltas.items():
            current = self.sessions.get(session)
            if current is None:
                if delta.last_ts < cutoff:
                    continue
                current = [delta.project, delta.first_ts, delta.last_ts, 0, 0, 0, 0, 0.0]
                self.sessions[session] = current
            current[1] = min(current[1], delta.first_ts)
            current[2] = max(current[2], delta.last_ts)
            for index, value in enumerate(
                (delta.t_in, delta.t_out, delta.t_cr, delta.t_cc, delta.cost), start=3
            ):
                current[index] += value

    def expire_sessions(self) -> None:
        cutoff = self.clock() - self.session_ttl
        for session in [s for s, row in self.sessions.items() if row[2] < cutoff]:
            del self.sessions[session]


def _add(deltas: dict[CounterKey, float], key: CounterKey, value: float) -> None:
    if value:
        deltas[key] = deltas.get(key, 0.0) + value


def _wins(total: int, cost: float, speed: bool, row: ResponseRow) -> bool:
    """The reference reader keeps the largest total, then the higher cost, then `speed`."""
    if total != row.total:
        return total > row.total
    if cost != row.cost:
        return cost > row.cost
    return speed and not row.speed


class _Batch:
    """Decisions for the candidate lines of one step, before they are committed."""

    def __init__(
        self,
        ledger: Ledger,
        transcript: discovery.Transcript,
        path: str,
        deltas: dict[CounterKey, float],
    ):
        self.ledger = ledger
        self.transcript = transcript
        self.path = path
        self.deltas = deltas
        self.rows: dict[tuple[int, int], ResponseRow] = {}
        self.session_deltas: dict[str, SessionDelta] = {}
        self.gauges: dict[str, float] = {}
        self.entries = 0
        self._known_msgs: dict[int, list[ResponseRow]] = {}
        self._parsed: list[tuple[tuple[int, int], records.Entry]] = []
        self._projects: dict[str | None, str] = {}

    def add_line(self, offset: int, line: bytes) -> None:
        try:
            entries = records.parse(line)
        except records.Rejected as rejected:
            _add(self.deltas, ("agentwatch_ledger_lines_rejected", (rejected.reason,)), 1)
            return
        for index, entry in enumerate(entries):
            self._parsed.append((self._keys(entry, offset, index, line), entry))

    def decide(self) -> None:
        """Decide every parsed entry in file order, after one lookup for all of them."""
        self.entries = len(self._parsed)
        self._known_msgs = self.ledger.store.responses_for(msg for (msg, _), _ in self._parsed)
        for (msg, req), entry in self._parsed:
            self._decide(entry, msg, req)

    def _keys(self, entry: records.Entry, offset: int, index: int, line: bytes) -> tuple[int, int]:
        if entry.msg_id is None:
            content = hashlib.blake2b(line, digest_size=8).hexdigest()
            return _hash(f"{self.path}\0{offset}\0{index}\0{content}"), BY_LOCATION
        msg = _hash(entry.msg_id)
        if entry.sidechain:
            return msg, SIDECHAIN
        if entry.req_id is None:
            return msg, NO_REQUEST
        return msg, _hash("r\0" + entry.req_id) | 3  # low bits set: never a reserved key

    def _project(self, cwd: str | None) -> str:
        name = self._projects.get(cwd)
        if name is None:
            name = project_name(cwd, self.transcript.slug)
            self._projects[cwd] = name
        return name

    def _decide(self, entry: records.Entry, msg: int, req: int) -> None:
        ledger = self.ledger
        cost, priced = self._cost(entry)
        rows = self._known_msgs.setdefault(msg, [])
        same = next((row for row in rows if row.req == req), None)
        project = self._project(entry.cwd)
        self._activity(entry, project)
        if req == SIDECHAIN and any(row.req != SIDECHAIN for row in rows):
            _add(self.deltas, ("agentwatch_ledger_duplicate_copies", ("sidechain_replay",)), 1)
            return
        if same is not None:
            if not _wins(entry.total, cost, entry.has_speed, same):
                _add(self.deltas, ("agentwatch_ledger_duplicate_copies", ("smaller_copy",)), 1)
                return
            _add(self.deltas, ("agentwatch_ledger_duplicate_copies", ("larger_copy",)), 1)
            row = same
        else:
            labels = ledger.store.labelset(project, entry.model, self.transcript.session)
            row = ResponseRow(msg, req, 0, 0, 0, 0.0, 0, 0, 0, 0, 0.0, labels)
            side = next((r for r in rows if r.req == SIDECHAIN and r.side != DROPPED), None)
            if req not in (SIDECHAIN, BY_LOCATION) and side is not None:
                # A main copy supersedes the sidechain replay counted before it: carry the
                # counted amounts over instead of counting the response twice.
                row.labels = side.labels
                row.c_in, row.c_out, row.c_cr, row.c_cc, row.c_cost = (
                    side.c_in, side.c_out, side.c_cr, side.c_cc, side.c_cost,
                )  # fmt: skip
                side.side = DROPPED
                side.c_in = side.c_out = side.c_cr = side.c_cc = 0
                side.c_cost = 0.0
                self.rows[(side.msg, side.req)] = side
            else:
                self._count_new_response(row, entry)
            rows.append(row)
        row.side = 1 if req == SIDECHAIN else 0
        row.total, row.cost, row.speed = entry.total, cost, int(entry.has_speed)
        self._count_difference(row, entry, cost, priced)
        self.rows[(row.msg, row.req)] = row

    def _cost(self, entry: records.Entry) -> tuple[float, bool]:
        if entry.cost_usd is not None:
            return entry.cost_usd, True
        if entry.model == records.SYNTHETIC:
            return 0.0, True
        cost = self.ledger.prices.cost(
            entry.model, entry.input, entry.output, entry.cache_read,
            entry.cache_5m, entry.cache_1h, entry.fast,
        )  # fmt: skip
        return (0.0, False) if cost is None else (cost, True)

    def _count_new_response(self, row: ResponseRow, entry: records.Entry) -> None:
        project, model, _session = self.ledger.store.labels_of(row.labels)
        _add(self.deltas, ("agentwatch_api_responses", (project, model)), 1)
        if entry.api_error:
            kind, reset_at = records.classify_error(entry.error_text)
            _add(self.deltas, ("agentwatch_api_errors", (project, kind)), 1)
            self._raise_gauge(f"api_error_last:{kind}", entry.timestamp)
            if reset_at is not None:
                self._raise_gauge("usage_limit_reset", reset_at)

    def _raise_gauge(self, key: str, value: float) -> None:
        """Keep the newest time seen: files are not read in time order."""
        current = max(self.gauges.get(key, 0.0), self.ledger.gauges.get(key, 0.0))
        if value > current:
            self.gauges[key] = value

    def _count_difference(
        self, row: ResponseRow, entry: records.Entry, cost: float, priced: bool
    ) -> None:
        project, model, session = self.ledger.store.labels_of(row.labels)
        d_in = max(0, entry.input - row.c_in)
        d_out = max(0, entry.output - row.c_out)
        d_cr = max(0, entry.cache_read - row.c_cr)
        d_cc = max(0, entry.cache_creation - row.c_cc)
        d_cost = max(0.0, cost - row.c_cost)
        row.c_in += d_in
        row.c_out += d_out
        row.c_cr += d_cr
        row.c_cc += d_cc
        row.c_cost += d_cost
        for kind, value in zip(TOKEN_TYPES, (d_in, d_out, d_cr, d_cc), strict=True):
            _add(self.deltas, ("agentwatch_tokens", (project, model, kind)), value)
        _add(self.deltas, ("agentwatch_cost_usd", (project, model)), d_cost)
        if not priced:
            _add(
                self.deltas,
                ("agentwatch_ledger_unpriced_tokens", (model,)),
                d_in + d_out + d_cr + d_cc,
            )
        delta = self.session_deltas.get(session)
        if delta is None:  # first counted in another session's file
            delta = SessionDelta(project, entry.timestamp, entry.timestamp)
            self.session_deltas[session] = delta
        delta.t_in += d_in
        delta.t_out += d_out
        delta.t_cr += d_cr
        delta.t_cc += d_cc
        delta.cost += d_cost

    def _activity(self, entry: records.Entry, project: str) -> None:
        session = self.transcript.session
        delta = self.session_deltas.get(session)
        if delta is None:
            self.session_deltas[session] = SessionDelta(project, entry.timestamp, entry.timestamp)
        else:
            delta.first_ts = min(delta.first_ts, entry.timestamp)
            delta.last_ts = max(delta.last_ts, entry.timestamp)
