"""The committed Grafana dashboards as data, for the dashboard lint and the stack test.

`dashboard_queries()` yields every panel query made concrete (Grafana's macros and template
variables substituted) so a test can send it to a real Prometheus. `MAY_BE_EMPTY` lists the
queries that legitimately return nothing in a healthy demo stack, each with its reason; every
other query must return data there. `anatomy()` reads a query with promql_parser into what the
lint rules walk: selectors, ranges, the function around each selector, grouping labels.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import promql_parser

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD_DIR = ROOT / "grafana" / "dashboards"

# What Grafana would put in place of its macros for a 1-hour range and a 15 s scrape.
MACROS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}
# Every template variable ($job, $instance, $project, ...) is used as `label=~"$var"`, so "All"
# (the regex .*) fits them all.
VARIABLE_VALUE = ".*"
VARIABLE = re.compile(r"\$(?:\{(\w+)(?::\w+)?\}|(\w+))")

# Queries that may return no data in a healthy `agentwatch up --demo` stack (exporter, every
# sentinel, controller, demo orchestrator, Prometheus, Alertmanager). In the demo, agents run
# as `claude` processes in tmux panes; one stalls on an API error, which opens the breaker, and
# the controller then holds the demo at 0 agents for the cool-down: per-session and per-pane
# series vanish with the sessions. Keys: (dashboard uid, panel title) for every query of the
# panel, (uid, title, refId) for one query, (uid, "*") for a whole dashboard.
NO_SESSIONS = (
    "no agent session runs while the controller holds the demo at 0 agents (breaker open "
    "after the demo's API error)"
)
NO_QUOTA = (
    "no official reading (the demo's sessions use an API key), no completed 5-hour block to "
    "derive a limit from and no configured token cap"
)
NO_HOOKS = "the demo's Claude Code sessions do not run agentwatch's hooks yet (issue 14)"
MAY_BE_EMPTY: dict[tuple[str, ...], str] = {
    ("agentwatch-releases", "*"): "no repository is configured in the demo, and every "
    "release series carries the configured repo",
    ("agentwatch-sessions", "Tool results by tool (OTel)"): "the demo's scripted Claude Code "
    "sessions answer without tools (a tool prompt would stall the demo's panes)",
    ("agentwatch-overview", "Firing alerts"): "nothing needs to fire in a healthy stack",
    ("agentwatch-overview", "agentwatch alerts"): "nothing needs to fire in a healthy stack",
    ("agentwatch-overview", "Run spend against budget"): "empty while the budget is "
    "unlimited (cap 0), the default",
    ("agentwatch-overview", "5 h quota used"): "no quota is configured (threshold 0)",
    ("agentwatch-overview", "7 d quota used"): "no quota is configured (threshold 0)",
    ("agentwatch-overview", "Usage limit resets"): "absent until a transcript says when a "
    "usage limit resets; the demo never hits one",
    ("agentwatch-overview", "Quota used by window", "A"): NO_QUOTA,
    ("agentwatch-overview", "Quota windows: reset and exhaustion", "A"): NO_QUOTA,
    ("agentwatch-overview", "Quota windows: reset and exhaustion", "B"): NO_QUOTA,
    ("agentwatch-overview", "Quota windows: reset and exhaustion", "C"): "only while this "
    "pace would use a window up before it resets",
    ("agentwatch-overview", "Budget remaining"): "absent while the budget is unlimited "
    "(cap 0), the default",
    ("agentwatch-overview", "Budget used"): "empty while the budget is unlimited (cap 0), "
    "the default",
    ("agentwatch-overview", "Burn runbook"): "only while the controller throttles for an "
    "unacknowledged burn",
    ("agentwatch-sessions", "Last API error by kind"): "absent until the demo's stalling "
    "session writes its API error, a few turns after the start",
    ("agentwatch-sessions", "Pane states"): NO_SESSIONS,
    ("agentwatch-sessions", "Panes not working"): "empty while every agent pane is working",
    ("agentwatch-sessions", "Claude Code session states"): NO_HOOKS,
    ("agentwatch-sessions", "Claude Code sessions: hooks and pane"): NO_HOOKS,
    ("agentwatch-sessions", "Tool calls per hour by tool"): NO_HOOKS,
    ("agentwatch-sessions", "Tool failures per hour by tool"): NO_HOOKS,
    ("agentwatch-sessions", "Repeated tool calls per hour by session"): NO_HOOKS,
    ("agentwatch-sessions", "Sessions repeating their tool calls over the range"): NO_HOOKS,
    ("agentwatch-sessions", "Sessions ended without a commit over the range"): NO_HOOKS,
    ("agentwatch-sessions", "Official quota used by window"): "only subscription sessions "
    "send rate limits in their statusline; the demo's sessions use an API key",
    ("agentwatch-sessions", "Quota reading age"): "only subscription sessions send rate "
    "limits in their statusline; the demo's sessions use an API key",
    ("agentwatch-host", "CPU per session (cores)", "A"): NO_SESSIONS,
    ("agentwatch-host", "Memory per session", "A"): NO_SESSIONS,
    ("agentwatch-host", "Processes per session"): NO_SESSIONS,
    ("agentwatch-host", "Live sessions"): NO_SESSIONS,
    ("agentwatch-self", "File resets over the range"): "the counter appears with the first "
    "truncated or replaced transcript",
    ("agentwatch-self", "Rejected lines per hour by reason"): "the counter appears with the "
    "first rejected line; the demo writes none",
    ("agentwatch-self", "Duplicate copies per hour"): "the counter appears with the first "
    "duplicated response; the demo writes none",
    ("agentwatch-self", "Unpriced tokens per hour by model"): "the counter appears with the "
    "first model without a price; the demo's models are priced",
    ("agentwatch-self", "Scan problems per hour", "A"): "a skip reason appears when the "
    "resources scan first skips a process for it",
}


class Query(NamedTuple):
    dashboard: str  # the dashboard's uid
    panel: str  # the panel's title
    ref_id: str
    expr: str  # as Prometheus receives it: macros and template variables substituted


@cache
def load_dashboards() -> dict[str, dict[str, Any]]:
    """uid -> dashboard model of every committed dashboard.

    grafana-foundation-sdk writes no field whose value is null; Grafana reads a missing `id`
    as null (no database id), and so does this.
    """
    models = {}
    for path in sorted(DASHBOARD_DIR.glob("*.json")):
        model = json.loads(path.read_text(encoding="utf-8"))
        model.setdefault("id", None)
        models[model["uid"]] = model
    return models


def panels(model: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those inside collapsed rows (rows themselves included)."""
    for panel in model.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def concrete(expr: str) -> str:
    """`expr` with Grafana's macros and the template variables replaced."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name.startswith("__"):
            if name not in MACROS:
                raise ValueError(f"unsupported Grafana macro ${name} in {expr!r}")
            return MACROS[name]
        return VARIABLE_VALUE

    return VARIABLE.sub(replace, expr)


def dashboard_queries() -> Iterator[Query]:
    """(dashboard uid, panel title, refId, concrete expr) for every panel target."""
    for uid, model in load_dashboards().items():
        for panel in panels(model):
            for item in panel.get("targets", []):
                yield Query(uid, panel["title"], item["refId"], concrete(item["expr"]))


def may_be_empty(query: Query) -> str | None:
    """Why `query` may return no data in a healthy demo stack, or None if it must not."""
    for key in (
        (query.dashboard, "*"),
        (query.dashboard, query.panel),
        (query.dashboard, query.panel, query.ref_id),
    ):
        if key in MAY_BE_EMPTY:
            return MAY_BE_EMPTY[key]
    return None


# --- a PromQL reader ----------------------------------------------------------------------

AGGREGATIONS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile",
}  # fmt: skip
OPERATORS = (
    (promql_parser.MatchOp.Equal, "="),
    (promql_parser.MatchOp.NotEqual, "!="),
    (promql_parser.MatchOp.Re, "=~"),
    (promql_parser.MatchOp.NotRe, "!~"),
)
# Grafana's macros in a range or subquery step ([$__rate_interval], [$__range:$__interval]).
RANGE_MACRO = re.compile(r"(?<=[\[:])\$(?:\{(__\w+)\}|(__\w+))(?=[\]:])")
# They are no PromQL durations, so the parser reads each as a stand-in duration, named again
# after parsing; anatomy() refuses an expression that writes a stand-in itself.
STAND_INS = {name: timedelta(milliseconds=number) for number, name in enumerate(MACROS, 1)}
# Milliseconds in each unit of a PromQL duration (no weeks: the dashboards write 7d).
UNITS = {"y": 365 * 86_400_000, "d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}


@dataclass
class Selector:
    metric: str
    matchers: list[tuple[str, str, str]]  # (label, operator, value without quotes)
    range: str | None  # what stands between [ and ], if a range selector
    function: str | None  # the innermost function or aggregation that holds it


@dataclass
class Anatomy:
    selectors: list[Selector] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    grouping_labels: set[str] = field(default_factory=set)
    subqueries: list[str] = field(default_factory=list)  # as written: "[1h:5m]"


def _duration(delta: timedelta) -> str:
    """A range as the dashboards write it: its macro, or one number in the largest unit that
    divides it ("7d", "90m", where promql_parser.display_duration says "1w", "1h30m")."""
    for name, stand_in in STAND_INS.items():
        if delta == stand_in:
            return f"${name}"
    milliseconds = delta // timedelta(milliseconds=1)
    unit, size = next((unit, size) for unit, size in UNITS.items() if milliseconds % size == 0)
    return f"{milliseconds // size}{unit}"


def _stand_in(match: re.Match[str]) -> str:
    """The stand-in duration for the macro `match` found; only those concrete() knows."""
    name = match.group(1) or match.group(2)
    if name not in STAND_INS:
        raise ValueError(f"unsupported Grafana macro ${name} in {match.string!r}")
    return f"{STAND_INS[name] // timedelta(milliseconds=1)}ms"


def _matcher(matcher: promql_parser.Matcher) -> tuple[str, str, str]:
    operator = next(text for op, text in OPERATORS if op == matcher.op)
    return matcher.name, operator, matcher.value


def anatomy(expr: str) -> Anatomy:
    """What `expr` is made of, read from promql_parser's syntax tree; raises ValueError on what
    it cannot parse and on a selector without a metric name."""
    source, macros = RANGE_MACRO.subn(_stand_in, expr)
    tree = promql_parser.parse(source)  # ValueError on a syntax error
    result = Anatomy()
    open_nodes: list[tuple[promql_parser.Expr, str | None]] = []  # with their function

    def select(selector: promql_parser.VectorSelector, selected_range: str | None) -> None:
        if selector.name is None:
            raise ValueError(f"selector without a metric name in {expr!r}")
        if selector.matchers.or_matchers:
            raise ValueError(f"`or` inside a selector (no Prometheus reads it) in {expr!r}")
        function = next((name for _, name in reversed(open_nodes) if name), None)
        matchers = [_matcher(matcher) for matcher in selector.matchers.matchers]
        result.selectors.append(Selector(selector.name, matchers, selected_range, function))

    def enter(node: promql_parser.Expr) -> None:
        function = None
        if isinstance(node, promql_parser.Call):
            function = node.func.name
        elif isinstance(node, promql_parser.AggregateExpr):
            function = str(node.op)
            result.grouping_labels.update(node.modifier.labels if node.modifier else [])
        elif isinstance(node, promql_parser.BinaryExpr) and node.modifier:
            matching = node.modifier.matching
            result.grouping_labels.update(matching.labels if matching else [])
            result.grouping_labels.update(node.modifier.group_labels or [])
        elif isinstance(node, promql_parser.SubqueryExpr):
            step = _duration(node.step) if node.step else ""
            result.subqueries.append(f"[{_duration(node.range)}:{step}]")
        elif isinstance(node, promql_parser.MatrixSelector):
            select(node.vector_selector, _duration(node.range))
        elif isinstance(node, promql_parser.VectorSelector) and not (
            open_nodes and isinstance(open_nodes[-1][0], promql_parser.MatrixSelector)
        ):
            select(node, None)
        if function:
            result.functions.append(function)
        open_nodes.append((node, function))

    def leave(node: promql_parser.Expr) -> None:
        open_nodes.pop()

    promql_parser.walk(tree, enter, leave)
    named = [s.range for s in result.selectors if s.range] + result.subqueries
    if sum(text.count("$") for text in named) != macros:
        raise ValueError(f"a stand-in range, or a macro that is no range, in {expr!r}")
    return result


# The monitoring stack's own series (the stack scrapes Prometheus and Alertmanager): one stack
# serves every host, so they carry no $job/$instance filter.
STACK_SERIES: dict[str, set[str]] = {
    "alertmanager_notifications_failed_total": {"integration"},
    "prometheus_rule_evaluation_failures_total": {"rule_group"},
}
