"""The burn runbook and growth in the pure policy, fake clock: an unacknowledged burn shrinks,
then pauses; an acknowledged one never escalates; a restart keeps the throttle's start; the
level grows only while a grow alert is active and never saw-tooths."""

from __future__ import annotations

import itertools
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from agentwatch.controller import state
from agentwatch.controller.alerts import Alert, parse_alert, parse_rate, parse_time
from agentwatch.controller.metrics import View, families
from agentwatch.controller.policy import Settings, State, decide, initial
from agentwatch.core.spool import render
from tests.conftest import samples

S = Settings(max_agents=6, min_agents=1, shrink_cooldown=100, grow_sustain=120)
T0 = 1_800_000_000.0  # the burn alert's startsAt
STARTS = "2027-01-15T08:00:00Z"
assert parse_time(STARTS) == T0
PROMTOOL = shutil.which("promtool")


def burn_alert(session: str = "s-1", rate: float | None = 52000.0, silenced: bool = False) -> Alert:
    labels = {
        "alertname": "AgentwatchSessionTokenBurn",
        "agentwatch_action": "burn",
        "burn_kind": "retry_loop",
        "project": "shop",
    }
    if session:
        labels["session"] = session
    return Alert(
        name=labels["alertname"],
        labels=labels,
        fingerprint=f"burn-{session}",
        starts_at=STARTS,
        silenced=silenced,
        rate=rate,
    )


def grow() -> Alert:
    labels = {"alertname": "AgentwatchErrorRatioLow", "agentwatch_action": "grow"}
    return Alert(name=labels["alertname"], labels=labels, fingerprint="grow")


def shrink() -> Alert:
    labels = {"alertname": "AgentwatchErrorRatioHigh", "agentwatch_action": "shrink"}
    return Alert(name=labels["alertname"], labels=labels, fingerprint="shrink")


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("2027-01-15T08:00:00Z", T0),
        ("2027-01-15T08:00:00.250000000Z", T0 + 0.25),
        ("2027-01-15T09:30:00+01:30", T0),
        ("2027-01-15T08:00:00", None),
        ("yesterday", None),
        ("2027-13-15T08:00:00Z", None),
        ("", None),
    ],
)
def test_starts_at_becomes_seconds_or_nothing(text: str, expect: float | None) -> None:
    assert parse_time(text) == expect


@pytest.mark.parametrize(
    ("value", "expect"),
    [("52000", 52000.0), ("1.5e4", 15000.0), ("NaN", None), ("-3", None), ("lots", None),
     (7, None), (None, None)],
)  # fmt: skip
def test_the_rate_annotation_is_a_number_or_ignored(value: object, expect: float | None) -> None:
    assert parse_rate(value) == expect


def test_alertmanager_json_keeps_start_and_rate_but_no_other_annotation() -> None:
    item = {
        "labels": {"alertname": "AgentwatchProjectTokenBurn", "agentwatch_action": "burn"},
        "annotations": {"rate": "9000", "summary": "some text"},
        "startsAt": STARTS,
        "status": {"state": "active", "silencedBy": [], "inhibitedBy": []},
    }
    parsed = parse_alert(item)
    assert (parsed.started, parsed.rate) == (T0, 9000.0)
    assert parse_alert(item | {"annotations": {"rate": "fast"}, "startsAt": 3}).rate is None
    assert parse_alert(item | {"startsAt": 3}).started is None


def test_an_unacknowledged_burn_shrinks_after_escalate_after_then_pauses() -> None:
    state_ = initial(S)
    seen: list[State] = []
    for offset in (0, 600, 899, 900, 950, 1000, 1100, 1799, 1800, 1900):
        state_ = decide(state_, [burn_alert()], T0 + offset, S)
        seen.append(state_)
    levels = [s.level for s in seen]
    assert levels[:3] == [6, 6, 6], "a message first: no throttle before escalate_after"
    assert levels[3:8] == [5, 5, 4, 3, 2], "then one step per shrink_cooldown"
    assert seen[8].paused and seen[8].effective_max_agents == 0
    assert levels[8:] == [2, 2], "the pause holds the level (no further shrink)"
    assert seen[3].changes == ("shrink", "burn_shrink")
    assert seen[3].notes == (
        "burn AgentwatchSessionTokenBurn session=s-1 unacknowledged for 15m: shrink to 5",
    )
    assert seen[8].changes == ("pause", "burn_pause")
    assert seen[8].notes == (
        "burn AgentwatchSessionTokenBurn session=s-1 unacknowledged for 30m: pause (no new agents)",
    )
    assert all(not s.notes for i, s in enumerate(seen) if i not in (3, 8)), "logged once each"
    (burn,) = seen[-1].burns
    assert (burn.throttled_at, burn.pre_rate, burn.step) == (T0 + 900, 52000.0, "pause")
    assert seen[-1].actions["pause"] == ("AgentwatchSessionTokenBurn",)


@pytest.mark.parametrize("how", ["silenced", "unknown start"])
def test_an_acknowledged_burn_or_one_of_unknown_age_never_escalates(how: str) -> None:
    alert = burn_alert(silenced=True)
    if how == "unknown start":
        alert = Alert(alert.name, alert.labels, alert.fingerprint, starts_at="garbage")
    state_ = initial(S)
    for offset in range(0, 4000, 100):
        state_ = decide(state_, [alert], T0 + offset, S)
        assert state_.level == 6 and not state_.paused and state_.burns == ()


def test_acknowledging_after_the_escalation_stops_throttling_further() -> None:
    state_ = decide(initial(S), [burn_alert()], T0 + 900, S)
    assert state_.level == 5
    acked = decide(state_, [burn_alert(silenced=True)], T0 + 2000, S)
    assert acked.level == 5 and not acked.paused, "no further shrink, no pause"
    assert [b.active for b in acked.burns] == [False], "kept for the verifier, not escalating"


def test_a_restart_keeps_the_throttle_start_and_logs_no_second_escalation(
    tmp_path: Path,
) -> None:
    path = tmp_path / "controller.json"
    first = decide(initial(S), [burn_alert()], T0 + 900, S)
    memory = state.Memory(policy=first)
    state.write(path, state.document(state.decision(first, S, (0.0, "default")), memory))
    again = state.load(path, S).policy
    assert again.burns == first.burns
    after = decide(again, [burn_alert(rate=10.0)], T0 + 960, S)
    (burn,) = after.burns
    assert (burn.throttled_at, burn.pre_rate) == (T0 + 900, 52000.0), "not restarted"
    assert after.notes == () and "burn_shrink" not in after.changes


def test_an_entry_is_forgotten_once_its_alert_is_gone_and_verify_after_passed() -> None:
    throttled = decide(initial(S), [burn_alert()], T0 + 900, S)
    gone = decide(throttled, [], T0 + 1000, S)
    assert [b.active for b in gone.burns] == [False], "kept: the verification is due at +300"
    assert decide(gone, [], T0 + 1199, S).burns != ()
    assert decide(gone, [], T0 + 1200, S).burns == ()
    still = decide(throttled, [burn_alert(silenced=True)], T0 + 5000, S)
    assert still.burns != (), "an alert still firing (acknowledged) keeps its entry"


def test_a_project_burn_is_keyed_without_a_session() -> None:
    decided = decide(initial(S), [burn_alert(session="")], T0 + 900, S)
    assert [(b.project, b.session) for b in decided.burns] == [("shop", "")]
    assert decided.notes[0].startswith("burn AgentwatchSessionTokenBurn project=shop ")


def test_burn_metrics_pass_promtool() -> None:
    decided = decide(initial(S), [burn_alert(), burn_alert("s-2", rate=None)], T0 + 900, S)
    view = View(memory=state.Memory(policy=decided), settings=S)
    text = render(families(view))
    series = samples(text)
    labels = (("alertname", "AgentwatchSessionTokenBurn"), ("project", "shop"), ("session", "s-1"))
    assert series[("agentwatch_controller_burn_escalation", (*labels, ("step", "shrink")))] == 1
    assert series[("agentwatch_controller_burn_pre_throttle_rate", labels)] == 52000
    assert series[("agentwatch_controller_burn_target_rate", labels)] == 26000
    due = "agentwatch_controller_burn_verify_due_timestamp_seconds"
    assert series[(due, labels)] == T0 + 900 + 300
    no_rate = (*labels[:2], ("session", "s-2"))
    assert (due, no_rate) in series
    assert ("agentwatch_controller_burn_pre_throttle_rate", no_rate) not in series
    if PROMTOOL:
        lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, text=True,
                              capture_output=True, timeout=30)  # fmt: skip
        assert lint.returncode == 0, lint.stdout + lint.stderr


def test_without_a_grow_alert_the_level_holds() -> None:
    state_ = State(level=2)
    for now in range(0, 3000, 15):
        state_ = decide(state_, [], now, S)
    assert state_.level == 2
    for now in range(3000, 3000 + 120, 15):
        state_ = decide(state_, [grow()], now, S)
    assert state_.level == 2, "a full grow_sustain must pass first"
    assert decide(state_, [grow()], 3120, S).level == 3


@pytest.mark.parametrize("seed", range(8))
def test_error_spikes_never_saw_tooth(seed: int) -> None:
    """Random spikes of a shrink alert between stretches of a grow alert (and of neither):
    the level never rises while a shrink is active, rises one step at a time, at least
    grow_sustain apart, never leaves its bounds, and each shrink is one cooldown apart."""
    rng = random.Random(seed)
    state_ = initial(S)
    now = 0.0
    ups: list[float] = []
    downs: list[float] = []
    for _ in range(400):
        now += rng.choice((5, 15, 15, 30, 60))
        alerts = rng.choices([[shrink()], [grow()], [], [shrink(), grow()]], [2, 5, 2, 1])[0]
        new = decide(state_, alerts, now, S)
        delta = new.level - state_.level
        assert delta in (-1, 0, 1) and S.min_agents <= new.level <= S.max_agents
        if delta > 0:
            assert shrink() not in alerts and grow() in alerts
            ups.append(now)
        if delta < 0:
            assert shrink() in alerts
            downs.append(now)
        state_ = new
    assert ups and downs, "the sequence exercised both directions"
    assert all(b - a >= S.grow_sustain for a, b in itertools.pairwise(ups))
    assert all(b - a >= S.shrink_cooldown for a, b in itertools.pairwise(downs))
