"""The committed Grafana dashboards as data, for the dashboard lint and the stack test.

`dashboard_queries()` yields every panel query made concrete (Grafana's macros and template
variables substituted) so a test can send it to a real Prometheus. `MAY_BE_EMPTY` lists the
queries that legitimately return nothing in a healthy demo stack, each with its reason; every
other query must return data there. `anatomy()` is a small PromQL reader (selectors, ranges,
the function around each selector, grouping labels) that the lint rules walk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

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
MAY_BE_EMPTY: dict[tuple[str, ...], str] = {
    ("agentwatch-releases", "*"): "no repository is configured in the demo, and every "
    "release series carries the configured repo",
    ("agentwatch-overview", "Firing alerts"): "nothing needs to fire in a healthy stack",
    ("agentwatch-overview", "agentwatch alerts"): "nothing needs to fire in a healthy stack",
    ("agentwatch-overview", "Run spend against budget"): "empty while the budget is "
    "unlimited (cap 0), the default",
    ("agentwatch-overview", "5 h quota used"): "no quota is configured (threshold 0)",
    ("agentwatch-overview", "7 d quota used"): "no quota is configured (threshold 0)",
    ("agentwatch-overview", "Usage limit resets"): "absent until a transcript says when a "
    "usage limit resets; the demo never hits one",
    ("agentwatch-sessions", "Last API error by kind"): "absent until the demo's stalling "
    "session writes its API error, a few turns after the start",
    ("agentwatch-sessions", "Pane states"): NO_SESSIONS,
    ("agentwatch-sessions", "Panes not working"): "empty while every agent pane is working",
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


# --- a small PromQL reader ----------------------------------------------------------------

TOKEN = re.compile(
    r"""
    (?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<number>\d+(?:\.\d+)?(?:e[+-]?\d+)?(?:ms|[smhdwy])?)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>==|!=|=~|!~|>=|<=|[-+*/%^<>=,(){}])
  | (?P<space>\s+)
    """,
    re.VERBOSE,
)
AGGREGATIONS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile",
}  # fmt: skip
LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "atan2"}


@dataclass
class Selector:
    metric: str
    matchers: list[tuple[str, str, str]]  # (label, operator, value without quotes)
    range: str | None  # what stands between [ and ], if a range selector
    function: str | None  # the function or aggregation whose parentheses hold it


@dataclass
class Anatomy:
    selectors: list[Selector] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    grouping_labels: set[str] = field(default_factory=set)
    subqueries: list[str] = field(default_factory=list)  # ranges after a parenthesis


def _tokens(expr: str) -> list[tuple[str, str]]:
    out, position = [], 0
    while position < len(expr):
        match = TOKEN.match(expr, position)
        if not match:
            raise ValueError(f"cannot read {expr[position:]!r} in {expr!r}")
        position = match.end()
        kind = match.lastgroup or ""
        if kind != "space":
            out.append((kind, match.group()))
    return out


def _label_list(tokens: list[tuple[str, str]], start: int, into: set[str]) -> int:
    """Read `( a, b )` from tokens[start]; returns the index after `)`."""
    if start >= len(tokens) or tokens[start][1] != "(":
        raise ValueError("expected a label list in parentheses")
    index = start + 1
    while tokens[index][1] != ")":
        if tokens[index][0] == "ident":
            into.add(tokens[index][1])
        index += 1
    return index + 1


def _matchers(tokens: list[tuple[str, str]], start: int) -> tuple[list, int]:
    """Read `{label op "value", ...}` from tokens[start]; returns matchers and next index."""
    found, index = [], start + 1
    while tokens[index][1] != "}":
        if tokens[index][1] == ",":
            index += 1
            continue
        label, operator, value = tokens[index : index + 3]
        if label[0] != "ident" or value[0] != "string":
            raise ValueError(f"bad label matcher near {label[1]!r}")
        found.append((label[1], operator[1], value[1][1:-1]))
        index += 3
    return found, index + 1


def anatomy(expr: str) -> Anatomy:
    """What `expr` is made of; raises ValueError on what this reader does not understand."""
    tokens = _tokens(expr)
    result = Anatomy()
    parens: list[str | None] = []  # per open parenthesis: the function it belongs to
    index = 0
    while index < len(tokens):
        kind, text = tokens[index]
        following = tokens[index + 1][1] if index + 1 < len(tokens) else ""
        if kind == "ident" and text in LABEL_LISTS:
            index = _label_list(tokens, index + 1, result.grouping_labels)
        elif kind == "ident" and text in AGGREGATIONS and following in ("by", "without"):
            index = _label_list(tokens, index + 2, result.grouping_labels)
            if tokens[index][1] != "(":
                raise ValueError(f"{text} {following} (...) must be followed by (")
            result.functions.append(text)
            parens.append(text)
            index += 1
        elif kind == "ident" and following == "(":
            result.functions.append(text)
            parens.append(text)
            index += 2
        elif kind == "ident" and text not in KEYWORDS:
            index += 1
            matchers: list[tuple[str, str, str]] = []
            if index < len(tokens) and tokens[index][1] == "{":
                matchers, index = _matchers(tokens, index)
            selected_range = None
            if index < len(tokens) and tokens[index][0] == "range":
                selected_range = tokens[index][1][1:-1]
                index += 1
            function = parens[-1] if parens else None
            result.selectors.append(Selector(text, matchers, selected_range, function))
        elif text == "{":
            raise ValueError(f"selector without a metric name in {expr!r}")
        elif text == "(":
            parens.append(None)
            index += 1
        elif text == ")":
            parens.pop()
            index += 1
        elif kind == "range":
            result.subqueries.append(text)
            index += 1
        else:
            index += 1
    if parens:
        raise ValueError(f"unbalanced parentheses in {expr!r}")
    return result
