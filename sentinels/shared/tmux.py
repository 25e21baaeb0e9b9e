"""Which tmux pane each process runs in: `tmux list-panes -a` on each server we know of.

Session names are anyone's text (older tmux versions pass control characters through raw), so
every field becomes a label value here, where it is read, and the listing is split on `\n`
only: a `\r` or form feed inside a name cannot cut a line in two.
"""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass

from agentwatch.core.log import FailureGate
from agentwatch.core.sanitize import label_value, mask_urls

log = logging.getLogger("agentwatch.resources")

# session_name last: it is the one field that may contain a tab.
FORMAT = "#{pane_pid}\t#{window_index}\t#{pane_id}\t#{session_name}"
# A server that is not running (no socket, or a stale one) just has no panes.
NOT_RUNNING = ("no server running", "error connecting to", "no sessions")


def run_tmux(
    binary: str, server: str | None, args: list[str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """One tmux command (argv, never a shell) on the default server or the socket `server`;
    output as text with undecodable bytes replaced."""
    return subprocess.run(
        [binary, *(["-S", server] if server else []), *args],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@dataclass(frozen=True)
class Pane:
    """A tmux pane's session, window and pane id."""

    session: str
    window: str
    pane: str


class Tmux:
    """Lists panes on the default server and each configured socket; failures are gated."""

    def __init__(self, sockets: list[str], timeout: float = 2.0, binary: str = "tmux"):
        self.servers: list[str | None] = [None, *sockets]
        self.timeout = timeout
        self.binary = binary
        self.gates = {
            server: FailureGate(log, f"tmux list-panes ({server or 'default server'})")
            for server in self.servers
        }
        self.missing_logged = False
        self.failing = 0  # servers whose last query failed (not: servers that are not running)

    def listing(self) -> list[tuple[str | None, int, Pane]]:
        """(server, pane_pid, pane) over all servers; server None is the default one."""
        found: list[tuple[str | None, int, Pane]] = []
        self.failing = 0
        for server in self.servers:
            try:
                panes = self._list(server)
                self.gates[server].succeeded()
            except FileNotFoundError:
                if not self.missing_logged:
                    log.info("%s not found: no tmux panes are seen", self.binary)
                    self.missing_logged = True
                return found
            except (OSError, subprocess.SubprocessError, RuntimeError) as error:
                self.failing += 1
                self.gates[server].failed(error)
                continue
            found.extend((server, pid, pane) for pid, pane in sorted(panes.items()))
        return found

    def panes(self) -> dict[int, Pane]:
        """pane_pid -> pane, over all servers."""
        return {pid: pane for _, pid, pane in self.listing()}

    def _list(self, server: str | None) -> dict[int, Pane]:
        result = run_tmux(self.binary, server, ["list-panes", "-a", "-F", FORMAT], self.timeout)
        if result.returncode != 0:
            message = result.stderr.strip()
            if any(text in message for text in NOT_RUNNING):
                return {}
            raise RuntimeError(f"exit {result.returncode}: {error_line(message)}")
        panes: dict[int, Pane] = {}
        for line in result.stdout.split("\n"):
            parts = line.split("\t", 3)
            if len(parts) == 4 and parts[0].isdigit():
                session, window, pane = (label_value(parts[i]) for i in (3, 1, 2))
                panes[int(parts[0])] = Pane(session=session, window=window, pane=pane)
        return panes


def error_line(message: str, limit: int = 200) -> str:
    """tmux's error text as one log-safe line: controls escaped, URLs masked, length capped."""
    return mask_urls(label_value(message, limit=limit))
