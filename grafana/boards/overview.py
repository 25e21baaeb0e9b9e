"""The Overview dashboard: spend, throttle state, the burn runbook, quota and budget, tokens,
and whether the watcher itself is working."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row

from agentwatch.grafana.boards.quota import burn_runbook, quota, quota_and_budget
from agentwatch.grafana.panels import (
    ALLOWED_HELD,
    ANY_IS_BAD,
    BUDGET_STEPS,
    DOWN_UP,
    NO_YES_BAD,
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
    HOST,
    MODEL,
    PER_HOUR,
    PROJECT,
    aggregate,
    gauge_by,
    hourly,
    increase,
    legend_for,
    level,
    rate,
    sel,
    sort_desc,
    stack_sel,
    target,
    when,
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
            target(aggregate("sum", "", f"increase({stack_sel(notify)}[$__range])")),
            steps=ANY_IS_BAD,
            decimals=0,
            no_value="0",
        ),
        stat(
            "Rule evaluation failures over the range",
            "Rule evaluations Prometheus failed: an alert that cannot be evaluated never fires.",
            target(aggregate("sum", "", f"increase({stack_sel(rules)}[$__range])")),
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
                    aggregate("sum", "integration", f"rate({stack_sel(notify)}[$__rate_interval])")
                    + PER_HOUR,
                    "notify {{integration}}",
                ),
                target(
                    aggregate("sum", "rule_group", f"rate({stack_sel(rules)}[$__rate_interval])")
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
