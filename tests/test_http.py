"""The HTTP base every listener shares: HOST:PORT parsing (IPv6 included) and a real bind."""

from __future__ import annotations

import threading
import time
import urllib.request
from pathlib import Path

import pytest

from agentwatch.core.http import Handler, make_server, parse_listen
from tests.conftest import free_port


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("127.0.0.1:9847", ("127.0.0.1", 9847)),
        ("localhost:1", ("localhost", 1)),
        ("[::1]:9847", ("::1", 9847)),
        ("[fe80::1%eth0]:80", ("fe80::1%eth0", 80)),
        (" 0.0.0.0:65535 ", ("0.0.0.0", 65535)),
    ],
)
def test_listen_addresses_are_parsed(text: str, parsed: tuple[str, int]) -> None:
    assert parse_listen(text) == parsed


@pytest.mark.parametrize(
    "text", ["9847", ":9847", "host:", "host:0", "host:65536", "host:x", "::1:9847", "[::1]"]
)
def test_bad_listen_addresses_say_the_expected_form(text: str) -> None:
    with pytest.raises(ValueError, match=r"HOST:PORT, e\.g\. 127\.0\.0\.1:9847 or \[::1\]:9847"):
        parse_listen(text)


def test_port_zero_only_where_the_kernel_may_pick() -> None:
    assert parse_listen("127.0.0.1:0", any_port=True) == ("127.0.0.1", 0)


def test_a_listener_binds_ipv6_loopback() -> None:
    class Hello(Handler):
        def do_GET(self) -> None:
            self.send_text(200, "hello\n")

    port = free_port()
    server = make_server(f"[::1]:{port}", Hello)
    try:
        threading.Thread(target=server.handle_request, daemon=True).start()
        with urllib.request.urlopen(f"http://[::1]:{port}/", timeout=5) as reply:
            assert reply.read() == b"hello\n"
            assert reply.headers["Content-Type"] == "text/plain; charset=utf-8"
    finally:
        server.server_close()


def _switches(thread: threading.Thread) -> int:
    """How many times the kernel has put this thread to sleep and woken it (Linux)."""
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines()
                    if line.startswith("voluntary_ctxt_switches")))  # fmt: skip


@pytest.mark.parametrize("with_actions", [False, True])
def test_serve_forever_wakes_only_for_its_service_actions(with_actions: bool) -> None:
    """The loop a listener's thread runs (the otel receiver's, the controller's /throttle)
    sleeps until shutdown when it has nothing to do between requests: no wake-ups twice a
    second at rest; with service actions (the exporter's watchdog) it runs them each poll."""
    server = make_server("127.0.0.1:0", Handler)
    ran: list[float] = []
    if with_actions:
        server.service_actions = lambda: ran.append(time.monotonic())  # type: ignore[method-assign]
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True)
    try:
        thread.start()
        time.sleep(0.2)  # into its wait
        before = _switches(thread)
        time.sleep(1.0)
        woke = _switches(thread) - before
        if with_actions:
            assert len(ran) >= 3 and woke >= 3
        else:
            assert woke == 0 and not ran
    finally:
        server.shutdown()
        thread.join(10)
        server.server_close()
    assert not thread.is_alive()
