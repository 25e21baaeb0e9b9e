"""Each sentinel, run as the whole command, leaves out what it does not need: prometheus_client's
HTTP and WSGI parts (core/lazy_prometheus.py), requests (only a release CI probe asks GitHub)
and protobuf (the otel receiver loads it with its first request). Each of them costs several MiB
of private memory in every process of the kit (issue 29: the kit's summed PSS)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentwatch.sentinels import registry

HEAVY = ("prometheus_client.exposition", "requests", "google.protobuf")
PROBE = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps([m for m in {heavy} if m in sys.modules])))
sys.argv = ["agentwatch", *{argv}]
from agentwatch.cli.entry import run
run()
"""


def loaded_by(argv: list[str], home: Path) -> list[str]:
    """The heavy modules a whole `agentwatch ARGV` process had loaded when it exited."""
    code = PROBE.format(heavy=HEAVY, argv=argv)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": str(home / "run")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(registry.sentinels()))
def test_a_sentinel_cycle_loads_nothing_heavy(name: str, tmp_path: Path) -> None:
    (tmp_path / "run").mkdir(mode=0o700)
    argv = ["sentinel", name, "--once", "--spool-dir", str(tmp_path / "spool"),
            "--state-dir", str(tmp_path / "state")]  # fmt: skip
    assert loaded_by(argv, tmp_path) == []
    assert (tmp_path / "spool" / f"{name}.prom").stat().st_size > 0


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
