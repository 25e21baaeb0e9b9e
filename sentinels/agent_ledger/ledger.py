"""The agent ledger: what the readers return, counted once per response key.

Each scan stamps every session file (dev, inode, size, mtime and its companions') and reads
the files whose stamp changed since their last commit WHOLE: the files are small, and the
agents rewrite them (Gemini rewrites a message when its tokens arrive, OpenCode a database
row). An entry whose key is new is counted whole; a known key adds only what grew, per token
type and for the cost (max(0, new - counted)): counters never go down, a rewritten response
with more tokens adds the difference, and reading the same bytes again, a truncated file or
a replaced one adds nothing. A record past the bounds (a count above 2**53, a cost above
base.MAX_COST_USD: poison, not usage) is not counted but rejected, once per file, as the
readers' own rejects are. The stamps, the rows and the counters of a batch are committed in
one transaction (store.py), so a crash at any moment never counts twice. A file that vanished
is forgotten; what it counted stays.
"""

from __future__ import annotations

import functools
import gc
import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agentwatch.core.fold import DIMENSIONS, Fold, SessionFold
from agentwatch.core.log import FailureGate
from agentwatch.core.sanitize import label_value
from agentwatch.sentinels.agent_ledger.base import (
    MAX_COST_USD,
    MAX_TOKENS,
    TOKEN_TYPES,
    AgentUsage,
    ReadResult,
    out_of_bounds,
)
from agentwatch.sentinels.agent_ledger.readers import Plug, Reader
from agentwatch.sentinels.agent_ledger.store import (
    MODEL,
    PROJECT,
    SESSION,
    T_CC,
    T_CR,
    T_IN,
    T_OUT,
    TS,
    USD,
    CounterKey,
    FileState,
    Row,
    Stamp,
    Store,
    key_hashes,
)

log = logging.getLogger("agentwatch.agent-ledger")

BATCH_FILES = 64  # files of a per-file reader committed together
BATCH_ENTRIES = 20_000  # ...or fewer, once their entries reach this
# With --once nothing is published between batches, so a batch can be larger: each commit
# writes the pages its random keys touched, and fewer, larger commits write each page fewer
# times (Gemini 256 MiB: the COMMITs' CPU 2.3 s -> 0.5 s). A crash still keeps or drops a
# batch whole; the entries held in memory bound its size (about 0.1 KiB each).
ONCE_BATCH_FILES = 4096
ONCE_BATCH_ENTRIES = 100_000
# Allocations between the young generation's collections while a batch is read and decided:
# a batch allocates a few objects per record (the record, its row) and frees them together,
# with no cycle among them; at the default 700 the collections re-walked the batch's live
# objects, 10% of a Gemini backfill's CPU, and at 100,000 still walked each of them once
# (OpenCode 256 MiB: 0.1 s). A million spans a --once batch (100,000 entries, a few objects
# each), so a batch seldom meets a collection; what it frees it frees by reference count.
BATCH_GC_THRESHOLD = 1_000_000
UNKNOWN = "unknown"  # the label of an empty project, model or session
UNREADABLE = "unreadable"  # the reject reason of a file a reader could not open or decode
Priced = tuple[AgentUsage, float | None]  # an entry and its cost (stated or priced)

TOKENS = "agentwatch_tokens"
COST = "agentwatch_cost_usd"
RESPONSES = "agentwatch_api_responses"
UNPRICED = "agentwatch_agent_ledger_unpriced_tokens"
REJECTED = "agentwatch_agent_ledger_records_rejected"
# Where the project and model labels sit in each counter's label values (agent first).
LABEL_AT: dict[str, tuple[int | None, int | None]] = {
    TOKENS: (1, 2),
    COST: (1, 2),
    RESPONSES: (1, 2),
    UNPRICED: (None, 1),
    REJECTED: (None, None),
}


def names_in(counters: Iterable[CounterKey], agent: str) -> dict[str, set[str]]:
    """The project and model names one agent's counters hold."""
    found: dict[str, set[str]] = {dim: set() for dim in DIMENSIONS}
    for name, labels in counters:
        at = LABEL_AT.get(name)
        if at is None or labels[0] != agent:
            continue
        for dim, index in zip(DIMENSIONS, at, strict=True):
            if index is not None:
                found[dim].add(labels[index])
    return found


def shown_labels(fold: Fold, name: str, labels: tuple[str, ...]) -> tuple[str, ...]:
    """A counter's label values as exposed: names past the caps become "other"."""
    at = LABEL_AT.get(name, (None, None))
    shown = list(labels)
    for dim, index in zip(DIMENSIONS, at, strict=True):
        if index is not None:
            shown[index] = fold.show(dim, labels[index])
    return tuple(shown)


def stamp_of(path: Path, companions: tuple[str, ...]) -> Stamp:
    """What says a file changed: its identity, size and mtime, and its companions'."""
    st = os.stat(path, follow_symlinks=False)
    stamp: list[int] = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
    for suffix in companions:
        try:
            other = os.stat(f"{path}{suffix}", follow_symlinks=False)
        except OSError:
            stamp += [-1, -1, -1]
        else:
            stamp += [other.st_ino, other.st_size, other.st_mtime_ns]
    return tuple(stamp)


@functools.lru_cache(maxsize=8192)  # few distinct names, one look-up per response
def _label(value: str) -> str:
    return label_value(value) or UNKNOWN


@dataclass
class Batch:
    """Files of one reader read and committed together; `gone`: files to forget with it."""

    agent: str
    stamps: dict[str, Stamp]
    gone: list[str] = field(default_factory=list)


@dataclass
class _Pending:
    """What a batch adds before its commit: rows, counters, sessions and label values."""

    rows: dict[int, Row] = field(default_factory=dict)
    counters: dict[CounterKey, float] = field(default_factory=dict)
    sessions: dict[tuple[str, str], list] = field(default_factory=dict)
    seen: dict[str, set[str]] = field(default_factory=lambda: {d: set() for d in DIMENSIONS})
    # (agent, project, model) -> [responses, 4 token types, cost], (agent, model) -> unpriced
    # tokens: summed per response in its order, counters once per batch (`settle`)
    groups: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)
    unpriced: dict[tuple[str, str], float] = field(default_factory=dict)

    def add(self, key: CounterKey, value: float) -> None:
        if value:
            self.counters[key] = self.counters.get(key, 0.0) + value

    def settle(self) -> None:
        """The sums into the counters (a zero adds nothing, as `add` adds it)."""
        for (agent, project, model), sums in self.groups.items():
            self.add((RESPONSES, (agent, project, model)), sums[0])
            for kind, value in zip(TOKEN_TYPES, sums[1:5], strict=True):
                self.add((TOKENS, (agent, project, model, kind)), value)
            self.add((COST, (agent, project, model)), sums[5])
        for (agent, model), tokens in self.unpriced.items():
            self.add((UNPRICED, (agent, model)), tokens)
        self.unpriced.clear()
        self.groups.clear()


class Ledger:
    """The counters in memory, the files' stamps, and the batches still to read."""

    def __init__(
        self,
        store: Store,
        readers: Mapping[str, tuple[Plug, Reader]],
        session_ttl: float = 7200.0,
        caps: Mapping[str, int] | None = None,
        clock: Callable[[], float] = time.time,
        env: Mapping[str, str] | None = None,
        home: Path | None = None,
        batch: tuple[int, int] = (BATCH_FILES, BATCH_ENTRIES),
    ):
        self.store = store
        self.batch_files, self.batch_entries = batch
        self.readers = dict(readers)
        self.session_ttl = session_ttl
        caps = dict(caps or {})
        self.caps = {"project": caps.get("project", 50), "model": caps.get("model", 25)}
        self.max_sessions = caps.get("session", 100)
        self.clock = clock
        self.env = os.environ if env is None else env
        self.home = Path.home() if home is None else home
        self.counters = store.counters()
        kept = store.kept()
        agents = {*self.readers, *(labels[0] for _name, labels in self.counters)}
        self.folds = {  # agents no longer configured too: their totals still show
            agent: Fold(self.caps, kept.get(agent, {}), names_in(self.counters, agent))
            for agent in agents
        }
        since = clock() - session_ttl
        recent = store.recent_sessions(since)
        self.sessions: dict[str, dict[str, list]] = {agent: {} for agent in self.readers}
        for (agent, session), row in recent.items():
            if agent in self.sessions:
                self.sessions[agent][session] = list(row)
        self.session_folds = {
            agent: SessionFold(self.max_sessions, rows) for agent, rows in self.sessions.items()
        }
        self.files = {agent: store.files(agent) for agent in self.readers}
        self.read_errors = dict.fromkeys(self.readers, 0)
        self.queue: deque[Batch] = deque()
        self.commits = 0
        self._gates = {agent: FailureGate(log, f"{agent} reader") for agent in self.readers}
        self._rejects_logged: set[tuple[str, str]] = set()

    # ---- finding what changed
    def scan(self) -> None:
        """Queue a batch for every file whose stamp changed, and forget vanished files."""
        for agent, (plug, reader) in self.readers.items():
            stamps: dict[str, Stamp] = {}
            try:
                roots = reader.roots(self.env, self.home)
                paths = [path for root in roots for path in reader.files(root)]
            except Exception as err:  # a reader's bug must not stop the other agents
                self._failed(agent, err)
                continue
            for path in paths:
                key = os.fspath(path)
                if key in stamps:
                    continue
                try:
                    stamps[key] = stamp_of(path, plug.companions)
                except OSError:  # vanished since it was listed
                    self.read_errors[agent] += 1
            known = self.files[agent]
            changed = {p: s for p, s in stamps.items() if p not in known or known[p].stamp != s}
            gone = [p for p in known if p not in stamps]
            batches = self._batches(agent, plug, changed, stamps, self.batch_files)
            if gone:
                if not batches:
                    batches = [Batch(agent, {})]
                batches[0].gone = gone
            self.queue.extend(batches)
        if self.queue:
            self.store.defer_indexes()

    @staticmethod
    def _batches(
        agent: str, plug: Plug, changed: dict[str, Stamp], stamps: dict[str, Stamp], size: int
    ) -> list[Batch]:
        if not changed:
            return []
        if plug.across_files:  # its rules look across files (forks, dedup): all, in one call
            return [Batch(agent, dict(stamps))]
        items = sorted(changed.items())
        return [
            Batch(agent, dict(items[start : start + size])) for start in range(0, len(items), size)
        ]

    # ---- reading and counting
    def step(self) -> bool:
        """Read and commit the next batch; False when none is queued."""
        if not self.queue:
            self.store.backfilled()  # a backfill's end, or a cycle's (Store.defer_indexes)
            return False
        batch = self.queue.popleft()
        threshold = gc.get_threshold()
        gc.set_threshold(BATCH_GC_THRESHOLD, *threshold[1:])
        try:
            self._step(batch)
        finally:
            gc.set_threshold(*threshold)
        return True

    def _step(self, batch: Batch) -> None:
        plug, reader = self.readers[batch.agent]
        pending = _Pending()
        try:  # the reader's code: reading and pricing
            states, entries = self._read(batch, plug, reader)
            self._decide(batch.agent, entries, pending)
            pending.settle()
        except Exception as err:
            self._failed(batch.agent, err)  # its files keep their old stamps: read again
            return
        self._reject_counts(batch, states, pending)
        self._commit(batch, states, pending)
        self._gates[batch.agent].succeeded()

    def _failed(self, agent: str, err: Exception) -> None:
        self.read_errors[agent] += 1
        self._gates[agent].failed(f"{type(err).__name__} (its files are read again later)")

    @staticmethod
    def _bounded(result: ReadResult, reader: Reader) -> list[Priced]:
        """The result's entries that keep the bounds (base.out_of_bounds), each with its
        cost; the others become rejects of the result, so that they count once per file."""
        kept: list[Priced] = []
        append, price = kept.append, reader.price
        for entry in result.entries:
            cost = entry.cost_usd if entry.cost_usd is not None else price(entry)
            if type(entry) is AgentUsage:  # out_of_bounds' good case, inline (once a response)
                i, o, r, w = entry.input, entry.output, entry.cache_read, entry.cache_creation
                if (
                    int is type(i) is type(o) is type(r) is type(w)
                    and 0 <= i <= MAX_TOKENS
                    and 0 <= o <= MAX_TOKENS
                    and 0 <= r <= MAX_TOKENS
                    and 0 <= w <= MAX_TOKENS
                    and (cost is None or (type(cost) is float and 0 <= cost <= MAX_COST_USD))
                ):  # NaN and the infinities fail the range
                    append((entry, cost))
                    continue
            reason = out_of_bounds(entry, cost)
            if reason is None:
                append((entry, cost))
            else:
                result.reject(reason)
        return kept

    def _read(
        self, batch: Batch, plug: Plug, reader: Reader
    ) -> tuple[dict[str, tuple[FileState, dict[str, int]]], list[Priced]]:
        """Entries of the batch's files with their costs, and per file its new stamp and the
        rejects read."""
        states: dict[str, tuple[FileState, dict[str, int]]] = {}
        entries: list[Priced] = []
        paths = list(batch.stamps)
        if plug.across_files and paths:
            result = reader.read_files([Path(p) for p in paths])
            entries = self._bounded(result, reader)
            for path in paths:
                states[path] = (FileState(batch.stamps[path], {}), dict(result.rejects))
            return states, entries
        for path in paths:
            result = reader.read_files([Path(path)])
            if not result.entries and result.rejects.get(UNREADABLE):
                # Gone or not readable now (permissions): not stamped, so tried again next
                # scan, even if it comes back unchanged; a read error, not a bad record.
                self.read_errors[batch.agent] += 1
                del batch.stamps[path]
                continue
            entries.extend(self._bounded(result, reader))
            states[path] = (FileState(batch.stamps[path], {}), dict(result.rejects))
            if len(entries) >= self.batch_entries and path != paths[-1]:  # the rest: next batch
                rest = paths[paths.index(path) + 1 :]
                self.queue.appendleft(Batch(batch.agent, {p: batch.stamps[p] for p in rest}))
                batch.stamps = {p: batch.stamps[p] for p in states}
                break
        return states, entries

    def _reject_counts(
        self,
        batch: Batch,
        states: dict[str, tuple[FileState, dict[str, int]]],
        pending: _Pending,
    ) -> None:
        """Rejects count once per file: only what a read finds beyond the most an earlier
        read of the same file found. Files read in one call (a reader that dedups across
        files) share its rejects: beyond the most any of them held."""
        known = self.files[batch.agent]
        grown: dict[str, int] = {}
        where: dict[str, str] = {}  # a file each reason grew in (files read alone)
        if self.readers[batch.agent][0].across_files and len(states) > 1:
            found = next(iter(states.values()))[1]
            before: dict[str, int] = {}
            for path in states:
                old = known.get(path)
                for reason, count in (old.rejects if old else {}).items():
                    before[reason] = max(before.get(reason, 0), count)
            grown = {reason: count - before.get(reason, 0) for reason, count in found.items()}
        else:
            for path, (_state, found) in states.items():
                old = known.get(path)
                for reason, count in found.items():
                    previous = old.rejects.get(reason, 0) if old else 0
                    grown[reason] = grown.get(reason, 0) + max(0, count - previous)
                    if count > previous:
                        where.setdefault(reason, path)
        for path, (state, found) in states.items():
            old = known.get(path)
            state.rejects = dict(old.rejects) if old else {}
            for reason, count in found.items():
                state.rejects[reason] = max(state.rejects.get(reason, 0), count)
        for reason, count in grown.items():
            pending.add((REJECTED, (batch.agent, _label(reason))), max(0, count))
            if count > 0:
                self._log_reject(batch.agent, _label(reason), where.get(reason))

    def _log_reject(self, agent: str, reason: str, path: str | None) -> None:
        """One line per agent and reason while the sentinel runs: the counter tells more."""
        if (agent, reason) in self._rejects_logged:
            return
        self._rejects_logged.add((agent, reason))
        log.warning(
            "a %s record in %s was rejected (%s); such records are counted in "
            "agentwatch_agent_ledger_records_rejected_total and not logged again",
            agent,
            label_value(path, limit=512) if path else "the files read together",
            reason,
        )

    def _decide(self, agent: str, entries: list[Priced], pending: _Pending) -> None:
        """What each entry adds: all of it for a key not counted yet, else what grew since
        (per token type and the cost; nothing when nothing grew). The sums per label set and
        per session are added in the entries' order (floats: the same order, the same sums).
        One loop with the amounts unrolled: it runs once per response of a backfill."""
        keys = key_hashes([entry.key for entry, _cost in entries])
        known = self.store.rows_for(keys)
        now = self.clock()
        rows, groups, sessions = pending.rows, pending.groups, pending.sessions
        unpriced = pending.unpriced
        projects, models = pending.seen["project"], pending.seen["model"]
        isfinite = math.isfinite
        for (entry, cost), key in zip(entries, keys, strict=True):
            # _bounded kept counts from 0 to MAX_TOKENS (floats of them are exact) and costs
            # that are None or finite from 0 to MAX_COST_USD
            g_in, g_out = float(entry.input), float(entry.output)
            g_cr, g_cc = float(entry.cache_read), float(entry.cache_creation)
            g_usd = float(cost) if cost else 0.0
            row = rows.get(key)
            if row is None and known:  # a backfill's batch seldom meets a counted key
                row = known.get(key)
            if row is None:  # nothing counted yet: all of it grew
                fresh = 1.0
                stamp = entry.timestamp if isfinite(entry.timestamp) else now
                session_label, project = _label(entry.session), _label(entry.project)
                row = rows[key] = [key, agent, session_label, project, _label(entry.model),
                                   stamp, g_in, g_out, g_cr, g_cc, g_usd]  # fmt: skip
            else:
                fresh = 0.0
                g_in = g_in - row[T_IN] if g_in > row[T_IN] else 0.0
                g_out = g_out - row[T_OUT] if g_out > row[T_OUT] else 0.0
                g_cr = g_cr - row[T_CR] if g_cr > row[T_CR] else 0.0
                g_cc = g_cc - row[T_CC] if g_cc > row[T_CC] else 0.0
                g_usd = g_usd - row[USD] if g_usd > row[USD] else 0.0
                if not (g_in or g_out or g_cr or g_cc or g_usd):
                    continue
                row[T_IN] += g_in
                row[T_OUT] += g_out
                row[T_CR] += g_cr
                row[T_CC] += g_cc
                row[USD] += g_usd
                rows[key] = row
            project, model = row[PROJECT], row[MODEL]
            projects.add(project)
            models.add(model)
            group = groups.get((agent, project, model))
            if group is None:
                group = groups[agent, project, model] = [0.0] * 6
            group[0] += fresh  # each sum in the order `add` would have summed it
            group[1] += g_in
            group[2] += g_out
            group[3] += g_cr
            group[4] += g_cc
            group[5] += g_usd
            if cost is None:
                unpriced[agent, model] = unpriced.get((agent, model), 0.0) + (
                    g_in + g_out + g_cr + g_cc
                )
            active = row[TS] if row[TS] < now else now
            session = sessions.get((agent, row[SESSION]))
            if session is None:
                session = sessions[agent, row[SESSION]] = [project, active, active, *[0.0] * 5]
            elif active < session[1]:
                session[1] = active
            elif active > session[2]:
                session[2] = active
            session[3] += g_in
            session[4] += g_out
            session[5] += g_cr
            session[6] += g_cc
            session[7] += g_usd

    def _commit(
        self,
        batch: Batch,
        states: dict[str, tuple[FileState, dict[str, int]]],
        pending: _Pending,
    ) -> None:
        agent = batch.agent
        fold = self.folds[agent]
        planned = fold.plan(pending.seen)
        files = {path: state for path, (state, _found) in states.items()}
        self.store.commit_batch(
            agent,
            files,
            batch.gone,
            pending.rows,
            pending.counters,
            pending.sessions,
            {dim: kept for dim, (_fresh, kept) in planned.items() if kept},
        )
        self.commits += 1
        fold.apply(planned)
        known = self.files[agent]
        known.update(files)
        for path in batch.gone:
            known.pop(path, None)
        for counter, value in pending.counters.items():
            self.counters[counter] = self.counters.get(counter, 0.0) + value
        self._remember_sessions(agent, pending.sessions)

    def _remember_sessions(self, agent: str, deltas: dict[tuple[str, str], list]) -> None:
        cutoff = self.clock() - self.session_ttl
        recent = self.sessions[agent]
        for (_agent, session), (project, first, last, *sums) in deltas.items():
            current = recent.get(session)
            if current is None:
                if last < cutoff:
                    continue
                # A session active again after it expired starts a new series from this
                # batch (as the token ledger's): its earlier totals may be in "other".
                recent[session] = [project, first, last, *sums]
                self.session_folds[agent].admit(session)
                continue
            current[1], current[2] = min(current[1], first), max(current[2], last)
            for index, value in enumerate(sums, start=3):
                current[index] += value

    def expire_sessions(self) -> None:
        cutoff = self.clock() - self.session_ttl
        for agent, recent in self.sessions.items():
            for session in [s for s, row in recent.items() if row[2] < cutoff]:
                self.session_folds[agent].expired(session, recent.pop(session))

    # ---- what the metrics read
    def tracked(self, agent: str) -> int:
        return len(self.files[agent])

    def counted_agents(self) -> set[str]:
        """Agents with at least one counted response (the others have no spend series)."""
        return {labels[0] for name, labels in self.counters if name == RESPONSES}
