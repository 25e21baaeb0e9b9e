"""The spool and the exporter: atomic files merged, broken ones isolated, health per sentinel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily

from agentwatch.core import spool
from agentwatch.exporter.collector import SpoolCollector
from agentwatch.exporter.server import serve
from tests.conftest import CLI, free_port, samples


def _gauge(name: str, value: float, **labels: str) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, f"help of {name}", labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


def _scrape(collector: SpoolCollector) -> str:
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)  # type: ignore[arg-type]
    return generate_latest(registry).decode()


def test_write_is_atomic_and_private(tmp_path: Path) -> None:
    path = spool.write(tmp_path, "alpha", 15, lambda: [_gauge("agentwatch_alpha_things", 3)])
    text = path.read_text()
    assert "agentwatch_alpha_things 3.0" in text
    assert 'agentwatch_sentinel_interval_seconds{sentinel="alpha"} 15.0' in text
    assert "process_" not in text and "python_" not in text  # private registry
    assert [p.name for p in tmp_path.iterdir()] == ["alpha.prom"]  # no temp file left


def test_files_are_merged_and_health_is_reported(tmp_path: Path) -> None:
    spool.write(tmp_path, "alpha", 15, lambda: [_gauge("agentwatch_alpha_things", 3)])
    spool.write(tmp_path, "beta", 60, lambda: [_gauge("agentwatch_beta_things", 4, k="v")])
    found = samples(_scrape(SpoolCollector(tmp_path, expected=["alpha", "beta", "gamma"])))
    assert found[("agentwatch_alpha_things", ())] == 3
    assert found[("agentwatch_beta_things", (("k", "v"),))] == 4
    for name in ("alpha", "beta"):
        assert found[("agentwatch_sentinel_up", (("sentinel", name),))] == 1
        assert found[("agentwatch_sentinel_file_error", (("sentinel", name),))] == 0
    # Expected but never written: down and stale, no last-write sample.
    assert found[("agentwatch_sentinel_up", (("sentinel", "gamma"),))] == 0
    assert found[("agentwatch_sentinel_stale", (("sentinel", "gamma"),))] == 1
    assert (
        "agentwatch_sentinel_last_write_timestamp_seconds",
        (("sentinel", "gamma"),),
    ) not in found


def test_broken_file_is_left_out_and_flagged(tmp_path: Path) -> None:
    spool.write(tmp_path, "alpha", 15, lambda: [_gauge("agentwatch_alpha_things", 3)])
    (tmp_path / "broken.prom").write_text("agentwatch_x{unclosed 1\n")
    (tmp_path / "stamped.prom").write_text(
        "# TYPE agentwatch_y gauge\nagentwatch_y 1 1700000000000\n"
    )
    found = samples(_scrape(SpoolCollector(tmp_path)))
    assert found[("agentwatch_alpha_things", ())] == 3
    assert found[("agentwatch_sentinel_file_error", (("sentinel", "broken"),))] == 1
    assert found[("agentwatch_sentinel_file_error", (("sentinel", "stamped"),))] == 1
    assert ("agentwatch_y", ()) not in found


def test_clashing_files_do_not_break_the_scrape(tmp_path: Path) -> None:
    spool.write(tmp_path, "alpha", 15, lambda: [_gauge("agentwatch_shared", 1, k="a")])
    counter = CounterMetricFamily("agentwatch_shared", "now a counter")
    counter.add_metric([], 2)
    spool.write(tmp_path, "beta", 15, lambda: [counter])
    spool.write(tmp_path, "delta", 15, lambda: [_gauge("agentwatch_shared", 5, k="a")])
    spool.write(tmp_path, "omega", 15, lambda: [_gauge("agentwatch_sentinel_up", 1)])
    found = samples(_scrape(SpoolCollector(tmp_path)))
    assert found[("agentwatch_shared", (("k", "a"),))] == 1  # first file wins
    for clashing in ("beta", "delta", "omega"):
        assert found[("agentwatch_sentinel_file_error", (("sentinel", clashing),))] == 1
    assert found[("agentwatch_sentinel_file_error", (("sentinel", "alpha"),))] == 0


def test_stale_after_a_multiple_of_the_declared_interval(tmp_path: Path) -> None:
    path = spool.write(tmp_path, "alpha", 10, lambda: [_gauge("agentwatch_alpha_things", 3)])
    collector = SpoolCollector(tmp_path, stale_after_intervals=3)
    old = time.time() - 31
    os.utime(path, (old, old))
    found = samples(_scrape(collector))
    assert found[("agentwatch_sentinel_stale", (("sentinel", "alpha"),))] == 1
    assert found[("agentwatch_sentinel_up", (("sentinel", "alpha"),))] == 0
    assert found[("agentwatch_alpha_things", ())] == 3  # stale data is still served
    now = time.time()
    os.utime(path, (now, now))
    assert samples(_scrape(collector))[("agentwatch_sentinel_stale", (("sentinel", "alpha"),))] == 0


def test_file_is_parsed_again_only_when_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool.write(tmp_path, "alpha", 15, lambda: [_gauge("agentwatch_alpha_things", 3)])
    collector = SpoolCollector(tmp_path)
    calls = []
    original = spool.parse_text
    monkeypatch.setattr(spool, "parse_text", lambda text: calls.append(1) or original(text))
    _scrape(collector)
    _scrape(collector)
    assert len(calls) == 1
    spool.write(tmp_path, "alpha", 15, lambda: [_gauge("agentwatch_alpha_things", 4)])
    assert samples(_scrape(collector))[("agentwatch_alpha_things", ())] == 4
    assert len(calls) == 2


def _get(url: str, accept: str | None = None) -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


def test_http_routes(tmp_path: Path) -> None:
    import threading

    spool.write(tmp_path, "alpha", 15, lambda: [_gauge("agentwatch_alpha_things", 3)])
    (tmp_path / "broken.prom").write_text("garbage{\n")
    server = serve(SpoolCollector(tmp_path, expected=["alpha"]), "127.0.0.1:0")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        status, kind, body = _get(base + "/metrics")
        assert status == 200 and kind.startswith("text/plain")
        assert "agentwatch_alpha_things 3.0" in body
        status, kind, body = _get(base + "/metrics", "application/openmetrics-text")
        assert kind.startswith("application/openmetrics-text") and body.endswith("# EOF\n")
        status, kind, body = _get(base + "/")
        assert status == 200 and "alpha" in body and "broken" in body and "<table" in body
        status, _, body = _get(base + "/healthz")
        health = {item["sentinel"]: item for item in json.loads(body)["sentinels"]}
        assert health["alpha"]["up"] is True and health["broken"]["error"]
        assert _get(base + "/nope")[0] == 404
    finally:
        server.shutdown()
        server.server_close()


def test_promtool_accepts_the_exposition(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is required (Debian package prometheus); .ci/run installs it"
    spool.write(tmp_path, "alpha", 15, lambda: [_gauge("agentwatch_alpha_things", 3)])
    text = _scrape(SpoolCollector(tmp_path, expected=["alpha", "gamma"]))
    checked = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_exporter_command_binds_loopback_by_default(tmp_path: Path, processes: list) -> None:
    port = free_port()
    config_file = tmp_path / "c.yaml"
    config_file.write_text(f"exporter: {{listen: '127.0.0.1:{port}'}}\n")
    process = subprocess.Popen(
        [*CLI, "--config", str(config_file), "exporter", "--spool-dir", str(tmp_path)],
        stderr=subprocess.PIPE,
        text=True,
    )
    processes.append(process)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            status, _, body = _get(f"http://127.0.0.1:{port}/metrics")
            break
        except OSError:
            time.sleep(0.1)
    else:
        pytest.fail("exporter did not start")
    assert status == 200 and "agentwatch_exporter_build_info" in body
    assert 'agentwatch_filesystem_size_bytes{dir="spool"}' in body  # the command wires it up
    bound = [
        conn.laddr
        for conn in psutil.Process(process.pid).net_connections(kind="tcp")
        if conn.status == psutil.CONN_LISTEN
    ]
    assert [(addr.ip, addr.port) for addr in bound] == [("127.0.0.1", port)]


def test_filesystems_of_state_and_spool_are_measured_each_scrape(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state, spool_dir = tmp_path / "state", tmp_path / "spool"
    spool_dir.mkdir()
    collector = SpoolCollector(spool_dir, filesystems={"state": state, "spool": spool_dir})
    caplog.set_level("INFO", logger="agentwatch.exporter")
    for _ in range(2):  # the missing state folder: absent (never 0), logged once
        found = samples(_scrape(collector))
    real = os.statvfs(spool_dir)
    spool_labels = (("dir", "spool"),)
    assert (
        found[("agentwatch_filesystem_size_bytes", spool_labels)] == real.f_blocks * real.f_frsize
    )
    avail = found[("agentwatch_filesystem_avail_bytes", spool_labels)]
    assert abs(avail - real.f_bavail * real.f_frsize) <= 64 * 2**20  # other writers meanwhile
    assert not [key for key in found if key[0].startswith("agentwatch_filesystem_") and
                key[1] == (("dir", "state"),)]  # fmt: skip
    failing = [r for r in caplog.records if "cannot measure the state filesystem" in r.message]
    assert len(failing) == 1 and str(state) in failing[0].message
    state.mkdir()
    found = samples(_scrape(collector))
    assert found[("agentwatch_filesystem_size_bytes", (("dir", "state"),))] > 0
    assert any("state filesystem is measured again" in r.message for r in caplog.records)


def test_a_spool_file_cannot_fake_the_filesystem_series(tmp_path: Path) -> None:
    spool.write(
        tmp_path, "alpha", 15, lambda: [_gauge("agentwatch_filesystem_avail_bytes", 0, dir="state")]
    )
    found = samples(_scrape(SpoolCollector(tmp_path, filesystems={"state": tmp_path})))
    assert found[("agentwatch_filesystem_avail_bytes", (("dir", "state"),))] > 0
    assert found[("agentwatch_sentinel_file_error", (("sentinel", "alpha"),))] == 1


def test_render_is_byte_identical_to_prometheus_client() -> None:
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.metrics_core import (
        HistogramMetricFamily,
        InfoMetricFamily,
        StateSetMetricFamily,
        SummaryMetricFamily,
    )

    counter = CounterMetricFamily("agentwatch_c", "help with \\ and\nnewline", labels=["b", "a"])
    counter.add_metric(['quote " back \\ nl \n', "ünïcödé ✓"], 3)
    counter.add_metric(["", "x"], 1e21)
    gauge = GaugeMetricFamily("agentwatch_g", "gauge help")
    gauge.add_metric([], float("nan"))
    odd = GaugeMetricFamily("agentwatch_h", "values", labels=["k"])
    for index, value in enumerate([float("inf"), float("-inf"), 0.1 + 0.2, -0.0, 12345678901]):
        odd.add_metric([str(index)], value)
    info = InfoMetricFamily("agentwatch_build", "info help")
    info.add_metric([], {"version": "1.2.3"})
    summary = SummaryMetricFamily("agentwatch_s", "summary help", count_value=2, sum_value=3.5)
    histogram = HistogramMetricFamily("agentwatch_hist", "histogram help", labels=["model"])
    histogram.add_metric(["m"], buckets=[("0.5", 1), ("+Inf", 3)], sum_value=2.25)
    stamped = GaugeMetricFamily("agentwatch_t", "falls back: a timestamp", labels=["k"])
    stamped.add_metric(["v"], 1, timestamp=1767225600.5)
    created = CounterMetricFamily("agentwatch_made", "falls back: _created", created=1767225600)
    states = StateSetMetricFamily("agentwatch_state", "falls back: a state set", value={"a": True})
    empty = CounterMetricFamily("agentwatch_none", "no samples yet", labels=["x"])
    families = [counter, gauge, odd, info, summary, histogram, stamped, created, states, empty]

    class Fixed:
        def collect(self):
            return families

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Fixed())  # type: ignore[arg-type]
    assert spool.render(families) == generate_latest(registry).decode()
    control = GaugeMetricFamily("agentwatch_cr", "a raw carriage return", labels=["m"])
    control.add_metric(["c\rr"], 1)
    families.append(control)
    assert spool.render(families, exact=True) == generate_latest(registry).decode()
    assert "\r" not in spool.render(families)  # a sentinel's file escapes it
