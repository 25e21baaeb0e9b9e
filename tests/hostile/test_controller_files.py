"""Every other file the controller reads that something else can replace: the orchestrator's
run config (budget), the bearer token file, and the decision file an orchestrator's client
reads. A FIFO, /dev/zero, a huge or deeply nested file is refused unread, with the fallback the
reader already had for a broken file, logged once; no message quotes the content."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentwatch.controller import client
from agentwatch.controller.adapters import AdapterConfigError
from agentwatch.controller.budget import BudgetResolver
from agentwatch.controller.orchestrators import read_token
from agentwatch.core.bounded import DATA_LIMIT, SECRET_LIMIT


def sparse(size: int) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        with path.open("wb") as handle:
            handle.write(b"SECRET-FIRST-LINE\n")
            handle.truncate(size)

    return make


HOSTILE: dict[str, Callable[[Path], None]] = {
    "fifo": os.mkfifo,
    "dev-zero": lambda path: path.symlink_to("/dev/zero"),
    "huge": sparse(DATA_LIMIT + 1),
    "deep": lambda path: path.write_text("[" * 100_000 + "]" * 100_000),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_run_config_falls_through_to_the_config_budget(
    tmp_path: Path, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    run_config = tmp_path / "run_config.json"
    HOSTILE[case](run_config)
    resolver = BudgetResolver(run_config, config_budget=25.0)
    with caplog.at_level(logging.WARNING, "agentwatch.controller"):
        for _ in range(5):
            assert resolver.resolve({}) == (25.0, "config")
    [line] = [r.message for r in caplog.records]
    assert line.startswith(f"budget from run config {run_config} failing: ")
    assert line.endswith("; ignored")
    assert resolver.file_gate.failing


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (os.mkfifo, "not a regular file (a FIFO)"),
        (sparse(SECRET_LIMIT + 1), f"{SECRET_LIMIT + 1} bytes, over the cap of {SECRET_LIMIT}"),
    ],
    ids=["fifo", "huge"],
)
def test_a_hostile_token_file_is_a_config_error_that_quotes_nothing(
    tmp_path: Path, make: Callable[[Path], None], why: str
) -> None:
    """(A symlink to /dev/zero is refused before, as readable by others.)"""
    token = tmp_path / "token"
    make(token)
    os.chmod(token, 0o600)
    started = time.monotonic()
    with pytest.raises(AdapterConfigError) as caught:
        read_token(None, token, {})
    assert time.monotonic() - started < 5, "a FIFO is never opened blocking"
    message = str(caught.value)
    assert message == f"orchestrator.token_file: refusing {token}: {why}"


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_the_client_reads_no_hostile_decision_file(tmp_path: Path, case: str) -> None:
    decision = tmp_path / "controller.json"
    HOSTILE[case](decision)
    throttle = client.read(decision, default_max_agents=2)
    assert (throttle.available, throttle.effective_max_agents) == (False, 2)
    assert throttle.problem.startswith("cannot read the decision: ")


@pytest.fixture
def trickling() -> Iterator[str]:
    """A /throttle that sends its head, then one body byte every 0.2 s, forever."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                while not stop.wait(0.2):
                    conn.sendall(b" ")
            except OSError:
                return

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/throttle"
    stop.set()
    listener.close()


def test_the_client_gives_up_on_a_trickling_throttle(trickling: str) -> None:
    started = time.monotonic()
    throttle = client.read(trickling, default_max_agents=3, timeout=1.0)
    took = time.monotonic() - started
    assert took < 4, f"a 1 s timeout took {took:.1f}s"
    assert (throttle.available, throttle.max_agents) == (False, 3)
    assert throttle.problem == "cannot read the decision: TimeoutError"
