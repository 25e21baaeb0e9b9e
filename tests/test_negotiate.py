"""The exporter picks the exposition format and Content-Type exactly as prometheus_client's
choose_encoder would, on the Accept headers scrapers send, without importing the module that
holds it (exporter/negotiate.py says why)."""

from __future__ import annotations

import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from prometheus_client.exposition import choose_encoder

from agentwatch.exporter.negotiate import TEXT_0_0_4, choose

# Edge cases of the header's grammar, each compared with the library's own answer.
ACCEPT_HEADERS = [
    "*/*",  # curl
    "",
    "text/plain",
    "text/plain;version=0.0.4",
    "text/plain; version=1.0.0; escaping=dots",
    "text/plain;version=1.0.0;escaping=bogus",
    "application/openmetrics-text",
    "application/openmetrics-text; version=0.0.1",
    "application/openmetrics-text;version=1.0.0;escaping=values",
    "application/json, text/html",
]


@pytest.mark.parametrize("accept", ACCEPT_HEADERS)
def test_the_choice_is_the_librarys(accept: str) -> None:
    _, content_type = choose_encoder(accept)
    chosen = choose(accept)
    assert chosen.content_type == content_type
    assert chosen.openmetrics == content_type.startswith("application/openmetrics-text")


def test_a_version_that_does_not_compare_gets_text_not_an_error() -> None:
    with pytest.raises(TypeError):
        choose_encoder("application/openmetrics-text;version=a.b")
    assert choose("application/openmetrics-text;version=a.b") == (False, TEXT_0_0_4)


@pytest.fixture(scope="module")
def prometheus_accept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The Accept header the real Prometheus (Debian's) sends when it scrapes."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus is required (Debian package prometheus); .ci/run installs it"
    seen: queue.Queue[str] = queue.Queue()

    class Target(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.put(self.headers.get("Accept", ""))
            self.send_response(200)
            self.send_header("Content-Type", TEXT_0_0_4)
            self.end_headers()
            self.wfile.write(b"agentwatch_probe 1\n")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Target)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    folder: Path = tmp_path_factory.mktemp("prometheus")
    (folder / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: probe\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{server.server_port}']}}]\n"
    )
    process = subprocess.Popen(
        [binary, f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={folder}",
         "--web.listen-address=127.0.0.1:0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield seen.get(timeout=90)
    finally:
        process.terminate()
        process.wait(timeout=30)
        server.shutdown()


@pytest.mark.slow
def test_the_real_prometheus_gets_openmetrics_as_from_the_library(prometheus_accept: str) -> None:
    _, content_type = choose_encoder(prometheus_accept)
    assert choose(prometheus_accept) == (True, content_type)
    assert content_type.startswith("application/openmetrics-text; version=1.0.0")
