"""The controller's cycle: bad answers degrade to hold/fallback without a crash, decisions
are logged once per change with their reasons, memory carries over between runs."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import requests
import responses

from agentwatch.controller import server
from agentwatch.controller.hooks import WebhookAdapter
from agentwatch.controller.main import Controller, settings_from
from agentwatch.controller.metrics import families
from agentwatch.core import spool
from agentwatch.core.spool import render
from agentwatch.exporter.collector import SpoolCollector
from agentwatch.sentinels import registry
from tests.conftest import free_port, samples

AM = "http://127.0.0.1:19193"


def alert(name: str, action: str) -> dict:
    return {
        "labels": {"alertname": name, "agentwatch_action": action},
        "fingerprint": name,
        "status": {"state": "active", "silencedBy": [], "inhibitedBy": []},
    }


def make(tmp_path: Path, **controller: object) -> Controller:
    cfg = registry.config_from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "controller": {"max_agents": 4, "hold_for": 60, "alertmanagers": [AM]} | controller,
        }
    )
    section = cfg["controller"]
    return Controller(
        cfg,
        settings_from(section),
        [AM],
        tmp_path / "c.json",
        None,
        {},
        spool_dir=tmp_path / "spool",
        state_dir=tmp_path / "state",
    )


def public(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "c.json").read_text())


@responses.activate
def test_garbage_answers_hold_then_fall_back_and_never_raise(tmp_path: Path) -> None:
    responses.get(f"{AM}/api/v2/alerts", json=[alert("AgentwatchHostLoadHigh", "pause")])
    controller = make(tmp_path)
    controller.cycle(now=1000)
    assert public(tmp_path)["paused"] is True
    for fault in ({"body": "]]"}, {"json": {"x": 1}}, {"status": 500}, {"status": 401}):
        responses.replace(responses.GET, f"{AM}/api/v2/alerts", **fault)
        controller.cycle(now=1030)
        held = public(tmp_path)
        assert (held["mode"], held["paused"]) == ("holding", True)
    controller.cycle(now=1061)
    fallen = public(tmp_path)
    assert fallen["mode"] == "fallback" and fallen["max_agents"] == 1 and fallen["paused"]
    assert not controller.cycle_gate.failing, "bad input is handled, not an exception"


@responses.activate
def test_each_change_is_logged_once_with_its_reasons(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    responses.get(f"{AM}/api/v2/alerts", json=[])
    controller = make(tmp_path)
    with caplog.at_level(logging.INFO, "agentwatch.controller"):
        controller.cycle(now=0)
        controller.cycle(now=10)
        responses.replace(
            responses.GET, f"{AM}/api/v2/alerts", json=[alert("AgentwatchErrorRatioHigh", "shrink")]
        )
        controller.cycle(now=20)
        controller.cycle(now=30)
        controller.cycle(now=40)
    lines = [r.message for r in caplog.records if r.message.startswith("decision")]
    assert len(lines) == 2, lines
    assert lines[0].startswith("decision: max_agents 4")
    assert lines[1].startswith("decision changed (shrink): max_agents 3")
    assert lines[1].endswith("because: AgentwatchErrorRatioHigh")


@responses.activate
def test_memory_and_counters_carry_over_between_once_runs(tmp_path: Path) -> None:
    responses.get(f"{AM}/api/v2/alerts", json=[alert("AgentwatchErrorRatioHigh", "shrink")])
    first = make(tmp_path, shrink_cooldown=100)
    first.cycle(now=0)
    second = make(tmp_path, shrink_cooldown=100)  # a new process, as with --once
    second.cycle(now=50)
    assert public(tmp_path)["max_agents"] == 3, "the cooldown survived the restart"
    third = make(tmp_path, shrink_cooldown=100)
    third.cycle(now=100)
    assert public(tmp_path)["max_agents"] == 2
    series = samples(render(families(third.view)))
    assert series[("agentwatch_controller_decisions_total", (("reason", "shrink"),))] == 2
    assert series[("agentwatch_controller_last_success_timestamp_seconds", ())] == 100


@responses.activate
def test_unusable_alerts_warn_once_per_episode(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    responses.get(f"{AM}/api/v2/alerts", json=[alert("AgentwatchOdd", "reboot")])
    controller = make(tmp_path)
    with caplog.at_level(logging.WARNING, "agentwatch.controller"):
        for now in range(0, 50, 10):
            controller.cycle(now=now)
    assert len([r for r in caplog.records if "AgentwatchOdd" in r.message]) == 1
    series = samples(render(families(controller.view)))
    assert series[("agentwatch_controller_alerts", (("state", "unknown_action"),))] == 1
    assert public(tmp_path)["reasons"] == []


def test_an_unwritable_state_file_is_reported_not_fatal(tmp_path: Path) -> None:
    blocker = tmp_path / "c.json"
    blocker.mkdir()  # a directory where the file should be
    controller = make(tmp_path)
    with responses.RequestsMock() as mocked:
        mocked.get(f"{AM}/api/v2/alerts", json=[])
        controller.cycle(now=0)
    assert controller.write_gate.failing and not controller.cycle_gate.failing
    assert controller.board.read()[0], "/throttle still serves the decision"


def test_the_exporter_serves_controller_prom_without_clashes(tmp_path: Path) -> None:
    controller = make(tmp_path)
    with responses.RequestsMock() as mocked:
        mocked.get(f"{AM}/api/v2/alerts", json=[alert("AgentwatchHostLoadHigh", "pause")])
        controller.cycle(now=0)
    spool.write(tmp_path / "spool", "controller", 15, lambda: families(controller.view))
    merged, health = SpoolCollector(tmp_path / "spool").snapshot()
    assert [(h.sentinel, h.error) for h in health] == [("controller", None)]
    assert "agentwatch_controller_paused" in {family.name for family in merged}


def test_throttle_endpoint_is_503_until_the_first_decision(tmp_path: Path) -> None:
    board = server.Board()
    listen = f"127.0.0.1:{free_port()}"
    http = server.start(board, listen)
    try:
        assert requests.get(f"http://{listen}/throttle", timeout=5).status_code == 503
        board.publish({"max_agents": 2})
        answer = requests.get(f"http://{listen}/throttle", timeout=5)
        assert answer.status_code == 200 and answer.json() == {"max_agents": 2}
        assert requests.get(f"http://{listen}/other", timeout=5).status_code == 404
    finally:
        http.shutdown()
        http.server_close()


def test_a_hand_edited_memory_does_not_break_the_cycle(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(
        json.dumps(
            {
                "max_agents": 2,
                "internal": {
                    "policy": {"level": "three", "breaker": "melted", "nudges": [[1, 2]]},
                    "counters": {"decisions": {"shrink": "many", "grow": 2}},
                    "adapter": {"webhook": {"failures": "x", "digest": 3}},
                    "nudge": {"panes": {"no-tab": {}, "s\t%1": {"sent_at": "soon"}}},
                },
            }
        )
    )
    hook = "http://127.0.0.1:18099/hook"
    cfg = registry.config_from_mapping({"controller": {"alertmanagers": [AM]}})
    controller = Controller(
        cfg, settings_from(cfg["controller"]), [AM], tmp_path / "c.json",
        WebhookAdapter(hook, None, timeout=1), {},
    )  # fmt: skip
    with responses.RequestsMock() as mocked:
        mocked.get(f"{AM}/api/v2/alerts", json=[])
        mocked.post(hook, json={})
        controller.cycle(now=0)
    assert not controller.cycle_gate.failing
    saved = public(tmp_path)
    assert saved["max_agents"] == 4 and saved["breaker"] == "closed"
    assert saved["internal"]["counters"]["decisions"] == {"grow": 2}
    assert saved["internal"]["nudge"]["panes"] == {}


@responses.activate
def test_a_cycle_counts_the_ledgers_spend_and_escalates_an_old_burn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    burn = alert("AgentwatchProjectTokenBurn", "burn")
    burn["labels"] |= {"project": "shop", "burn_kind": "heavy_work"}
    burn |= {"startsAt": "2027-01-15T08:00:00.5Z", "annotations": {"rate": "40000"}}
    responses.get(f"{AM}/api/v2/alerts", json=[burn])
    (tmp_path / "spool").mkdir()
    (tmp_path / "spool" / "token-ledger.prom").write_text(
        '# TYPE agentwatch_spend_usd gauge\nagentwatch_spend_usd{period="day"} 19\n'
    )
    controller = make(tmp_path, budget_usd=20)
    with caplog.at_level(logging.INFO, "agentwatch.controller"):
        controller.cycle(now=1_800_000_000 + 600)
        assert public(tmp_path)["max_agents"] == 4, "young: a message only"
        controller.cycle(now=1_800_000_000 + 901)
    assert public(tmp_path)["max_agents"] == 3
    notes = [r.message for r in caplog.records if r.message.startswith("burn ")]
    assert notes == [
        "burn AgentwatchProjectTokenBurn project=shop unacknowledged for 15m: shrink to 3"
    ]
    series = samples(render(families(controller.view)))
    assert series[("agentwatch_budget_spent_usd", (("period", "day"),))] == 19
    assert series[("agentwatch_budget_remaining_usd", ())] == 1
    assert series[("agentwatch_controller_decisions_total", (("reason", "burn_shrink"),))] == 1
    internal = public(tmp_path)["internal"]["policy"]["burns"]
    assert [(b["project"], b["pre_rate"], b["step"]) for b in internal] == [
        ("shop", 40000.0, "shrink")
    ]
