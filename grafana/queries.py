"""The PromQL the dashboards ask, and how a panel's queries become the SDK's Dataquery.

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

from collections.abc import Callable
from typing import NamedTuple

from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat, QueryEditorMode

DATASOURCE_UID = "agentwatch-prometheus"  # provisioning/datasources/agentwatch.yml
DATASOURCE = model.DataSourceRef(type_val="prometheus", uid="${datasource}")

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


def aggregate(how: str, by: str, inner: str, *, fleet: bool = False) -> str:
    """`how by (instance, by) (inner)`; with `fleet`, the selected hosts together."""
    by = by if fleet else per_host(by)
    return f"{how} by ({by}) ({inner})" if by else f"{how}({inner})"


def rate(
    metric: str, *matchers: str, by: str = "", window: str = "$__rate_interval", fleet: bool = False
) -> str:
    """Per-second rate of a counter, summed per host (by `by`)."""
    return aggregate("sum", by, f"rate({sel(metric, *matchers)}[{window}])", fleet=fleet)


def increase(
    metric: str, *matchers: str, by: str = "", window: str = "$__range", fleet: bool = False
) -> str:
    """Increase of a counter over `window`, summed per host (by `by`)."""
    return aggregate("sum", by, f"increase({sel(metric, *matchers)}[{window}])", fleet=fleet)


def gauge_by(metric: str, *matchers: str, by: str = "", how: str = "max") -> str:
    """A gauge aggregated per host (by `by`): max keeps one value when several jobs serve it."""
    return aggregate(how, by, sel(metric, *matchers))


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


def listed(targets: Targets) -> list[Query]:
    return targets if isinstance(targets, list) else [targets]


def dataqueries(targets: Targets, *, instant: bool, table: bool) -> list[Dataquery]:
    """The panel's queries for Prometheus, through the datasource variable."""
    queries = []
    for index, query in enumerate(listed(targets)):
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
