"""Write agentwatch's Grafana dashboards from one description, so the five stay consistent.

Grafana cannot run here, so the JSON model (schemaVersion 39) is written directly from plain
dicts: one helper per panel type, one function per dashboard, a layout that packs panels into
rows of 24 columns. `python grafana/build.py` rewrites grafana/dashboards/*.json; `--check`
exits 1 when the committed files differ (tests/test_dashboards.py does the same).

Query conventions (linted by tests/test_dashboards.py, explained in grafana/README.md):
- every selector filters `job=~"$job",instance=~"$instance"`; template variables appear only
  inside `=~"..."`;
- one Prometheus may scrape several workstations (one `instance` each): whatever describes a
  host (its footprint, load, sessions, panes, ledger, sentinels, controller, budget, quota,
  thresholds) is aggregated `by (instance, ...)` and its legend starts with `{{instance}}`;
  only the spend and token totals of the Overview add the selected hosts up (`fleet=True`);
- counters (`*_total`) appear only inside rate()/increase(); graphs use `[$__rate_interval]`,
  stat/bar/table panels (instant queries) total over `[$__range]`, and the few fixed windows
  come from EXPLICIT_WINDOWS because an alert or a quota is defined over that window;
- thresholds are never hard-coded when the user configures them: the panel plots
  `agentwatch_alert_threshold{name=...}` as a dashed red line instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 39
DATASOURCE_UID = "agentwatch-prometheus"  # provisioning/datasources/agentwatch.yml
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
COLUMNS = 24
OUT_DIR = Path(__file__).resolve().parent / "dashboards"

# Fixed range windows a panel may use instead of $__rate_interval / $__range, and why.
EXPLICIT_WINDOWS = {
    "10m": "the error-ratio alert (shrink concurrency) is defined over 10 minutes",
    "1h": "the footprint trend rules use deriv/predict_linear over 1 hour",
    "5h": "the 5-hour token quota window",
    "7d": "the 7-day token quota window",
}

# Pane states of the idle-error sentinel (docs/metrics.md), in the order the state
# timeline numbers them, with the colour each one gets.
PANE_STATES = {
    "working": "green",
    "idle": "blue",
    "api_error": "red",
    "rate_limited": "orange",
    "usage_limit": "purple",
    "context_wedge": "dark-red",
    "context_too_long": "dark-orange",
    "approval_prompt": "yellow",
}

JOB = 'job=~"$job"'
INSTANCE = 'instance=~"$instance"'
HOST = "instance"  # the label that tells workstations apart
PROJECT = 'project=~"$project"'
MODEL = 'model=~"$model"'
REPO = 'repo=~"$repo"'
FRESH = 'type!="cache_read"'  # fresh tokens: what quotas and burn alerts count
PER_HOUR = " * 3600"


# --- expressions -------------------------------------------------------------------------


def sel(metric: str, *matchers: str) -> str:
    """A selector of `metric` on the dashboard's job and hosts, plus `matchers`."""
    return metric + "{" + ",".join((JOB, INSTANCE, *matchers)) + "}"


def per_host(by: str = "") -> str:
    """The grouping labels `by` with the host in front: one series per workstation."""
    return f"{HOST}, {by}" if by else HOST


def threshold(name: str) -> str:
    """The configured alert threshold `name` of each host (served by its exporter, read by
    the rules): every host may configure its own."""
    return f"max by ({HOST}) (" + sel("agentwatch_alert_threshold", f'name="{name}"') + ")"


def _aggregate(how: str, by: str, inner: str, *, fleet: bool = False) -> str:
    """`how by (instance, by) (inner)`; with `fleet`, the selected hosts together."""
    by = by if fleet else per_host(by)
    return f"{how} by ({by}) ({inner})" if by else f"{how}({inner})"


def rate(
    metric: str,
    *matchers: str,
    by: str = "",
    window: str = "$__rate_interval",
    fleet: bool = False,
) -> str:
    """Per-second rate of a counter, summed per host (by `by`)."""
    return _aggregate("sum", by, f"rate({sel(metric, *matchers)}[{window}])", fleet=fleet)


def increase(
    metric: str, *matchers: str, by: str = "", window: str = "$__range", fleet: bool = False
) -> str:
    """Increase of a counter over `window`, summed per host (by `by`)."""
    return _aggregate("sum", by, f"increase({sel(metric, *matchers)}[{window}])", fleet=fleet)


def gauge_by(metric: str, *matchers: str, by: str = "", how: str = "max") -> str:
    """A gauge aggregated per host (by `by`): max keeps one value when several jobs serve it."""
    return _aggregate(how, by, sel(metric, *matchers))


def age(metric: str, *matchers: str, by: str = "") -> str:
    """Seconds since the timestamp gauge `metric`, per host."""
    return f"time() - {gauge_by(metric, *matchers, by=by)}"


def topk(expr: str, count: int = 10) -> str:
    return f"topk({count}, {expr})"


def sort_desc(expr: str) -> str:
    return f"sort_desc({expr})"


def millis(expr: str) -> str:
    """A `_timestamp_seconds` expression as epoch milliseconds (what dateTimeFromNow expects)."""
    return f"{expr} * 1000"


# --- panels ------------------------------------------------------------------------------


def target(expr: str, legend: str = "", *, instant: bool = False) -> dict[str, Any]:
    """One query; refId and the table format are filled in by the panel that holds it.

    A query whose result is per host (grouped by instance) gets the host in its legend, so
    several workstations on one panel stay apart.
    """
    if f"by ({HOST}" in expr and "{{instance}}" not in legend:
        legend = f"{{{{{HOST}}}}} {legend}".rstrip()
    return {"expr": expr, "legendFormat": legend, "instant": instant}


def _targets(items: Iterable[dict[str, Any]], *, instant: bool, table: bool) -> list[dict]:
    out = []
    for index, item in enumerate(items):
        is_instant = instant or item["instant"]
        out.append(
            {
                "datasource": DATASOURCE,
                "editorMode": "code",
                "expr": item["expr"],
                "format": "table" if table else "time_series",
                "instant": is_instant,
                "legendFormat": item["legendFormat"] or "__auto",
                "range": not is_instant,
                "refId": chr(ord("A") + index),
            }
        )
    return out


def _thresholds(steps: Iterable[tuple[float | None, str]] | None) -> dict[str, Any]:
    steps = steps or [(None, "green")]
    return {
        "mode": "absolute",
        "steps": [{"color": color, "value": value} for value, color in steps],
    }


def mapping(values: dict[int, tuple[str, str]]) -> list[dict[str, Any]]:
    """Value mappings {value: (text, colour)} in Grafana's shape."""
    options = {
        str(value): {"color": color, "index": index, "text": text}
        for index, (value, (text, color)) in enumerate(sorted(values.items()))
    }
    return [{"options": options, "type": "value"}]


OK_FAILING = mapping({0: ("failing", "red"), 1: ("ok", "green")})
NO_YES_BAD = mapping({0: ("no", "green"), 1: ("yes", "red")})


def _panel(
    kind: str,
    title: str,
    description: str,
    targets: list[dict[str, Any]],
    unit: str,
    *,
    w: int,
    h: int,
    defaults: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    overrides: list[dict[str, Any]] | None = None,
    instant: bool = False,
    table: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    field_defaults = {"unit": unit, "thresholds": _thresholds(None), **(defaults or {})}
    return {
        "datasource": DATASOURCE,
        "description": description,
        "fieldConfig": {"defaults": field_defaults, "overrides": overrides or []},
        "gridPos": {"h": h, "w": w, "x": 0, "y": 0},
        "options": options or {},
        "targets": _targets(targets, instant=instant, table=table),
        "title": title,
        "type": kind,
        **extra,
    }


def _threshold_line(ref_id: str) -> dict[str, Any]:
    """Draw query `ref_id` as a dashed red limit line, outside any stacking."""
    return {
        "matcher": {"id": "byFrameRefID", "options": ref_id},
        "properties": [
            {"id": "color", "value": {"fixedColor": "red", "mode": "fixed"}},
            {"id": "custom.lineStyle", "value": {"dash": [10, 10], "fill": "dash"}},
            {"id": "custom.fillOpacity", "value": 0},
            {"id": "custom.stacking", "value": {"group": "A", "mode": "none"}},
        ],
    }


def timeseries(
    title: str,
    description: str,
    targets: list[dict[str, Any]],
    unit: str,
    *,
    limits: Iterable[str] = (),
    stack: bool = False,
    bars: bool = False,
    w: int = 12,
    h: int = 8,
    decimals: int | None = None,
) -> dict[str, Any]:
    """A graph over time; `limits` are refIds drawn as threshold lines."""
    custom = {
        "axisSoftMin": 0,
        "barAlignment": 0,
        "drawStyle": "bars" if bars else "line",
        "fillOpacity": 60 if bars else (25 if stack else 10),
        "gradientMode": "none",
        "lineInterpolation": "linear",
        "lineWidth": 1,
        "pointSize": 4,
        "showPoints": "never",
        "spanNulls": False,
        "stacking": {"group": "A", "mode": "normal" if stack else "none"},
    }
    defaults: dict[str, Any] = {"color": {"mode": "palette-classic"}, "custom": custom}
    if decimals is not None:
        defaults["decimals"] = decimals
    options = {
        "legend": {
            "calcs": ["lastNotNull", "max"],
            "displayMode": "table",
            "placement": "bottom",
            "showLegend": True,
        },
        "tooltip": {"mode": "multi", "sort": "desc"},
    }
    overrides = [_threshold_line(ref) for ref in limits]
    return _panel(
        "timeseries",
        title,
        description,
        targets,
        unit,
        w=w,
        h=h,
        defaults=defaults,
        options=options,
        overrides=overrides,
    )


def _reduce() -> dict[str, Any]:
    return {"calcs": ["lastNotNull"], "fields": "", "values": False}


def stat(
    title: str,
    description: str,
    targets: list[dict[str, Any]],
    unit: str,
    *,
    w: int = 4,
    h: int = 4,
    steps: list[tuple[float | None, str]] | None = None,
    mappings: list[dict[str, Any]] | None = None,
    no_value: str | None = None,
    text_mode: str = "auto",
    decimals: int | None = None,
    time_from: str | None = None,
) -> dict[str, Any]:
    """One number (or one per series) now; `time_from` overrides the panel's time range."""
    defaults: dict[str, Any] = {"color": {"mode": "thresholds"}, "mappings": mappings or []}
    defaults["thresholds"] = _thresholds(steps)
    if no_value is not None:
        defaults["noValue"] = no_value
    if decimals is not None:
        defaults["decimals"] = decimals
    options = {
        "colorMode": "value",
        "graphMode": "none",
        "justifyMode": "auto",
        "orientation": "auto",
        "reduceOptions": _reduce(),
        "showPercentChange": False,
        "textMode": text_mode,
        "wideLayout": True,
    }
    extra: dict[str, Any] = {}
    if time_from:
        extra = {"hideTimeOverride": False, "timeFrom": time_from}
    return _panel(
        "stat",
        title,
        description,
        targets,
        unit,
        w=w,
        h=h,
        defaults=defaults,
        options=options,
        instant=True,
        **extra,
    )


def gauge(
    title: str,
    description: str,
    targets: list[dict[str, Any]],
    unit: str,
    *,
    steps: list[tuple[float | None, str]],
    maximum: float,
    w: int = 4,
    h: int = 4,
) -> dict[str, Any]:
    defaults = {
        "color": {"mode": "thresholds"},
        "max": maximum,
        "min": 0,
        "thresholds": _thresholds(steps),
    }
    options = {
        "minVizHeight": 75,
        "minVizWidth": 75,
        "orientation": "auto",
        "reduceOptions": _reduce(),
        "showThresholdLabels": False,
        "showThresholdMarkers": True,
        "sizing": "auto",
    }
    return _panel(
        "gauge",
        title,
        description,
        targets,
        unit,
        w=w,
        h=h,
        defaults=defaults,
        options=options,
        instant=True,
    )


def bargauge(
    title: str,
    description: str,
    targets: list[dict[str, Any]],
    unit: str,
    *,
    w: int = 8,
    h: int = 8,
    mappings: list[dict[str, Any]] | None = None,
    steps: list[tuple[float | None, str]] | None = None,
) -> dict[str, Any]:
    """One bar per series now, largest first (Grafana sorts nothing: topk/sort do it)."""
    defaults = {
        "color": {"mode": "palette-classic"},
        "mappings": mappings or [],
        "min": 0,
        "thresholds": _thresholds(steps),
    }
    options = {
        "displayMode": "gradient",
        "maxVizHeight": 300,
        "minVizHeight": 16,
        "minVizWidth": 8,
        "namePlacement": "auto",
        "orientation": "horizontal",
        "reduceOptions": _reduce(),
        "showUnfilled": True,
        "sizing": "auto",
        "valueMode": "color",
    }
    return _panel(
        "bargauge",
        title,
        description,
        targets,
        unit,
        w=w,
        h=h,
        defaults=defaults,
        options=options,
        instant=True,
    )


def table(
    title: str,
    description: str,
    columns: list[tuple[dict[str, Any], str, str]],
    unit: str = "short",
    *,
    w: int = 24,
    h: int = 8,
    sort_by: str | None = None,
    mappings: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """Instant queries joined on their labels; `columns` are (target, header, unit)."""
    targets = [item for item, _, _ in columns]
    overrides = []
    for index, (_, header, column_unit) in enumerate(columns):
        field = "Value" if len(columns) == 1 else f"Value #{chr(ord('A') + index)}"
        properties: list[dict[str, Any]] = [
            {"id": "displayName", "value": header},
            {"id": "unit", "value": column_unit},
        ]
        if mappings and header in mappings:
            properties.append({"id": "mappings", "value": mappings[header]})
            properties.append({"id": "custom.cellOptions", "value": {"type": "color-text"}})
        overrides.append({"matcher": {"id": "byName", "options": field}, "properties": properties})
    hidden = {name: True for name in ("Time", "__name__", "job")}  # instance: which host
    transformations: list[dict[str, Any]] = [
        {"id": "merge", "options": {}},
        {
            "id": "organize",
            "options": {"excludeByName": hidden, "indexByName": {}, "renameByName": {}},
        },
    ]
    defaults = {"custom": {"align": "auto", "cellOptions": {"type": "auto"}, "filterable": True}}
    options: dict[str, Any] = {
        "cellHeight": "sm",
        "footer": {"countRows": False, "fields": "", "reducer": ["sum"], "show": False},
        "showHeader": True,
    }
    if sort_by:
        options["sortBy"] = [{"desc": True, "displayName": sort_by}]
    return _panel(
        "table",
        title,
        description,
        targets,
        unit,
        w=w,
        h=h,
        defaults=defaults,
        options=options,
        overrides=overrides,
        instant=True,
        table=True,
        transformations=transformations,
    )


def state_timeline(
    title: str,
    description: str,
    targets: list[dict[str, Any]],
    mappings: list[dict[str, Any]],
    *,
    w: int = 24,
    h: int = 8,
) -> dict[str, Any]:
    """Which state each series was in over time (values mapped to named colours)."""
    defaults = {
        "color": {"mode": "thresholds"},
        "custom": {"fillOpacity": 80, "lineWidth": 0},
        "mappings": mappings,
    }
    options = {
        "alignValue": "left",
        "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
        "mergeValues": True,
        "rowHeight": 0.9,
        "showValue": "auto",
        "tooltip": {"mode": "single", "sort": "none"},
    }
    return _panel(
        "state-timeline",
        title,
        description,
        targets,
        "none",
        w=w,
        h=h,
        defaults=defaults,
        options=options,
    )


def row(title: str) -> dict[str, Any]:
    return {
        "collapsed": False,
        "gridPos": {"h": 1, "w": COLUMNS, "x": 0, "y": 0},
        "panels": [],
        "title": title,
        "type": "row",
    }


def layout(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Number the panels and pack them left to right into 24 columns; a row starts a line."""
    x = y = line_height = 0
    for number, panel in enumerate(panels, start=1):
        grid = panel["gridPos"]
        if panel["type"] == "row" or x + grid["w"] > COLUMNS:
            x, y, line_height = 0, y + line_height, 0
        grid["x"], grid["y"] = x, y
        panel["id"] = number
        x += grid["w"]
        line_height = max(line_height, grid["h"])
        if panel["type"] == "row":
            x = COLUMNS  # nothing beside a row header
    return panels


# --- template variables ------------------------------------------------------------------


def datasource_variable() -> dict[str, Any]:
    return {
        "current": {"selected": False, "text": "agentwatch Prometheus", "value": DATASOURCE_UID},
        "hide": 0,
        "includeAll": False,
        "label": "Data source",
        "multi": False,
        "name": "datasource",
        "options": [],
        "query": "prometheus",
        "refresh": 1,
        "regex": "",
        "skipUrlSync": False,
        "type": "datasource",
    }


def label_variable(name: str, label: str, metric: str, *matchers: str) -> dict[str, Any]:
    """A multi-select of the values of `name` on `metric`; All = the regex `.*`."""
    query = f"label_values({sel(metric, *matchers)}, {name})"
    return {
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "datasource": DATASOURCE,
        "definition": query,
        "hide": 0,
        "includeAll": True,
        "label": label,
        "multi": True,
        "name": name,
        "options": [],
        "query": {"qryType": 1, "query": query, "refId": "PrometheusVariableQueryEditor"},
        "refresh": 2,
        "regex": "",
        "skipUrlSync": False,
        "sort": 1,
        "type": "query",
    }


def job_variable() -> dict[str, Any]:
    """Which exporter(s): every job that serves agentwatch_exporter_build_info."""
    query = "label_values(agentwatch_exporter_build_info, job)"
    variable = label_variable("job", "Job", "agentwatch_exporter_build_info")
    variable.update(definition=query)
    variable["query"]["query"] = query
    return variable


def instance_variable() -> dict[str, Any]:
    """Which workstation(s): every instance of the selected jobs that serves build info."""
    query = 'label_values(agentwatch_exporter_build_info{job=~"$job"}, instance)'
    variable = label_variable("instance", "Host", "agentwatch_exporter_build_info")
    variable.update(definition=query)
    variable["query"]["query"] = query
    return variable


def dashboard(
    uid: str, title: str, description: str, variables: list[dict], panels: list[dict]
) -> dict[str, Any]:
    return {
        "annotations": {"list": []},
        "description": description,
        "editable": True,
        "fiscalYearStartMonth": 0,
        "graphTooltip": 1,
        "id": None,
        "links": [
            {
                "asDropdown": True,
                "icon": "external link",
                "includeVars": True,
                "keepTime": True,
                "tags": ["agentwatch"],
                "targetBlank": False,
                "title": "agentwatch",
                "type": "dashboards",
            }
        ],
        "panels": layout(panels),
        "refresh": "1m",
        "schemaVersion": SCHEMA_VERSION,
        "tags": ["agentwatch"],
        "templating": {
            "list": [datasource_variable(), job_variable(), instance_variable(), *variables]
        },
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "timezone": "browser",
        "title": title,
        "uid": uid,
        "version": 1,
        "weekStart": "",
    }


# --- the dashboards ----------------------------------------------------------------------

BUDGET_STEPS = [(None, "green"), (0.8, "orange"), (0.95, "red")]
QUOTA_STEPS = [(None, "green"), (0.8, "orange"), (1, "red")]


def overview() -> dict[str, Any]:
    scope = (PROJECT, MODEL)
    spend = [
        stat(
            f"Spend {label}",
            f"Cost of Claude Code API responses {label} so far ({when}), "
            "from the token ledger; project and model filters apply. Only what Prometheus "
            "still holds counts: keep its retention longer than a month.",
            [target(increase("agentwatch_cost_usd_total", *scope, fleet=True))],
            "currencyUSD",
            decimals=2,
            time_from=time_from,
        )
        for label, when, time_from in (
            ("today", "since local midnight", "now/d"),
            ("this week", "since the start of the week", "now/w"),
            ("this month", "since the first of the month", "now/M"),
        )
    ]
    panels = [
        row("Spend"),
        *spend,
        gauge(
            "Run spend against budget",
            "The orchestrator run's spend as a share of its resolved budget cap. Spawning "
            "pauses at 95 % and the run stops at 100 % (alert rules). No data when no "
            "orchestrator is configured or the budget is unlimited (cap 0).",
            [
                target(
                    f"{gauge_by('agentwatch_orchestrator_cost_usd', how='sum')} / "
                    f"({gauge_by('agentwatch_budget_limit_usd')} > 0)"
                )
            ],
            "percentunit",
            steps=BUDGET_STEPS,
            maximum=1,
        ),
        stat(
            "Run spend",
            "What the orchestrator reports the current run has spent.",
            [target(gauge_by("agentwatch_orchestrator_cost_usd", how="sum"))],
            "currencyUSD",
            decimals=2,
        ),
        stat(
            "Budget cap",
            "The budget cap the controller resolved for the run, and where it "
            "came from (env, run_config, config, default); 0 means unlimited.",
            [target(gauge_by("agentwatch_budget_limit_usd", by="source"), "{{source}}")],
            "currencyUSD",
            mappings=mapping({0: ("unlimited", "text")}),
            text_mode="value_and_name",
        ),
        row("Activity and throttle"),
        stat(
            "Live agent sessions",
            "Agent CLI process trees running on each host now "
            "(resources sentinel), all agents together.",
            [target(gauge_by("agentwatch_agent_sessions", how="sum"))],
            "short",
            no_value="0",
        ),
        stat(
            "Sessions active in the last 15 min",
            "Transcript sessions whose newest counted "
            "line is less than 15 minutes old (token ledger); project filter applies.",
            [
                target(
                    f"count by ({HOST}) (time() - "
                    f"{sel('agentwatch_session_last_activity_timestamp_seconds', PROJECT)}"
                    " < 900)"
                )
            ],
            "short",
            no_value="0",
        ),
        stat(
            "Firing alerts",
            "agentwatch alerts firing now, by severity.",
            [
                target(
                    "count by (severity) ("
                    + sel("ALERTS", 'alertstate="firing"', 'alertname=~"Agentwatch.*"')
                    + ")",
                    "{{severity}}",
                )
            ],
            "short",
            no_value="0",
            steps=[(None, "green"), (1, "red")],
            text_mode="value_and_name",
        ),
        stat(
            "Spawning",
            "Whether the controller lets the orchestrator start new agents, and "
            "whether it asked the run to stop.",
            [
                target(gauge_by("agentwatch_controller_paused"), "spawning"),
                target(gauge_by("agentwatch_controller_should_stop"), "run"),
            ],
            "none",
            text_mode="value_and_name",
            mappings=mapping({0: ("allowed", "green"), 1: ("held", "red")}),
        ),
        stat(
            "LLM breaker",
            "The controller's rate-limit breaker: closed (normal), open "
            "(rate limited or overloaded, cooling down) or half_open (probing).",
            [
                target(
                    f"{gauge_by('agentwatch_controller_breaker_state', by='state')} == 1",
                    "{{state}}",
                )
            ],
            "none",
            text_mode="name",
        ),
        stat(
            "Deferred model tiers",
            "Model tiers the controller asks the orchestrator not "
            "to use (quota pressure defers opus, then sonnet).",
            [target(gauge_by("agentwatch_controller_deferred_tier", by="tier"), "{{tier}}")],
            "none",
            text_mode="value_and_name",
            mappings=mapping({0: ("allowed", "green"), 1: ("deferred", "red")}),
        ),
        timeseries(
            "Concurrency",
            "The parallelism the controller decided, against the "
            "configured maximum and floor, and the agents the orchestrator runs.",
            [
                target(gauge_by("agentwatch_controller_max_agents"), "decided limit"),
                target(
                    gauge_by("agentwatch_controller_configured_max_agents"), "configured maximum"
                ),
                target(gauge_by("agentwatch_controller_min_agents"), "floor"),
                target(gauge_by("agentwatch_orchestrator_agents"), "running agents"),
            ],
            "short",
            decimals=0,
        ),
        timeseries(
            "Orchestrator tasks by status",
            "Tasks the orchestrator reports, by status.",
            [
                target(
                    gauge_by("agentwatch_orchestrator_tasks", by="status", how="sum"), "{{status}}"
                )
            ],
            "short",
            stack=True,
            decimals=0,
        ),
        row("Quota"),
        stat(
            "Fresh tokens, last 5 h",
            "Input, output and cache-creation tokens over the "
            "last 5 hours on every project, per host (each host's quota alerts judge its "
            "own tokens against its own thresholds.quota_5h_tokens).",
            [target(increase("agentwatch_tokens_total", FRESH, window="5h"))],
            "short",
        ),
        gauge(
            "5 h quota used",
            "Fresh tokens over the last 5 hours against "
            "thresholds.quota_5h_tokens. No data while no quota is configured (0).",
            [
                target(
                    f"{increase('agentwatch_tokens_total', FRESH, window='5h')} / "
                    f"({threshold('quota_5h_tokens')} > 0)"
                )
            ],
            "percentunit",
            steps=QUOTA_STEPS,
            maximum=1,
        ),
        stat(
            "Fresh tokens, last 7 d",
            "Input, output and cache-creation tokens over the last 7 days on every project.",
            [target(increase("agentwatch_tokens_total", FRESH, window="7d"))],
            "short",
        ),
        gauge(
            "7 d quota used",
            "Fresh tokens over the last 7 days against "
            "thresholds.quota_7d_tokens. No data while no quota is configured (0).",
            [
                target(
                    f"{increase('agentwatch_tokens_total', FRESH, window='7d')} / "
                    f"({threshold('quota_7d_tokens')} > 0)"
                )
            ],
            "percentunit",
            steps=QUOTA_STEPS,
            maximum=1,
        ),
        stat(
            "Usage limit resets",
            "When the newest usage-limit message in a transcript says the limit resets.",
            [target(millis(gauge_by("agentwatch_usage_limit_reset_timestamp_seconds")))],
            "dateTimeFromNow",
            w=8,
            no_value="no usage limit hit",
        ),
        row("Tokens and spend"),
        *[
            timeseries(
                f"Tokens per hour by {label}",
                f"Token rate by {label} (all four "
                "types unless the panel says otherwise); project and model filters "
                "apply.",
                [
                    target(
                        rate("agentwatch_tokens_total", *scope, by=label, fleet=True) + PER_HOUR,
                        f"{{{{{label}}}}}",
                    )
                ],
                "short",
                stack=True,
            )
            for label in ("type", "model", "project")
        ],
        timeseries(
            "Spend per hour by project",
            "Cost rate by project; project and model filters apply.",
            [
                target(
                    rate("agentwatch_cost_usd_total", *scope, by="project", fleet=True) + PER_HOUR,
                    "{{project}}",
                )
            ],
            "currencyUSD",
            stack=True,
        ),
        *[
            bargauge(
                f"{what} by {label} over the range",
                f"{what} over the dashboard's time "
                f"range by {label}, largest first; project and model filters apply.",
                [
                    target(
                        sort_desc(increase(metric, *scope, by=label, fleet=True)),
                        f"{{{{{label}}}}}",
                    )
                ],
                unit,
            )
            for what, metric, unit, label in (
                ("Spend", "agentwatch_cost_usd_total", "currencyUSD", "model"),
                ("Spend", "agentwatch_cost_usd_total", "currencyUSD", "project"),
                ("Tokens", "agentwatch_tokens_total", "short", "type"),
            )
        ],
        row("Alerts"),
        table(
            "agentwatch alerts",
            "agentwatch alerts pending or firing now, with the labels the controller acts on.",
            [(target(sel("ALERTS", 'alertname=~"Agentwatch.*"')), "active", "none")],
            "none",
            h=7,
        ),
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


def _pane_state_index() -> str:
    """Each pane's current state as its number in PANE_STATES (1-based), for a timeline."""
    parts = [
        sel("agentwatch_pane_state", f'state="{state}"') + f" * {number}"
        for number, state in enumerate(PANE_STATES, start=1)
    ]
    return f"sum by ({per_host('tmux_session, pane, agent')}) (" + " or ".join(parts) + ")"


def _time_in_state() -> str:
    """Seconds each pane not working has been in its state, labelled with that state."""
    pane = "tmux_session, pane, agent"
    since = age("agentwatch_pane_state_since_timestamp_seconds", by=pane)
    current = gauge_by("agentwatch_pane_state", 'state!="working"', by=f"{pane}, state")
    return f"({since}) * on ({per_host(pane)}) group_left (state) ({current} == 1)"


def sessions() -> dict[str, Any]:
    session_label = "{{project}} {{session}}"
    burn = [
        bargauge(
            "Top burners: fresh tokens over the range",
            "The ten sessions with the most "
            "input, output and cache-creation tokens over the dashboard's time range.",
            [
                target(
                    topk(
                        increase(
                            "agentwatch_session_tokens_total", PROJECT, FRESH, by="project, session"
                        )
                    ),
                    session_label,
                )
            ],
            "short",
            w=12,
        ),
        bargauge(
            "Top spenders: cost over the range",
            "The ten sessions that cost the most over the dashboard's time range.",
            [
                target(
                    topk(
                        increase(
                            "agentwatch_session_cost_usd_total", PROJECT, by="project, session"
                        )
                    ),
                    session_label,
                )
            ],
            "currencyUSD",
            w=12,
        ),
        timeseries(
            "Fresh tokens per hour by session",
            "Input, output and cache-creation "
            "token rate per session; the dashed line is the burn floor below which a "
            "session never pages (thresholds.burn_floor_tokens_per_hour).",
            [
                target(
                    rate("agentwatch_session_tokens_total", PROJECT, FRESH, by="project, session")
                    + PER_HOUR,
                    session_label,
                ),
                target(threshold("burn_floor_tokens_per_hour"), "burn floor"),
            ],
            "short",
            limits=["B"],
        ),
        timeseries(
            "Spend per hour by session",
            "Cost rate per recently active session.",
            [
                target(
                    rate("agentwatch_session_cost_usd_total", PROJECT, by="project, session")
                    + PER_HOUR,
                    session_label,
                )
            ],
            "currencyUSD",
        ),
        table(
            "Recently active sessions",
            "Sessions the ledger saw recently (series expire "
            "after token-ledger session_ttl), with what they used over the range.",
            [
                (
                    target(
                        millis(
                            gauge_by(
                                "agentwatch_session_last_activity_timestamp_seconds",
                                PROJECT,
                                by="project, session",
                            )
                        )
                    ),
                    "last activity",
                    "dateTimeFromNow",
                ),
                (
                    target(
                        millis(
                            gauge_by(
                                "agentwatch_session_first_activity_timestamp_seconds",
                                PROJECT,
                                by="project, session",
                            )
                        )
                    ),
                    "first activity",
                    "dateTimeFromNow",
                ),
                (
                    target(
                        increase(
                            "agentwatch_session_tokens_total", PROJECT, FRESH, by="project, session"
                        )
                    ),
                    "fresh tokens (range)",
                    "short",
                ),
                (
                    target(
                        increase(
                            "agentwatch_session_cost_usd_total", PROJECT, by="project, session"
                        )
                    ),
                    "cost (range)",
                    "currencyUSD",
                ),
            ],
            sort_by="cost (range)",
        ),
    ]
    errors = [
        timeseries(
            "API errors per hour by kind",
            "API error lines in transcripts "
            "(rate_limit, overloaded, usage_limit, server_error, other).",
            [
                target(
                    rate("agentwatch_api_errors_total", PROJECT, by="kind") + PER_HOUR, "{{kind}}"
                )
            ],
            "short",
            bars=True,
            stack=True,
        ),
        timeseries(
            "API error ratio by project",
            "API errors per API response over 10 "
            "minutes (the window of the alert); the dashed line is "
            "thresholds.error_ratio, above which concurrency shrinks.",
            [
                target(
                    rate("agentwatch_api_errors_total", PROJECT, by="project", window="10m")
                    + " / "
                    + rate("agentwatch_api_responses_total", PROJECT, by="project", window="10m"),
                    "{{project}}",
                ),
                target(threshold("error_ratio"), "shrink above"),
            ],
            "percentunit",
            limits=["B"],
        ),
        bargauge(
            "API errors over the range by project and kind",
            "API error lines over the dashboard's time range.",
            [
                target(
                    sort_desc(increase("agentwatch_api_errors_total", PROJECT, by="project, kind")),
                    "{{project}} {{kind}}",
                )
            ],
            "short",
            w=12,
        ),
        stat(
            "Last API error by kind",
            "When the newest API error of each kind was written; "
            "the breaker stays open thresholds.rate_limit_cooldown_seconds after a "
            "rate-limit or overload.",
            [
                target(
                    millis(gauge_by("agentwatch_api_error_last_timestamp_seconds", by="kind")),
                    "{{kind}}",
                )
            ],
            "dateTimeFromNow",
            w=12,
            h=8,
            text_mode="value_and_name",
            no_value="no API error yet",
        ),
    ]
    state_numbers = {
        n: (state, color) for n, (state, color) in enumerate(PANE_STATES.items(), start=1)
    }
    panes = [
        bargauge(
            "Agent panes by state",
            "Live agent panes in tmux by the state the "
            "idle-error sentinel reads from their screen.",
            [target(gauge_by("agentwatch_panes", by="state", how="sum"), "{{state}}")],
            "short",
            w=8,
        ),
        timeseries(
            "Agent panes by state over time",
            "Live agent panes per state.",
            [target(gauge_by("agentwatch_panes", by="state", how="sum"), "{{state}}")],
            "short",
            stack=True,
            w=16,
            decimals=0,
        ),
        state_timeline(
            "Pane states",
            "Each agent pane's state over time.",
            [target(_pane_state_index(), "{{tmux_session}} {{pane}} {{agent}}")],
            mapping(state_numbers),
        ),
        table(
            "Panes not working",
            "Agent panes in any state but working, and for how long; "
            "a stall longer than thresholds.stall_seconds alerts (and may be nudged).",
            [(target(_time_in_state()), "in this state for", "s")],
            sort_by="in this state for",
        ),
    ]
    return dashboard(
        "agentwatch-sessions",
        "agentwatch / Sessions",
        "Which sessions burn tokens and money, API errors, and what each agent pane is doing.",
        [label_variable("project", "Project", "agentwatch_session_cost_usd_total")],
        [row("Burners"), *burn, row("API errors"), *errors, row("Panes"), *panes],
    )


def host() -> dict[str, Any]:
    session_labels = "project, agent, pid, tmux_session, tmux_pane"
    session_legend = "{{project}} {{agent}} pid {{pid}} {{tmux_session}}{{tmux_pane}}"
    footprint = [
        bargauge(
            "Agent-related processes by kind",
            "Processes on the host by kind (first matching signature of the footprint sentinel).",
            [target(gauge_by("agentwatch_footprint_processes", by="kind"), "{{kind}}")],
            "short",
            w=8,
        ),
        timeseries(
            "Footprint by kind",
            "Agent-related processes by kind over time: a kind "
            "that only climbs (MCP servers, headless browsers) is leaking.",
            [target(gauge_by("agentwatch_footprint_processes", by="kind"), "{{kind}}")],
            "short",
            stack=True,
            w=16,
            decimals=0,
        ),
        timeseries(
            "Footprint against the cap",
            "All agent-related processes, where the "
            "1-hour trend puts them in 4 hours, and thresholds.footprint_processes "
            "above which concurrency shrinks.",
            [
                target(gauge_by("agentwatch_footprint_agent_processes"), "processes"),
                target(
                    f"max by ({HOST}) (predict_linear("
                    f"{sel('agentwatch_footprint_agent_processes')}[1h], 4 * 3600))",
                    "in 4 h at the 1 h trend",
                ),
                target(threshold("footprint_processes"), "cap"),
            ],
            "short",
            limits=["C"],
        ),
        timeseries(
            "Footprint memory by kind",
            "Resident memory of agent-related processes "
            "by kind (shared pages counted per process, as ps does).",
            [target(gauge_by("agentwatch_footprint_resident_memory_bytes", by="kind"), "{{kind}}")],
            "bytes",
            stack=True,
        ),
        stat(
            "Footprint growth",
            "Change of agent-related processes per hour over the last "
            "hour (deriv); positive for long means something piles up.",
            [
                target(
                    f"max by ({HOST}) "
                    f"(deriv({sel('agentwatch_footprint_agent_processes')}[1h]))" + PER_HOUR
                )
            ],
            "short",
            w=6,
            decimals=1,
            steps=[(None, "green"), (1, "orange"), (10, "red")],
        ),
        stat(
            "Agent-related memory",
            "Resident memory of all agent-related processes.",
            [target(gauge_by("agentwatch_footprint_agent_resident_memory_bytes"))],
            "bytes",
            w=6,
        ),
        stat(
            "Host processes",
            "User-space processes the footprint scan saw, for context.",
            [target(gauge_by("agentwatch_footprint_host_processes"))],
            "short",
            w=6,
        ),
        stat(
            "Footprint scan",
            "Whether the latest /proc scan succeeded (while it fails the "
            "per-kind series are left out, not zeroed).",
            [target(gauge_by("agentwatch_footprint_scan_success", how="min"))],
            "none",
            w=6,
            mappings=OK_FAILING,
        ),
    ]
    machine = [
        timeseries(
            "Load per CPU",
            "Load averages divided by the CPU count; above "
            "thresholds.host_load_per_cpu (5-minute window) spawning pauses.",
            [
                target(
                    f"{gauge_by('agentwatch_host_load_average', by='window')} "
                    f"/ on ({HOST}) group_left () {gauge_by('agentwatch_host_cpus')}",
                    "{{window}}",
                ),
                target(threshold("host_load_per_cpu"), "pause above"),
            ],
            "short",
            limits=["B"],
        ),
        timeseries(
            "Available memory",
            "Available memory as a share of the total; below "
            "thresholds.host_memory_available_ratio concurrency shrinks.",
            [
                target(
                    f"{gauge_by('agentwatch_host_memory_available_bytes')} / "
                    f"{gauge_by('agentwatch_host_memory_total_bytes')}",
                    "available",
                ),
                target(threshold("host_memory_available_ratio"), "shrink below"),
            ],
            "percentunit",
            limits=["B"],
        ),
        timeseries(
            "CPU by group (cores)",
            "CPU seconds per second of all agent sessions, "
            "agentwatch itself and the orchestrator (without its agents); 1 = one "
            "busy core.",
            [target(rate("agentwatch_resources_cpu_seconds_total", by="group"), "{{group}}")],
            "short",
        ),
        timeseries(
            "Memory by group",
            "Resident memory of all agent sessions, agentwatch itself and the orchestrator.",
            [
                target(
                    gauge_by("agentwatch_resources_resident_memory_bytes", by="group"), "{{group}}"
                )
            ],
            "bytes",
        ),
    ]
    per_session = [
        timeseries(
            "CPU per session (cores)",
            "CPU seconds per second of each session's "
            "whole process tree; a tree sustained above thresholds.session_cpu_cores "
            "is runaway.",
            [
                target(
                    rate("agentwatch_agent_session_cpu_seconds_total", PROJECT, by=session_labels),
                    session_legend,
                ),
                target(threshold("session_cpu_cores"), "runaway above"),
            ],
            "short",
            limits=["B"],
        ),
        timeseries(
            "Memory per session",
            "Resident memory summed over each session's "
            "process tree; above thresholds.session_memory_bytes it is runaway.",
            [
                target(
                    gauge_by(
                        "agentwatch_agent_session_resident_memory_bytes", PROJECT, by=session_labels
                    ),
                    session_legend,
                ),
                target(threshold("session_memory_bytes"), "runaway above"),
            ],
            "bytes",
            limits=["B"],
        ),
        timeseries(
            "Processes per session",
            "Processes in each session's tree (zombies not counted).",
            [
                target(
                    gauge_by("agentwatch_agent_session_processes", PROJECT, by=session_labels),
                    session_legend,
                )
            ],
            "short",
            decimals=0,
        ),
        bargauge(
            "Live sessions by agent",
            "Live sessions per configured agent CLI.",
            [target(gauge_by("agentwatch_agent_sessions", by="agent"), "{{agent}}")],
            "short",
            w=12,
        ),
        table(
            "Live sessions",
            "Each live session's process tree now.",
            [
                (
                    target(
                        millis(
                            gauge_by(
                                "agentwatch_agent_session_start_timestamp_seconds",
                                PROJECT,
                                by=session_labels,
                            )
                        )
                    ),
                    "started",
                    "dateTimeFromNow",
                ),
                (
                    target(
                        gauge_by("agentwatch_agent_session_cpu_cores", PROJECT, by=session_labels)
                    ),
                    "CPU cores",
                    "short",
                ),
                (
                    target(
                        gauge_by(
                            "agentwatch_agent_session_resident_memory_bytes",
                            PROJECT,
                            by=session_labels,
                        )
                    ),
                    "memory",
                    "bytes",
                ),
                (
                    target(
                        gauge_by("agentwatch_agent_session_processes", PROJECT, by=session_labels)
                    ),
                    "processes",
                    "short",
                ),
            ],
            sort_by="memory",
        ),
    ]
    return dashboard(
        "agentwatch-host",
        "agentwatch / Host",
        "What the agents leave running on the workstation, and what each "
        "session's process tree uses.",
        [label_variable("project", "Project", "agentwatch_agent_session_processes")],
        [row("Footprint"), *footprint, row("Host"), *machine, row("Sessions"), *per_session],
    )


def releases() -> dict[str, Any]:
    by_repo = {"by": "repo"}
    blocked = mapping({0: ("clear", "green"), 1: ("blocked", "red")})
    panels = [
        row("Unreleased work"),
        stat(
            "Unreleased commits",
            "Non-merge commits on the release branch since the last release tag.",
            [
                target(
                    gauge_by("agentwatch_release_unreleased_commits", REPO, **by_repo), "{{repo}}"
                )
            ],
            "short",
            w=6,
            text_mode="value_and_name",
            steps=[(None, "green"), (1, "orange")],
        ),
        stat(
            "Oldest unreleased commit",
            "When the oldest commit not in a release was made "
            "(absent when everything is released).",
            [
                target(
                    millis(
                        gauge_by(
                            "agentwatch_release_oldest_unreleased_commit_timestamp_seconds",
                            REPO,
                            **by_repo,
                        )
                    ),
                    "{{repo}}",
                )
            ],
            "dateTimeFromNow",
            w=6,
            text_mode="value_and_name",
            no_value="all released",
        ),
        stat(
            "Last release",
            "When the newest release tag was made.",
            [
                target(
                    millis(
                        gauge_by("agentwatch_release_last_tag_timestamp_seconds", REPO, **by_repo)
                    ),
                    "{{repo}}",
                )
            ],
            "dateTimeFromNow",
            w=6,
            text_mode="value_and_name",
            no_value="no release tag",
        ),
        stat(
            "Publishing",
            "Whether any configured probe says a release cannot be published now.",
            [target(gauge_by("agentwatch_release_publish_blocked", REPO, **by_repo), "{{repo}}")],
            "none",
            w=6,
            text_mode="value_and_name",
            mappings=blocked,
        ),
        timeseries(
            "Unreleased commits over time",
            "Commits waiting for a release.",
            [
                target(
                    gauge_by("agentwatch_release_unreleased_commits", REPO, **by_repo), "{{repo}}"
                )
            ],
            "short",
            decimals=0,
        ),
        timeseries(
            "Age of the oldest unreleased commit",
            "How long the oldest unreleased commit has waited.",
            [
                target(
                    age(
                        "agentwatch_release_oldest_unreleased_commit_timestamp_seconds",
                        REPO,
                        **by_repo,
                    ),
                    "{{repo}}",
                )
            ],
            "s",
        ),
        row("Probes and checks"),
        table(
            "Release probes",
            "Each configured probe (command, required_file, ci): blocked "
            "means it says no; could not decide (unreachable, denied, timeout) is not "
            "blocked.",
            [
                (
                    target(gauge_by("agentwatch_release_probe_blocked", REPO, by="repo, probe")),
                    "blocked",
                    "none",
                ),
                (
                    target(gauge_by("agentwatch_release_probe_error", REPO, by="repo, probe")),
                    "could not decide",
                    "none",
                ),
            ],
            "none",
            w=12,
            mappings={"blocked": NO_YES_BAD, "could not decide": NO_YES_BAD},
        ),
        table(
            "Release checks",
            "Whether the last check and fetch worked, and how long ago a check last succeeded.",
            [
                (
                    target(gauge_by("agentwatch_release_check_success", REPO, **by_repo)),
                    "check",
                    "none",
                ),
                (
                    target(gauge_by("agentwatch_release_fetch_success", REPO, **by_repo)),
                    "fetch",
                    "none",
                ),
                (
                    target(
                        age("agentwatch_release_last_success_timestamp_seconds", REPO, **by_repo)
                    ),
                    "since last good check",
                    "s",
                ),
            ],
            "none",
            w=12,
            mappings={"check": OK_FAILING, "fetch": OK_FAILING},
        ),
        timeseries(
            "Check duration",
            "Wall time of each repository's release check.",
            [
                target(
                    gauge_by("agentwatch_release_check_duration_seconds", REPO, **by_repo),
                    "{{repo}}",
                )
            ],
            "s",
            w=24,
        ),
    ]
    return dashboard(
        "agentwatch-releases",
        "agentwatch / Releases",
        "Work that agents committed but nobody released, and what blocks it.",
        [label_variable("repo", "Repository", "agentwatch_release_check_success")],
        panels,
    )


def agentwatch_self() -> dict[str, Any]:
    by_sentinel = {"by": "sentinel"}
    exporter = [
        stat(
            "Exporter scrape",
            "Whether Prometheus can scrape the exporter.",
            [target(f"min by ({HOST}) ({sel('up')})")],
            "none",
            w=6,
            mappings=OK_FAILING,
        ),
        stat(
            "Version",
            "The running exporter's version.",
            [target(gauge_by("agentwatch_exporter_build_info", by="version"), "{{version}}")],
            "none",
            w=6,
            text_mode="name",
        ),
        stat(
            "Sentinels up",
            "Sentinels whose spool file is present, fresh and parses.",
            [
                target(gauge_by("agentwatch_sentinel_up", how="sum"), "up"),
                target(f"count by ({HOST}) ({sel('agentwatch_sentinel_up')})", "expected"),
            ],
            "short",
            w=6,
            text_mode="value_and_name",
        ),
        stat(
            "Spool merge time",
            "Time the exporter spent reading and merging the spool for the latest scrape.",
            [target(gauge_by("agentwatch_exporter_merge_duration_seconds"))],
            "s",
            w=6,
        ),
        state_timeline(
            "Sentinel health",
            "Up = the sentinel's file is present, fresh and parsed.",
            [target(gauge_by("agentwatch_sentinel_up", **by_sentinel), "{{sentinel}}")],
            mapping({0: ("down", "red"), 1: ("up", "green")}),
        ),
        table(
            "Sentinels",
            "Per sentinel: stale = file missing or older than "
            "exporter.stale_after_intervals × its interval; file error = it failed to "
            "parse and is left out of the scrape.",
            [
                (target(gauge_by("agentwatch_sentinel_up", **by_sentinel)), "up", "none"),
                (target(gauge_by("agentwatch_sentinel_stale", **by_sentinel)), "stale", "none"),
                (
                    target(gauge_by("agentwatch_sentinel_file_error", **by_sentinel)),
                    "file error",
                    "none",
                ),
                (
                    target(age("agentwatch_sentinel_last_write_timestamp_seconds", **by_sentinel)),
                    "since last write",
                    "s",
                ),
                (
                    target(gauge_by("agentwatch_sentinel_interval_seconds", **by_sentinel)),
                    "interval",
                    "s",
                ),
            ],
            "none",
            mappings={
                "up": mapping({0: ("down", "red"), 1: ("up", "green")}),
                "stale": NO_YES_BAD,
                "file error": NO_YES_BAD,
            },
        ),
        timeseries(
            "Time since each sentinel's last write",
            "Seconds since each sentinel "
            "rewrote its spool file; it should stay below its interval.",
            [
                target(
                    age("agentwatch_sentinel_last_write_timestamp_seconds", **by_sentinel),
                    "{{sentinel}}",
                )
            ],
            "s",
            w=24,
        ),
    ]
    ledger = [
        timeseries(
            "Ledger lag",
            "Bytes written to transcripts but not read yet; above "
            "thresholds.ledger_lag_bytes the ledger is falling behind.",
            [
                target(gauge_by("agentwatch_ledger_unread_bytes"), "unread"),
                target(threshold("ledger_lag_bytes"), "behind above"),
            ],
            "bytes",
            limits=["B"],
        ),
        timeseries(
            "Ledger reading",
            "Transcript bytes the ledger consumes per second.",
            [target(rate("agentwatch_ledger_bytes_read_total"), "bytes read")],
            "Bps",
        ),
        timeseries(
            "Transcript lines read",
            "Complete transcript lines read per second.",
            [target(rate("agentwatch_ledger_lines_read_total"), "lines")],
            "cps",
        ),
        timeseries(
            "Ledger database size",
            "SQLite database, WAL and shared memory; above "
            "thresholds.ledger_database_bytes it grows without bound.",
            [
                target(gauge_by("agentwatch_ledger_database_bytes"), "database"),
                target(threshold("ledger_database_bytes"), "too big above"),
            ],
            "bytes",
            limits=["B"],
        ),
        stat(
            "Transcript files",
            "Transcript files the ledger follows.",
            [target(gauge_by("agentwatch_ledger_files_tracked"))],
            "short",
            w=6,
        ),
        stat(
            "Transcript roots",
            "Transcript roots (…/projects) that exist; 0 means the ledger has nothing to read.",
            [target(gauge_by("agentwatch_ledger_roots"))],
            "short",
            w=6,
            steps=[(None, "red"), (1, "green")],
        ),
        stat(
            "Read errors over the range",
            "Transcripts that vanished or were unreadable.",
            [target(increase("agentwatch_ledger_read_errors_total", by="reason"), "{{reason}}")],
            "short",
            w=6,
            text_mode="value_and_name",
        ),
        stat(
            "File resets over the range",
            "Transcripts re-read from the start because they were truncated or replaced.",
            [target(increase("agentwatch_ledger_file_resets_total"))],
            "short",
            w=6,
            no_value="0",
        ),
        timeseries(
            "Rejected lines per hour by reason",
            "Lines with usage that the reference reader skips too.",
            [
                target(
                    rate("agentwatch_ledger_lines_rejected_total", by="reason") + PER_HOUR,
                    "{{reason}}",
                )
            ],
            "short",
            bars=True,
            stack=True,
            w=8,
        ),
        timeseries(
            "Duplicate copies per hour",
            "Lines repeating a response already counted (streamed copies, sidechain replays).",
            [
                target(
                    rate("agentwatch_ledger_duplicate_copies_total", by="kind") + PER_HOUR,
                    "{{kind}}",
                )
            ],
            "short",
            bars=True,
            stack=True,
            w=8,
        ),
        timeseries(
            "Unpriced tokens per hour by model",
            "Tokens of models with no price (counted at 0 cost): add the model to the price table.",
            [
                target(
                    rate("agentwatch_ledger_unpriced_tokens_total", by="model") + PER_HOUR,
                    "{{model}}",
                )
            ],
            "short",
            bars=True,
            stack=True,
            w=8,
        ),
    ]
    scans = [
        timeseries(
            "Scan durations",
            "Wall time of the latest process-table scans.",
            [
                target(gauge_by("agentwatch_resources_scan_duration_seconds"), "resources"),
                target(gauge_by("agentwatch_footprint_scan_duration_seconds"), "footprint"),
            ],
            "s",
        ),
        timeseries(
            "Scan problems per hour",
            "Processes the resources scan skipped, by reason, and failed footprint scans.",
            [
                target(
                    rate("agentwatch_resources_scan_errors_total", by="reason") + PER_HOUR,
                    "resources {{reason}}",
                ),
                target(
                    rate("agentwatch_footprint_scan_errors_total") + PER_HOUR,
                    "footprint failed scans",
                ),
                target(
                    rate("agentwatch_footprint_processes_vanished_total") + PER_HOUR,
                    "footprint vanished",
                ),
            ],
            "short",
        ),
        stat(
            "Processes scanned",
            "Processes read in the latest resources scan.",
            [target(gauge_by("agentwatch_resources_processes_scanned"))],
            "short",
            w=6,
        ),
        stat(
            "Since last good footprint scan",
            "Age of the footprint values on display.",
            [target(age("agentwatch_footprint_last_success_timestamp_seconds"))],
            "s",
            w=6,
        ),
        stat(
            "tmux panes found",
            "tmux panes the resources sentinel found in its last query.",
            [target(gauge_by("agentwatch_resources_tmux_panes"))],
            "short",
            w=6,
        ),
        stat(
            "tmux servers failing",
            "tmux servers whose last query failed, as seen by the "
            "resources and idle-error sentinels.",
            [
                target(gauge_by("agentwatch_resources_tmux_failing"), "resources"),
                target(gauge_by("agentwatch_idle_error_tmux_failing"), "idle-error"),
            ],
            "short",
            w=6,
            text_mode="value_and_name",
            steps=[(None, "green"), (1, "red")],
        ),
        timeseries(
            "Pane classifications per hour",
            "Changes of an agent pane into a non-working state, by state.",
            [
                target(
                    rate("agentwatch_pane_classifications_total", by="state") + PER_HOUR,
                    "{{state}}",
                )
            ],
            "short",
            bars=True,
            stack=True,
            w=8,
        ),
        timeseries(
            "Suppressed pane matches per hour",
            "Pattern matches the idle-error sentinel ignored on purpose, by reason.",
            [
                target(
                    rate("agentwatch_pane_suppressed_total", by="reason") + PER_HOUR, "{{reason}}"
                )
            ],
            "short",
            bars=True,
            stack=True,
            w=8,
        ),
        timeseries(
            "Pane capture errors per hour",
            "tmux captures that failed, by reason.",
            [
                target(
                    rate("agentwatch_idle_error_capture_errors_total", by="reason") + PER_HOUR,
                    "{{reason}}",
                )
            ],
            "short",
            bars=True,
            stack=True,
            w=8,
        ),
    ]
    controller = [
        stat(
            "Alertmanager reachable",
            "Whether the controller can read alerts back from each Alertmanager.",
            [
                target(
                    gauge_by("agentwatch_controller_alertmanager_up", by="alertmanager"),
                    "{{alertmanager}}",
                )
            ],
            "none",
            w=8,
            text_mode="value_and_name",
            mappings=OK_FAILING,
        ),
        stat(
            "Since the controller's last good cycle",
            "Age of the controller's decision: the last cycle in which an Alertmanager answered.",
            [target(age("agentwatch_controller_last_success_timestamp_seconds"))],
            "s",
            w=8,
        ),
        stat(
            "Orchestrator reachable",
            "Whether the controller reaches the orchestrator's API.",
            [target(gauge_by("agentwatch_orchestrator_up", how="min"))],
            "none",
            w=8,
            mappings=OK_FAILING,
        ),
        timeseries(
            "Controller decisions per hour",
            "Changes of the throttle decision, by the action that caused them.",
            [
                target(
                    rate("agentwatch_controller_decisions_total", by="reason") + PER_HOUR,
                    "{{reason}}",
                )
            ],
            "short",
            bars=True,
            stack=True,
            w=8,
        ),
        timeseries(
            "Nudges per hour",
            "Stalled panes the controller nudged, by result.",
            [
                target(
                    rate("agentwatch_controller_nudges_total", by="result") + PER_HOUR, "{{result}}"
                )
            ],
            "short",
            bars=True,
            stack=True,
            w=8,
        ),
        timeseries(
            "Adapter errors per hour",
            "Failures applying a decision to the orchestrator, by adapter.",
            [
                target(
                    rate("agentwatch_controller_adapter_errors_total", by="adapter") + PER_HOUR,
                    "{{adapter}}",
                )
            ],
            "short",
            bars=True,
            stack=True,
            w=8,
        ),
    ]
    return dashboard(
        "agentwatch-self",
        "agentwatch / agentwatch itself",
        "Is agentwatch healthy: exporter, sentinels, ledger lag, scans and the controller.",
        [],
        [
            row("Exporter and sentinels"),
            *exporter,
            row("Token ledger"),
            *ledger,
            row("Host sentinels"),
            *scans,
            row("Controller"),
            *controller,
        ],
    )


BUILDERS = (overview, sessions, host, releases, agentwatch_self)


def render() -> dict[str, str]:
    """File name -> JSON text of every dashboard, exactly as committed."""
    out = {}
    for build in BUILDERS:
        model = build()
        out[f"{model['uid']}.json"] = json.dumps(model, indent=2, sort_keys=True) + "\n"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if the committed JSON differs instead of writing it",
    )
    args = parser.parse_args(argv)
    stale = []
    for name, text in render().items():
        path = OUT_DIR / name
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(name)
        if not args.check:
            OUT_DIR.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"out of date (run python grafana/build.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
