"""sd_notify READY/WATCHDOG/STOPPING: the Notifier, the Runner's loop pings, and real components
run with $NOTIFY_SOCKET pointed at a datagram socket the test reads.

The stuck-loop case uses the controller against an Alertmanager that accepts the request and
then stalls (a real network hang, bounded only by controller.timeout): the work loop is blocked
in its HTTP read, so the pings must stop for that long, then resume.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentwatch.core import notify
from agentwatch.core.loop import Loop
from agentwatch.core.notify import Notifier
from tests.conftest import CLI, free_port, local_config

WATCHDOG_USEC = "1000000"  # 1 s: pings due every 0.5 s


class Listener:
    """The systemd side: an AF_UNIX datagram socket collecting (time, message) pairs."""

    def __init__(self, path: Path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.1)
        self.messages: list[tuple[float, str]] = []

    def collect(self, seconds: float) -> list[tuple[float, str]]:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            self.messages.append((time.monotonic(), data.decode()))
        return self.messages

    def wait_for(self, text: str, seconds: float) -> float:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for at, message in self.messages:
                if text in message.splitlines():
                    return at
            self.collect(0.1)
        raise AssertionError(f"no {text} within {seconds} s; got {self.messages}")

    def pings(self, since: float = 0.0) -> list[float]:
        return [at for at, message in self.messages if message == "WATCHDOG=1" and at >= since]


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[Listener]:
    # AF_UNIX paths are limited to 108 bytes: pytest's tmp_path can be longer.
    short = Path(os.environ.get("TMPDIR", "/tmp")) / f"aw-notify-{os.getpid()}-{time.time_ns()}"
    found = Listener(short)
    yield found
    found.sock.close()
    short.unlink(missing_ok=True)


def env_for(listener: Listener, **extra: str) -> dict[str, str]:
    return {"NOTIFY_SOCKET": str(listener.path), "WATCHDOG_USEC": WATCHDOG_USEC, **extra}


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(times)]


# --- the Notifier on its own -------------------------------------------------------------


def test_unset_socket_is_a_no_op() -> None:
    notifier = Notifier({})
    assert not notifier.enabled
    assert notifier.ping_every is None
    notifier.ready()
    notifier.alive()
    assert notifier.send("READY=1") is False


def test_ready_once_watchdog_rate_limited_and_stopping(listener: Listener) -> None:
    notifier = Notifier(env_for(listener))
    assert notifier.ping_every == pytest.approx(0.5)
    notifier.ready("up")
    notifier.ready("again")
    notifier.alive()  # right after READY: not due yet
    time.sleep(0.55)
    notifier.alive()
    notifier.alive()  # due only once
    notifier.stopping()
    messages = [message for _, message in listener.collect(0.3)]
    assert messages == ["READY=1\nSTATUS=up", "WATCHDOG=1", "STOPPING=1"]


def test_abstract_socket_with_at_sign() -> None:
    name = f"aw-notify-test-{os.getpid()}-{time.time_ns()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(b"\0" + name.encode())
        server.settimeout(2)
        Notifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert server.recv(100) == b"READY=1"


def test_watchdog_pid_of_another_process_disables_the_watchdog(listener: Listener) -> None:
    assert notify.watchdog_interval({"WATCHDOG_USEC": "2000000"}) == 2.0
    assert notify.watchdog_interval({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}) is None
    own = {"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}
    assert notify.watchdog_interval(own) == 2.0
    assert notify.watchdog_interval({"WATCHDOG_USEC": "bogus"}) is None
    assert Notifier(env_for(listener, WATCHDOG_PID="1")).ping_every is None


def test_a_vanished_socket_never_breaks_the_caller(tmp_path: Path) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone"), "WATCHDOG_USEC": "1000"})
    notifier.ready()  # logged once, then quiet
    assert not notifier.enabled
    notifier.alive()


# --- the loop: pings from its own thread, waits sliced ---------------------------------------


class _Nothing:
    """Work with no metrics of its own."""

    def cycle(self, due: bool) -> None:
        pass

    def families(self) -> list:
        return []

    def close(self) -> None:
        pass


NOTHING = _Nothing()


@pytest.mark.slow
def test_runner_wait_pings_every_half_period_while_idle(tmp_path: Path, listener: Listener) -> None:
    runner = Loop("probe", 60.0, tmp_path, Notifier(env_for(listener)))
    runner.publish(NOTHING)
    runner.wait(2.2)  # one call, as the token ledger waits for its interval
    listener.collect(0.2)
    pings = listener.pings()
    assert listener.messages[0][1] == "READY=1\nSTATUS=probe: running"
    assert len(pings) >= 3, listener.messages
    assert max(gaps(pings)) < 0.8


def test_runner_wait_still_returns_early_when_woken(tmp_path: Path, listener: Listener) -> None:
    runner = Loop("probe", 60.0, tmp_path, Notifier(env_for(listener)))
    threading.Timer(0.7, runner.wake).start()
    started = time.monotonic()
    assert runner.wait(30) is True
    assert time.monotonic() - started < 2


def test_other_threads_never_ping_for_the_loop(tmp_path: Path, listener: Listener) -> None:
    """A stuck loop with a healthy helper thread must look stuck."""
    runner = Loop("probe", 60.0, tmp_path, Notifier(env_for(listener)))
    runner.publish(NOTHING)  # READY from the loop thread

    def helper() -> None:
        for _ in range(12):
            runner.publish(NOTHING)
            runner.wait(0.1)

    thread = threading.Thread(target=helper)
    thread.start()
    thread.join()
    listener.collect(0.2)
    assert [message for _, message in listener.messages] == ["READY=1\nSTATUS=probe: running"]


# --- real components ---------------------------------------------------------------------


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [*CLI, *args],
        env=dict(os.environ, **env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def stop(process: subprocess.Popen) -> str:
    process.send_signal(signal.SIGTERM)
    try:
        _, stderr = process.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
    return stderr


@pytest.mark.slow
def test_footprint_sentinel_ready_then_pings_while_waiting(
    tmp_path: Path, listener: Listener
) -> None:
    process = start(
        ["sentinel", "footprint", "--spool-dir", str(tmp_path), "--state-dir", str(tmp_path)],
        env_for(listener),
    )
    try:
        ready = listener.wait_for("READY=1", 30)
        listener.collect(2.0)
        assert (tmp_path / "footprint.prom").is_file()
        pings = listener.pings(since=ready)
        assert len(pings) >= 3, listener.messages
        assert max(gaps([ready, *pings])) < 0.9
    finally:
        stop(process)
    assert "STOPPING=1" in [message for _, message in listener.collect(0.3)]


@pytest.mark.slow
def test_exporter_ready_then_pings_from_the_serving_loop(
    tmp_path: Path, listener: Listener
) -> None:
    config = local_config(tmp_path)
    process = start(
        ["--config", str(config), "exporter", "--spool-dir", str(tmp_path)], env_for(listener)
    )
    try:
        ready = listener.wait_for("READY=1", 30)
        listener.collect(2.0)
        pings = listener.pings(since=ready)
        assert len(pings) >= 3, listener.messages
        assert max(gaps([ready, *pings])) < 0.9
    finally:
        stderr = stop(process)
    assert process.returncode == 0, stderr
    assert "STOPPING=1" in [message for _, message in listener.collect(0.3)]


class StallingAlertmanager:
    """GET /api/v2/alerts answers [] at once, or after `stall` seconds while `stalling`."""

    def __init__(self, stall: float):
        self.stalling = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if outer.stalling.is_set():
                    time.sleep(stall)
                body = json.dumps([]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.slow
def test_controller_pings_stop_while_its_loop_is_stuck(tmp_path: Path, listener: Listener) -> None:
    """The cycle blocks in a real HTTP read for ~3 s (controller.timeout); with a 1 s watchdog
    systemd would restart it: no WATCHDOG=1 may arrive during the hang."""
    alertmanager = StallingAlertmanager(stall=10.0)
    config = local_config(
        tmp_path,
        {
            "controller": {
                "listen": f"127.0.0.1:{free_port()}",
                "alertmanagers": [alertmanager.url],
                "interval": 0.3,
                "timeout": 3.0,
                "state_file": str(tmp_path / "controller.json"),
            }
        },
    )
    process = start(
        ["--config", str(config), "controller", "--spool-dir", str(tmp_path)], env_for(listener)
    )
    try:
        ready = listener.wait_for("READY=1", 30)
        listener.collect(1.2)
        assert len(listener.pings(since=ready)) >= 2, listener.messages
        alertmanager.stalling.set()
        blocked_from = time.monotonic()
        listener.collect(2.5)  # the next cycle starts within 0.3 s and hangs for 3 s
        during = listener.pings(since=blocked_from + 0.6)
        assert during == [], listener.messages
        alertmanager.stalling.clear()
        listener.collect(2.5)  # the read times out, the loop goes on and pings again
        assert listener.pings(since=blocked_from + 2.6), listener.messages
    finally:
        stop(process)
        alertmanager.close()


if sys.platform != "linux":  # pragma: no cover
    pytest.skip("AF_UNIX datagram notify sockets are Linux-only here", allow_module_level=True)
