"""The controller's policy as a pure function of (previous state, alerts, time), fake clock."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from agentwatch.controller.alerts import Alert
from agentwatch.controller.policy import Settings, State, collect, decide, initial

S = Settings(
    max_agents=6,
    min_agents=2,
    shrink_cooldown=100,
    grow_sustain=300,
    breaker_cooldown=900,
    probe_window=200,
    hold_for=60,
)


def alert(
    name: str, action: str | None, silenced: bool = False, inhibited: bool = False, **labels: str
) -> Alert:
    all_labels = {"alertname": name, **labels}
    if action is not None:
        all_labels["agentwatch_action"] = action
    return Alert(
        name=name,
        labels=all_labels,
        fingerprint=f"fp-{name}-{sorted(labels.items())}",
        silenced=silenced,
        inhibited=inhibited,
    )


SHRINK = alert("AgentwatchErrorRatioHigh", "shrink")
PAUSE = alert("AgentwatchHostLoadHigh", "pause")
BREAKER = alert("AgentwatchRateLimited", "breaker")
STOP = alert("AgentwatchBudgetExhausted", "stop")
GROW = alert("AgentwatchErrorRatioLow", "grow")


def run(
    state: State, timeline: Sequence[tuple[float, list[Alert] | None]], s: Settings = S
) -> list[State]:
    """Apply decide() along a timeline; return every state."""
    states = []
    for now, alerts in timeline:
        state = decide(state, alerts, now, s)
        states.append(state)
    return states


def levels(states: list[State]) -> list[int]:
    return [state.level for state in states]


def test_initial_state_runs_as_configured() -> None:
    state = decide(initial(S), [], 0, S)
    assert (state.level, state.effective_max_agents, state.breaker) == (6, 6, "closed")
    assert not state.paused and not state.should_stop and state.reasons == ()
    assert state.changes == ()


def test_shrink_steps_once_per_cooldown_down_to_the_floor_and_stays() -> None:
    timeline = [(t, [SHRINK]) for t in range(0, 1000, 20)]
    states = run(initial(S), timeline)
    got = levels(states)
    assert got[0] == 5  # the first cycle with the alert acts at once
    assert got[:6] == [5, 5, 5, 5, 5, 4]  # then one step per 100 s cooldown, not per cycle
    assert got[-1] == S.min_agents
    assert all(b <= a for a, b in itertools.pairwise(got)), "no saw-tooth while active"
    assert all(level >= S.min_agents for level in got), "never below the floor"
    assert states[0].changes == ("shrink",) and states[0].reasons == ("AgentwatchErrorRatioHigh",)
    assert states[-1].changes == ()


def test_growth_with_a_grow_alert_one_step_per_sustain_period_up_to_the_maximum() -> None:
    shrunk = run(initial(S), [(t, [SHRINK]) for t in range(0, 500, 100)])[-1]
    assert shrunk.level == S.min_agents
    timeline = [(t, [GROW]) for t in range(500, 3000, 50)]
    states = run(shrunk, timeline)
    got = levels(states)
    assert got[0] == S.min_agents  # clear starts now; nothing grows yet
    grow_times = [now for (now, _), prev, cur in zip(timeline[1:], got, got[1:], strict=False)
                  if cur > prev]  # fmt: skip
    assert grow_times == [800, 1100, 1400, 1700]  # 300 s apart, one step each
    assert max(got) == S.max_agents and got[-1] == S.max_agents
    assert all(b - a in (0, 1) for a, b in itertools.pairwise(got)), "no snap-back"


def test_a_shrink_alert_during_recovery_restarts_the_sustain_period() -> None:
    state = State(level=3, last_shrink_at=0)
    timeline = [(1000, [GROW]), (1250, [SHRINK, GROW]), (1300, [GROW]), (1550, [GROW])]
    states = run(state, [*timeline, (1600, [GROW])])
    assert levels(states) == [3, 2, 2, 2, 3]


def test_floor_is_a_clamp_not_a_restore_target() -> None:
    """Bernstein's saw-tooth: the floor snapped back up to max // 2 while errors continued."""
    s = Settings(max_agents=8, min_agents=3, shrink_cooldown=10, grow_sustain=100)
    states = run(initial(s), [(t, [SHRINK]) for t in range(0, 400, 10)], s)
    got = levels(states)
    assert got[:6] == [7, 6, 5, 4, 3, 3] and set(got[5:]) == {3}


def test_runtime_change_of_the_bounds_applies_at_once() -> None:
    state = State(level=6)
    lowered = Settings(max_agents=4, min_agents=2)
    after = decide(state, [], 10, lowered)
    assert after.level == 4 and after.changes == ("limit",)
    raised_floor = Settings(max_agents=8, min_agents=5)
    assert decide(State(level=2), [], 10, raised_floor).level == 5


def test_pause_gates_spawning_and_restores_the_exact_level() -> None:
    state = State(level=4, clear_since=0)
    timeline = [(100, [PAUSE, GROW]), (500, [PAUSE, GROW]), (2000, [PAUSE, GROW]), (2010, [GROW])]
    states = run(state, timeline)
    paused = states[:3]
    assert all(s.paused and s.effective_max_agents == 0 for s in paused)
    assert levels(paused) == [4, 4, 4], "no growth while paused"
    assert states[0].changes == ("pause",) and states[0].actions["pause"] == (
        "AgentwatchHostLoadHigh",
    )
    resumed = states[3]
    assert not resumed.paused and resumed.level == 4 and resumed.effective_max_agents == 4
    assert resumed.changes == ("resume",)
    # growth starts only after a full sustain period past the pause
    assert decide(resumed, [GROW], 2010 + 299, S).level == 4
    assert decide(decide(resumed, [GROW], 2300, S), [GROW], 2310, S).level == 5


def test_shrink_during_a_pause_still_lowers_the_level_it_resumes_at() -> None:
    states = run(State(level=4), [(0, [PAUSE, SHRINK]), (50, [PAUSE]), (60, [])])
    assert levels(states) == [3, 3, 3] and states[-1].effective_max_agents == 3


def test_breaker_opens_then_half_open_probe_succeeds_and_closes() -> None:
    state = State(level=5)
    opened = decide(state, [BREAKER], 0, S)
    assert opened.breaker == "open" and opened.effective_max_agents == 0
    assert opened.changes == ("breaker_open",)
    # active beyond the cool-down: stays open
    assert decide(opened, [BREAKER], 1000, S).breaker == "open"
    # clear, but the cool-down (900 s from opening) has not passed
    assert decide(opened, [], 899, S).breaker == "open"
    half = decide(opened, [], 900, S)
    assert half.breaker == "half_open" and half.effective_max_agents == 1
    assert half.changes == ("breaker_half_open",)
    assert decide(half, [], 900 + 199, S).breaker == "half_open"
    closed = decide(half, [], 900 + 200, S)
    assert closed.breaker == "closed" and closed.effective_max_agents == 5
    assert closed.changes == ("breaker_closed",) and closed.level == 5


def test_breaker_probe_failure_reopens_for_a_full_cool_down() -> None:
    opened = decide(State(level=5), [BREAKER], 0, S)
    half = decide(decide(opened, [], 950, S), [], 960, S)
    assert half.breaker == "half_open"
    reopened = decide(half, [BREAKER], 1000, S)
    assert reopened.breaker == "open" and reopened.breaker_since == 1000
    assert reopened.changes == ("breaker_open",)
    assert decide(reopened, [], 1000 + 899, S).breaker == "open"
    assert decide(reopened, [], 1000 + 900, S).breaker == "half_open"


def test_breaker_holds_growth_back() -> None:
    state = State(level=3, clear_since=0)
    states = run(state, [(1000, [BREAKER, GROW]), (2000, [GROW]), (2200, [GROW])])
    assert levels(states) == [3, 3, 3] and states[-1].breaker == "closed"


def test_stop_drains_and_clears_with_the_alert() -> None:
    stopping = decide(State(level=4), [STOP], 0, S)
    assert stopping.should_stop and stopping.effective_max_agents == 0
    assert stopping.changes == ("stop",)
    cleared = decide(stopping, [], 10, S)
    assert not cleared.should_stop and cleared.changes == ("stop_cleared",)


@pytest.mark.parametrize(
    ("tiers", "deferred"),
    [
        (["opus"], ("opus",)),
        (["sonnet"], ("opus", "sonnet")),
        (["opus", "sonnet"], ("opus", "sonnet")),
        (["haiku"], ("opus", "sonnet", "haiku")),
        (["gpt-9"], ()),
    ],
)
def test_defer_tier_adds_up_from_the_top(tiers: list[str], deferred: tuple[str, ...]) -> None:
    alerts = [alert(f"AgentwatchQuota{t}", "defer_tier", agentwatch_tier=t) for t in tiers]
    state = decide(State(level=4), alerts, 0, S)
    assert state.deferred_tiers == deferred
    assert state.changes == (("defer_tier",) if deferred else ())
    if deferred:
        assert decide(state, [], 10, S).changes == ("undefer_tier",)


def test_fail_task_collects_valid_task_ids_only() -> None:
    alerts = [
        alert("AgentwatchTaskDeadline", "fail_task", task="t-1"),
        alert("AgentwatchTaskDeadline", "fail_task", task="t-2"),
        alert("AgentwatchTaskDeadline", "fail_task", task="../etc/passwd"),
        alert("AgentwatchTaskDeadline", "fail_task"),
    ]
    state = decide(State(level=4), alerts, 0, S)
    assert state.fail_tasks == ("t-1", "t-2") and state.changes == ("fail_task",)
    assert collect(alerts).unusable == ("AgentwatchTaskDeadline",)


def test_nudge_targets_need_a_session_and_a_pane_id() -> None:
    alerts = [
        alert("AgentwatchPaneStalled", "nudge", tmux_session="work", pane="%3"),
        alert("AgentwatchPaneStalled", "nudge", tmux_session="work", pane="work:1.0"),
    ]
    state = decide(State(level=4), alerts, 0, S)
    assert [(n.tmux_session, n.pane) for n in state.nudges] == [("work", "%3")]
    assert state.effective_max_agents == 4, "a nudge does not throttle"


@pytest.mark.parametrize("how", ["silenced", "inhibited"])
def test_an_acknowledged_or_inhibited_alert_asks_for_nothing(how: str) -> None:
    acked = [alert(a.name, a.action, **{how: True}) for a in (SHRINK, PAUSE, BREAKER, STOP)]
    state = decide(State(level=4), acked, 0, S)
    assert (state.level, state.effective_max_agents, state.breaker) == (4, 4, "closed")
    assert state.reasons == () and state.changes == ()


def test_human_only_and_unknown_actions_are_ignored() -> None:
    alerts = [alert("AgentwatchLedgerBehind", None), alert("AgentwatchOdd", "reboot")]
    state = decide(State(level=4), alerts, 0, S)
    assert state.level == 4 and state.reasons == ()
    assert collect(alerts).unusable == ("AgentwatchOdd",)


def test_reasons_name_every_alert_behind_the_decision() -> None:
    state = decide(State(level=4), [SHRINK, PAUSE, STOP], 0, S)
    assert state.reasons == (
        "AgentwatchBudgetExhausted",
        "AgentwatchErrorRatioHigh",
        "AgentwatchHostLoadHigh",
    )
    assert state.actions["pause"] == ("AgentwatchHostLoadHigh",)


def test_alertmanager_down_holds_the_decision_then_falls_back_to_the_floor() -> None:
    live = run(State(level=5), [(0, [PAUSE]), (10, [SHRINK, PAUSE])])[-1]
    assert (live.level, live.paused, live.last_success_at) == (4, True, 10)
    held = decide(live, None, 40, S)
    assert held.mode == "holding" and held.changes == ()
    assert (held.level, held.paused, held.actions) == (4, True, live.actions)
    still = decide(held, None, 70, S)  # exactly hold_for after the last success
    assert still.mode == "holding"
    fallen = decide(still, None, 71, S)
    assert fallen.mode == "fallback" and fallen.level == S.min_agents
    assert fallen.paused, "nothing relaxes while blind"
    assert fallen.changes == ("fallback",)
    later = run(fallen, [(t, None) for t in range(100, 5000, 100)])
    assert {s.level for s in later} == {S.min_agents}, "no growth while blind"
    back = decide(later[-1], [GROW], 5000, S)
    assert back.mode == "live" and not back.paused and back.level == S.min_agents
    assert decide(back, [GROW], 5300, S).level == S.min_agents + 1, "grows again by sustain"


def test_blind_from_the_start_falls_back_at_once() -> None:
    state = decide(initial(S), None, 0, S)
    assert state.mode == "fallback" and state.level == S.min_agents


def test_holding_never_repeats_one_shot_actions() -> None:
    live = decide(State(level=4), [alert("AgentwatchTaskDeadline", "fail_task", task="t-1")], 0, S)
    assert decide(live, None, 10, S).fail_tasks == ()


@pytest.mark.parametrize(
    ("fallback", "expect"),
    [
        ("hold", (4, True, "open")),
        ("pause", (4, True, "open")),
        ("max", (6, False, "closed")),
        ("floor", (2, True, "open")),
    ],
)
def test_fallback_choices(fallback: str, expect: tuple[int, bool, str]) -> None:
    s = Settings(max_agents=6, min_agents=2, hold_for=60, fallback=fallback)
    live = decide(State(level=4), [PAUSE, BREAKER], 0, s)
    fallen = decide(live, None, 61, s)
    assert fallen.mode == "fallback"
    assert (fallen.level, fallen.paused, fallen.breaker) == expect


def test_bad_settings_are_refused_with_the_key() -> None:
    with pytest.raises(ValueError, match="min_agents"):
        Settings(max_agents=2, min_agents=3)
    with pytest.raises(ValueError, match="fallback"):
        Settings(fallback="panic")
