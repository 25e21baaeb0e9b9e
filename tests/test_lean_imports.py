"""Each sentinel and the exporter, run as the whole command, leave out what they do not need:
prometheus_client's HTTP and WSGI parts (core/lazy_prometheus.py, exporter/negotiate.py),
requests (only a release CI probe asks GitHub) and protobuf (the otel receiver loads it with
its first request). Each of them costs several MiB
of private memory in every process of the kit (issue 29: the kit's summed PSS)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from agentwatch.sentinels import registry
from tests.conftest import free_port

HEAVY = ("prometheus_client.exposition", "requests", "google.protobuf")
PROBE = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps([m for m in {heavy} if m in sys.modules])))
sys.argv = ["agentwatch", *{argv}]
from agentwatch.cli.entry import run
run()
"""


def probe(argv: list[str], home: Path) -> subprocess.Popen[str]:
    """A whole `agentwatch ARGV` process that prints, as it exits, the heavy modules it loaded."""
    code = PROBE.format(heavy=HEAVY, argv=argv)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": str(home / "run")}
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env,
    )  # fmt: skip


def loaded(process: subprocess.Popen[str]) -> list[str]:
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr[-2000:]
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(registry.sentinels()))
def test_a_sentinel_cycle_loads_nothing_heavy(name: str, tmp_path: Path) -> None:
    (tmp_path / "run").mkdir(mode=0o700)
    argv = ["sentinel", name, "--once", "--spool-dir", str(tmp_path / "spool"),
            "--state-dir", str(tmp_path / "state")]  # fmt: skip
    assert loaded(probe(argv, tmp_path)) == []
    assert (tmp_path / "spool" / f"{name}.prom").stat().st_size > 0


def test_the_exporter_serves_both_formats_without_them(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir(mode=0o700)
    address = f"127.0.0.1:{free_port()}"
    exporter = probe(["exporter", "--spool-dir", str(tmp_path), "--listen", address], tmp_path)
    url = f"http://{address}/metrics"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                text = requests.get(url, timeout=10)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, "the exporter never answered"
                time.sleep(0.1)
        openmetrics = requests.get(
            url, headers={"Accept": "application/openmetrics-text;version=1.0.0"}, timeout=10
        )
    finally:
        exporter.send_signal(signal.SIGTERM)
    assert loaded(exporter) == []
    assert text.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert openmetrics.text.endswith("# EOF\n") and "agentwatch_exporter" in openmetrics.text


def test_the_full_library_is_there_when_asked_for() -> None:
    """After install(), the package's own API still works: its __init__ runs on demand."""
    code = (
        "from agentwatch.core import lazy_prometheus; lazy_prometheus.install()\n"
        "from prometheus_client.metrics_core import GaugeMetricFamily\n"
        "assert not lazy_prometheus.is_loaded()\n"
        "import prometheus_client\n"
        "registry = prometheus_client.CollectorRegistry()\n"
        "assert lazy_prometheus.is_loaded()\n"
        "gauge = prometheus_client.Gauge('agentwatch_probe', 'h', registry=registry)\n"
        "gauge.set(2)\n"
        "print(prometheus_client.generate_latest(registry).decode())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "agentwatch_probe 2.0" in done.stdout
