"""Which tmux panes run an agent, and their live tail.

Panes come from `tmux list-panes -a` on the default server and each configured socket (the
resources sentinel's lister, kept per server here because capture-pane must ask the server
the pane lives on). A pane is an agent pane when its process tree (pane_pid and descendants,
read from /proc) holds a process named like a configured agent CLI.
"""

from __future__ import annotations

import logging
import subprocess
from collections import Counter
from dataclasses import dataclass

from agentwatch.core.log import FailureGate
from agentwatch.core.sanitize import label_value
from agentwatch.sentinels.shared.proctable import ProcTable, default_table
from agentwatch.sentinels.shared.tmux import Tmux, error_line, run_tmux
from agentwatch.sentinels.shared.trees import Matcher, children_map, subtree, topmost

log = logging.getLogger("agentwatch.idle_error")

CAPTURE_TIMEOUT = 5.0
CAPTURE_ERROR_REASONS = ("timeout", "failed", "vanished", "duplicate_pane", "proc_scan")
# What tmux says when the pane closed between listing and capturing it.
GONE = ("can't find pane", "can't find window", "can't find session", "no server running")


@dataclass(frozen=True)
class AgentPane:
    """A tmux pane that runs an agent."""

    server: str | None  # None: the default server
    session: str
    pane: str  # tmux pane id, e.g. %3
    pane_pid: int
    agent: str

    @property
    def key(self) -> str:
        """Identity for the per-pane memory: pane ids restart at %0 with a new server."""
        return f"{self.server or ''}|{self.pane}|{self.pane_pid}"

    @property
    def labels(self) -> tuple[str, str, str]:
        return (self.session, self.pane, self.agent)


class PaneFinder:
    """Finds the agent panes of every server; one /proc scan per cycle, only when panes exist."""

    def __init__(
        self,
        sockets: list[str],
        agent_names: list[str],
        table: ProcTable | None = None,
        binary: str = "tmux",
    ):
        self.tmux = Tmux(sockets, binary=binary)
        self.matcher = Matcher(agent_names)
        self.table = table or default_table()

    def find(self) -> tuple[list[AgentPane], int]:
        """(agent panes, label collisions skipped)."""
        listed = self.tmux.listing()
        if not listed:
            return [], 0
        procs = self.table.scan().procs
        children = children_map(procs)
        found: list[AgentPane] = []
        seen: set[tuple[str, str]] = set()
        seen_pids: set[int] = set()
        duplicates = 0
        for server, pane_pid, pane in listed:
            if pane_pid not in procs or pane_pid in seen_pids:  # a server listed twice
                continue
            seen_pids.add(pane_pid)
            members = subtree(pane_pid, children)
            matched = {pid: name for pid in members if (name := self.matcher.match(procs[pid]))}
            if not matched:
                continue
            if (pane.session, pane.pane) in seen:  # same session name and pane id on two servers
                duplicates += 1
                continue
            seen.add((pane.session, pane.pane))
            agent = label_value(matched[topmost(matched, procs)[0]])
            found.append(AgentPane(server, pane.session, pane.pane, pane_pid, agent))
        return found, duplicates


class Capturer:
    """`tmux capture-pane` of one pane's tail; errors are counted by reason and gated."""

    def __init__(self, rows: int, binary: str = "tmux", timeout: float = CAPTURE_TIMEOUT):
        self.rows = rows
        self.binary = binary
        self.timeout = timeout
        self.errors: Counter[str] = Counter()
        self.gate = FailureGate(log, "tmux capture-pane")

    def capture(self, pane: AgentPane) -> str | None:
        args = [
            "capture-pane",
            "-p",  # to stdout
            "-J",  # join lines tmux wrapped, so a long error line stays one line
            "-t",
            pane.pane,
            "-S",
            f"-{self.rows}",
        ]
        try:
            result = run_tmux(self.binary, pane.server, args, self.timeout)
        except subprocess.TimeoutExpired:
            self.errors["timeout"] += 1
            self.gate.failed(f"timed out after {self.timeout:.0f} s")
            return None
        except OSError as error:
            self.errors["failed"] += 1
            self.gate.failed(error)
            return None
        if result.returncode != 0:
            message = result.stderr.strip()
            if any(text in message for text in GONE):
                self.errors["vanished"] += 1  # closed since listing: a race, not a failure
                return None
            self.errors["failed"] += 1
            self.gate.failed(f"exit {result.returncode}: {error_line(message)}")
            return None
        self.gate.succeeded()
        return result.stdout
