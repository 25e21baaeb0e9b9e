"""The controller fails safe against a hostile Alertmanager: every answer it cannot fully
validate is "no answer" (hold, then fallback), never "no alerts"; a body trickled byte by byte
cannot hold a cycle past `controller.timeout`. A real socket server misbehaves on purpose."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentwatch.controller.main import Controller, settings_from
from agentwatch.controller.metrics import families
from agentwatch.core.spool import render
from agentwatch.sentinels import registry
from tests.conftest import run_cli, samples


def pause_alert(name: str | None = "AgentwatchHostLoadHigh") -> dict:
    labels = {"agentwatch_action": "pause"} | ({"alertname": name} if name else {})
    return {
        "labels": labels,
        "fingerprint": "f00d" * 4,
        "status": {"state": "active", "silencedBy": [], "inhibitedBy": []},
    }


def answer(body: bytes, length: int | None = None) -> bytes:
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class BadAlertmanager:
    """A loopback HTTP server that answers every request as `mode` says: `json` (the body
    as given), `short` (Content-Length larger than what is sent, then close), `trickle`
    (a valid head, then one body byte every `trickle_every` seconds), `trickle_head` (the
    head itself, one byte every `trickle_every` seconds), `silent` (reads, never answers)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.mode = "json"
        self.body = b"[]"
        self.trickle_every = 0.5
        self.requests = 0
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def serve(self, mode: str, body: bytes | object = b"[]") -> None:
        self.mode = mode
        self.body = body if isinstance(body, bytes) else json.dumps(body).encode()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                request = b""
                while b"\r\n\r\n" not in request:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    request += chunk
                self.requests += 1
                if self.mode == "json":
                    conn.sendall(answer(self.body))
                elif self.mode == "short":
                    conn.sendall(answer(self.body[:10], length=len(self.body) + 1000))
                elif self.mode == "trickle":
                    conn.sendall(answer(b"", length=100_000))
                    while not self.stopped.wait(self.trickle_every):
                        conn.sendall(b" ")
                elif self.mode == "trickle_head":
                    conn.sendall(b"HTTP/1.1 200 OK\r\n")
                    while not self.stopped.wait(self.trickle_every):
                        conn.sendall(b"X")  # one endless header line
                elif self.mode == "silent":
                    self.stopped.wait()
            except OSError:
                return  # the client gave up: that is the point

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()


@pytest.fixture
def am() -> Iterator[BadAlertmanager]:
    server = BadAlertmanager()
    yield server
    server.close()


def make(tmp_path: Path, url: str, **controller: object) -> Controller:
    cfg = registry.config_from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "controller": {"max_agents": 4, "hold_for": 60, "timeout": 2, "alertmanagers": [url]}
            | controller,
        }
    )
    return Controller(cfg, settings_from(cfg["controller"]), [url], tmp_path / "c.json", None, {})


def public(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "c.json").read_text())


def errors(controller: Controller) -> dict[str, float]:
    series = samples(render(families(controller.view)))
    name = "agentwatch_controller_alertmanager_errors_total"
    return {dict(labels)["reason"]: v for (n, labels), v in series.items() if n == name and v}


DEEP = b"[" * 100_000 + b"]" * 100_000
HOSTILE = {
    "malformed-elements": ("json", json.dumps(["a", 1, None, {"labels": 5}]).encode(), "invalid"),
    "one-malformed-among-good": ("json", json.dumps([pause_alert(), 7]).encode(), "invalid"),
    "bad-state-value": (
        "json",
        json.dumps([pause_alert() | {"status": {"state": ["x"]}}]).encode(),
        "invalid",
    ),
    "deep-json": ("json", DEEP, "invalid"),
    "short-body": ("short", json.dumps([pause_alert()] * 5).encode(), "protocol"),
    "object-not-list": ("json", b'{"alerts": []}', "invalid"),
    "not-json": ("json", b"\xff\xfe[", "invalid"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_an_answer_it_cannot_validate_holds_then_falls_back(
    tmp_path: Path, am: BadAlertmanager, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    mode, body, reason = HOSTILE[case]
    am.serve("json", [pause_alert()])
    controller = make(tmp_path, am.url)
    controller.cycle(now=1000)
    assert public(tmp_path)["paused"] is True
    am.serve(mode, body)
    with caplog.at_level(logging.INFO, "agentwatch.controller"):
        for now in (1010, 1020, 1030):
            controller.cycle(now=now)
            held = public(tmp_path)
            assert (held["mode"], held["paused"]) == ("holding", True), "never 'no alerts'"
        controller.cycle(now=1061)
    fallen = public(tmp_path)
    assert (fallen["mode"], fallen["max_agents"], fallen["paused"]) == ("fallback", 1, True)
    assert not controller.cycle_gate.failing, "handled as no answer, not as a crash"
    assert errors(controller) == {reason: 4.0}
    failing = [r.message for r in caplog.records if "failing" in r.message]
    assert len(failing) == 1, failing
    assert failing[0].startswith(f"Alertmanager {am.url} failing: GET {am.url}")
    assert "no actionable alerts" not in caplog.text
    series = samples(render(families(controller.view)))
    assert series[("agentwatch_controller_alertmanager_up", (("alertmanager", am.url),))] == 0


def test_malformed_elements_are_counted_and_the_answer_refused(
    tmp_path: Path, am: BadAlertmanager
) -> None:
    am.serve("json", ["a", 1, None, {"labels": 5}])
    controller = make(tmp_path, am.url)
    controller.cycle(now=1000)
    series = samples(render(families(controller.view)))
    assert series[("agentwatch_controller_malformed_alerts_total", ())] == 4
    assert public(tmp_path)["mode"] == "fallback", "no success yet: straight to the fallback"


def test_a_trickled_body_is_cut_at_the_deadline(
    tmp_path: Path, am: BadAlertmanager, caplog: pytest.LogCaptureFixture
) -> None:
    am.serve("json", [pause_alert()])
    controller = make(tmp_path, am.url, timeout=1)
    controller.cycle(now=1000)
    am.serve("trickle")
    am.trickle_every = 0.2  # each byte well inside the socket timeout
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, "agentwatch.controller"):
        controller.cycle(now=1010)
    took = time.monotonic() - started
    assert took < 5, f"a 1 s deadline took {took:.1f}s"
    assert (public(tmp_path)["mode"], public(tmp_path)["paused"]) == ("holding", True)
    assert errors(controller) == {"timeout": 1.0}
    [line] = [r.message for r in caplog.records if "failing" in r.message]
    assert "took longer than 1s" in line


@pytest.mark.parametrize("mode", ["trickle_head", "silent"])
def test_a_trickled_or_missing_head_is_cut_at_the_deadline(
    tmp_path: Path, am: BadAlertmanager, caplog: pytest.LogCaptureFixture, mode: str
) -> None:
    am.serve("json", [pause_alert()])
    controller = make(tmp_path, am.url, timeout=1)
    controller.cycle(now=1000)
    am.serve(mode)
    am.trickle_every = 0.2
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, "agentwatch.controller"):
        controller.cycle(now=1010)
    took = time.monotonic() - started
    assert took < 3, f"a 1 s deadline took {took:.1f}s"
    assert (public(tmp_path)["mode"], public(tmp_path)["paused"]) == ("holding", True)
    assert errors(controller) == {"timeout": 1.0}
    [line] = [r.message for r in caplog.records if "failing" in r.message]
    assert "took longer than 1s" in line or "timed out after 1s" in line


@pytest.mark.slow
def test_once_against_a_trickling_alertmanager_ends_within_its_deadline(
    tmp_path: Path, am: BadAlertmanager
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        json.dumps({"controller": {"alertmanagers": [am.url], "timeout": "2s", "hold_for": 600}})
    )
    state, spool = tmp_path / "c.json", tmp_path / "spool"
    args = ("--config", str(config), "controller", "--once", "--state-file", str(state))
    am.serve("json", [pause_alert()])
    first = run_cli(*args, "--spool-dir", str(spool))
    assert first.returncode == 0, first.stderr
    assert json.loads(state.read_text())["paused"] is True
    am.serve("trickle")
    am.trickle_every = 1.0
    started = time.monotonic()
    second = run_cli(*args, "--spool-dir", str(spool), timeout=60)
    took = time.monotonic() - started
    assert second.returncode == 0, second.stderr
    assert took < 15, f"--once with a 2 s timeout took {took:.1f}s"  # startup included
    decided = json.loads(state.read_text())
    assert (decided["mode"], decided["paused"]) == ("holding", True)
    assert second.stderr.count("failing: GET") == 1, second.stderr
    assert "took longer than 2s" in second.stderr
    written = samples((spool / "controller.prom").read_text())
    key = ("agentwatch_controller_alertmanager_errors_total", (("reason", "timeout"),))
    assert written[key] == 1


def test_an_alert_without_a_name_is_logged_as_what_it_is(
    tmp_path: Path, am: BadAlertmanager, caplog: pytest.LogCaptureFixture
) -> None:
    am.serve("json", [pause_alert(name=None)])
    controller = make(tmp_path, am.url)
    with caplog.at_level(logging.INFO, "agentwatch.controller"):
        controller.cycle(now=1000)
    decided = public(tmp_path)
    assert decided["paused"] is True
    unnamed = "(alert without alertname, fingerprint f00df00df00df00d)"
    assert decided["reasons"] == [unnamed]
    [line] = [r.message for r in caplog.records if r.message.startswith("decision")]
    assert line.endswith(f"because: {unnamed}")
    assert "no actionable alerts" not in caplog.text


def test_control_characters_in_an_alert_name_do_not_reach_the_log(
    tmp_path: Path, am: BadAlertmanager, caplog: pytest.LogCaptureFixture
) -> None:
    am.serve("json", [pause_alert(name="Evil\r\n2026 INFO forged line" + "x" * 500)])
    controller = make(tmp_path, am.url)
    with caplog.at_level(logging.INFO, "agentwatch.controller"):
        controller.cycle(now=1000)
    [line] = [r.message for r in caplog.records if r.message.startswith("decision")]
    assert "\r" not in line and "\n" not in line and "Evil\\x0d\\x0a2026" in line
    assert len(line) < 600, "the name is capped"
