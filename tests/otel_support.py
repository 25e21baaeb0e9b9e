"""The otel sentinel run in-process on a free port, and OTLP requests sent to it."""

from __future__ import annotations

import gzip
import http.client
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentwatch.core.loop import Loop
from agentwatch.core.spool import render
from agentwatch.sentinels import registry
from agentwatch.sentinels.contract import Context
from agentwatch.sentinels.otel.main import Otel
from tests.conftest import free_port

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "otel"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def context(tmp_path: Path, settings: dict[str, Any] | None = None, **extra: Any) -> Context:
    otel = {"listen": f"127.0.0.1:{free_port()}", **(settings or {})}
    config = registry.config_from_mapping({"sentinels": {"otel": otel}, **extra})
    spool, state = tmp_path / "spool", tmp_path / "state"
    spool.mkdir(exist_ok=True)
    state.mkdir(exist_ok=True)
    return Context(config, spool, state, False, lambda: None, lambda: False, "otel")


@contextmanager
def receiver(
    tmp_path: Path, clock: Callable[[], float] = time.time, **settings: Any
) -> Iterator[Otel]:
    work = Otel(context(tmp_path, settings), clock)
    try:
        yield work
    finally:
        work.close()


def port(work: Otel | int) -> int:
    """The receiver's port (of an in-process sentinel, or given)."""
    if isinstance(work, int):
        return work
    assert work.server is not None
    return int(work.server.server_address[1])


def post(
    work: Otel | int,
    path: str,
    body: bytes,
    content_type: str = PROTOBUF,
    headers: dict[str, str] | None = None,
    timeout: float = 30,
) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port(work), timeout=timeout)
    try:
        connection.request("POST", path, body, {"Content-Type": content_type, **(headers or {})})
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


def gzipped(body: bytes) -> bytes:
    return gzip.compress(body)


def exposition(work: Otel) -> str:
    return render(work.families())


def spool_once(work: Otel, spool_dir: Path) -> str:
    """One cycle and one spool write, as the loop does; the file's text."""
    loop = Loop("otel", 15.0, spool_dir)
    work.cycle(True)
    assert loop.publish(work)
    return (spool_dir / "otel.prom").read_text()


def wait_for(condition: Callable[[], bool], timeout: float = 60, what: str = "") -> None:
    """Poll `condition` until true (generous: the machine is busy)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.05)
