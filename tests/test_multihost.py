"""Several workstations, one Prometheus: two agentwatch hosts on loopback scraped as one job.

Each host is a real exporter plus a real footprint sentinel with its own config and spool.
They share this machine's /proc and the same signature file, so both hosts count the SAME
three real `sleep` processes. Their thresholds differ: `thresholds.footprint_processes` is 2 on
"alpha" and 1000 on "beta" (each served by its own exporter as `agentwatch_alert_threshold`).
One real Prometheus (1 s scrape and evaluation) loads the real rules/*.rules.yml and scrapes
both exporters as job "agentwatch", `instance` set to the host name (the layout the README
recommends).

Checked:
- both instances' `agentwatch_sentinel_up`, threshold and footprint series are present, apart;
- AgentwatchFootprintHigh is active for instance alpha only: each host is judged against its
  own threshold (rules that took the most lenient host's threshold, `on () group_left ()
  max(...)`, would keep alpha silent too). Its `for:` is 5m, so the test stops at the pending
  state (/api/v1/alerts lists pending alerts with their labels): that is the per-instance
  evaluation path; `for:` only delays the same labelled alert;
- stopping beta's exporter makes AgentwatchExporterDown active for instance beta only;
- every dashboard query runs with its `instance` variable narrowed to one host, the footprint
  panel shows one series per host with each host's own cap, and "Sentinels up" counts per host.

That the controller keeps steering from one Alertmanager of an HA pair when the other stops is
tests/test_controller_alertmanager.py::test_ha_pair_merges_and_survives_one_peer.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from agentwatch.sentinels import registry
from tests.conftest import CLI, free_port
from tests.dashboards import ROOT, STACK_SERIES, dashboard_queries

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

PROMETHEUS = shutil.which("prometheus")
SLEEP = shutil.which("sleep") or "/bin/sleep"
HOSTS = ("alpha", "beta")
THRESHOLDS = {"alpha": 2, "beta": 1000}  # thresholds.footprint_processes per host
PROCESSES = 3  # agent-related processes both hosts see


def host_config(folder: Path, token: str, threshold: int) -> tuple[Path, str]:
    """Config of one host: only the footprint sentinel, counting processes named by `token`."""
    signatures = folder / "signatures.json"
    signatures.write_text(
        json.dumps(
            {
                "kinds": ["agent_cli"],
                "signatures": [{"id": "fleet", "kind": "agent_cli", "cmdline": token}],
            }
        )
    )
    listen = f"127.0.0.1:{free_port()}"
    others = [name for name in registry.sentinels() if name != "footprint"]
    values: dict[str, Any] = {
        "exporter": {"listen": listen},
        "thresholds": {"footprint_processes": threshold},
        "sentinels": {
            "footprint": {"interval": "1s", "signatures_file": str(signatures)},
            **{name: {"enabled": False} for name in others},
        },
    }
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump(values))
    return config, listen


def start(argv: list[str], log: Path, processes: list[subprocess.Popen]) -> subprocess.Popen:
    with log.open("ab") as handle:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=handle)
    processes.append(process)
    return process


def prometheus_config(folder: Path, targets: dict[str, str]) -> Path:
    rules = sorted((ROOT / "rules").glob("*.rules.yml"))
    assert rules, "no rules/*.rules.yml"
    config = folder / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(path) for path in rules],
                "scrape_configs": [
                    {
                        "job_name": "agentwatch",
                        "static_configs": [
                            {"targets": [listen], "labels": {"instance": host}}
                            for host, listen in targets.items()
                        ],
                    }
                ],
            }
        )
    )
    return config


def start_prometheus(folder: Path, config: Path, processes: list[subprocess.Popen]) -> str:
    assert PROMETHEUS is not None
    port = free_port()
    log = folder / "prometheus.log"
    process = start(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"], log, processes,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: ready(url), 30, lambda: f"prometheus not ready: {log.read_text()[-2000:]}")
    assert process.poll() is None
    return url


def ready(url: str) -> bool:
    try:
        return requests.get(f"{url}/-/ready", timeout=1).status_code == 200
    except requests.ConnectionError:
        return False


def wait_for(check: Callable[[], Any], timeout: float, why: Callable[[], str]) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.25)
    raise AssertionError(why())


def query(url: str, expr: str) -> list[dict[str, Any]]:
    answer = requests.get(f"{url}/api/v1/query", params={"query": expr}, timeout=10)
    body = answer.json()
    assert answer.status_code == 200 and body["status"] == "success", (expr, body)
    return body["data"]["result"]


def by_instance(url: str, expr: str) -> dict[str, float]:
    return {
        item["metric"].get("instance", ""): float(item["value"][1]) for item in query(url, expr)
    }


def active_alerts(url: str, name: str) -> dict[str, str]:
    """instance -> state (pending or firing) of every active alert called `name`."""
    alerts = requests.get(f"{url}/api/v1/alerts", timeout=10).json()["data"]["alerts"]
    return {
        alert["labels"].get("instance", ""): alert["state"]
        for alert in alerts
        if alert["labels"]["alertname"] == name
    }


def test_two_hosts_one_prometheus_alerts_and_series_per_instance(
    tmp_path: Path, processes: list[subprocess.Popen]
) -> None:
    token = f"aw-fleet-{uuid.uuid4().hex[:12]}"
    fleet = tmp_path / f"{token}-fleet"  # both hosts' signatures match what runs from here
    fleet.mkdir()
    sleeper = fleet / "sleep"
    shutil.copy2(SLEEP, sleeper)
    for _ in range(PROCESSES):
        start([str(sleeper), "300"], tmp_path / "sleepers.log", processes)

    exporters: dict[str, subprocess.Popen] = {}
    targets: dict[str, str] = {}
    for host in HOSTS:
        folder = tmp_path / host
        folder.mkdir()
        config, targets[host] = host_config(folder, f"{token}-fleet", THRESHOLDS[host])
        base = [*CLI, "--config", str(config)]
        spool = ["--spool-dir", str(folder / "spool")]
        exporters[host] = start([*base, "exporter", *spool], folder / "exporter.log", processes)
        start([*base, "sentinel", "footprint", *spool, "--state-dir", str(folder / "state")],
              folder / "footprint.log", processes)  # fmt: skip

    folder = tmp_path / "prometheus"
    folder.mkdir()
    url = start_prometheus(folder, prometheus_config(folder, targets), processes)

    # Per-instance series: both hosts scraped, each sentinel and threshold apart.
    expr = 'agentwatch_sentinel_up{job="agentwatch",sentinel="footprint"}'
    up = wait_for(lambda: len(by_instance(url, expr)) == 2 and by_instance(url, expr), 30,
                  lambda: f"not both hosts scraped: {query(url, 'up')}")  # fmt: skip
    assert up == {"alpha": 1.0, "beta": 1.0}
    threshold = 'agentwatch_alert_threshold{job="agentwatch",name="footprint_processes"}'
    assert by_instance(url, threshold) == THRESHOLDS
    processes_expr = 'agentwatch_footprint_agent_processes{job="agentwatch"}'
    counts = wait_for(
        lambda: len(by_instance(url, processes_expr)) == 2 and by_instance(url, processes_expr),
        30,
        lambda: "no footprint series",
    )
    assert counts == {"alpha": PROCESSES, "beta": PROCESSES}

    # Same counts, different thresholds: alpha (3 > 2) alerts, beta (3 < 1000) does not
    # (pending: the alert's for: is 5m).
    footprint = wait_for(
        lambda: active_alerts(url, "AgentwatchFootprintHigh"),
        30,
        lambda: f"no footprint alert: {requests.get(f'{url}/api/v1/rules', timeout=5).text}",
    )
    time.sleep(3)  # a few more evaluations: beta must stay quiet
    footprint = active_alerts(url, "AgentwatchFootprintHigh")
    assert set(footprint) == {"alpha"}, footprint
    assert footprint["alpha"] in ("pending", "firing")

    # Dashboards: every query runs narrowed to one host (the `instance` variable), and the
    # host panels keep the hosts apart with all hosts selected.
    queries = list(dashboard_queries())
    assert queries
    for item in queries:
        if any(name in item.expr for name in STACK_SERIES):
            continue  # the monitoring stack's own series: its instances, not the hosts'
        for host in HOSTS:
            query(url, with_instance(item.expr, host))  # every one still runs
    cap = {
        ref: next(q for q in queries if q.panel == "Footprint against the cap" and q.ref_id == ref)
        for ref in ("A", "C")
    }
    assert by_instance(url, cap["A"].expr) == {"alpha": PROCESSES, "beta": PROCESSES}
    assert by_instance(url, cap["C"].expr) == THRESHOLDS, "each host's own cap line"
    for host in HOSTS:
        narrowed = query(url, with_instance(cap["C"].expr, host))
        assert [float(item["value"][1]) for item in narrowed] == [THRESHOLDS[host]]
    health = next(q for q in queries if q.panel == "Sentinels up" and q.ref_id == "B")
    assert by_instance(url, health.expr) == {"alpha": 1.0, "beta": 1.0}, "one footprint each"

    # A per-host alert from `up`: stop beta's exporter; the alert names beta only.
    exporters["beta"].terminate()
    exporters["beta"].wait(timeout=10)
    down = wait_for(
        lambda: active_alerts(url, "AgentwatchExporterDown"), 30, lambda: "no exporter alert"
    )
    assert set(down) == {"beta"}, down
    assert by_instance(url, 'up{job="agentwatch"}') == {"alpha": 1.0, "beta": 0.0}


def with_instance(expr: str, host: str) -> str:
    """`expr` (template variables already "All") narrowed to one host, as choosing that host
    in the dashboards' `instance` variable does."""
    narrowed = expr.replace('instance=~".*"', f'instance=~"{host}"')
    assert narrowed != expr, f"a dashboard query without an instance matcher: {expr}"
    return narrowed
