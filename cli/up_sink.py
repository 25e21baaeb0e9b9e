"""The stack's webhook sink served by `up` itself, between its supervision rounds.

Why: as a child of its own the sink cost the kit a whole process (about 8 MiB of PSS) to
receive a few small POSTs from the local Alertmanager. A thread in `up` would make `up`'s
later forks unsafe (cli/forked.py forks only with one thread), so `up` stays single-threaded:
its loop waits on the sink's socket instead of sleeping, and answers each connection itself
within a total deadline, so a client that trickles or stalls delays the supervision by at
most that long. What is received is handled as `python -m agentwatch.demo.webhook_sink`
handles it (printed, appended to the alert log)."""

from __future__ import annotations

import contextlib
import selectors
import socket
import time
from pathlib import Path

from agentwatch.core.listen import parse_listen
from agentwatch.demo import webhook_sink

DEADLINE = 2.0  # the whole request, from accept to the last byte of the body
MAX_HEAD = 32 * 1024
REASONS = {200: "OK", 400: "Bad Request", 405: "Method Not Allowed", 408: "Request Timeout"}


class Sink:
    """A listening socket on `listen` and the alert log `out`; `wait` serves it."""

    def __init__(self, listen: str, out: Path):
        out.parent.mkdir(parents=True, exist_ok=True)
        host, port = parse_listen(listen, any_port=True)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(16)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self.sock, self.out = sock, out
        self.selector = selectors.DefaultSelector()
        self.selector.register(sock, selectors.EVENT_READ)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.sock.getsockname()[:2]
        return str(host), int(port)

    def wait(self, timeout: float) -> None:
        """Sleep up to `timeout` seconds, answering the connections that arrive meanwhile:
        it returns within `timeout` + DEADLINE however many clients keep calling."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            if not self.selector.select(left):
                return
            while time.monotonic() < end:  # the connections waiting now, while time is left
                try:
                    conn, _ = self.sock.accept()
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:  # out of descriptors and the like: the next round retries
                    return
                with conn:
                    self.answer(conn)

    def answer(self, conn: socket.socket) -> None:
        deadline = time.monotonic() + DEADLINE
        try:
            code, text = self._handle(conn, deadline)
        except TimeoutError:
            code, text = 408, "the request took too long\n"
        except OSError:  # the client went away
            return
        body = text.encode()
        head = (f"HTTP/1.1 {code} {REASONS[code]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")  # fmt: skip
        with contextlib.suppress(OSError):
            conn.settimeout(max(0.05, deadline - time.monotonic()))
            conn.sendall(head.encode() + body)

    def _handle(self, conn: socket.socket, deadline: float) -> tuple[int, str]:
        data = b""
        while b"\r\n\r\n" not in data:
            if len(data) > MAX_HEAD:
                return 400, "request head too long\n"
            data += _recv(conn, deadline)
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method = lines[0].split(" ", 1)[0]
        if method == "GET":
            return 200, webhook_sink.GREETING
        if method != "POST":
            return 405, "GET or POST\n"
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    return 400, "bad Content-Length\n"
        if not 0 < length <= webhook_sink.MAX_BODY:
            return 400, "expected a JSON body up to 1 MiB\n"
        while len(body) < length:
            body += _recv(conn, deadline)
        return webhook_sink.receive(body[:length], self.out)

    def close(self) -> None:
        self.selector.close()
        self.sock.close()


def _recv(conn: socket.socket, deadline: float) -> bytes:
    """The next bytes, waiting no later than `deadline`; TimeoutError after it."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    conn.settimeout(left)
    chunk = conn.recv(65536)
    if not chunk:
        raise ConnectionResetError("closed mid-request")
    return chunk
