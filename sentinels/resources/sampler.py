"""One cycle: scan, find sessions and groups, attribute them, and account their CPU.

CPU of a tree over an interval = for every process in it now, its CPU time (own plus reaped
children's) minus what it had at the previous scan (a process absent then was born since, so
all of its CPU counts), minus the last value of members that vanished — their final CPU moved
into their parent's reaped-children time, which is already in the first sum. So short-lived
builds and test runs count even though no scan ever saw them, and nothing counts twice.
The first scan only primes: without a previous one there is no interval to report.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from agentwatch.core import bounded
from agentwatch.core.log import FailureGate
from agentwatch.core.sanitize import label_value
from agentwatch.sentinels.shared.proctable import (
    Identity,
    Proc,
    ProcTable,
    Scan,
    default_table,
)
from agentwatch.sentinels.shared.tmux import Pane, Tmux
from agentwatch.sentinels.shared.trees import Matcher, ancestors, children_map, subtree, topmost

log = logging.getLogger("agentwatch.resources")

SESSION_LABELS = ("pid", "agent", "project", "tmux_session", "tmux_window", "tmux_pane")
GROUPS = ("sessions", "agentwatch", "orchestrator")
ERROR_REASONS = ("vanished", "denied", "malformed")
# Anything running as the user can start processes named like an agent: past this many live
# sessions, the newest ones are only counted in the totals (agentwatch_agent_sessions, the
# `sessions` group) and in `sessions_folded`, so the series stay bounded.
MAX_SESSIONS = 500
PIDFILE_LIMIT = 4096  # a pid file holds one number; anything larger is not one


@dataclass
class Usage:
    """What one tree or group uses now; cpu fields are None until CPU is primed."""

    processes: int = 0
    rss: int = 0
    cpu_total: float | None = None  # CPU seconds counted since the sentinel first saw it
    cores: float | None = None  # CPU seconds per second over the last interval


@dataclass
class Session:
    """One agent session's process tree usage."""

    labels: dict[str, str]
    start: float  # wall-clock start time of the root process
    usage: Usage


@dataclass
class Sample:
    """One pass over the process table."""

    sessions: list[Session] = field(default_factory=list)
    groups: dict[str, Usage] = field(default_factory=dict)
    agents: Counter[str] = field(default_factory=Counter)
    scanned: int = 0
    duration: float = 0.0
    tmux_panes: int = 0
    tmux_failing: int = 0
    orchestrator_running: bool | None = None  # None: no orchestrator configured
    pidfile_failing: bool | None = None  # None: no pid file configured
    folded: int = 0  # live sessions past max_sessions: in the totals, without series of their own


def read_pid(path: Path) -> int:
    """The pid in a pid file (a regular file of at most PIDFILE_LIMIT bytes). The ValueError
    never quotes the file: it may be a link to a key or a token."""
    words = bounded.read_bytes(path, PIDFILE_LIMIT).split()
    if not words or not words[0].isdigit() or len(words[0]) > 10:
        raise ValueError(f"{label_value(str(path))}: not a pid file (no process id first)")
    return int(words[0])


def _boot_time() -> float:
    """Wall-clock time of boot, to turn /proc start times into timestamps."""
    try:
        with open("/proc/stat", "rb") as handle:
            for line in handle:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    import psutil  # without /proc only: 1.5 MiB of private memory otherwise unused

    return psutil.boot_time()


class Sampler:
    """Holds what must survive between cycles: last CPU per process, members, counters."""

    def __init__(
        self,
        agent_names: list[str],
        tmux: Tmux | None = None,
        table: ProcTable | None = None,
        orchestrator_pidfile: Path | None = None,
        orchestrator_name: str | None = None,
        max_sessions: int = MAX_SESSIONS,
    ):
        self.agents = Matcher(agent_names)
        self.agent_names = list(agent_names)
        self.tmux = tmux
        self.table = table or default_table()
        self.pidfile = orchestrator_pidfile
        self.orchestrator = Matcher([orchestrator_name]) if orchestrator_name else None
        self.pidfile_gate = FailureGate(log, f"orchestrator pid file {orchestrator_pidfile}")
        self.cwd_gate = FailureGate(log, "reading the working directory of agent processes")
        self.max_sessions = max_sessions
        self.cap_gate = FailureGate(log, f"agent sessions within max_sessions ({max_sessions})")
        self.boot = _boot_time()
        self.errors: Counter[str] = Counter({reason: 0 for reason in ERROR_REASONS})
        self._last_cpu: dict[Identity, float] | None = None
        self._last_time = 0.0
        self._members: dict[tuple, set[Identity]] = {}
        self._counters: dict[tuple, float] = {}
        self._projects: dict[Identity, str] = {}

    @property
    def primed(self) -> bool:
        return self._last_cpu is not None

    def cycle(self) -> Sample:
        scan = self.table.scan()
        self.errors.update(scan.errors)
        procs = scan.procs
        children = children_map(procs)
        sample = Sample(scanned=len(procs), duration=scan.duration)

        matched = {pid: name for pid, proc in procs.items() if (name := self.agents.match(proc))}
        roots = topmost(matched, procs)
        trees = {root: subtree(root, children) for root in roots}
        in_sessions = {pid for members in trees.values() for pid in members}
        panes = self._panes(sample) if roots else {}

        groups: dict[tuple, tuple[list[int], Session | None]] = {}
        for root, members in trees.items():
            proc = procs[root]
            labels = {
                "pid": str(root),
                "agent": label_value(matched[root]),
                "project": self._project(proc, scan),
                **self._pane_labels(root, procs, panes),
            }
            session = Session(labels, self.boot + proc.start, Usage())
            groups[("session", *proc.identity)] = (members, session)
            sample.sessions.append(session)
            sample.agents[labels["agent"]] += 1

        own = topmost((pid for pid, proc in procs.items() if proc.args.agentwatch), procs)
        groups[("group", "agentwatch")] = (self._outside(own, children, in_sessions), None)
        if self.pidfile or self.orchestrator:
            orchestrators = self._orchestrators(procs)
            sample.orchestrator_running = bool(orchestrators)
            if self.pidfile is not None:
                sample.pidfile_failing = self.pidfile_gate.failing
            if orchestrators:
                members = self._outside(orchestrators, children, in_sessions)
                groups[("group", "orchestrator")] = (members, None)

        self._account(scan, groups, sample)
        self._cap(sample)
        return sample

    def _cap(self, sample: Sample) -> None:
        """Keep the oldest max_sessions sessions (stable, and a flood of new ones cannot push
        out the real agents); log once while sessions are folded."""
        if len(sample.sessions) <= self.max_sessions:
            self.cap_gate.succeeded()
            return
        sample.sessions.sort(key=lambda session: (session.start, int(session.labels["pid"])))
        sample.folded = len(sample.sessions) - self.max_sessions
        del sample.sessions[self.max_sessions :]
        self.cap_gate.failed(
            f"{sample.folded} more live sessions are counted in the totals only "
            "(agentwatch_resources_sessions_folded)"
        )

    def _account(self, scan: Scan, groups: dict, sample: Sample) -> None:
        procs = scan.procs
        last = self._last_cpu
        interval = scan.monotonic - self._last_time
        identities = {proc.identity: proc.cpu for proc in procs.values()}
        total_delta = 0.0
        members_now: dict[tuple, set[Identity]] = {}
        counters: dict[tuple, float] = {}
        session_usage = Usage()
        for key, (pids, session) in groups.items():
            members = [procs[pid] for pid in pids]
            usage = session.usage if session else Usage()
            live = [proc for proc in members if not proc.zombie]
            usage.processes = len(live)
            usage.rss = sum(self.table.precise_rss(proc) for proc in live)
            members_now[key] = {proc.identity for proc in members}
            if last is not None:
                delta = sum(proc.cpu - last.get(proc.identity, 0.0) for proc in members)
                delta -= sum(
                    last[ident]
                    for ident in self._members.get(key, ())
                    if ident not in identities and ident in last
                )
                delta = max(delta, 0.0)
                counters[key] = self._counters.get(key, 0.0) + delta
                usage.cpu_total = counters[key]
                usage.cores = delta / interval if interval > 0 else 0.0
                if session:
                    total_delta += delta
            if session:
                session_usage.processes += usage.processes
                session_usage.rss += usage.rss
            else:
                sample.groups[key[1]] = usage
        if last is not None:
            key = ("group", "sessions")
            counters[key] = self._counters.get(key, 0.0) + total_delta
            session_usage.cpu_total = counters[key]
            session_usage.cores = total_delta / interval if interval > 0 else 0.0
        sample.groups["sessions"] = session_usage
        self._members = members_now
        self._counters = counters
        self._last_cpu = identities
        self._last_time = scan.monotonic
        live_roots = {key[1:] for key in groups if key[0] == "session"}
        self._projects = {k: v for k, v in self._projects.items() if k in live_roots}

    @staticmethod
    def _outside(roots: list[int], children: dict[int, list[int]], taken: set[int]) -> list[int]:
        """The trees under roots, without processes that belong to an agent session."""
        members: dict[int, None] = {}
        for root in roots:
            for pid in subtree(root, children):
                if pid not in taken:
                    members[pid] = None
        return list(members)

    def _orchestrators(self, procs: dict[int, Proc]) -> list[int]:
        if self.pidfile is not None:
            try:
                pid = read_pid(self.pidfile)
                self.pidfile_gate.succeeded()
            except (OSError, ValueError) as error:
                self.pidfile_gate.failed(error)
                return []
            return [pid] if pid in procs and not procs[pid].zombie else []
        assert self.orchestrator is not None
        return topmost((p for p, proc in procs.items() if self.orchestrator.match(proc)), procs)

    def _project(self, proc: Proc, scan: Scan) -> str:
        """Basename of the root's working directory, read once per session (labels stay put)."""
        cached = self._projects.get(proc.identity)
        if cached is not None:
            return cached
        try:
            cwd = self.table.cwd(proc.pid)
            self.cwd_gate.succeeded()
        except OSError as error:
            reason = "denied" if isinstance(error, PermissionError) else "vanished"
            self.errors[reason] += 1
            if reason == "denied":
                self.cwd_gate.failed(f"pid {proc.pid}: permission denied")
            return ""  # not cached: a later cycle may read it
        # A folder name is anyone's bytes: controls, quotes, invalid UTF-8 (the surrogates
        # os.readlink decodes it to), 255 bytes long. The label gets the escaped, capped form.
        project = label_value(os.fsencode(os.path.basename(cwd.rstrip("/")) or cwd))
        self._projects[proc.identity] = project
        return project

    def _panes(self, sample: Sample) -> dict[int, Pane]:
        if self.tmux is None:
            return {}
        panes = self.tmux.panes()
        sample.tmux_panes = len(panes)
        sample.tmux_failing = self.tmux.failing
        return panes

    @staticmethod
    def _pane_labels(root: int, procs: dict[int, Proc], panes: dict[int, Pane]) -> dict[str, str]:
        for pid in ancestors(root, procs):
            pane = panes.get(pid)
            if pane is not None:
                return {
                    "tmux_session": pane.session,
                    "tmux_window": pane.window,
                    "tmux_pane": pane.pane,
                }
        return {"tmux_session": "", "tmux_window": "", "tmux_pane": ""}
