"""Which processes are agents, and the process trees (sessions) they root.

A session is the tree under an agent CLI process that has no agent CLI above it: an agent
started by another agent (directly or through a shell) is part of the outer session, so no
CPU second or byte is counted in two sessions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from agentwatch.sentinels.shared.proctable import Proc

COMM_MAX = 15  # the kernel truncates a process name (comm) to 15 bytes
MAX_DEPTH = 512  # guards the ancestor walk against a ppid loop read across a racing scan


class Matcher:
    """Matches a process by its name (comm), argv[0] basename, or the script an interpreter runs
    (`node …/bin/codex`, `python -m aider`) — never by substrings of the command line, so a
    path like `~/.claude/…` or `grep claude` is not an agent."""

    def __init__(self, names: Iterable[str]):
        self.names = set(names)
        self.comms = {name[:COMM_MAX]: name for name in self.names}

    def match(self, proc: Proc) -> str | None:
        if proc.zombie:
            return None
        if proc.comm in self.comms:
            return self.comms[proc.comm]
        if proc.args.argv0 in self.names:
            return proc.args.argv0
        if proc.args.script in self.names:
            return proc.args.script
        return None


def children_map(procs: dict[int, Proc]) -> dict[int, list[int]]:
    """parent pid -> child pids, built once per scan (instead of asking each process)."""
    children: dict[int, list[int]] = {}
    for proc in procs.values():
        if proc.ppid != proc.pid:
            children.setdefault(proc.ppid, []).append(proc.pid)
    return children


def ancestors(pid: int, procs: dict[int, Proc]) -> Iterator[int]:
    """The pid itself, then its parent, grandparent, … as far as the scan knows them."""
    seen = 0
    while pid in procs and seen < MAX_DEPTH:
        yield pid
        parent = procs[pid].ppid
        if parent == pid:
            return
        pid, seen = parent, seen + 1


def topmost(candidates: Iterable[int], procs: dict[int, Proc]) -> list[int]:
    """The candidates with no other candidate above them."""
    chosen = set(candidates)
    roots = []
    for pid in chosen:
        above = ancestors(pid, procs)
        next(above, None)
        if not any(parent in chosen for parent in above):
            roots.append(pid)
    return sorted(roots)


def subtree(root: int, children: dict[int, list[int]]) -> list[int]:
    """The root and all its descendants."""
    members, stack, seen = [], [root], {root}
    while stack:
        pid = stack.pop()
        members.append(pid)
        for child in children.get(pid, ()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return members
