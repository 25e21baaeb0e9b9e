"""The Overview dashboard: spend, throttle state, the burn runbook, quota and budget, tokens,
and whether the watcher itself is working."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row
from grafana_foundation_sdk.builders.table import Panel as TablePanel

from agentwatch.grafana.panels import (
    ALLOWED_HELD,
    ANY_IS_BAD,
    BUDGET_STEPS,
    DOWN_UP,
    NO_YES_BAD,
    QUOTA_STEPS,
    SESSION,
    Panel,
    bargauge,
    dashboard,
    gauge,
    label_variable,
    mapping,
    stat,
    table,
    timeseries,
)
from agentwatch.grafana.queries import (
    FRESH,
    HOST,
    MODEL,
    PER_HOUR,
    PROJECT,
    _aggregate,
    gauge_by,
    gauges_by,
    hourly,
    increase,
    legend_for,
    level,
    millis,
    per_host,
    rate,
    sel,
    sort_desc,
    stack_sel,
    target,
    threshold,
    topk,
    when,
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


# The recording rules of rules/recording.rules.yml the quota and burn panels read (issue 15).
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


def watching_the_watcher() -> list[Panel | Row]:
    """Whether the loop itself works: orchestrator, adapter, nudges, Alertmanager, rules, the
    disks agentwatch writes to and the ledger's commits."""
    notify = "alertmanager_notifications_failed_total"
    rules = "prometheus_rule_evaluation_failures_total"
    free = (
        f"{gauge_by('agentwatch_filesystem_avail_bytes', by='dir')} / "
        f"{gauge_by('agentwatch_filesystem_size_bytes', by='dir')}"
    )
    commits = rate("agentwatch_ledger_commit_duration_seconds_bucket", by="le")
    return [
        Row("Watching the watcher"),
        stat(
            "Orchestrator up",
            "Whether the controller reaches the orchestrator's status API.",
            level("agentwatch_orchestrator_up", how="min"),
            "none",
            mappings=DOWN_UP,
        ),
        stat(
            "Adapter failing",
            "Whether the controller's last push of its decision to the orchestrator failed.",
            level("agentwatch_controller_adapter_failing", by="adapter"),
            "none",
            mappings=NO_YES_BAD,
            text_mode="value_and_name",
            no_value="no adapter",
        ),
        stat(
            "Escalated nudges over the range",
            "Stalled panes a nudge did not revive (their transcript did not grow): a person "
            "has to look.",
            target(increase("agentwatch_controller_nudges_total", 'result="escalated"')),
            steps=ANY_IS_BAD,
            decimals=0,
        ),
        stat(
            "Notification failures over the range",
            "Notifications Alertmanager failed to deliver (all integrations).",
            target(_aggregate("sum", "", f"increase({stack_sel(notify)}[$__range])")),
            steps=ANY_IS_BAD,
            decimals=0,
            no_value="0",
        ),
        stat(
            "Rule evaluation failures over the range",
            "Rule evaluations Prometheus failed: an alert that cannot be evaluated never fires.",
            target(_aggregate("sum", "", f"increase({stack_sel(rules)}[$__range])")),
            steps=ANY_IS_BAD,
            decimals=0,
            no_value="0",
        ),
        stat(
            "Agents allowed now",
            "The parallelism the controller lets the orchestrator run now (0 while paused, "
            "stopping or the breaker is open).",
            level("agentwatch_controller_effective_max_agents"),
            decimals=0,
        ),
        timeseries(
            "Free space on the state and spool filesystems",
            "Available share of the filesystems holding the state dir (ledger, state files) "
            "and the spool (the sentinels' textfiles); dashed: the alert's threshold.",
            target(free, "{{dir}}"),
            "percentunit",
            limit=("disk_free_ratio", "alert below"),
            w=8,
        ),
        timeseries(
            "Ledger commit latency (p99)",
            "99th percentile of the token ledger's SQLite commits; dashed: the alert's "
            "threshold (a slow disk delays every count).",
            target(f"histogram_quantile(0.99, {commits})", "p99"),
            "s",
            limit=("ledger_commit_seconds", "alert above"),
            w=8,
        ),
        timeseries(
            "Stack failures per hour",
            "Alertmanager notifications that failed, by integration, and Prometheus rule "
            "evaluations that failed, by rule group.",
            [
                target(
                    _aggregate("sum", "integration", f"rate({stack_sel(notify)}[$__rate_interval])")
                    + PER_HOUR,
                    "notify {{integration}}",
                ),
                target(
                    _aggregate("sum", "rule_group", f"rate({stack_sel(rules)}[$__rate_interval])")
                    + PER_HOUR,
                    "rules {{rule_group}}",
                ),
            ],
            bars=True,
            w=8,
        ),
    ]


def overview() -> Dashboard:
    scope = (PROJECT, MODEL)
    spend = [
        stat(
            f"Spend {label}",
            f"Cost of Claude Code API responses {label} so far ({since}), "
            "from the token ledger; project and model filters apply. Only what Prometheus still "
            "holds counts: keep its retention longer than a month.",
            target(increase("agentwatch_cost_usd_total", *scope, fleet=True)),
            "currencyUSD",
            decimals=2,
            time_from=time_from,
        )
        for label, since, time_from in (
            ("today", "since local midnight", "now/d"),
            ("this week", "since the start of the week", "now/w"),
            ("this month", "since the first of the month", "now/M"),
        )
    ]
    run_spend = gauge_by("agentwatch_orchestrator_cost_usd", how="sum")
    active = f"time() - {sel('agentwatch_session_last_activity_timestamp_seconds', PROJECT)}"
    firing = sel("ALERTS", 'alertstate="firing"', 'alertname=~"Agentwatch.*"')
    agents = (
        ("agentwatch_controller_max_agents", "decided limit"),
        ("agentwatch_controller_configured_max_agents", "configured maximum"),
        ("agentwatch_controller_min_agents", "floor"),
        ("agentwatch_orchestrator_agents", "running agents"),
    )
    panels = [
        Row("Spend"),
        *spend,
        gauge(
            "Run spend against budget",
            "The orchestrator run's spend as a share of its resolved budget cap. Spawning pauses "
            "at 95 % and the run stops at 100 % (alert rules). No data when no orchestrator is "
            "configured or the budget is unlimited (cap 0).",
            target(f"{run_spend} / ({gauge_by('agentwatch_budget_limit_usd')} > 0)"),
            BUDGET_STEPS,
        ),
        stat(
            "Run spend",
            "What the orchestrator reports the current run has spent.",
            target(run_spend),
            "currencyUSD",
            decimals=2,
        ),
        stat(
            "Budget cap",
            "The budget cap the controller resolved for the run, and where it came from (env, "
            "run_config, config, default); 0 means unlimited.",
            level("agentwatch_budget_limit_usd", by="source"),
            "currencyUSD",
            mappings=mapping({0: ("unlimited", "text")}),
            text_mode="value_and_name",
        ),
        Row("Activity and throttle"),
        stat(
            "Live agent sessions",
            "Agent CLI process trees running on each host now (resources sentinel), all agents "
            "together.",
            level("agentwatch_agent_sessions", how="sum"),
            no_value="0",
        ),
        stat(
            "Sessions active in the last 15 min",
            "Transcript sessions whose newest counted line is less than 15 minutes old (token "
            "ledger); project filter applies.",
            target(f"count by ({HOST}) ({active} < 900)"),
            no_value="0",
        ),
        stat(
            "Firing alerts",
            "agentwatch alerts firing now, by severity.",
            target(f"count by (severity) ({firing})", "{{severity}}"),
            no_value="0",
            steps=ANY_IS_BAD,
            text_mode="value_and_name",
        ),
        stat(
            "Spawning",
            "Whether the controller lets the orchestrator start new agents, and whether it asked "
            "the run to stop.",
            [
                level("agentwatch_controller_paused", legend="spawning"),
                level("agentwatch_controller_should_stop", legend="run"),
            ],
            "none",
            text_mode="value_and_name",
            mappings=ALLOWED_HELD,
        ),
        stat(
            "LLM breaker",
            "The controller's rate-limit breaker: closed (normal), open (rate limited or "
            "overloaded, cooling down) or half_open (probing).",
            target(
                f"{gauge_by('agentwatch_controller_breaker_state', by='state')} == 1", "{{state}}"
            ),
            "none",
            text_mode="name",
        ),
        stat(
            "Deferred model tiers",
            "Model tiers the controller asks the orchestrator not to use (quota pressure defers "
            "opus, then sonnet).",
            level("agentwatch_controller_deferred_tier", by="tier"),
            "none",
            text_mode="value_and_name",
            mappings=mapping({0: ("allowed", "green"), 1: ("deferred", "red")}),
        ),
        timeseries(
            "Concurrency",
            "The parallelism the controller decided, against the configured maximum and floor, and "
            "the agents the orchestrator runs.",
            [level(metric, legend=legend) for metric, legend in agents],
            decimals=0,
        ),
        timeseries(
            "Orchestrator tasks by status",
            "Tasks the orchestrator reports, by status.",
            level("agentwatch_orchestrator_tasks", by="status", how="sum"),
            stack=True,
            decimals=0,
        ),
        burn_runbook(),
        Row("Quota"),
        *quota(
            "5h",
            "5 h",
            "5 hours",
            "Input, output and cache-creation tokens over the last 5 hours on every project, per "
            "host (each host's quota alerts judge its own tokens against its own "
            "thresholds.quota_5h_tokens).",
        ),
        *quota(
            "7d",
            "7 d",
            "7 days",
            "Input, output and cache-creation tokens over the last 7 days on every project.",
        ),
        stat(
            "Usage limit resets",
            "When the newest usage-limit message in a transcript says the limit resets.",
            when("agentwatch_usage_limit_reset_timestamp_seconds"),
            "dateTimeFromNow",
            w=8,
            no_value="no usage limit hit",
        ),
        *quota_and_budget(),
        Row("Tokens and spend"),
        *[
            timeseries(
                f"Tokens per hour by {label}",
                f"Token rate by {label} (all four "
                "types unless the panel says otherwise); project and model filters apply.",
                hourly("agentwatch_tokens_total", *scope, by=label, fleet=True),
                stack=True,
            )
            for label in ("type", "model", "project")
        ],
        timeseries(
            "Spend per hour by project",
            "Cost rate by project; project and model filters apply.",
            hourly("agentwatch_cost_usd_total", *scope, by="project", fleet=True),
            "currencyUSD",
            stack=True,
        ),
        timeseries(
            "Spend per hour by agent",
            "Cost rate by agent CLI: Claude Code from the token ledger, every other agent "
            "(docs/agents) from the agent ledger; project and model filters apply.",
            hourly("agentwatch_cost_usd_total", *scope, by="agent", fleet=True),
            "currencyUSD",
            stack=True,
        ),
        table(
            "Spend by agent",
            "Each agent CLI's tokens (all four types) and cost over the dashboard's time range; "
            "project and model filters apply.",
            [
                (
                    increase("agentwatch_tokens_total", *scope, by="agent", fleet=True),
                    "tokens (range)",
                    "short",
                ),
                (
                    increase("agentwatch_cost_usd_total", *scope, by="agent", fleet=True),
                    "cost (range)",
                    "currencyUSD",
                ),
            ],
            w=12,
            sort_by="cost (range)",
        ),
        *[
            bargauge(
                f"{what} by {label} over the range",
                f"{what} over the dashboard's time "
                f"range by {label}, largest first; project and model filters apply.",
                target(
                    sort_desc(increase(metric, *scope, by=label, fleet=True)), legend_for(label)
                ),
                unit,
            )
            for what, metric, unit, label in (
                ("Spend", "agentwatch_cost_usd_total", "currencyUSD", "model"),
                ("Spend", "agentwatch_cost_usd_total", "currencyUSD", "project"),
                ("Tokens", "agentwatch_tokens_total", "short", "type"),
            )
        ],
        Row("Alerts"),
        table(
            "agentwatch alerts",
            "agentwatch alerts pending or firing now, with the labels the controller acts on.",
            [(sel("ALERTS", 'alertname=~"Agentwatch.*"'), "active", "none")],
            "none",
            h=7,
        ),
        *watching_the_watcher(),
    ]
    variables = [
        label_variable("project", "Project", "agentwatch_cost_usd_total"),
        label_variable("model", "Model", "agentwatch_cost_usd_total", PROJECT),
    ]
    return dashboard(
        "agentwatch-overview",
        "agentwatch / Overview",
        "What the agents cost and use, and what agentwatch is doing about it.",
        variables,
        panels,
    )
