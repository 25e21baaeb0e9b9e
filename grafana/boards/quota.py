"""The Overview's quota, budget and burn-runbook panels: each quota window with its source,
reset and forecast, who spends the 5-hour window, the budget, and each unacknowledged burn's
step, read from the recording rules of rules/quota.rules.yml and derived.rules.yml."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Row
from grafana_foundation_sdk.builders.table import Panel as TablePanel

from agentwatch.grafana.panels import (
    BUDGET_STEPS,
    QUOTA_STEPS,
    SESSION,
    Panel,
    bargauge,
    gauge,
    mapping,
    stat,
    table,
    timeseries,
)
from agentwatch.grafana.queries import (
    FRESH,
    PROJECT,
    gauge_by,
    gauges_by,
    increase,
    legend_for,
    level,
    millis,
    per_host,
    sel,
    sort_desc,
    target,
    threshold,
    topk,
)


def quota(window: str, span: str, words: str, tokens_about: str) -> list[Panel]:
    """Fresh tokens over the quota `window` ("5h"; `span` "5 h", `words` "5 hours" in the
    titles), and their share of the configured quota."""
    fresh = increase("agentwatch_tokens_total", FRESH, window=window)
    name = f"quota_{window}_tokens"
    return [
        stat(f"Fresh tokens, last {span}", tokens_about, target(fresh)),
        gauge(
            f"{span} quota used",
            f"Fresh tokens over the last {words} against thresholds.{name}. "
            "No data while no quota is configured (0).",
            target(f"{fresh} / ({threshold(name)} > 0)"),
            QUOTA_STEPS,
        ),
    ]


# The recording rules the quota and burn panels read (issue 15): rules/quota.rules.yml, and
# derived.rules.yml for the throttle's effect.
QUOTA_USED = "instance_window:agentwatch_quota_used:ratio"
QUOTA_RESETS = "instance_window:agentwatch_quota_resets:timestamp"
QUOTA_EXHAUSTED = "instance_window:agentwatch_quota_exhausted:timestamp"
WINDOW_SHARE = "instance_session:agentwatch_quota_window_share:ratio"
THROTTLE_EFFECT = "instance_session:agentwatch_burn_throttle_effect:ratio"
WINDOW = "window, source"  # a quota window and where its reading comes from
BURN = "alertname, project, session"  # one burn the controller throttles for
BURN_STEPS = {0: ("none", "green"), 1: ("shrink", "orange"), 2: ("pause", "red")}


def quota_and_budget() -> list[Panel | Row]:
    """Each quota window (official, else the ledger's block, else the caps) with its reset and
    the moment this pace would use it up, who spends the 5-hour window, and the budget."""
    used = gauge_by(QUOTA_USED, by=WINDOW)
    spent = gauge_by("agentwatch_budget_spent_usd")
    return [
        Row("Quota and budget"),
        timeseries(
            "Quota used by window",
            "Share of each rate-limit window used, with where the reading comes from: official "
            "(Claude Code's statusline, while fresher than thresholds.quota_stale_seconds), "
            "blocks (the ledger's 5-hour block against its limit) or cap (the configured token "
            "caps). Dashed: the elevated, critical and shutdown thresholds (defer opus, defer "
            "sonnet, pause).",
            level(QUOTA_USED, by=WINDOW, legend="{{window}} ({{source}})"),
            "percentunit",
            limit=[
                ("quota_elevated_ratio", "elevated"),
                ("quota_critical_ratio", "critical"),
                ("quota_shutdown_ratio", "shutdown"),
            ],
        ),
        table(
            "Quota windows: reset and exhaustion",
            "Per window: the share used, when it resets, and when it would be used up at the "
            "pace of the last 30 minutes (empty when the reset comes first: no warning then).",
            [
                (used, "used", "percentunit"),
                (millis(gauge_by(QUOTA_RESETS, by=WINDOW)), "resets", "dateTimeFromNow"),
                (
                    millis(gauge_by(QUOTA_EXHAUSTED, by=WINDOW)),
                    "used up at this pace",
                    "dateTimeFromNow",
                ),
            ],
            w=12,
            sort_by="used",
        ),
        bargauge(
            "Which session is spending the 5-hour window",
            "Each session's tokens in the active 5-hour block against all of its host's tokens "
            "in it (the ten largest shares); the project filter applies.",
            target(
                sort_desc(topk(gauge_by(WINDOW_SHARE, PROJECT, by=SESSION))), legend_for(SESSION)
            ),
            "percentunit",
            w=12,
        ),
        stat(
            "Budget spent",
            "Spend the budget guard counts, by its period (day, week, month, run, or "
            "orchestrator when only the orchestrator knows it): the larger of the ledger's and "
            "the orchestrator's.",
            level("agentwatch_budget_spent_usd", by="period"),
            "currencyUSD",
            decimals=2,
            text_mode="value_and_name",
        ),
        stat(
            "Budget remaining",
            "The budget cap less what is spent; no value while the budget is unlimited.",
            level("agentwatch_budget_remaining_usd"),
            "currencyUSD",
            decimals=2,
            no_value="unlimited",
        ),
        gauge(
            "Budget used",
            "Spent against the cap: the alerts warn at 80 %, pause spawning at 95 % and stop "
            "the run at 100 %. No data while the budget is unlimited (cap 0).",
            target(f"{spent} / ({gauge_by('agentwatch_budget_limit_usd')} > 0)"),
            BUDGET_STEPS,
        ),
    ]


def burn_runbook() -> TablePanel:
    """Instar's burn runbook as the controller runs it: each unacknowledged burn, the step it
    reached, and whether throttling brought the rate down."""
    escalation = " or ".join(
        sel("agentwatch_controller_burn_escalation", f'step="{step}"') + f" * {number}"
        for number, (step, _) in BURN_STEPS.items()
        if number
    )
    burn = gauges_by(by=BURN)
    return table(
        "Burn runbook",
        "Burns still firing and not acknowledged: after burn.escalate_after the controller "
        "shrinks, after twice that it pauses; burn.verify_after later the rate must be below "
        "burn.verify_fraction of the rate before the throttle (`agentwatch ack` stops it).",
        [
            (f"max by ({per_host(BURN)}) ({escalation})", "step", "none"),
            (burn(THROTTLE_EFFECT), "rate against before", "percentunit"),
            (burn("agentwatch_controller_burn_pre_throttle_rate"), "tokens/h before", "short"),
            (
                millis(burn("agentwatch_controller_burn_verify_due_timestamp_seconds")),
                "verdict due",
                "dateTimeFromNow",
            ),
        ],
        h=6,
        sort_by="step",
        mappings={"step": mapping(BURN_STEPS)},
    )
