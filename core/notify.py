"""sd_notify without a dependency: tell systemd we are ready, alive and stopping.

systemd (Type=notify) passes $NOTIFY_SOCKET; with WatchdogSec= it also passes $WATCHDOG_USEC
(and $WATCHDOG_PID) and restarts the service when no WATCHDOG=1 arrives within that time.
Callers ping from their real work loop, so a loop that is stuck stops the pings and gets
restarted. Everything is a no-op when the variables are unset (a shell, `agentwatch up`, tests).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # socket and socketserver when a message goes out or a server runs: a
    from socketserver import BaseServer  # `--once` cycle sends nothing (3 ms of its start)

log = logging.getLogger("agentwatch.notify")


def _address(value: str) -> str | bytes | None:
    """The socket address of $NOTIFY_SOCKET: a path, or an abstract name given as '@name'."""
    if value.startswith("@"):
        return b"\0" + value[1:].encode()
    if value.startswith("/"):
        return value
    return None  # vsock addresses and relative paths are not for us


def watchdog_interval(env: Mapping[str, str] | None = None) -> float | None:
    """Seconds after which systemd gives up on us, or None when the watchdog is off (or meant
    for another process, as sd_watchdog_enabled() decides)."""
    env = os.environ if env is None else env
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    if usec <= 0:
        return None
    pid = env.get("WATCHDOG_PID", "")
    if pid and pid != str(os.getpid()):
        return None
    return usec / 1_000_000


class Notifier:
    """Sends READY=1 once, WATCHDOG=1 at most every half watchdog period, STOPPING=1 at the end.

    A failing socket never breaks the caller: it is logged once and the notifier goes quiet.
    """

    def __init__(self, env: Mapping[str, str] | None = None):
        env = os.environ if env is None else env
        self.address = _address(env.get("NOTIFY_SOCKET", ""))
        self.watchdog = watchdog_interval(env) if self.address is not None else None
        self.ready_sent = False
        self._last_ping = time.monotonic()  # systemd starts the clock when READY=1 arrives
        self._broken = False

    @property
    def enabled(self) -> bool:
        return self.address is not None and not self._broken

    @property
    def ping_every(self) -> float | None:
        """How often the loop must reach a ping point; None when no watchdog is set."""
        return None if self.watchdog is None else self.watchdog / 2

    def next_ping_in(self) -> float | None:
        """Seconds until a ping is due (0 when overdue); None when no watchdog is set."""
        every = self.ping_every
        if every is None:
            return None
        return max(every - (time.monotonic() - self._last_ping), 0.0)

    def send(self, message: str) -> bool:
        if not self.enabled:
            return False
        import socket

        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.connect(self.address)  # type: ignore[arg-type]
                sock.sendall(message.encode())
        except OSError as err:
            self._broken = True
            log.warning("cannot notify systemd on %s: %s (notifications off)", self.address, err)
            return False
        return True

    def ready(self, status: str | None = None) -> None:
        """READY=1 the first time only; later calls are free."""
        if self.ready_sent:
            return
        self.ready_sent = True
        self._last_ping = time.monotonic()
        self.send("READY=1" + (f"\nSTATUS={status}" if status else ""))

    def due(self, early: float = 0.0) -> bool:
        """Whether a ping is due, or will be within `early` seconds."""
        ping_in = self.next_ping_in()
        return ping_in is not None and ping_in <= early

    def alive(self, early: float = 0.0) -> None:
        """WATCHDOG=1 when half the watchdog period has passed since the last one (or will
        have within `early` seconds: for loops that cannot wake exactly on time)."""
        if not self.due(early):
            return
        self._last_ping = time.monotonic()
        self.send("WATCHDOG=1")

    def stopping(self) -> None:
        self.send("STOPPING=1")


def serve_forever(server: BaseServer, notifier: Notifier, check: Callable[[], object]) -> None:
    """Run `server.serve_forever`, pinging the watchdog from its own loop.

    socketserver's loop calls `service_actions()` after every request and every poll timeout,
    so with a poll of half the watchdog period an idle server still pings; `check` is the cheap
    proof of health run before each ping (if it hangs, the pings stop). Without a watchdog
    the loop only wakes for requests and shutdown.
    """
    every = notifier.ping_every
    early = every / 2 if every is not None else 0.0  # polls come every `every`, not on time

    def service_actions() -> None:
        if notifier.due(early):
            check()
            notifier.alive(early)

    server.service_actions = service_actions  # type: ignore[method-assign]
    notifier.ready("serving")
    server.serve_forever(poll_interval=every if every is not None else 3600.0)


def list_dir(path: Path) -> None:
    """A health probe that blocks when the folder's file system hangs; errors are fine (a
    missing spool is reported on /metrics, it is no reason for a restart)."""
    with contextlib.suppress(OSError):
        os.listdir(path)


def stop_on_sigterm(notifier: Notifier) -> None:
    """SIGTERM ends a serving loop like Ctrl-C does, telling systemd we are stopping."""

    def handle(_signum: int, _frame: object) -> None:
        notifier.stopping()
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handle)
