"""The controller's inputs and files: Alertmanager reads (faults through `responses`), the
budget cap precedence, the state file and the client's safe default."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
import requests
import responses

from agentwatch.controller import client, state
from agentwatch.controller.alerts import AlertReader, merge, parse_alerts
from agentwatch.controller.budget import ENV_VAR, BudgetResolver
from agentwatch.controller.policy import Settings, State, decide
from agentwatch.controller.web import redact

AM1, AM2 = "http://127.0.0.1:19093", "http://user:secret@127.0.0.1:19095"


def am_alert(name: str, action: str, fp: str, silenced: bool = False) -> dict:
    return {
        "labels": {"alertname": name, "agentwatch_action": action, "severity": "warning"},
        "annotations": {},
        "fingerprint": fp,
        "startsAt": "2026-01-01T00:00:00Z",
        "status": {
            "state": "suppressed" if silenced else "active",
            "silencedBy": ["s-1"] if silenced else [],
            "inhibitedBy": [],
        },
    }


@responses.activate
def test_reads_and_merges_an_ha_pair_by_fingerprint() -> None:
    shrink = am_alert("AgentwatchErrorRatioHigh", "shrink", "aa")
    pause = am_alert("AgentwatchHostLoadHigh", "pause", "bb")
    responses.get(f"{AM1}/api/v2/alerts", json=[shrink])
    responses.get(f"{AM2}/api/v2/alerts", json=[shrink, pause])
    snapshot = AlertReader([AM1, AM2], timeout=1).read()
    assert snapshot.alerts is not None
    assert [a.name for a in snapshot.alerts] == [
        "AgentwatchErrorRatioHigh",
        "AgentwatchHostLoadHigh",
    ]
    assert snapshot.up == {AM1: True, "http://127.0.0.1:19095": True}, "no credentials in labels"
    assert all(a.actionable for a in snapshot.alerts)


@responses.activate
def test_only_alerts_of_its_own_host_concern_a_controller() -> None:
    mine = am_alert("AgentwatchHostLoadHigh", "pause", "aa")
    theirs = am_alert("AgentwatchHostLoadHigh", "pause", "bb")
    mine["labels"]["instance"], theirs["labels"]["instance"] = "laptop-ana", "desk-bo"
    responses.get(f"{AM1}/api/v2/alerts", json=[mine, theirs])
    snapshot = AlertReader([AM1], timeout=1, match={"instance": "laptop-ana"}).read()
    assert snapshot.alerts is not None
    assert [a.labels["instance"] for a in snapshot.alerts] == ["laptop-ana"]


def test_a_silence_seen_by_either_peer_wins_the_merge() -> None:
    acked, _ = parse_alerts([am_alert("AgentwatchX", "shrink", "aa", silenced=True)])
    fresh, _ = parse_alerts([am_alert("AgentwatchX", "shrink", "aa")])
    for order in ([fresh, acked], [acked, fresh]):
        merged = merge(order)
        assert len(merged) == 1 and merged[0].silenced and not merged[0].actionable


@pytest.mark.parametrize(
    "fault",
    [
        {"status": 500, "body": "oops"},
        {"status": 401, "json": {"error": "no"}},
        {"status": 200, "body": "<html>not json"},
        {"status": 200, "json": {"data": []}},  # JSON, but not the v2 list
        {"body": requests.exceptions.ConnectTimeout("slow")},
        {"body": requests.exceptions.ConnectionError("refused")},
    ],
)
@responses.activate
def test_one_bad_peer_is_reported_and_the_other_carries_on(fault: dict) -> None:
    responses.get(f"{AM1}/api/v2/alerts", **fault)
    responses.get(f"{AM2}/api/v2/alerts", json=[am_alert("AgentwatchX", "pause", "aa")])
    reader = AlertReader([AM1, AM2], timeout=1)
    snapshot = reader.read()
    assert snapshot.up == {AM1: False, "http://127.0.0.1:19095": True}
    assert snapshot.alerts is not None and [a.action for a in snapshot.alerts] == ["pause"]
    assert reader.gates[AM1].failing


@responses.activate
def test_every_peer_down_gives_no_alerts_at_all_and_logs_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    responses.get(f"{AM1}/api/v2/alerts", status=503)
    reader = AlertReader([AM1], timeout=1)
    with caplog.at_level(logging.WARNING, "agentwatch.controller"):
        for _ in range(5):
            assert reader.read().alerts is None
    assert len([r for r in caplog.records if "failing" in r.message]) == 1


def test_malformed_elements_are_skipped_and_counted() -> None:
    good = am_alert("AgentwatchX", "shrink", "aa")
    bad = [42, {"labels": "x"}, {"labels": {"a": 1}}, {"labels": {}, "status": []}]
    alerts, malformed = parse_alerts([good, *bad])
    assert [a.name for a in alerts] == ["AgentwatchX"] and malformed == 4


def test_redact_strips_credentials_and_query() -> None:
    assert redact("https://u:p@am.example:9093/x?token=1#f") == "https://am.example:9093/x"


# --- budget -----------------------------------------------------------------------------


def run_config(tmp_path: Path, value: object) -> Path:
    path = tmp_path / "run_config.json"
    path.write_text(json.dumps({"per_run_max_cost_usd": value}))
    return path


@pytest.mark.parametrize(
    ("env", "file_value", "config", "expect"),
    [
        ("25", 40, 50, (25.0, "env")),
        ("0", 40, 50, (0.0, "env")),  # explicit unlimited
        ("-3", 40, 50, (0.0, "env")),
        ("  ", 40, 50, (40.0, "run_config")),  # blank env is ignored
        ("twenty", 40, 50, (40.0, "run_config")),  # invalid env warns, falls through
        ("nan", 40, 50, (40.0, "run_config")),
        (None, 0, 50, (50.0, "config")),  # 0 in the run config = not set there
        (None, -1, 50, (50.0, "config")),
        (None, "40", 50, (50.0, "config")),  # not a number: warns, falls through
        (None, None, 0, (0.0, "default")),
    ],
)
def test_budget_precedence(
    tmp_path: Path, env: str | None, file_value: object, config: float, expect: tuple
) -> None:
    resolver = BudgetResolver(run_config(tmp_path, file_value), config)
    assert resolver.resolve({ENV_VAR: env} if env is not None else {}) == expect


def test_budget_invalid_env_and_broken_file_warn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "run_config.json"
    broken.write_text("{not json")
    resolver = BudgetResolver(broken, 12.5)
    with caplog.at_level(logging.WARNING, "agentwatch.controller"):
        assert resolver.resolve({ENV_VAR: "1O"}) == (12.5, "config")
        assert resolver.resolve({ENV_VAR: "1O"}) == (12.5, "config")
    warnings = [r.message for r in caplog.records]
    assert len(warnings) == 2, warnings  # one per source, not one per cycle
    assert any(ENV_VAR in w for w in warnings) and any("run config" in w for w in warnings)
    assert BudgetResolver(tmp_path / "absent.json", 0).resolve({}) == (0.0, "default")


# --- state file and client ----------------------------------------------------------------


def test_state_file_round_trip_keeps_the_policy_memory(tmp_path: Path) -> None:
    s = Settings(max_agents=5, min_agents=1)
    decided = decide(State(level=5), [], 100, s)
    decided = decide(decided, [], 100, s)
    memory = state.Memory(policy=decided)
    memory.count("decisions", "shrink", 2)
    path = tmp_path / "controller.json"
    state.write(path, state.document(state.decision(decided, s, (9.0, "config")), memory))
    loaded = state.load(path, s)
    assert loaded.policy == decided
    assert loaded.counters == {"decisions": {"shrink": 2.0}}
    public = json.loads(path.read_text())
    for key in ("max_agents", "paused", "should_stop", "deferred_tiers", "breaker", "reasons"):
        assert key in public
    assert public["budget_limit_usd"] == 9.0 and public["updated_at"] == 100


@pytest.mark.parametrize(
    "content", ["", "{", "[]", '{"internal": 3}', '{"internal": {"policy": 1}}']
)
def test_a_bad_state_file_is_a_fresh_start(tmp_path: Path, content: str) -> None:
    path = tmp_path / "controller.json"
    path.write_text(content)
    loaded = state.load(path, Settings(max_agents=3))
    assert loaded.policy.level == 3 and loaded.counters == {}


def test_client_reads_the_state_file_and_defaults_safely(tmp_path: Path) -> None:
    s = Settings(max_agents=4)
    paused = decide(State(level=3), [], 0, s)
    path = tmp_path / "controller.json"
    now = time.time()
    public = state.decision(paused, s, (0.0, "default")) | {"paused": True, "updated_at": now}
    public["effective_max_agents"] = 0
    state.write(path, state.document(public, state.Memory(policy=paused)))
    throttle = client.read(path, default_max_agents=2, now=now + 5)
    assert throttle.available and throttle.paused and throttle.max_agents == 3
    assert not throttle.may_spawn(running=0)
    stale = client.read(path, default_max_agents=2, max_age=60, now=now + 61)
    assert not stale.available and stale.effective_max_agents == 2 and stale.may_spawn(1)
    missing = client.read(tmp_path / "nope.json", default_max_agents=2)
    assert (
        not missing.available
        and missing.max_agents == 2
        and "FileNotFoundError" in (missing.problem)
    )
    path.write_text("garbage")
    assert not client.read(path).available
    assert not client.read("http://127.0.0.1:1/throttle", timeout=0.5).available


def test_client_folds_flags_of_a_minimal_writer() -> None:
    now = 1000.0
    half = client.parse({"max_agents": 4, "breaker": "half_open", "updated_at": now}, 1, 60, now)
    assert half.effective_max_agents == 1 and half.available
    tiers = client.parse(
        {"max_agents": 4, "deferred_tiers": ["opus", "x"], "updated_at": now}, 1, None, now
    )
    assert not tiers.tier_allowed("opus") and tiers.tier_allowed("haiku")
    assert tiers.deferred_tiers == ("opus",)
