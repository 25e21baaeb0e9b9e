"""Hostile spool files and hostile clients against the real exporter process: each one is that
file's (or that connection's) counted, logged-once rejection, the rest is still served,
/healthz answers, promtool accepts the merged body and nothing of a refused file shows."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from prometheus_client.metrics_core import GaugeMetricFamily

from agentwatch.core import spool
from tests.conftest import CLI, free_port, samples

KEY_LINES = [
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "QyNTUxOQAAACDsecretsecretsecretsecretsecretsecret 1",
    "-----END OPENSSH PRIVATE KEY-----",
]


def _gauge(name: str, value: float, **labels: str) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, f"help of {name}", labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


def promtool_problems(text: str) -> str:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is required (Debian package prometheus)"
    checked = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    return "" if checked.returncode == 0 else checked.stdout + checked.stderr


@dataclass
class Exporter:
    """`agentwatch exporter` on a free loopback port, its log in a file."""

    process: subprocess.Popen
    port: int
    log: Path

    def get(self, path: str, timeout: float = 10) -> tuple[int, str]:
        url = f"http://127.0.0.1:{self.port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        status, body = self.get("/metrics")
        assert status == 200
        return samples(body)

    def lines(self, needle: str) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if needle in line]


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[Callable[[Path], Exporter]]:
    started: list[Exporter] = []

    def start(spool_dir: Path) -> Exporter:
        port = free_port()
        log = tmp_path / f"exporter-{port}.log"
        config = tmp_path / "config.yaml"
        config.write_text(f"exporter: {{listen: '127.0.0.1:{port}'}}\n")
        with log.open("w") as sink:
            process = subprocess.Popen(
                [*CLI, "--config", str(config), "exporter", "--spool-dir", str(spool_dir)],
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        running = Exporter(process, port, log)
        started.append(running)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                running.get("/healthz", timeout=2)
                return running
            except OSError:
                assert process.poll() is None, log.read_text()
                time.sleep(0.1)
        pytest.fail("exporter did not start: " + log.read_text())

    yield start
    for running in started:
        running.process.kill()
        running.process.wait(timeout=10)


def _good_spool(spool_dir: Path) -> None:
    spool.write(spool_dir, "alpha", 15, lambda: [_gauge("agentwatch_alpha_things", 3)])


def _fifo(path: Path, tmp: Path) -> None:
    os.mkfifo(path)


def _huge(path: Path, tmp: Path) -> None:
    with path.open("wb") as handle:  # sparse: 100 MB that costs no disk
        handle.truncate(100 * 1024 * 1024)


def _ssh_key(path: Path, tmp: Path) -> None:
    key = tmp / "id_ed25519"
    key.write_text("\n".join(KEY_LINES) + "\n")
    path.symlink_to(key)


def _bad_utf8(path: Path, tmp: Path) -> None:
    path.write_bytes(b'# TYPE agentwatch_b gauge\nagentwatch_b{k="\xff\xfe"} 1\n')


def _counter_clash(path: Path, tmp: Path) -> None:  # `t_total` claimed by two families
    path.write_text(
        "# TYPE agentwatch_t counter\nagentwatch_t_total 1\n"
        "# TYPE agentwatch_t_total gauge\nagentwatch_t_total 2\n"
    )


def _summary(path: Path, tmp: Path) -> None:  # would need quantiles to be promtool-clean
    path.write_text("# TYPE agentwatch_t summary\nagentwatch_t_count 1\nagentwatch_t 2\n")


HOSTILE: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "dev-zero": (lambda path, tmp: path.symlink_to("/dev/zero"), "not_regular"),
    "dev-urandom": (lambda path, tmp: path.symlink_to("/dev/urandom"), "not_regular"),
    "fifo": (_fifo, "not_regular"),
    "directory": (lambda path, tmp: path.mkdir(), "not_regular"),
    "100mb": (_huge, "too_large"),
    "ssh-key": (_ssh_key, "malformed"),
    "bad-utf8": (_bad_utf8, "bad_utf8"),
    "counter-total-clash": (_counter_clash, "bad_family"),
    "summary": (_summary, "bad_family"),
    "unknown-type": (lambda path, tmp: path.write_text("# TYPE t bogus\nt 1\n"), "malformed"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_spool_file_is_that_files_error_only(
    case: str, tmp_path: Path, exporter: Callable[[Path], Exporter]
) -> None:
    make, reason = HOSTILE[case]
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    _good_spool(spool_dir)
    make(spool_dir / "x.prom", tmp_path)
    running = exporter(spool_dir)
    for _ in range(3):  # several scrapes: one rejection, one log line
        found = running.metrics()
    assert found[("agentwatch_alpha_things", ())] == 3
    assert found[("agentwatch_sentinel_up", (("sentinel", "alpha"),))] == 1
    assert found[("agentwatch_sentinel_file_error", (("sentinel", "x"),))] == 1
    assert found[("agentwatch_sentinel_file_error", (("sentinel", "alpha"),))] == 0
    assert found[("agentwatch_exporter_spool_rejections_total", (("reason", reason),))] == 1
    status, health = running.get("/healthz")
    assert status == 200
    [entry] = [item for item in json.loads(health)["sentinels"] if item["sentinel"] == "x"]
    assert entry["up"] is False and entry["error"]
    assert len(running.lines("x.prom left out of the scrape")) == 1
    assert running.lines("Traceback") == []
    assert promtool_problems(running.get("/metrics")[1]) == ""


def test_a_symlinked_key_discloses_nothing(
    tmp_path: Path, exporter: Callable[[Path], Exporter]
) -> None:
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    _ssh_key(spool_dir / "keys.prom", tmp_path)
    running = exporter(spool_dir)
    shown = [running.get(path)[1] for path in ("/", "/healthz", "/metrics")]
    shown.append(running.log.read_text())
    for text in shown:
        for secret in ("OPENSSH", "b3BlbnNzaC1rZXktdjEAAAAA", "QyNTUxOQ", "secretsecret"):
            assert secret not in text
    [entry] = [item for item in json.loads(shown[1])["sentinels"] if item["sentinel"] == "keys"]
    assert entry["error"] == "line 1: not valid exposition text"


def test_a_carriage_return_in_a_label_value_keeps_the_file(
    tmp_path: Path, exporter: Callable[[Path], Exporter]
) -> None:
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    # What a producer without sanitize.label_value wrote before the writer escaped it.
    (spool_dir / "raw.prom").write_bytes(
        b'# HELP agentwatch_cr x\n# TYPE agentwatch_cr gauge\nagentwatch_cr{model="c\rr"} 1\n'
    )
    running = exporter(spool_dir)
    found = running.metrics()
    assert found[("agentwatch_cr", (("model", "c\rr"),))] == 1
    assert found[("agentwatch_sentinel_file_error", (("sentinel", "raw"),))] == 0
    assert promtool_problems(running.get("/metrics")[1]) == ""


COUNTER_CLASHES = {
    # (first file, second file): a counter's `_total` name against another family's
    "total-gauge": ("# TYPE agentwatch_t counter\nagentwatch_t 1\n",
                    "# TYPE agentwatch_t_total gauge\nagentwatch_t_total 2\n"),
    "untyped-total": ("# TYPE agentwatch_t_total counter\nagentwatch_t_total 1\n",
                      "agentwatch_t_total 2\n"),
    "created": ("# TYPE agentwatch_t counter\nagentwatch_t_total 1\nagentwatch_t_created 9\n",
                "# TYPE agentwatch_t_created gauge\nagentwatch_t_created 2\n"),
    "gauge-vs-counter": ("# TYPE agentwatch_t gauge\nagentwatch_t 1\n",
                         "# TYPE agentwatch_t counter\nagentwatch_t_total 2\n"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(COUNTER_CLASHES))
def test_counter_name_clashes_between_files_keep_the_merged_body_promtool_clean(
    case: str, tmp_path: Path, exporter: Callable[[Path], Exporter]
) -> None:
    first, second = COUNTER_CLASHES[case]
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    (spool_dir / "a.prom").write_text(first)
    (spool_dir / "b.prom").write_text(second)
    running = exporter(spool_dir)
    status, body = running.get("/metrics")
    assert status == 200
    found = samples(body)
    assert found[("agentwatch_sentinel_file_error", (("sentinel", "a"),))] == 0
    assert found[("agentwatch_sentinel_file_error", (("sentinel", "b"),))] == 1
    assert found[("agentwatch_exporter_spool_rejections_total", (("reason", "clash"),))] == 1
    assert len(running.lines("b.prom left out of the scrape")) == 1
    assert promtool_problems(body) == ""


def test_slow_clients_cannot_exhaust_the_threads(
    tmp_path: Path, exporter: Callable[[Path], Exporter]
) -> None:
    """The shipped unit has TasksMax=64: 100 connections trickling their headers must
    neither add threads nor hold up a scrape."""
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    _good_spool(spool_dir)
    running = exporter(spool_dir)
    threads_before = psutil.Process(running.process.pid).num_threads()
    slow = []
    try:
        for _ in range(100):
            sock = socket.create_connection(("127.0.0.1", running.port), timeout=10)
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
            slow.append(sock)
        for sock in slow:
            sock.sendall(b"X-Slow: 1\r\n")
        status, body = running.get("/metrics", timeout=10)  # a scrape_timeout
        assert status == 200 and "agentwatch_alpha_things 3.0" in body
        assert psutil.Process(running.process.pid).num_threads() == threads_before < 64
    finally:
        for sock in slow:
            sock.close()
    assert running.lines("Traceback") == []


def test_a_counter_typed_without_its_total_suffix_is_served_once(
    tmp_path: Path, exporter: Callable[[Path], Exporter]
) -> None:
    """`# TYPE t counter` then `t_total`: valid text the library parser splits in two."""
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    (spool_dir / "c.prom").write_text(
        "# HELP agentwatch_t help\n# TYPE agentwatch_t counter\n"
        'agentwatch_t_total{k="a"} 1\nagentwatch_t_total{k="b"} 2\n'
    )
    running = exporter(spool_dir)
    status, body = running.get("/metrics")
    assert status == 200
    assert body.count("# TYPE agentwatch_t_total counter\n") == 1
    found = samples(body)
    assert found[("agentwatch_t_total", (("k", "a"),))] == 1
    assert found[("agentwatch_t_total", (("k", "b"),))] == 2
    assert found[("agentwatch_sentinel_file_error", (("sentinel", "c"),))] == 0
    assert promtool_problems(body) == ""
