"""The demo's story lines: each step of each loop once, only when both the alert and the
controller's decision show it."""

from __future__ import annotations

from typing import Any

from agentwatch.cli.demo_story import Story

NOW = 1_800_000_000.0


def _alert(name: str, status: str = "active", **labels: str) -> dict[str, Any]:
    return {"labels": {"alertname": name, **labels}, "status": {"state": status},
            "annotations": {"summary": f"{name} summary"}}  # fmt: skip


def test_the_burn_loop_is_told_once_per_step() -> None:
    story = Story()
    burn = _alert("AgentwatchSessionTokenBurn", session="s1", project="data-pipeline",
                  burn_kind="heavy_work")  # fmt: skip
    first = story.observe([burn], {"actions": {}}, {}, NOW)
    assert first == ["burn: AgentwatchSessionTokenBurn fired for session s1 of data-pipeline "
                     "(heavy_work)"]  # fmt: skip
    assert story.observe([burn], {"actions": {}}, {}, NOW) == []
    shrunk = {"actions": {"shrink": ["AgentwatchSessionTokenBurn"]}, "max_agents": 3}
    assert story.observe([burn], shrunk, {}, NOW) == [
        "burn: still unacknowledged, so the controller shrank max_agents to 3"
    ]
    due = {("agentwatch_controller_burn_verify_due_timestamp_seconds", ()): NOW,
           ("agentwatch_controller_burn_pre_throttle_rate", ()): 4e7,
           ("agentwatch_controller_burn_target_rate", ()): 2e7}  # fmt: skip
    assert story.observe([burn], shrunk, due, NOW + 30, effect=0.3) == []  # not settled yet
    assert story.observe([burn], shrunk, due, NOW + 120, effect=0.8) == []  # still burning
    ineffective = _alert("AgentwatchBurnThrottleIneffective", project="data-pipeline")
    told = story.observe([burn, ineffective], shrunk, due, NOW + 130, effect=0.8)
    assert told == ["burn: verifier: the throttle did not slow the burn down "
                    "(AgentwatchBurnThrottleIneffective fired)"]  # fmt: skip
    assert story.observe([burn, ineffective], shrunk, due, NOW + 140, effect=0.1) == []


def test_a_throttle_that_worked_is_judged_from_the_effect() -> None:
    story = Story(told={"burn.fired", "burn.shrink"})
    due = {("agentwatch_controller_burn_verify_due_timestamp_seconds", ()): NOW,
           ("agentwatch_controller_burn_pre_throttle_rate", ()): 4e7,
           ("agentwatch_controller_burn_target_rate", ()): 2e7}  # fmt: skip
    assert story.observe([], {}, due, NOW + 120, effect=0.25) == [
        "burn: verifier: the rate fell to 25% of its pre-throttle rate: the throttle worked"
    ]


def test_a_nudge_seen_in_the_same_look_as_the_stall_counts() -> None:
    story = Story()
    none = {("agentwatch_controller_nudges_total", (("result", "sent"),)): 0.0}
    assert story.observe([], {}, none, NOW) == []
    stall = _alert("AgentwatchSessionStalledOnError", pane="%2", state="api_error")
    sent = {("agentwatch_controller_nudges_total", (("result", "sent"),)): 1.0}
    assert story.observe([stall], {}, sent, NOW) == [
        "stall: pane %2 stuck on api_error",
        "stall: the controller nudged the pane",
    ]


def test_a_silenced_alert_tells_nothing() -> None:
    story = Story()
    silenced = _alert("AgentwatchSessionTokenBurn", status="suppressed", project="p")
    assert story.observe([silenced], {}, {}, NOW) == []
    assert story.observe(None, None, {}, NOW) == []
    assert story.observe(["junk", {"labels": 1}], {}, {}, NOW) == []


def test_stall_nudge_resume() -> None:
    story = Story()
    stall = _alert("AgentwatchSessionStalledOnError", pane="%2", state="api_error")
    assert story.observe([stall], {}, {}, NOW) == ["stall: pane %2 stuck on api_error"]
    sent = {("agentwatch_controller_nudges_total", (("result", "sent"),)): 1.0}
    assert story.observe([stall], {}, sent, NOW) == ["stall: the controller nudged the pane"]
    assert story.observe(None, {}, sent, NOW) == []  # Alertmanager not answering: no news
    assert story.observe([], {}, sent, NOW) == ["stall: pane %2 resumed (its alert resolved)"]


def test_a_resume_waits_for_its_nudge_to_show() -> None:
    story = Story()
    none = {("agentwatch_controller_nudges_total", (("result", "sent"),)): 0.0}
    sent = {("agentwatch_controller_nudges_total", (("result", "sent"),)): 1.0}
    stall = _alert("AgentwatchSessionStalledOnError", pane="%2", state="api_error")
    assert story.observe([], {}, none, NOW) == []
    assert story.observe([stall], {}, none, NOW) == ["stall: pane %2 stuck on api_error"]
    assert story.observe([], {}, none, NOW + 2) == []  # resolved before the nudge showed
    assert story.observe([], {}, sent, NOW + 4) == [
        "stall: the controller nudged the pane",
        "stall: pane %2 resumed (its alert resolved)",
    ]
    other = Story()
    other.observe([], {}, none, NOW)
    other.observe([stall], {}, none, NOW)
    assert other.observe([], {}, none, NOW + 1) == []
    assert other.observe([], {}, none, NOW + 31) == ["stall: pane %2 resumed (its alert resolved)"]


def test_quota_and_budget_need_the_decision_too() -> None:
    story = Story()
    quota = _alert("AgentwatchQuotaElevated", window="five_hour", source="blocks")
    assert story.observe([quota], {"deferred_tiers": []}, {}, NOW) == []
    assert story.observe([quota], {"deferred_tiers": ["opus"]}, {}, NOW) == [
        "quota: AgentwatchQuotaElevated summary (window five_hour, from blocks): "
        "the controller deferred opus"
    ]
    budget = _alert("AgentwatchBudgetCritical")
    assert story.observe([budget], {"paused": False}, {}, NOW) == []
    assert story.observe([budget], {"paused": True}, {}, NOW) == [
        "budget: AgentwatchBudgetCritical summary: the controller paused spawning"
    ]
    spent = _alert("AgentwatchBudgetExhausted")
    assert story.observe([budget, spent], {"paused": True, "should_stop": True}, {}, NOW) == [
        "budget: AgentwatchBudgetExhausted summary: the controller told the orchestrator to "
        "drain and stop"
    ]
