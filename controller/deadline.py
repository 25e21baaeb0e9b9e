"""A deadline for a whole HTTP exchange — connect, head and body — not just for each recv.

requests' timeout restarts with every byte, so a server that trickles its status line or its
headers one byte a second holds a request (and the controller's cycle) for as long as it likes.
`Watch` is armed around one exchange: the connections of a session mounted with
`DeadlineAdapter` report their socket to the watch of their thread, and when the deadline
passes the watch shuts that socket down, which ends any blocked read at once. The body loop
in web.py also checks the deadline between reads; this covers what happens before it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

_current = threading.local()


class Watch:
    """Shuts the socket of this thread's exchange down once `seconds` have passed."""

    def __init__(self, seconds: float):
        self.timer = threading.Timer(max(seconds, 0.0), self._expire)
        self.timer.daemon = True
        self.lock = threading.Lock()
        self.sock: socket.socket | None = None
        self.expired = False

    def attach(self, sock: socket.socket | None) -> None:
        with self.lock:
            self.sock = sock
            if self.expired:
                self._shut()

    def _expire(self) -> None:
        with self.lock:
            self.expired = True
            self._shut()

    def _shut(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):  # already closed
                self.sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> Watch:
        _current.watch = self
        self.timer.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.timer.cancel()
        _current.watch = None


def _report(sock: socket.socket | None) -> None:
    watch = getattr(_current, "watch", None)
    if watch is not None and sock is not None:
        watch.attach(sock)


class _Reporting:
    """Tells the thread's watch which socket an exchange uses (new or kept alive)."""

    sock: socket.socket | None

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        _report(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _report(self.sock)
        super().request(*args, **kwargs)  # type: ignore[misc]


class _HTTPConnection(_Reporting, HTTPConnection):
    pass


class _HTTPSConnection(_Reporting, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


class DeadlineAdapter(HTTPAdapter):
    """requests' adapter whose connections report their socket to the thread's Watch."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}


def prepare(session: requests.Session) -> None:
    """Mount the DeadlineAdapter on `session` once (a no-op when already there)."""
    if not isinstance(session.get_adapter("http://"), DeadlineAdapter):
        session.mount("http://", DeadlineAdapter())
        session.mount("https://", DeadlineAdapter())
