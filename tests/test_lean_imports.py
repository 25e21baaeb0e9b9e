"""Each sentinel and the exporter, run as the whole command, leave out what they do not need:
prometheus_client's HTTP and WSGI parts (core/lazy_prometheus.py, exporter/negotiate.py),
requests (only a release CI probe asks GitHub), protobuf (the otel receiver loads it with
its first request) and the YAML parser (no config file, a JSON one as `up` writes, and no web
config file need none). Each of them costs several MiB
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

HEAVY = ("prometheus_client.exposition", "requests", "google.protobuf", "yaml")
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


LEFT_OUT = ("yaml", "argparse", "socket", "socketserver", "gettext", "shutil")
ONCE_PROBE = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps([m for m in {left_out} if m in sys.modules])))
sys.argv = ["agentwatch", *{argv}]
from agentwatch.cli.entry import run
run()
"""


def once_run(tmp_path: Path, name: str, config_text: str, options: list[str]) -> tuple[list, str]:
    """`agentwatch --config C sentinel agent-ledger OPTIONS` on an empty Codex folder, as the
    agent-ledger benches run it: (what of LEFT_OUT it loaded, its spool file's text)."""
    run_dir = tmp_path / name
    (run_dir / "codex").mkdir(parents=True)
    config_file = run_dir / "agentwatch.yaml"
    config_file.write_text(config_text)
    argv = ["--config", str(config_file), "sentinel", "agent-ledger", *options,
            "--state-dir", str(run_dir / "state"), f"--spool-dir={run_dir / 'spool'}"]  # fmt: skip
    env = {"HOME": str(run_dir), "PATH": "/usr/bin:/bin", "CODEX_HOME": str(run_dir / "codex")}
    done = subprocess.run(
        [sys.executable, "-c", ONCE_PROBE.format(left_out=LEFT_OUT, argv=argv)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    spool = (run_dir / "spool" / "agent-ledger.prom").read_text()
    return json.loads(done.stdout.strip().splitlines()[-1]), spool


def test_a_once_run_with_a_json_config_loads_neither_yaml_nor_argparse(tmp_path: Path) -> None:
    """The agent-ledger benches' command (a JSON text in agentwatch.yaml, --once and the
    folders) reads its config without PyYAML and its line without argparse (issue 29: our
    fixed start against ccusage's whole run); the same run through both writes the same."""
    as_json = json.dumps({"sentinels": {"agent-ledger": {"agents": ["codex"]}}})
    lean, spool = once_run(tmp_path, "lean", as_json, ["--once"])
    assert lean == []
    as_yaml = "sentinels:\n  agent-ledger:\n    agents: [codex]\n"
    full, spool_full = once_run(tmp_path, "full", as_yaml, ["--onc"])  # argparse's abbreviation
    assert {"yaml", "argparse"} <= set(full)
    assert spool == spool_full
    assert 'agentwatch_agent_ledger_files_tracked{agent="codex"} 0.0' in spool
