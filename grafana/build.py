"""Write agentwatch's Grafana dashboards from one description, so the five stay consistent.

Grafana cannot run here, so the JSON model (schemaVersion 39) is written directly from plain
dicts: one helper per panel kind holds that kind's defaults, so a panel below states only its
title, description, queries, unit and what differs; one function per dashboard lists its
panels, and a layout packs them into rows of 24 columns. `python grafana/build.py` rewrites
grafana/dashboards/*.json; `--check` exits 1 when the committed files differ
(tests/test_dashboards.py does the same).

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
from collections.abc import Callable
from functools import partial
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

Json = dict[str, Any]
Targets = Json | list[Json]  # one query, or several (refIds A, B, ... in this order)
Steps = list[tuple[float | None, str]]  # threshold steps: (from value, colour)
Column = tuple[str, str, str]  # a table column: (expression, header, unit)


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
    metric: str, *matchers: str, by: str = "", window: str = "$__rate_interval", fleet: bool = False
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


def gauges_by(*matchers: str, by: str) -> Callable[[str], str]:
    """gauge_by with fixed matchers and grouping: the columns of one table share them."""
    return lambda metric: gauge_by(metric, *matchers, by=by)


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


# --- queries -----------------------------------------------------------------------------


def legend_for(by: str) -> str:
    """A legend naming each series by the labels `by`: "project, kind" -> "{{project}} {{kind}}"."""
    return " ".join("{{" + label.strip() + "}}" for label in by.split(",") if label.strip())


def target(expr: str, legend: str = "") -> Json:
    """One query; refId and the table format are filled in by the panel that holds it.

    A query whose result is per host (grouped by instance) gets the host in its legend, so
    several workstations on one panel stay apart.
    """
    if f"by ({HOST}" in expr and "{{instance}}" not in legend:
        legend = f"{{{{{HOST}}}}} {legend}".rstrip()
    return {"expr": expr, "legendFormat": legend}


def level(metric: str, *matchers: str, by: str = "", how: str = "max", legend: str = "") -> Json:
    """A gauge per host (by `by`), its series named by `by` unless `legend` names them."""
    return target(gauge_by(metric, *matchers, by=by, how=how), legend or legend_for(by))


def hourly(
    metric: str, *matchers: str, by: str = "", legend: str = "", fleet: bool = False
) -> Json:
    """A counter's rate per hour per host (by `by`), its series named by `by` or `legend`."""
    rate_per_hour = rate(metric, *matchers, by=by, fleet=fleet) + PER_HOUR
    return target(rate_per_hour, legend or legend_for(by))


def when(metric: str, *matchers: str, by: str = "") -> Json:
    """The timestamp gauge `metric` per host (by `by`), for a dateTimeFromNow unit."""
    return target(millis(gauge_by(metric, *matchers, by=by)), legend_for(by))


def ref_id(index: int) -> str:
    return chr(ord("A") + index)


def _listed(targets: Targets) -> list[Json]:
    return targets if isinstance(targets, list) else [targets]


def _queries(targets: Targets, *, instant: bool, table: bool) -> list[Json]:
    return [
        {
            "datasource": DATASOURCE,
            "editorMode": "code",
            "expr": item["expr"],
            "format": "table" if table else "time_series",
            "instant": instant,
            "legendFormat": item["legendFormat"] or "__auto",
            "range": not instant,
            "refId": ref_id(index),
        }
        for index, item in enumerate(_listed(targets))
    ]


# --- panels ------------------------------------------------------------------------------

BY_THRESHOLDS = {"mode": "thresholds"}
PALETTE = {"mode": "palette-classic"}
REDUCE = {"calcs": ["lastNotNull"], "fields": "", "values": False}
INSTANT_KINDS = {"stat", "gauge", "bargauge", "table"}  # the others are graphs over time


def _thresholds(steps: Steps | None) -> Json:
    steps = steps or [(None, "green")]
    return {"mode": "absolute", "steps": [{"color": c, "value": v} for v, c in steps]}


def _given(**values: Any) -> Json:
    """The keyword arguments that are not None (optional JSON fields)."""
    return {key: value for key, value in values.items() if value is not None}


def mapping(values: dict[int, tuple[str, str]]) -> list[Json]:
    """Value mappings {value: (text, colour)} in Grafana's shape."""
    options = {
        str(value): {"color": color, "index": index, "text": text}
        for index, (value, (text, color)) in enumerate(sorted(values.items()))
    }
    return [{"options": options, "type": "value"}]


OK_FAILING = mapping({0: ("failing", "red"), 1: ("ok", "green")})
NO_YES_BAD = mapping({0: ("no", "green"), 1: ("yes", "red")})
DOWN_UP = mapping({0: ("down", "red"), 1: ("up", "green")})
ALLOWED_HELD = mapping({0: ("allowed", "green"), 1: ("held", "red")})
ANY_IS_BAD = [(None, "green"), (1, "red")]
BUDGET_STEPS = [(None, "green"), (0.8, "orange"), (0.95, "red")]
QUOTA_STEPS = [(None, "green"), (0.8, "orange"), (1, "red")]


# Each panel kind's fixed options, in one place; a panel may add to them (stat: textMode).
OPTIONS: dict[str, Json] = {
    "timeseries": {
        "legend": {
            "calcs": ["lastNotNull", "max"],
            "displayMode": "table",
            "placement": "bottom",
            "showLegend": True,
        },
        "tooltip": {"mode": "multi", "sort": "desc"},
    },
    "stat": {
        "colorMode": "value",
        "graphMode": "none",
        "justifyMode": "auto",
        "orientation": "auto",
        "reduceOptions": REDUCE,
        "showPercentChange": False,
        "wideLayout": True,
    },
    "gauge": {
        "minVizHeight": 75,
        "minVizWidth": 75,
        "orientation": "auto",
        "reduceOptions": REDUCE,
        "showThresholdLabels": False,
        "showThresholdMarkers": True,
        "sizing": "auto",
    },
    "bargauge": {
        "displayMode": "gradient",
        "maxVizHeight": 300,
        "minVizHeight": 16,
        "minVizWidth": 8,
        "namePlacement": "auto",
        "orientation": "horizontal",
        "reduceOptions": REDUCE,
        "showUnfilled": True,
        "sizing": "auto",
        "valueMode": "color",
    },
    "state-timeline": {
        "alignValue": "left",
        "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
        "mergeValues": True,
        "rowHeight": 0.9,
        "showValue": "auto",
        "tooltip": {"mode": "single", "sort": "none"},
    },
    "table": {
        "cellHeight": "sm",
        "footer": {"countRows": False, "fields": "", "reducer": ["sum"], "show": False},
        "showHeader": True,
    },
}
TABLE_DEFAULTS = {"custom": {"align": "auto", "cellOptions": {"type": "auto"}, "filterable": True}}
TABLE_HIDDEN = {name: True for name in ("Time", "__name__", "job")}  # instance: which host
TABLE_TRANSFORMATIONS = [
    {"id": "merge", "options": {}},
    {
        "id": "organize",
        "options": {"excludeByName": TABLE_HIDDEN, "indexByName": {}, "renameByName": {}},
    },
]


def _panel(
    kind: str,
    title: str,
    description: str,
    targets: Targets,
    unit: str,
    w: int,
    h: int,
    defaults: Json,
    overrides: list[Json] | None = None,
    options: Json | None = None,
    **extra: Any,
) -> Json:
    """What every panel holds: `defaults` are the kind's field defaults, `options` add to the
    kind's OPTIONS."""
    return {
        "datasource": DATASOURCE,
        "description": description,
        "fieldConfig": {
            "defaults": {"unit": unit, "thresholds": _thresholds(None), **defaults},
            "overrides": overrides or [],
        },
        "gridPos": {"h": h, "w": w, "x": 0, "y": 0},
        "options": {**OPTIONS[kind], **(options or {})},
        "targets": _queries(targets, instant=kind in INSTANT_KINDS, table=kind == "table"),
        "title": title,
        "type": kind,
        **extra,
    }


def _threshold_line(ref: str) -> Json:
    """Draw query `ref` as a dashed red limit line, outside any stacking."""
    return {
        "matcher": {"id": "byFrameRefID", "options": ref},
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
    targets: Targets,
    unit: str = "short",
    *,
    limit: tuple[str, str] | None = None,
    stack: bool = False,
    bars: bool = False,
    w: int = 12,
    h: int = 8,
    decimals: int | None = None,
) -> Json:
    """A graph over time; bars are stacked. `limit` = (threshold name, legend) adds that
    configured threshold as a last query, drawn as a dashed red line."""
    targets = _listed(targets)
    overrides = []
    if limit:
        name, legend = limit
        targets = [*targets, target(threshold(name), legend)]
        overrides.append(_threshold_line(ref_id(len(targets) - 1)))
    stack = stack or bars
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
    defaults = {"color": PALETTE, "custom": custom, **_given(decimals=decimals)}
    return _panel("timeseries", title, description, targets, unit, w, h, defaults, overrides)


def hourly_bars(title: str, description: str, metric: str, by: str) -> Json:
    """Events per hour of the counter `metric`, as bars stacked by the label `by`."""
    return timeseries(title, description, hourly(metric, by=by), bars=True, w=8)


def stat(
    title: str,
    description: str,
    targets: Targets,
    unit: str = "short",
    *,
    w: int = 4,
    h: int = 4,
    steps: Steps | None = None,
    mappings: list[Json] | None = None,
    no_value: str | None = None,
    text_mode: str = "auto",
    decimals: int | None = None,
    time_from: str | None = None,
) -> Json:
    """One number (or one per series) now; `time_from` overrides the panel's time range."""
    defaults = {
        "color": BY_THRESHOLDS,
        "mappings": mappings or [],
        "thresholds": _thresholds(steps),
        **_given(noValue=no_value, decimals=decimals),
    }
    extra = {"hideTimeOverride": False, "timeFrom": time_from} if time_from else {}
    options = {"textMode": text_mode}
    return _panel(
        "stat", title, description, targets, unit, w, h, defaults, options=options, **extra
    )


def gauge(title: str, description: str, targets: Targets, steps: Steps) -> Json:
    """A share from 0 to 1 now, on a dial coloured by `steps`."""
    defaults = {"color": BY_THRESHOLDS, "max": 1, "min": 0, "thresholds": _thresholds(steps)}
    return _panel("gauge", title, description, targets, "percentunit", 4, 4, defaults)


def bargauge(
    title: str, description: str, targets: Targets, unit: str = "short", *, w: int = 8
) -> Json:
    """One bar per series now, largest first (Grafana sorts nothing: topk/sort do it)."""
    defaults = {"color": PALETTE, "mappings": [], "min": 0, "thresholds": _thresholds(None)}
    return _panel("bargauge", title, description, targets, unit, w, 8, defaults)


def table(
    title: str,
    description: str,
    columns: list[Column],
    unit: str = "short",
    *,
    w: int = 24,
    h: int = 8,
    sort_by: str | None = None,
    mappings: dict[str, list[Json]] | None = None,
) -> Json:
    """Instant queries joined on their labels, one value column per (expression, header, unit)."""
    overrides = []
    for index, (_, header, column_unit) in enumerate(columns):
        field = "Value" if len(columns) == 1 else f"Value #{ref_id(index)}"
        properties = [
            {"id": "displayName", "value": header},
            {"id": "unit", "value": column_unit},
        ]
        if mappings and header in mappings:
            properties.append({"id": "mappings", "value": mappings[header]})
            properties.append({"id": "custom.cellOptions", "value": {"type": "color-text"}})
        overrides.append({"matcher": {"id": "byName", "options": field}, "properties": properties})
    targets = [target(expr) for expr, _, _ in columns]
    options = {"sortBy": [{"desc": True, "displayName": sort_by}]} if sort_by else {}
    panel = _panel(
        "table", title, description, targets, unit, w, h, TABLE_DEFAULTS, overrides, options
    )
    return {**panel, "transformations": TABLE_TRANSFORMATIONS}


def state_timeline(title: str, description: str, targets: Targets, mappings: list[Json]) -> Json:
    """Which state each series was in over time (values mapped to named colours)."""
    defaults = {
        "color": BY_THRESHOLDS,
        "custom": {"fillOpacity": 80, "lineWidth": 0},
        "mappings": mappings,
    }
    return _panel("state-timeline", title, description, targets, "none", 24, 8, defaults)


def row(title: str) -> Json:
    return {
        "collapsed": False,
        "gridPos": {"h": 1, "w": COLUMNS, "x": 0, "y": 0},
        "panels": [],
        "title": title,
        "type": "row",
    }


def layout(panels: list[Json]) -> list[Json]:
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


def datasource_variable() -> Json:
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


def _variable(name: str, label: str, selector: str) -> Json:
    """A multi-select of the values of `name` on `selector`; All = the regex `.*`."""
    query = f"label_values({selector}, {name})"
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


def label_variable(name: str, label: str, metric: str, *matchers: str) -> Json:
    """The values of `name` on `metric` of the selected jobs and hosts."""
    return _variable(name, label, sel(metric, *matchers))


HOST_VARIABLES = (
    # which exporter(s): every job that serves build info
    ("job", "Job", "agentwatch_exporter_build_info"),
    # which workstation(s): every instance of the selected jobs that serves build info
    ("instance", "Host", "agentwatch_exporter_build_info{" + JOB + "}"),
)


def dashboard(
    uid: str, title: str, description: str, variables: list[Json], panels: list[Json]
) -> Json:
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
            "list": [
                datasource_variable(),
                *(_variable(*variable) for variable in HOST_VARIABLES),
                *variables,
            ]
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

SESSION = "project, session"  # a transcript session of the token ledger
PANE = "tmux_session, pane, agent"  # an agent pane of the idle-error sentinel


def quota(window: str, span: str, words: str, tokens_about: str) -> list[Json]:
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


def counts_now_and_over_time(
    counts: Json, now: tuple[str, str], over_time: tuple[str, str]
) -> list[Json]:
    """Counts by kind as bars now (title, description) and stacked over time beside them."""
    return [
        bargauge(*now, counts),
        timeseries(*over_time, counts, stack=True, w=16, decimals=0),
    ]


def overview() -> Json:
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
        row("Spend"),
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
        row("Activity and throttle"),
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
        row("Quota"),
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
        row("Tokens and spend"),
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
        row("Alerts"),
        table(
            "agentwatch alerts",
            "agentwatch alerts pending or firing now, with the labels the controller acts on.",
            [(sel("ALERTS", 'alertname=~"Agentwatch.*"'), "active", "none")],
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
    return f"sum by ({per_host(PANE)}) (" + " or ".join(parts) + ")"


def _time_in_state() -> str:
    """Seconds each pane not working has been in its state, labelled with that state."""
    since = age("agentwatch_pane_state_since_timestamp_seconds", by=PANE)
    current = gauge_by("agentwatch_pane_state", 'state!="working"', by=f"{PANE}, state")
    return f"({since}) * on ({per_host(PANE)}) group_left (state) ({current} == 1)"


def sessions() -> Json:
    tokens = ("agentwatch_session_tokens_total", PROJECT, FRESH)
    cost = ("agentwatch_session_cost_usd_total", PROJECT)
    session = gauges_by(PROJECT, by=SESSION)
    burn = [
        bargauge(
            "Top burners: fresh tokens over the range",
            "The ten sessions with the most input, output and cache-creation tokens over the "
            "dashboard's time range.",
            target(topk(increase(*tokens, by=SESSION)), legend_for(SESSION)),
            w=12,
        ),
        bargauge(
            "Top spenders: cost over the range",
            "The ten sessions that cost the most over the dashboard's time range.",
            target(topk(increase(*cost, by=SESSION)), legend_for(SESSION)),
            "currencyUSD",
            w=12,
        ),
        timeseries(
            "Fresh tokens per hour by session",
            "Input, output and cache-creation token rate per session; the dashed line is the burn "
            "floor below which a session never pages (thresholds.burn_floor_tokens_per_hour).",
            hourly(*tokens, by=SESSION),
            limit=("burn_floor_tokens_per_hour", "burn floor"),
        ),
        timeseries(
            "Spend per hour by session",
            "Cost rate per recently active session.",
            hourly(*cost, by=SESSION),
            "currencyUSD",
        ),
        table(
            "Recently active sessions",
            "Sessions the ledger saw recently (series expire after token-ledger session_ttl), with "
            "what they used over the range.",
            [
                (
                    millis(session("agentwatch_session_last_activity_timestamp_seconds")),
                    "last activity",
                    "dateTimeFromNow",
                ),
                (
                    millis(session("agentwatch_session_first_activity_timestamp_seconds")),
                    "first activity",
                    "dateTimeFromNow",
                ),
                (increase(*tokens, by=SESSION), "fresh tokens (range)", "short"),
                (increase(*cost, by=SESSION), "cost (range)", "currencyUSD"),
            ],
            sort_by="cost (range)",
        ),
    ]
    errors = [
        timeseries(
            "API errors per hour by kind",
            "API error lines in transcripts (rate_limit, overloaded, usage_limit, server_error, "
            "other).",
            hourly("agentwatch_api_errors_total", PROJECT, by="kind"),
            bars=True,
        ),
        timeseries(
            "API error ratio by project",
            "API errors per API response over 10 minutes (the window of the alert); the dashed "
            "line is thresholds.error_ratio, above which concurrency shrinks.",
            target(
                rate("agentwatch_api_errors_total", PROJECT, by="project", window="10m")
                + " / "
                + rate("agentwatch_api_responses_total", PROJECT, by="project", window="10m"),
                "{{project}}",
            ),
            "percentunit",
            limit=("error_ratio", "shrink above"),
        ),
        bargauge(
            "API errors over the range by project and kind",
            "API error lines over the dashboard's time range.",
            target(
                sort_desc(increase("agentwatch_api_errors_total", PROJECT, by="project, kind")),
                "{{project}} {{kind}}",
            ),
            w=12,
        ),
        stat(
            "Last API error by kind",
            "When the newest API error of each kind was written; the breaker stays open "
            "thresholds.rate_limit_cooldown_seconds after a rate-limit or overload.",
            when("agentwatch_api_error_last_timestamp_seconds", by="kind"),
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
        *counts_now_and_over_time(
            level("agentwatch_panes", by="state", how="sum"),
            now=(
                "Agent panes by state",
                "Live agent panes in tmux by the state the idle-error sentinel reads from their "
                "screen.",
            ),
            over_time=("Agent panes by state over time", "Live agent panes per state."),
        ),
        state_timeline(
            "Pane states",
            "Each agent pane's state over time.",
            target(_pane_state_index(), legend_for(PANE)),
            mapping(state_numbers),
        ),
        table(
            "Panes not working",
            "Agent panes in any state but working, and for how long; a stall longer than "
            "thresholds.stall_seconds alerts (and may be nudged).",
            [(_time_in_state(), "in this state for", "s")],
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


def host() -> Json:
    session_labels = "project, agent, pid, tmux_session, tmux_pane"
    session_legend = "{{project}} {{agent}} pid {{pid}} {{tmux_session}}{{tmux_pane}}"
    session = gauges_by(PROJECT, by=session_labels)
    processes = sel("agentwatch_footprint_agent_processes")
    footprint = [
        *counts_now_and_over_time(
            level("agentwatch_footprint_processes", by="kind"),
            now=(
                "Agent-related processes by kind",
                "Processes on the host by kind (first matching signature of the footprint "
                "sentinel).",
            ),
            over_time=(
                "Footprint by kind",
                "Agent-related processes by kind over time: a kind that only climbs (MCP servers, "
                "headless browsers) is leaking.",
            ),
        ),
        timeseries(
            "Footprint against the cap",
            "All agent-related processes, where the 1-hour trend puts them in 4 hours, and "
            "thresholds.footprint_processes above which concurrency shrinks.",
            [
                level("agentwatch_footprint_agent_processes", legend="processes"),
                target(
                    f"max by ({HOST}) (predict_linear({processes}[1h], 4 * 3600))",
                    "in 4 h at the 1 h trend",
                ),
            ],
            limit=("footprint_processes", "cap"),
        ),
        timeseries(
            "Footprint memory by kind",
            "Resident memory of agent-related processes by kind (shared pages counted per process, "
            "as ps does).",
            level("agentwatch_footprint_resident_memory_bytes", by="kind"),
            "bytes",
            stack=True,
        ),
        stat(
            "Footprint growth",
            "Change of agent-related processes per hour over the last hour (deriv); positive for "
            "long means something piles up.",
            target(f"max by ({HOST}) (deriv({processes}[1h]))" + PER_HOUR),
            w=6,
            decimals=1,
            steps=[(None, "green"), (1, "orange"), (10, "red")],
        ),
        stat(
            "Agent-related memory",
            "Resident memory of all agent-related processes.",
            level("agentwatch_footprint_agent_resident_memory_bytes"),
            "bytes",
            w=6,
        ),
        stat(
            "Host processes",
            "User-space processes the footprint scan saw, for context.",
            level("agentwatch_footprint_host_processes"),
            w=6,
        ),
        stat(
            "Footprint scan",
            "Whether the latest /proc scan succeeded (while it fails the per-kind series are left "
            "out, not zeroed).",
            level("agentwatch_footprint_scan_success", how="min"),
            "none",
            w=6,
            mappings=OK_FAILING,
        ),
    ]
    machine = [
        timeseries(
            "Load per CPU",
            "Load averages divided by the CPU count; above thresholds.host_load_per_cpu (5-minute "
            "window) spawning pauses.",
            target(
                f"{gauge_by('agentwatch_host_load_average', by='window')} "
                f"/ on ({HOST}) group_left () {gauge_by('agentwatch_host_cpus')}",
                "{{window}}",
            ),
            limit=("host_load_per_cpu", "pause above"),
        ),
        timeseries(
            "Available memory",
            "Available memory as a share of the total; below "
            "thresholds.host_memory_available_ratio concurrency shrinks.",
            target(
                f"{gauge_by('agentwatch_host_memory_available_bytes')} / "
                f"{gauge_by('agentwatch_host_memory_total_bytes')}",
                "available",
            ),
            "percentunit",
            limit=("host_memory_available_ratio", "shrink below"),
        ),
        timeseries(
            "CPU by group (cores)",
            "CPU seconds per second of all agent sessions, agentwatch itself and the orchestrator "
            "(without its agents); 1 = one busy core.",
            target(rate("agentwatch_resources_cpu_seconds_total", by="group"), "{{group}}"),
        ),
        timeseries(
            "Memory by group",
            "Resident memory of all agent sessions, agentwatch itself and the orchestrator.",
            level("agentwatch_resources_resident_memory_bytes", by="group"),
            "bytes",
        ),
    ]
    per_session = [
        timeseries(
            "CPU per session (cores)",
            "CPU seconds per second of each session's whole process tree; a tree sustained above "
            "thresholds.session_cpu_cores is runaway.",
            target(
                rate("agentwatch_agent_session_cpu_seconds_total", PROJECT, by=session_labels),
                session_legend,
            ),
            limit=("session_cpu_cores", "runaway above"),
        ),
        timeseries(
            "Memory per session",
            "Resident memory summed over each session's process tree; above "
            "thresholds.session_memory_bytes it is runaway.",
            target(session("agentwatch_agent_session_resident_memory_bytes"), session_legend),
            "bytes",
            limit=("session_memory_bytes", "runaway above"),
        ),
        timeseries(
            "Processes per session",
            "Processes in each session's tree (zombies not counted).",
            target(session("agentwatch_agent_session_processes"), session_legend),
            decimals=0,
        ),
        bargauge(
            "Live sessions by agent",
            "Live sessions per configured agent CLI.",
            level("agentwatch_agent_sessions", by="agent"),
            w=12,
        ),
        table(
            "Live sessions",
            "Each live session's process tree now.",
            [
                (
                    millis(session("agentwatch_agent_session_start_timestamp_seconds")),
                    "started",
                    "dateTimeFromNow",
                ),
                (session("agentwatch_agent_session_cpu_cores"), "CPU cores", "short"),
                (session("agentwatch_agent_session_resident_memory_bytes"), "memory", "bytes"),
                (session("agentwatch_agent_session_processes"), "processes", "short"),
            ],
            sort_by="memory",
        ),
    ]
    return dashboard(
        "agentwatch-host",
        "agentwatch / Host",
        "What the agents leave running on the workstation, and what each session's process tree "
        "uses.",
        [label_variable("project", "Project", "agentwatch_agent_session_processes")],
        [row("Footprint"), *footprint, row("Host"), *machine, row("Sessions"), *per_session],
    )


def releases() -> Json:
    repo = gauges_by(REPO, by="repo")
    probe = gauges_by(REPO, by="repo, probe")
    unreleased = level("agentwatch_release_unreleased_commits", REPO, by="repo")
    oldest = "agentwatch_release_oldest_unreleased_commit_timestamp_seconds"
    blocked = mapping({0: ("clear", "green"), 1: ("blocked", "red")})
    repo_stat = partial(stat, w=6, text_mode="value_and_name")  # four a line, named by repo
    panels = [
        row("Unreleased work"),
        repo_stat(
            "Unreleased commits",
            "Non-merge commits on the release branch since the last release tag.",
            unreleased,
            steps=[(None, "green"), (1, "orange")],
        ),
        repo_stat(
            "Oldest unreleased commit",
            "When the oldest commit not in a release was made (absent when everything is "
            "released).",
            when(oldest, REPO, by="repo"),
            "dateTimeFromNow",
            no_value="all released",
        ),
        repo_stat(
            "Last release",
            "When the newest release tag was made.",
            when("agentwatch_release_last_tag_timestamp_seconds", REPO, by="repo"),
            "dateTimeFromNow",
            no_value="no release tag",
        ),
        repo_stat(
            "Publishing",
            "Whether any configured probe says a release cannot be published now.",
            level("agentwatch_release_publish_blocked", REPO, by="repo"),
            "none",
            mappings=blocked,
        ),
        timeseries(
            "Unreleased commits over time",
            "Commits waiting for a release.",
            unreleased,
            decimals=0,
        ),
        timeseries(
            "Age of the oldest unreleased commit",
            "How long the oldest unreleased commit has waited.",
            target(age(oldest, REPO, by="repo"), "{{repo}}"),
            "s",
        ),
        row("Probes and checks"),
        table(
            "Release probes",
            "Each configured probe (command, required_file, ci): blocked means it says no; could "
            "not decide (unreachable, denied, timeout) is not blocked.",
            [
                (probe("agentwatch_release_probe_blocked"), "blocked", "none"),
                (probe("agentwatch_release_probe_error"), "could not decide", "none"),
            ],
            "none",
            w=12,
            mappings={"blocked": NO_YES_BAD, "could not decide": NO_YES_BAD},
        ),
        table(
            "Release checks",
            "Whether the last check and fetch worked, and how long ago a check last succeeded.",
            [
                (repo("agentwatch_release_check_success"), "check", "none"),
                (repo("agentwatch_release_fetch_success"), "fetch", "none"),
                (
                    age("agentwatch_release_last_success_timestamp_seconds", REPO, by="repo"),
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
            level("agentwatch_release_check_duration_seconds", REPO, by="repo"),
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


def agentwatch_self() -> Json:
    sentinel = gauges_by(by="sentinel")
    since_write = age("agentwatch_sentinel_last_write_timestamp_seconds", by="sentinel")
    exporter = [
        stat(
            "Exporter scrape",
            "Whether Prometheus can scrape the exporter.",
            target(f"min by ({HOST}) ({sel('up')})"),
            "none",
            w=6,
            mappings=OK_FAILING,
        ),
        stat(
            "Version",
            "The running exporter's version.",
            level("agentwatch_exporter_build_info", by="version"),
            "none",
            w=6,
            text_mode="name",
        ),
        stat(
            "Sentinels up",
            "Sentinels whose spool file is present, fresh and parses.",
            [
                level("agentwatch_sentinel_up", how="sum", legend="up"),
                target(f"count by ({HOST}) ({sel('agentwatch_sentinel_up')})", "expected"),
            ],
            w=6,
            text_mode="value_and_name",
        ),
        stat(
            "Spool merge time",
            "Time the exporter spent reading and merging the spool for the latest scrape.",
            level("agentwatch_exporter_merge_duration_seconds"),
            "s",
            w=6,
        ),
        state_timeline(
            "Sentinel health",
            "Up = the sentinel's file is present, fresh and parsed.",
            level("agentwatch_sentinel_up", by="sentinel"),
            DOWN_UP,
        ),
        table(
            "Sentinels",
            "Per sentinel: stale = file missing or older than exporter.stale_after_intervals × its "
            "interval; file error = it failed to parse and is left out of the scrape.",
            [
                (sentinel("agentwatch_sentinel_up"), "up", "none"),
                (sentinel("agentwatch_sentinel_stale"), "stale", "none"),
                (sentinel("agentwatch_sentinel_file_error"), "file error", "none"),
                (since_write, "since last write", "s"),
                (sentinel("agentwatch_sentinel_interval_seconds"), "interval", "s"),
            ],
            "none",
            mappings={"up": DOWN_UP, "stale": NO_YES_BAD, "file error": NO_YES_BAD},
        ),
        timeseries(
            "Time since each sentinel's last write",
            "Seconds since each sentinel rewrote its spool file; it should stay below its "
            "interval.",
            target(since_write, "{{sentinel}}"),
            "s",
            w=24,
        ),
    ]
    ledger = [
        timeseries(
            "Ledger lag",
            "Bytes written to transcripts but not read yet; above thresholds.ledger_lag_bytes the "
            "ledger is falling behind.",
            level("agentwatch_ledger_unread_bytes", legend="unread"),
            "bytes",
            limit=("ledger_lag_bytes", "behind above"),
        ),
        timeseries(
            "Ledger reading",
            "Transcript bytes the ledger consumes per second.",
            target(rate("agentwatch_ledger_bytes_read_total"), "bytes read"),
            "Bps",
        ),
        timeseries(
            "Transcript lines read",
            "Complete transcript lines read per second.",
            target(rate("agentwatch_ledger_lines_read_total"), "lines"),
            "cps",
        ),
        timeseries(
            "Ledger database size",
            "SQLite database, WAL and shared memory; above thresholds.ledger_database_bytes it "
            "grows without bound.",
            level("agentwatch_ledger_database_bytes", legend="database"),
            "bytes",
            limit=("ledger_database_bytes", "too big above"),
        ),
        stat(
            "Transcript files",
            "Transcript files the ledger follows.",
            level("agentwatch_ledger_files_tracked"),
            w=6,
        ),
        stat(
            "Transcript roots",
            "Transcript roots (…/projects) that exist; 0 means the ledger has nothing to read.",
            level("agentwatch_ledger_roots"),
            w=6,
            steps=[(None, "red"), (1, "green")],
        ),
        stat(
            "Read errors over the range",
            "Transcripts that vanished or were unreadable.",
            target(increase("agentwatch_ledger_read_errors_total", by="reason"), "{{reason}}"),
            w=6,
            text_mode="value_and_name",
        ),
        stat(
            "File resets over the range",
            "Transcripts re-read from the start because they were truncated or replaced.",
            target(increase("agentwatch_ledger_file_resets_total")),
            w=6,
            no_value="0",
        ),
        hourly_bars(
            "Rejected lines per hour by reason",
            "Lines with usage that the reference reader skips too.",
            "agentwatch_ledger_lines_rejected_total",
            "reason",
        ),
        hourly_bars(
            "Duplicate copies per hour",
            "Lines repeating a response already counted (streamed copies, sidechain replays).",
            "agentwatch_ledger_duplicate_copies_total",
            "kind",
        ),
        hourly_bars(
            "Unpriced tokens per hour by model",
            "Tokens of models with no price (counted at 0 cost): add the model to the price table.",
            "agentwatch_ledger_unpriced_tokens_total",
            "model",
        ),
    ]
    scans = [
        timeseries(
            "Scan durations",
            "Wall time of the latest process-table scans.",
            [
                level("agentwatch_resources_scan_duration_seconds", legend="resources"),
                level("agentwatch_footprint_scan_duration_seconds", legend="footprint"),
            ],
            "s",
        ),
        timeseries(
            "Scan problems per hour",
            "Processes the resources scan skipped, by reason, and failed footprint scans.",
            [
                hourly(
                    "agentwatch_resources_scan_errors_total",
                    by="reason",
                    legend="resources {{reason}}",
                ),
                hourly("agentwatch_footprint_scan_errors_total", legend="footprint failed scans"),
                hourly(
                    "agentwatch_footprint_processes_vanished_total", legend="footprint vanished"
                ),
            ],
        ),
        stat(
            "Processes scanned",
            "Processes read in the latest resources scan.",
            level("agentwatch_resources_processes_scanned"),
            w=6,
        ),
        stat(
            "Since last good footprint scan",
            "Age of the footprint values on display.",
            target(age("agentwatch_footprint_last_success_timestamp_seconds")),
            "s",
            w=6,
        ),
        stat(
            "tmux panes found",
            "tmux panes the resources sentinel found in its last query.",
            level("agentwatch_resources_tmux_panes"),
            w=6,
        ),
        stat(
            "tmux servers failing",
            "tmux servers whose last query failed, as seen by the resources and idle-error "
            "sentinels.",
            [
                level("agentwatch_resources_tmux_failing", legend="resources"),
                level("agentwatch_idle_error_tmux_failing", legend="idle-error"),
            ],
            w=6,
            text_mode="value_and_name",
            steps=ANY_IS_BAD,
        ),
        hourly_bars(
            "Pane classifications per hour",
            "Changes of an agent pane into a non-working state, by state.",
            "agentwatch_pane_classifications_total",
            "state",
        ),
        hourly_bars(
            "Suppressed pane matches per hour",
            "Pattern matches the idle-error sentinel ignored on purpose, by reason.",
            "agentwatch_pane_suppressed_total",
            "reason",
        ),
        hourly_bars(
            "Pane capture errors per hour",
            "tmux captures that failed, by reason.",
            "agentwatch_idle_error_capture_errors_total",
            "reason",
        ),
    ]
    controller = [
        stat(
            "Alertmanager reachable",
            "Whether the controller can read alerts back from each Alertmanager.",
            level("agentwatch_controller_alertmanager_up", by="alertmanager"),
            "none",
            w=8,
            text_mode="value_and_name",
            mappings=OK_FAILING,
        ),
        stat(
            "Since the controller's last good cycle",
            "Age of the controller's decision: the last cycle in which an Alertmanager answered.",
            target(age("agentwatch_controller_last_success_timestamp_seconds")),
            "s",
            w=8,
        ),
        stat(
            "Orchestrator reachable",
            "Whether the controller reaches the orchestrator's API.",
            level("agentwatch_orchestrator_up", how="min"),
            "none",
            w=8,
            mappings=OK_FAILING,
        ),
        hourly_bars(
            "Controller decisions per hour",
            "Changes of the throttle decision, by the action that caused them.",
            "agentwatch_controller_decisions_total",
            "reason",
        ),
        hourly_bars(
            "Nudges per hour",
            "Stalled panes the controller nudged, by result.",
            "agentwatch_controller_nudges_total",
            "result",
        ),
        hourly_bars(
            "Adapter errors per hour",
            "Failures applying a decision to the orchestrator, by adapter.",
            "agentwatch_controller_adapter_errors_total",
            "adapter",
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
