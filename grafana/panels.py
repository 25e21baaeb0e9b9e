"""The panels every dashboard shares: one helper per panel kind, the template variables and
the dashboard frame, so a panel in boards/ states only its title, description, queries, unit
and what differs, and the SDK packs the panels left to right into rows of 24 columns."""

from __future__ import annotations

from typing import TypeVar

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
from grafana_foundation_sdk.builders.stat import Panel as StatPanel
from grafana_foundation_sdk.builders.statetimeline import Panel as StateTimelinePanel
from grafana_foundation_sdk.builders.table import Panel as TablePanel
from grafana_foundation_sdk.builders.timeseries import Panel as TimeseriesPanel
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model

from agentwatch.grafana.queries import (
    DATASOURCE,
    DATASOURCE_UID,
    JOB,
    Query,
    Targets,
    dataqueries,
    hourly,
    listed,
    ref_id,
    sel,
    target,
    threshold,
)

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
    queries = dataqueries(targets, instant=instant, table=isinstance(panel, TablePanel))
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
    targets = listed(targets)
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


SESSION = "project, session"  # a transcript session of the token ledger
PANE = "tmux_session, pane, agent"  # an agent pane of the idle-error sentinel


def counts_now_and_over_time(
    counts: Query, now: tuple[str, str], over_time: tuple[str, str]
) -> list[Panel]:
    """Counts by kind as bars now (title, description) and stacked over time beside them."""
    return [
        bargauge(*now, counts),
        timeseries(*over_time, counts, stack=True, w=16, decimals=0),
    ]
