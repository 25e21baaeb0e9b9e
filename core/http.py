"""The base of every agentwatch HTTP listener: address parsing, the server, the handler.

The exporter, the controller's /throttle, the demo orchestrator and the webhook sink all bind
through `make_server` and answer through `Handler.send`, so TLS, basic auth, timeouts, IPv6
and quiet logging behave the same everywhere. Listeners bind 127.0.0.1 unless configured.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import logging
import queue
import selectors
import socket
import ssl
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import BaseServer, TCPServer
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from agentwatch.core import lazy_prometheus
from agentwatch.core.listen import parse_listen

if TYPE_CHECKING:
    from agentwatch.core.webconfig import Authenticator

log = logging.getLogger("agentwatch.http")

HEADER_DEADLINE = 10.0  # the whole request head (and TLS handshake), however it trickles
REQUEST_TIMEOUT = 10.0  # each read or write once a worker has the request
MAX_HEAD_BYTES = 32 * 1024  # a request line and headers; Prometheus sends a few hundred
WORKERS = 8  # threads answering complete requests
MAX_CONNECTIONS = 512  # open at once (reading a head, queued or answered); below RLIMIT_NOFILE
BACKLOG = 1024  # the kernel's queue of connections not accepted yet (capped by somaxconn)
EPISODE_GAP = 60.0  # a fault class is logged again only after this long without one
REALM = "agentwatch"


class ConnectionStats:
    """What a listener counts about its clients, for a caller that serves it as metrics."""

    DROP_REASONS = ("header_timeout", "header_too_large", "overloaded", "stalled", "tls_handshake")
    AUTH_REASONS = ("missing", "rate_limited", "wrong")  # webconfig's verdicts but OK

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.dropped: dict[str, int] = dict.fromkeys(self.DROP_REASONS, 0)
        self.auth_failures: dict[str, int] = dict.fromkeys(self.AUTH_REASONS, 0)
        self.disconnects = 0

    def auth_failed(self, reason: str) -> None:
        with self._lock:
            self.auth_failures[reason] += 1

    def drop(self, reason: str) -> None:
        with self._lock:
            self.dropped[reason] += 1

    def disconnect(self) -> None:
        with self._lock:
            self.disconnects += 1


class QuietLog:
    """Logs the first event of an episode, then nothing more until `gap` seconds pass
    without one: a slow-client run is one line, not a thousand tracebacks."""

    def __init__(self, logger: logging.Logger, gap: float = EPISODE_GAP):
        self.logger = logger
        self.gap = gap
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def event(self, kind: str, message: str, *args: object, exc_info: bool = False) -> bool:
        now = time.monotonic()
        with self._lock:
            last = self._last.get(kind)
            self._last[kind] = now
        if last is not None and now - last <= self.gap:
            return False
        self.logger.warning(message, *args, exc_info=exc_info)
        return True


class _Replay(io.RawIOBase):
    """A socket's byte stream with the request head the intake already read put back."""

    def __init__(self, sock: socket.socket, head: bytes):
        self._sock = sock
        self._head = memoryview(head)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            count = min(len(buffer), len(self._head))
            buffer[:count] = self._head[:count]
            self._head = self._head[count:]
            return count
        return self._sock.recv_into(buffer)


class _Connection:
    """A socket as the handler sees it: reads replay the head first, the rest is the socket."""

    def __init__(self, sock: socket.socket, head: bytes):
        self._sock = sock
        self._head = head

    def makefile(self, mode: str = "r", buffering: int | None = None, **kwargs: Any) -> Any:
        if "r" in mode:
            size = buffering if buffering and buffering > 0 else io.DEFAULT_BUFFER_SIZE
            return io.BufferedReader(_Replay(self._sock, self._head), size)
        return self._sock.makefile(mode, buffering, **kwargs)  # type: ignore[call-overload]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


@dataclass
class _Pending:
    """A connection whose request head is still arriving."""

    sock: socket.socket
    address: Any
    deadline: float
    handshaking: bool
    head: bytearray = field(default_factory=bytearray)


class _Intake(threading.Thread):
    """Reads request heads on non-blocking sockets, many at once in one thread, each under
    a total deadline; a complete head goes to the worker queue. A client that trickles a
    header line every few seconds costs a descriptor and a small buffer here, never a
    worker, and is cut off when its deadline passes however often it sends."""

    def __init__(self, server: Server):
        super().__init__(name="http-intake", daemon=True)
        self.server = server
        self.selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self.selector.register(self._wake_read, selectors.EVENT_READ)
        self.selector.register(server.socket, selectors.EVENT_READ)
        self._incoming: deque[tuple[socket.socket, Any]] = deque()
        self._pending: dict[int, _Pending] = {}
        self._stopping = False

    def add(self, sock: socket.socket, address: Any) -> None:
        self._incoming.append((sock, address))
        self._wake()

    def stop(self) -> None:
        self._stopping = True
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # full: a wake-up is already pending
            self._wake_write.send(b"x")

    def run(self) -> None:
        try:
            while not self._stopping:
                timeout = None
                if self._pending:
                    first = min(item.deadline for item in self._pending.values())
                    timeout = max(first - time.monotonic(), 0.0)
                for key, _ in self.selector.select(timeout):
                    if key.fileobj is self._wake_read:
                        with contextlib.suppress(OSError):
                            self._wake_read.recv(4096)
                    elif key.fileobj is self.server.socket:
                        self._accept()
                    else:
                        self._advance(key.data)
                self._take_incoming()
                self._expire()
        finally:
            for item in list(self._pending.values()):
                self._close(item)
            self.selector.close()
            self._wake_read.close()
            self._wake_write.close()

    def _accept(self) -> None:
        for _ in range(64):  # a burst, then the heads already in flight get their turn
            try:
                sock, address = self.server.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as err:  # EMFILE and the like: the backlog keeps them
                self.server.quiet.event("accept", "cannot accept connections: %s", err)
                return
            self.server.process_request(sock, address)

    def _take_incoming(self) -> None:
        while self._incoming:
            sock, address = self._incoming.popleft()
            handshaking = self.server.tls_context is not None
            try:
                sock.setblocking(False)
                if self.server.tls_context is not None:
                    sock = self.server.tls_context.wrap_socket(
                        sock, server_side=True, do_handshake_on_connect=False
                    )
            except OSError:  # ssl.SSLError is one
                self.server.stats.drop("tls_handshake")
                self.server.close_connection(sock)
                continue
            deadline = time.monotonic() + self.server.header_deadline
            item = _Pending(sock, address, deadline, handshaking)
            self._pending[sock.fileno()] = item
            self.selector.register(sock, selectors.EVENT_READ, item)
            self._advance(item)  # the head may be there already

    def _advance(self, item: _Pending) -> None:
        try:
            if item.handshaking:
                item.sock.do_handshake()  # type: ignore[attr-defined]
                item.handshaking = False
            while True:
                chunk = item.sock.recv(MAX_HEAD_BYTES)
                if not chunk:  # the client went away before sending a request
                    self._close(item)
                    return
                item.head += chunk
                if b"\n\r\n" in item.head or b"\n\n" in item.head:
                    self._hand_over(item)
                    return
                if len(item.head) > MAX_HEAD_BYTES:
                    self.server.stats.drop("header_too_large")
                    self.server.quiet.event(
                        "header_too_large", "a client sent a request head over %d bytes; "
                        "dropped (agentwatch_exporter_connections_dropped_total)", MAX_HEAD_BYTES,
                    )  # fmt: skip
                    self._close(item)
                    return
        except BlockingIOError:
            pass
        except OSError as err:  # ssl.SSLError is one
            wants = _tls_wants(err)
            if wants is not None:
                self.selector.modify(item.sock, wants, item)
                return
            if item.handshaking:
                self.server.stats.drop("tls_handshake")
                log.debug("TLS handshake with %s failed: %s", item.address[0], err)
            self._close(item)

    def _hand_over(self, item: _Pending) -> None:
        self._forget(item)
        try:
            item.sock.settimeout(REQUEST_TIMEOUT)  # blocking again, for the worker
        except OSError:
            self.server.close_connection(item.sock)
            return
        self.server.jobs.put((item.sock, item.address, bytes(item.head)))

    def _expire(self) -> None:
        now = time.monotonic()
        for item in [p for p in self._pending.values() if p.deadline <= now]:
            self.server.stats.drop("header_timeout")
            self.server.quiet.event(
                "header_timeout", "a client did not send its request within %.0f s; dropped "
                "(agentwatch_exporter_connections_dropped_total)", self.server.header_deadline,
            )  # fmt: skip
            self._close(item)

    def _forget(self, item: _Pending) -> None:
        self._pending.pop(item.sock.fileno(), None)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(item.sock)

    def _close(self, item: _Pending) -> None:
        self._forget(item)
        self.server.close_connection(item.sock)


class ListenError(OSError):
    """A listener that cannot bind, said in one line: `127.0.0.1:9847 is already in use`."""

    def __init__(self, address: tuple[str, int], cause: OSError):
        host, port = address[0], address[1]
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if cause.errno == errno.EADDRINUSE:
            message = f"{where} is already in use (stop what listens there or choose another port)"
        else:
            message = f"cannot listen on {where}: {cause.strerror or cause}"
        super().__init__(cause.errno, message)
        self.where = where

    def __str__(self) -> str:
        return str(self.strerror)


# A client gone before its answer was written: its problem, not a traceback of ours.
DISCONNECTS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


def _loaded_ssl() -> ModuleType | None:
    """ssl once something loaded it (a TLS context). A listener without TLS never does: the
    entry defers it (core/lazy_prometheus.py, 1.3 MiB of private memory), and without a
    context no TLS error can be raised, so none is looked for."""
    module = sys.modules.get("ssl")
    return module if module is not None and lazy_prometheus.is_loaded(module) else None


def _tls_wants(err: OSError) -> int | None:
    """The selector event a non-blocking TLS socket waits for, None for a real error."""
    module = _loaded_ssl()
    if module is not None and isinstance(err, module.SSLWantReadError):
        return selectors.EVENT_READ
    if module is not None and isinstance(err, module.SSLWantWriteError):
        return selectors.EVENT_WRITE
    return None


def disconnects() -> tuple[type[BaseException], ...]:
    """DISCONNECTS, and TLS's EOF when ssl is loaded."""
    module = _loaded_ssl()
    return DISCONNECTS if module is None else (*DISCONNECTS, module.SSLEOFError)


class Server(HTTPServer):
    """An HTTP server with a fixed number of threads, whatever the clients do.

    One intake thread accepts connections and reads every request head (and does the TLS
    handshake) without blocking, under a total deadline; `workers` threads answer complete
    requests; at most
    `max_connections` are open at once (more are closed, counted as `overloaded`) and the
    kernel's listen backlog holds the ones not accepted yet. So slow or silent clients
    cannot exhaust a unit's TasksMax or hold up a scrape. IPv4 or IPv6 by the host given."""

    request_queue_size = BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        context: ssl.SSLContext | None = None,
        stats: ConnectionStats | None = None,
        workers: int = WORKERS,
        max_connections: int = MAX_CONNECTIONS,
        header_deadline: float = HEADER_DEADLINE,
    ):
        self.tls_context = context
        self.header_deadline = header_deadline
        self.stats = stats if stats is not None else ConnectionStats()
        self.quiet = QuietLog(log)
        self.max_connections = max_connections
        self.jobs: queue.SimpleQueue[tuple[socket.socket, Any, bytes] | None] = queue.SimpleQueue()
        self._open = 0
        self._open_lock = threading.Lock()
        self._intake: _Intake | None = None  # server_close() runs when the bind fails too
        self._workers: list[threading.Thread] = []
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        try:
            super().__init__(address, handler)
        except OSError as err:
            raise ListenError(address, err) from None
        self.socket.setblocking(False)  # accepted in the intake's loop
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        self._answered = threading.Condition()
        self._answered_count = 0
        intake = self._intake = _Intake(self)
        self._workers = [
            threading.Thread(target=self._work, name=f"http-worker-{n}", daemon=True)
            for n in range(workers)
        ]
        for thread in self._workers:  # all of them before the first connection is taken
            thread.start()
        intake.start()

    @property
    def scheme(self) -> str:
        return "https" if self.tls_context is not None else "http"

    def server_bind(self) -> None:
        # HTTPServer's looks the host's FQDN up (DNS, seconds when offline); no handler of
        # ours uses it.
        TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Serve until `shutdown()`: the intake accepts and the workers answer, so this loop
        only runs `service_actions()` (the watchdog ping) every `poll_interval`; with the
        do-nothing one socketserver has, it only waits (an idle listener wakes nobody)."""
        self._stopped.clear()
        self._stop.clear()
        idle = (
            "service_actions" not in self.__dict__
            and type(self).service_actions is BaseServer.service_actions
        )
        try:
            if idle:
                self._stop.wait()
            while not self._stop.wait(poll_interval):
                self.service_actions()
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        self._stop.set()
        self._stopped.wait()

    def handle_request(self) -> None:
        """Wait until one more request has been answered (the intake accepts on its own)."""
        with self._answered:
            target = self._answered_count + 1
            self._answered.wait_for(lambda: self._answered_count >= target, self.timeout)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            full = self._open >= self.max_connections
            if not full:
                self._open += 1
        if full:
            self.stats.drop("overloaded")
            self.quiet.event(
                "overloaded", "%d connections open; new ones are closed until some finish "
                "(agentwatch_exporter_connections_dropped_total)", self.max_connections,
            )  # fmt: skip
            TCPServer.shutdown_request(self, request)
            return
        if self._intake is not None:  # always: only the intake accepts
            self._intake.add(request, client_address)

    def close_connection(self, sock: socket.socket) -> None:
        """Close a connection this server accepted (exactly once per accepted one)."""
        with self._open_lock:
            self._open -= 1
        TCPServer.shutdown_request(self, sock)

    def shutdown_request(self, request: Any) -> None:
        pass  # the intake or a worker closes each connection when it is done with it

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            sock, address, head = job
            try:
                self.RequestHandlerClass(_Connection(sock, head), address, self)  # type: ignore[arg-type]
            except disconnects():
                self.stats.disconnect()
                self.quiet.event(
                    "disconnect", "a client disconnected before its answer was sent "
                    "(counted in agentwatch_exporter_client_disconnects_total; more are not "
                    "logged until %.0f s pass without one)", EPISODE_GAP,
                )  # fmt: skip
            except TimeoutError:  # a client that stopped reading, or sending its body
                self.stats.drop("stalled")
                self.quiet.event(
                    "stalled", "a client stalled for %.0f s mid-request; dropped "
                    "(agentwatch_exporter_connections_dropped_total)", REQUEST_TIMEOUT,
                )  # fmt: skip
            except Exception:
                self.quiet.event(
                    "error", "answering %s failed", address[0] if address else "?",
                    exc_info=True,
                )  # fmt: skip
            finally:
                self.close_connection(sock)
                with self._answered:
                    self._answered_count += 1
                    self._answered.notify_all()

    def server_close(self) -> None:
        intake = self._intake
        if intake is not None:
            intake.stop()
            if intake.is_alive() and intake is not threading.current_thread():
                intake.join(timeout=5)
        for _ in self._workers:
            self.jobs.put(None)
        super().server_close()


def make_server(
    listen: str,
    handler: type[BaseHTTPRequestHandler],
    context: ssl.SSLContext | None = None,
    stats: ConnectionStats | None = None,
) -> Server:
    """Bind `HOST:PORT` (ValueError for a bad address, ListenError, an OSError whose
    message is the one line to log, when it cannot bind)."""
    return Server(parse_listen(listen, any_port=True), handler, context, stats)


class Handler(BaseHTTPRequestHandler):
    """What every agentwatch handler shares: one way to answer, optional basic auth, and
    request logging at debug level only (a scrape every 15 s is not news)."""

    auth: Authenticator | None = None  # set by a subclass to require basic auth
    logger: logging.Logger = log
    extra_headers: ClassVar[Mapping[str, str]] = {}

    def send(
        self, status: int, content_type: str, body: bytes, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in {**self.extra_headers, **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def send_text(self, status: int, text: str) -> None:
        self.send(status, "text/plain; charset=utf-8", text.encode("utf-8"))

    def send_json(self, status: int, payload: Any) -> None:
        self.send(status, "application/json", json.dumps(payload).encode() + b"\n")

    def authorized(self) -> bool:
        """True when the request may proceed; otherwise a 401 (or, for a client that failed
        too often lately, a 429) has been sent, counted and logged once per episode."""
        if self.auth is None:
            return True
        client = str(self.client_address[0]) if self.client_address else ""
        verdict = self.auth.verdict(self.headers.get("Authorization"), client)
        if verdict == "ok":
            return True
        server: Any = self.server
        if isinstance(server, Server):
            server.stats.auth_failed(verdict)
            if verdict != "missing":  # a browser asks without credentials first: no news
                server.quiet.event(
                    f"auth_{verdict}", "basic auth refused a client (%s; counted in "
                    "agentwatch_exporter_auth_failures_total; more are not logged until %.0f s "
                    "pass without one)", verdict.replace("_", " "), EPISODE_GAP,
                )  # fmt: skip
        if verdict == "rate_limited":
            retry = {"Retry-After": f"{self.auth.limit.refill:.0f}"}
            self.send(429, "text/plain; charset=utf-8", b"429 Too Many Requests\n", retry)
            return False
        self.send(
            401,
            "text/plain; charset=utf-8",
            b"401 Unauthorized\n",
            {"WWW-Authenticate": f'Basic realm="{REALM}"'},
        )
        return False

    def log_message(self, format: str, *args: object) -> None:
        if self.logger.isEnabledFor(logging.DEBUG):  # every request comes here
            self.logger.debug("%s %s", self.address_string(), format % args)
