"""Write agentwatch's Grafana dashboards from one description, so the five stay consistent.

The dashboards are built with grafana-foundation-sdk, Grafana Labs' typed builders (the build
for Grafana 11.6, so its JSON model, schemaVersion 41), rather than by hand: the SDK owns the
shape of the model and fills in what Grafana would. One helper per panel kind sets that kind's
options, so a panel below states only its title, description, queries, unit and what differs;
one function per dashboard lists its panels, and the SDK packs them left to right into rows of
24 columns. The one field the SDK has no place for, a query variable's `definition`, is added
to the JSON it writes (_with_definitions). `python grafana/build.py` rewrites
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
from typing import Any, NamedTuple, TypeVar

from grafana_foundation_sdk.builders.bargauge import Panel as BarGaugePanel
from grafana_foundation_sdk.builders.common import (
    ReduceDataOptions,
    StackingConfig,
    TableSortByFieldState,
    VizLegendOptions,
    VizTooltipOptions,
)
from grafana_foundation_sdk.builders.dashboard import (
    Dashboard,
    DashboardLink,
    DatasourceVariable,
    FieldColor,
    QueryVariable,
    Row,
    ThresholdsConfig,
)
from grafana_foundation_sdk.builders.gauge import Panel as GaugePanel
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.builders.stat import Panel as StatPanel
from grafana_foundation_sdk.builders.statetimeline import Panel as StateTimelinePanel
from grafana_foundation_sdk.builders.table import Panel as TablePanel
from grafana_foundation_sdk.builders.timeseries import Panel as TimeseriesPanel
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat, QueryEditorMode

DATASOURCE_UID = "agentwatch-prometheus"  # provisioning/datasources/agentwatch.yml
DATASOURCE = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
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

Steps = list[tuple[float | None, str]]  # threshold steps: (from value, colour)
Column = tuple[str, str, str]  # a table column: (expression, header, unit)
Mappings = list[model.ValueMapping]
Panel = TimeseriesPanel | StatPanel | GaugePanel | BarGaugePanel | TablePanel | StateTimelinePanel
AnyPanel = TypeVar(
    "AnyPanel",
    TimeseriesPanel,
    StatPanel,
    GaugePanel,
    BarGaugePanel,
    TablePanel,
    StateTimelinePanel,
)


# --- expressions -------------------------------------------------------------------------


def sel(metric: str, *matchers: str) -> str:
    """A selector of `metric` on the dashboard's job and hosts, plus `matchers`."""
    return metric + "{" + ",".join((JOB, INSTANCE, *matchers)) + "}"


def stack_sel(metric: str, *matchers: str) -> str:
    """A series of the monitoring stack itself (Prometheus, Alertmanager, scraped by the
    stack): one stack serves every host it watches, so no `$job`/`$instance` filter; grouped
    by its own instance it stays apart from another stack's."""
    return metric + ("{" + ",".join(matchers) + "}" if matchers else "")


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


class Query(NamedTuple):
    """One query and its legend; the panel that holds it gives it a refId and query type,
    so one query can serve an instant and a range panel alike."""

    expr: str
    legend: str


Targets = Query | list[Query]  # one query, or several (refIds A, B, ... in this order)


def legend_for(by: str) -> str:
    """A legend naming each series by the labels `by`: "project, kind" -> "{{project}} {{kind}}"."""
    return " ".join("{{" + label.strip() + "}}" for label in by.split(",") if label.strip())


def target(expr: str, legend: str = "") -> Query:
    """One query.

    A query whose result is per host (grouped by instance) gets the host in its legend, so
    several workstations on one panel stay apart.
    """
    if f"by ({HOST}" in expr and "{{instance}}" not in legend:
        legend = f"{{{{{HOST}}}}} {legend}".rstrip()
    return Query(expr, legend)


def level(metric: str, *matchers: str, by: str = "", how: str = "max", legend: str = "") -> Query:
    """A gauge per host (by `by`), its series named by `by` unless `legend` names them."""
    return target(gauge_by(metric, *matchers, by=by, how=how), legend or legend_for(by))


def hourly(
    metric: str, *matchers: str, by: str = "", legend: str = "", fleet: bool = False
) -> Query:
    """A counter's rate per hour per host (by `by`), its series named by `by` or `legend`."""
    rate_per_hour = rate(metric, *matchers, by=by, fleet=fleet) + PER_HOUR
    return target(rate_per_hour, legend or legend_for(by))


def when(metric: str, *matchers: str, by: str = "") -> Query:
    """The timestamp gauge `metric` per host (by `by`), for a dateTimeFromNow unit."""
    return target(millis(gauge_by(metric, *matchers, by=by)), legend_for(by))


def ref_id(index: int) -> str:
    return chr(ord("A") + index)


def _listed(targets: Targets) -> list[Query]:
    return targets if isinstance(targets, list) else [targets]


def _dataqueries(targets: Targets, *, instant: bool, table: bool) -> list[Dataquery]:
    """The panel's queries for Prometheus, through the datasource variable."""
    queries = []
    for index, query in enumerate(_listed(targets)):
        dataquery = (
            Dataquery()
            .datasource(DATASOURCE)
            .editor_mode(QueryEditorMode.CODE)
            .expr(query.expr)
            .format(PromQueryFormat.TABLE if table else PromQueryFormat.TIME_SERIES)
            .legend_format(query.legend or "__auto")
            .ref_id(ref_id(index))
        )
        queries.append(dataquery.instant() if instant else dataquery.range())
    return queries


# --- panels ------------------------------------------------------------------------------

BY_THRESHOLDS = FieldColor().mode(model.FieldColorModeId.THRESHOLDS)
PALETTE = FieldColor().mode(model.FieldColorModeId.PALETTE_CLASSIC)
LAST_VALUE = ReduceDataOptions().calcs(["lastNotNull"]).fields("").values(False)


def _thresholds(steps: Steps | None) -> ThresholdsConfig:
    steps = steps or [(None, "green")]
    return (
        ThresholdsConfig()
        .mode(model.ThresholdsMode.ABSOLUTE)
        .steps([model.Threshold(value=value, color=color) for value, color in steps])
    )


def mapping(values: dict[int, tuple[str, str]]) -> Mappings:
    """Value mappings {value: (text, colour)}."""
    options = {
        str(value): model.ValueMappingResult(text=text, color=color, index=index)
        for index, (value, (text, color)) in enumerate(sorted(values.items()))
    }
    return [model.ValueMap(options=options)]


OK_FAILING = mapping({0: ("failing", "red"), 1: ("ok", "green")})
NO_YES_BAD = mapping({0: ("no", "green"), 1: ("yes", "red")})
DOWN_UP = mapping({0: ("down", "red"), 1: ("up", "green")})
ALLOWED_HELD = mapping({0: ("allowed", "green"), 1: ("held", "red")})
ANY_IS_BAD = [(None, "green"), (1, "red")]
BUDGET_STEPS = [(None, "green"), (0.8, "orange"), (0.95, "red")]
QUOTA_STEPS = [(None, "green"), (0.8, "orange"), (1, "red")]

TABLE_HIDDEN = {name: True for name in ("Time", "__name__", "job")}  # instance: which host
TABLE_TRANSFORMATIONS = [
    model.DataTransformerConfig(id_val="merge", options={}),
    model.DataTransformerConfig(
        id_val="organize",
        options={"excludeByName": TABLE_HIDDEN, "indexByName": {}, "renameByName": {}},
    ),
]
# A configured limit on a graph: dashed red, outside any stacking.
THRESHOLD_LINE = [
    model.DynamicConfigValue(
        "color", model.FieldColor(mode=model.FieldColorModeId.FIXED, fixed_color="red")
    ),
    model.DynamicConfigValue("custom.lineStyle", common.LineStyle(fill="dash", dash=[10, 10])),
    model.DynamicConfigValue("custom.fillOpacity", 0),
    model.DynamicConfigValue(
        "custom.stacking", common.StackingConfig(mode=common.StackingMode.NONE, group="A")
    ),
]


def _panel(
    panel: AnyPanel,
    title: str,
    description: str,
    targets: Targets,
    unit: str,
    w: int,
    h: int,
    *,
    steps: Steps | None = None,
) -> AnyPanel:
    """What every panel holds; stat, gauge, bar and table panels show now (instant queries),
    the others a graph over time (range queries)."""
    instant = not isinstance(panel, TimeseriesPanel | StateTimelinePanel)
    queries = _dataqueries(targets, instant=instant, table=isinstance(panel, TablePanel))
    return (
        panel.title(title)
        .description(description)
        .datasource(DATASOURCE)
        .targets(queries)
        .unit(unit)
        .thresholds(_thresholds(steps))
        .span(w)
        .height(h)
    )


def timeseries(
    title: str,
    description: str,
    targets: Targets,
    unit: str = "short",
    *,
    limit: tuple[str, str] | list[tuple[str, str]] | None = None,
    stack: bool = False,
    bars: bool = False,
    w: int = 12,
    h: int = 8,
    decimals: int | None = None,
) -> TimeseriesPanel:
    """A graph over time; bars are stacked. `limit` = (threshold name, legend), or a list of
    them, adds each configured threshold as a last query, drawn as a dashed red line."""
    panel = TimeseriesPanel()
    targets = _listed(targets)
    for name, legend in [limit] if isinstance(limit, tuple) else limit or []:
        targets = [*targets, target(threshold(name), legend)]
        panel.override_by_query(ref_id(len(targets) - 1), THRESHOLD_LINE)
    stack = stack or bars
    panel = (
        _panel(panel, title, description, targets, unit, w, h)
        .color_scheme(PALETTE)
        .legend(
            VizLegendOptions()
            .calcs(["lastNotNull", "max"])
            .display_mode(common.LegendDisplayMode.TABLE)
            .placement(common.LegendPlacement.BOTTOM)
            .show_legend(True)
        )
        .tooltip(
            VizTooltipOptions()
            .mode(common.TooltipDisplayMode.MULTI)
            .sort(common.SortOrder.DESCENDING)
        )
        .axis_soft_min(0)
        .bar_alignment(common.BarAlignment.CENTER)
        .draw_style(common.GraphDrawStyle.BARS if bars else common.GraphDrawStyle.LINE)
        .fill_opacity(60 if bars else (25 if stack else 10))
        .gradient_mode(common.GraphGradientMode.NONE)
        .line_interpolation(common.LineInterpolation.LINEAR)
        .line_width(1)
        .point_size(4)
        .show_points(common.VisibilityMode.NEVER)
        .span_nulls(False)
        .stacking(
            StackingConfig()
            .group("A")
            .mode(common.StackingMode.NORMAL if stack else common.StackingMode.NONE)
        )
    )
    return panel if decimals is None else panel.decimals(decimals)


def hourly_bars(title: str, description: str, metric: str, by: str) -> TimeseriesPanel:
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
    mappings: Mappings | None = None,
    no_value: str | None = None,
    text_mode: str = "auto",
    decimals: int | None = None,
    time_from: str | None = None,
) -> StatPanel:
    """One number (or one per series) now; `time_from` overrides the panel's time range."""
    panel = (
        _panel(StatPanel(), title, description, targets, unit, w, h, steps=steps)
        .color_scheme(BY_THRESHOLDS)
        .graph_mode(common.BigValueGraphMode.NONE)
        .reduce_options(LAST_VALUE)
        .text_mode(common.BigValueTextMode(text_mode))
    )
    if mappings:
        panel.mappings(mappings)
    if no_value is not None:
        panel.no_value(no_value)
    if decimals is not None:
        panel.decimals(decimals)
    if time_from:
        panel.time_from(time_from).hide_time_override(False)
    return panel


def gauge(title: str, description: str, targets: Targets, steps: Steps) -> GaugePanel:
    """A share from 0 to 1 now, on a dial coloured by `steps`."""
    return (
        _panel(GaugePanel(), title, description, targets, "percentunit", 4, 4, steps=steps)
        .color_scheme(BY_THRESHOLDS)
        .min(0)
        .max(1)
        .reduce_options(LAST_VALUE)
    )


def bargauge(
    title: str, description: str, targets: Targets, unit: str = "short", *, w: int = 8
) -> BarGaugePanel:
    """One bar per series now, largest first (Grafana sorts nothing: topk/sort do it)."""
    return (
        _panel(BarGaugePanel(), title, description, targets, unit, w, 8)
        .color_scheme(PALETTE)
        .min(0)
        .display_mode(common.BarGaugeDisplayMode.GRADIENT)
        .orientation(common.VizOrientation.HORIZONTAL)
        .reduce_options(LAST_VALUE)
    )


def table(
    title: str,
    description: str,
    columns: list[Column],
    unit: str = "short",
    *,
    w: int = 24,
    h: int = 8,
    sort_by: str | None = None,
    mappings: dict[str, Mappings] | None = None,
) -> TablePanel:
    """Instant queries joined on their labels, one value column per (expression, header, unit)."""
    targets = [target(expr) for expr, _, _ in columns]
    panel = (
        _panel(TablePanel(), title, description, targets, unit, w, h)
        .align(common.FieldTextAlignment.AUTO)
        .cell_options(common.TableAutoCellOptions())
        .filterable(True)
        .cell_height(common.TableCellHeight.SM)
        .transformations(TABLE_TRANSFORMATIONS)
    )
    for index, (_, header, column_unit) in enumerate(columns):
        properties = [
            model.DynamicConfigValue("displayName", header),
            model.DynamicConfigValue("unit", column_unit),
        ]
        if mappings and header in mappings:
            properties.append(model.DynamicConfigValue("mappings", mappings[header]))
            properties.append(
                model.DynamicConfigValue("custom.cellOptions", common.TableColorTextCellOptions())
            )
        field = "Value" if len(columns) == 1 else f"Value #{ref_id(index)}"
        panel.override_by_name(field, properties)
    if sort_by:
        panel.sort_by([TableSortByFieldState().display_name(sort_by).desc(True)])
    return panel


def state_timeline(
    title: str, description: str, targets: Targets, mappings: Mappings
) -> StateTimelinePanel:
    """Which state each series was in over time (values mapped to named colours)."""
    return (
        _panel(StateTimelinePanel(), title, description, targets, "none", 24, 8)
        .color_scheme(BY_THRESHOLDS)
        .fill_opacity(80)
        .line_width(0)
        .mappings(mappings)
        .legend(
            VizLegendOptions()
            .display_mode(common.LegendDisplayMode.LIST)
            .placement(common.LegendPlacement.BOTTOM)
            .show_legend(True)
        )
        .tooltip(
            VizTooltipOptions().mode(common.TooltipDisplayMode.SINGLE).sort(common.SortOrder.NONE)
        )
    )


# --- template variables ------------------------------------------------------------------


def datasource_variable() -> DatasourceVariable:
    """Which Prometheus to query; the provisioned one by default."""
    current = model.VariableOption(
        selected=False, text="agentwatch Prometheus", value=DATASOURCE_UID
    )
    return DatasourceVariable("datasource").label("Data source").type("prometheus").current(current)


def _variable(name: str, label: str, selector: str) -> QueryVariable:
    """A multi-select of the values of `name` on `selector`; All = the regex `.*`."""
    query = f"label_values({selector}, {name})"
    return (
        QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query({"qryType": 1, "query": query, "refId": "PrometheusVariableQueryEditor"})
        .current(model.VariableOption(selected=True, text=["All"], value=["$__all"]))
        .multi(True)
        .include_all(True)
        .all_value(".*")
        .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(model.VariableSort.ALPHABETICAL_ASC)
    )


def label_variable(name: str, label: str, metric: str, *matchers: str) -> QueryVariable:
    """The values of `name` on `metric` of the selected jobs and hosts."""
    return _variable(name, label, sel(metric, *matchers))


HOST_VARIABLES = (
    # which exporter(s): every job that serves build info
    ("job", "Job", "agentwatch_exporter_build_info"),
    # which workstation(s): every instance of the selected jobs that serves build info
    ("instance", "Host", "agentwatch_exporter_build_info{" + JOB + "}"),
)

# Every dashboard links to the others.
LINKS = (
    DashboardLink("agentwatch")
    .type(model.DashboardLinkType.DASHBOARDS)
    .tags(["agentwatch"])
    .as_dropdown(True)
    .icon("external link")
    .include_vars(True)
    .keep_time(True)
    .target_blank(False)
)


def dashboard(
    uid: str,
    title: str,
    description: str,
    variables: list[QueryVariable],
    panels: list[Panel | Row],
) -> Dashboard:
    """A dashboard of `panels` in this order, numbered from 1. The SDK lays them out left to
    right in 24 columns, with a new line when one is full and at each row; it does not wrap a
    panel too wide for what is left of a line (the layout lint catches that), so every line
    here adds up to 24."""
    board = (
        Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(["agentwatch"])
        .tooltip(model.DashboardCursorSync.CROSSHAIR)
        .refresh("1m")
        .time("now-6h", "now")
        .version(1)
        .link(LINKS)
    )
    for variable in (
        datasource_variable(),
        *(_variable(*variable) for variable in HOST_VARIABLES),
        *variables,
    ):
        board.with_variable(variable)
    for number, panel in enumerate(panels, start=1):
        if isinstance(panel, Row):
            board.with_row(panel.id(number))
        else:
            board.with_panel(panel.id(number))
    return board


# --- the dashboards ----------------------------------------------------------------------

SESSION = "project, session"  # a transcript session of the token ledger
PANE = "tmux_session, pane, agent"  # an agent pane of the idle-error sentinel


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


def counts_now_and_over_time(
    counts: Query, now: tuple[str, str], over_time: tuple[str, str]
) -> list[Panel]:
    """Counts by kind as bars now (title, description) and stacked over time beside them."""
    return [
        bargauge(*now, counts),
        timeseries(*over_time, counts, stack=True, w=16, decimals=0),
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
            "Cost rate by agent CLI: Claude Code from the token ledger, Codex, Gemini CLI and "
            "OpenCode from the agent ledger; project and model filters apply.",
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


# Claude Code session states of the claude-sessions sentinel (docs/metrics.md), numbered for
# the timeline like the pane states.
CLAUDE_STATES = {
    "working": "green",
    "waiting_for_permission": "yellow",
    "waiting_for_input": "blue",
    "idle": "light-blue",
    "compacting": "purple",
    "ended": "text",
    "failed": "red",
}
CLAUDE_SESSION = "session, project"  # a Claude Code session of the claude-sessions sentinel


def _claude_state_index() -> str:
    """Each Claude Code session's current state as its number in CLAUDE_STATES (1-based)."""
    parts = [
        sel("agentwatch_claude_session_state", f'state="{state}"') + f" * {number}"
        for number, state in enumerate(CLAUDE_STATES, start=1)
    ]
    return f"sum by ({per_host(CLAUDE_SESSION)}) (" + " or ".join(parts) + ")"


def _claude_time_in_state() -> str:
    """Seconds each Claude Code session has been in its hook state, labelled with that state."""
    since = age(
        "agentwatch_claude_session_state_since_timestamp_seconds", PROJECT, by=CLAUDE_SESSION
    )
    current = gauge_by("agentwatch_claude_session_state", PROJECT, by=f"{CLAUDE_SESSION}, state")
    return f"({since}) * on ({per_host(CLAUDE_SESSION)}) group_left (state) ({current} == 1)"


def _claude_pane_state() -> str:
    """What the pane of each Claude Code session in tmux shows (idle-error), as the pane
    state's number (mapped to its name in the table): the second source of its state."""
    info = gauge_by(
        "agentwatch_claude_session_info", PROJECT, 'mode="tmux"', by=f"{CLAUDE_SESSION}, pane"
    )
    joined = f"{info} * on ({per_host('pane')}) group_left () ({_pane_state_index()})"
    return f"max by ({per_host(CLAUDE_SESSION + ', pane')}) ({joined})"


def claude_sessions_panels() -> list[Panel]:
    """The Claude Code sessions as their own hooks and statusline report them."""
    numbers = {n: (state, color) for n, (state, color) in enumerate(CLAUDE_STATES.items(), 1)}
    pane_numbers = {n: (state, color) for n, (state, color) in enumerate(PANE_STATES.items(), 1)}
    session = gauges_by(PROJECT, by=CLAUDE_SESSION)
    return [
        *counts_now_and_over_time(
            level("agentwatch_claude_sessions", by="state", how="sum"),
            now=(
                "Claude Code sessions by state",
                "Recent Claude Code sessions (headless ones too) by the state their hooks report.",
            ),
            over_time=("Claude Code sessions by state over time", "Recent sessions per state."),
        ),
        state_timeline(
            "Claude Code session states",
            "Each recent Claude Code session's state over time, from its hook events.",
            target(_claude_state_index(), legend_for(CLAUDE_SESSION)),
            mapping(numbers),
        ),
        table(
            "Claude Code sessions: hooks and pane",
            "One row per recent session: the state its hooks report and for how long, what its "
            "tmux pane shows where it has one (the idle-error classifier: a stall there wins "
            "over the hooks, as in `agentwatch status`), and its statusline figures.",
            [
                (_claude_time_in_state(), "in hook state for", "s"),
                (_claude_pane_state(), "pane shows", "short"),
                (session("agentwatch_claude_session_cost_usd"), "cost (statusline)", "currencyUSD"),
                (
                    session("agentwatch_claude_session_context_used_ratio"),
                    "context used",
                    "percentunit",
                ),
                (
                    session("agentwatch_claude_session_cache_hit_ratio"),
                    "cache hits",
                    "percentunit",
                ),
            ],
            sort_by="in hook state for",
            mappings={"pane shows": mapping(pane_numbers)},
        ),
        timeseries(
            "Tool calls per hour by tool",
            "Tool calls of all recent Claude Code sessions (PostToolUse), by tool.",
            hourly("agentwatch_claude_session_tool_calls_total", PROJECT, by="tool"),
            bars=True,
        ),
        timeseries(
            "Tool failures per hour by tool",
            "Tool calls that failed, by tool.",
            hourly("agentwatch_claude_session_tool_failures_total", PROJECT, by="tool"),
            bars=True,
        ),
        timeseries(
            "Repeated tool calls per hour by session",
            "Tool calls with the tool and input of one of the session's previous 5 calls "
            "(PreToolUse; only the input's hash is kept): a retry loop repeats itself.",
            hourly("agentwatch_claude_session_tool_repeats_total", PROJECT, by=CLAUDE_SESSION),
            bars=True,
        ),
        bargauge(
            "Sessions repeating their tool calls over the range",
            "The ten sessions with the most repeated tool calls over the dashboard's range.",
            target(
                sort_desc(
                    topk(
                        increase(
                            "agentwatch_claude_session_tool_repeats_total",
                            PROJECT,
                            by=CLAUDE_SESSION,
                        )
                    )
                ),
                legend_for(CLAUDE_SESSION),
            ),
            w=12,
        ),
        bargauge(
            "Sessions ended without a commit over the range",
            "Sessions that ended normally with the git HEAD they started with, by project "
            "(an unknown HEAD is never counted); the info alert fires on each.",
            target(
                sort_desc(
                    increase("agentwatch_sessions_without_commit_total", PROJECT, by="project")
                ),
                "{{project}}",
            ),
            w=12,
        ),
        bargauge(
            "Official quota used by window",
            "Claude Code's own rate-limit windows (five_hour, seven_day, ...) from the freshest "
            "statusline of a subscription session; empty for API-key sessions.",
            level("agentwatch_quota_used_ratio", by="window"),
            "percentunit",
            w=6,
        ),
        stat(
            "Quota reading age",
            "How old the statusline reading the quota comes from is.",
            target(age("agentwatch_quota_reading_timestamp_seconds")),
            "s",
            w=6,
            h=8,
            no_value="no reading yet",
        ),
    ]


def otel_panels() -> list[Panel]:
    """Claude Code's own telemetry (the otel sentinel): latency, errors, tools, reconciliation."""

    def p95(metric: str) -> Query:
        buckets = rate(metric + "_bucket", by="model, le")
        return target(f"histogram_quantile(0.95, {buckets})", "{{model}} p95")

    return [
        timeseries(
            "API duration p95 by model (OTel)",
            "The 95th percentile of API request durations by model, from Claude Code's own "
            "api_request and api_error events (every session with telemetry on, headless too).",
            p95("agentwatch_otel_api_duration_seconds"),
            "s",
        ),
        timeseries(
            "Time to first token p95 by model (OTel)",
            "The 95th percentile of the time until the first token of each API response.",
            p95("agentwatch_otel_api_ttft_seconds"),
            "s",
        ),
        timeseries(
            "API errors by status code (OTel)",
            "API errors per hour by HTTP status code (429 rate limited, 529 overloaded), as "
            "Claude Code reports them; headless sessions included.",
            hourly("agentwatch_otel_api_errors_total", by="status_code"),
            bars=True,
            w=8,
        ),
        timeseries(
            "Tool results by tool (OTel)",
            "Tool runs per hour by tool and success, from Claude Code's tool_result events.",
            hourly("agentwatch_otel_tool_results_total", by="tool, success"),
            bars=True,
            w=8,
        ),
        timeseries(
            "Sessions by transcript (OTel)",
            "Sessions the OTel receiver tracks: with a transcript (counted by the token ledger), "
            "without one (headless, --no-session-persistence: counted from OTel with "
            'source="otel"), and not classified yet.',
            level("agentwatch_otel_sessions", by="state", how="sum"),
            w=8,
        ),
        timeseries(
            "OTel and ledger disagreement by session",
            "Per session with a transcript: how far Claude Code's own token count and the token "
            "ledger's are apart (0 = they agree; above 5 % for 15 minutes alerts).",
            level("agentwatch_otel_ledger_disagreement_ratio", by="session"),
            "percentunit",
            w=24,
        ),
    ]


def sessions() -> Dashboard:
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
        "Which sessions burn tokens and money, API errors, what each agent pane is doing, and "
        "each Claude Code session's state from its own hooks.",
        [label_variable("project", "Project", "agentwatch_session_cost_usd_total")],
        [
            Row("Burners"),
            *burn,
            Row("API errors"),
            *errors,
            Row("Panes"),
            *panes,
            Row("Claude Code sessions (hooks)"),
            *claude_sessions_panels(),
            Row("Claude Code telemetry (OTel)"),
            *otel_panels(),
        ],
    )


def host() -> Dashboard:
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
        [Row("Footprint"), *footprint, Row("Host"), *machine, Row("Sessions"), *per_session],
    )


def releases() -> Dashboard:
    repo = gauges_by(REPO, by="repo")
    probe = gauges_by(REPO, by="repo, probe")
    unreleased = level("agentwatch_release_unreleased_commits", REPO, by="repo")
    oldest = "agentwatch_release_oldest_unreleased_commit_timestamp_seconds"
    blocked = mapping({0: ("clear", "green"), 1: ("blocked", "red")})
    repo_stat = partial(stat, w=6, text_mode="value_and_name")  # four a line, named by repo
    panels = [
        Row("Unreleased work"),
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
        Row("Probes and checks"),
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


def agentwatch_self() -> Dashboard:
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
            Row("Exporter and sentinels"),
            *exporter,
            Row("Token ledger"),
            *ledger,
            Row("Host sentinels"),
            *scans,
            Row("Controller"),
            *controller,
        ],
    )


BUILDERS = (overview, sessions, host, releases, agentwatch_self)


def _with_definitions(board: dict[str, Any]) -> dict[str, Any]:
    """Give each query variable its `definition`, the query text that Grafana's variable list
    shows and its editor writes: the SDK's variable model has no such field, so it is added
    to the JSON the SDK wrote (the one field written by hand)."""
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            variable["definition"] = variable["query"]["query"]
    return board


def render() -> dict[str, str]:
    """File name -> JSON text of every dashboard, exactly as committed."""
    out = {}
    for build in BUILDERS:
        board = _with_definitions(json.loads(json.dumps(build().build(), cls=JSONEncoder)))
        out[f"{board['uid']}.json"] = json.dumps(board, indent=2, sort_keys=True) + "\n"
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
