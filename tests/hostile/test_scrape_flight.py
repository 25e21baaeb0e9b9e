"""Many concurrent scrapers of a big spool share one render (single flight) on the real
exporter: 200 at once, half asking for OpenMetrics as Prometheus does and half for text as
curl does, are all answered and cost a render or two per format, not one each (before, each
format's scrape threw the other's cached body away: 362 of 400 such scrapes timed out)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client.metrics_core import CounterMetricFamily

from agentwatch.core import spool
from tests.conftest import CLI, free_port, samples

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

SERIES = 10_000  # about 0.9 MB of exposition (the bench runs 20,000)
SCRAPERS = 200
TIMEOUT = 10.0  # Prometheus' default scrape_timeout
ACCEPT = {
    "openmetrics": "application/openmetrics-text;version=1.0.0;q=0.5,"
    "text/plain;version=0.0.4;q=0.3,*/*;q=0.2",  # what Prometheus sends
    "text": "*/*",  # what curl sends
}


def _write_spool(folder: Path) -> None:
    tokens = CounterMetricFamily("agentwatch_tokens", "Tokens", labels=["project", "model", "type"])
    for index in range(SERIES):
        project, rest = divmod(index, 16)
        tokens.add_metric([f"/src/p{project:04d}", f"model-{rest // 4}", f"type-{rest % 4}"], index)
    spool.write(folder, "token-ledger", 5, lambda: [tokens])


async def _scrape(port: int, accept: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET /metrics HTTP/1.0\r\nAccept: {ACCEPT[accept]}\r\n\r\n".encode())
        await writer.drain()
        return await reader.read()
    finally:
        writer.close()


async def _all_at_once(port: int) -> list[bytes | BaseException]:
    kinds = [("openmetrics", "text")[n % 2] for n in range(SCRAPERS)]
    return await asyncio.gather(
        *(asyncio.wait_for(_scrape(port, kind), TIMEOUT) for kind in kinds),
        return_exceptions=True,
    )


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    _write_spool(tmp_path / "spool")
    port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"exporter": {"listen": f"127.0.0.1:{port}"}}))
    log = tmp_path / "exporter.log"
    with log.open("w") as handle:
        process = subprocess.Popen(
            [*CLI, "--config", str(config), "exporter", "--spool-dir", str(tmp_path / "spool")],
            stdout=handle, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            try:
                asyncio.run(_scrape(port, "text"))  # the first scrape parses the spool
                break
            except OSError:
                time.sleep(0.2)
        yield port, log
    finally:
        process.terminate()
        process.wait(timeout=10)


def _renders(port: int) -> dict[str, float]:
    time.sleep(1.1)  # past the body's one-second bucket: a fresh render shows the count
    text = asyncio.run(_scrape(port, "text")).partition(b"\r\n\r\n")[2].decode()
    return {
        dict(labels)["format"]: value
        for (name, labels), value in samples(text).items()
        if name == "agentwatch_exporter_renders_total"
    }


@pytest.mark.slow
def test_concurrent_scrapes_share_one_render_per_format(exporter: tuple[int, Path]) -> None:
    port, log = exporter
    before = _renders(port)
    started = time.monotonic()
    answers = asyncio.run(_all_at_once(port))
    seconds = time.monotonic() - started
    failed = [repr(a) for a in answers if isinstance(a, BaseException)]
    assert failed == [], f"{len(failed)} of {SCRAPERS} failed: {failed[:3]}"
    assert all(isinstance(a, bytes) and a.startswith(b"HTTP/1.0 200") for a in answers)
    openmetrics = [a for a in answers if isinstance(a, bytes) and b"# EOF" in a]
    assert len(openmetrics) == SCRAPERS // 2
    after = _renders(port)
    # One render per format per one-second bucket at most (the burst may straddle buckets),
    # plus the one _renders() itself makes: before single flight it was one per scrape.
    bound = int(seconds) + 2
    made = {kind: after[kind] - before[kind] for kind in ("openmetrics", "text")}
    assert made["openmetrics"] <= bound and made["text"] <= bound + 1, (made, seconds)
    assert "Traceback" not in log.read_text()


def test_clients_that_never_read_hold_no_handler_thread(exporter: tuple[int, Path]) -> None:
    """Twice as many clients as handler threads ask for the 0.9 MB page and never read it:
    the kernel's send buffer (tcp_wmem, up to 4 MiB) takes each whole answer, so no thread
    waits on them and a real scrape is answered at once, not after the 10 s write timeout."""
    port, log = exporter
    idle = []
    try:
        for _ in range(2 * 8):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            idle.append(sock)
        time.sleep(1.0)  # every one of them has been handed to a thread by now
        started = time.monotonic()
        answer = asyncio.run(_scrape(port, "openmetrics"))
        assert answer.startswith(b"HTTP/1.0 200") and time.monotonic() - started < 5.0
    finally:
        for sock in idle:
            sock.close()
    assert "Traceback" not in log.read_text()
