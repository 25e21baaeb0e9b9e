"""The Grafana dashboards: a structural lint, and every query checked by a real Prometheus.

Grafana cannot run here, so the rules that grafana/dashboard-linter applies are re-implemented
over the JSON (datasource variable, units, $__rate_interval, counters only inside rate or
increase, unique ids, layout on 24 columns), plus: every metric and label a query names is
documented in docs/metrics.md, and Prometheus accepts every query.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta
from itertools import combinations
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests
import yaml

from agentwatch.grafana.queries import DATASOURCE_UID, EXPLICIT_WINDOWS
from tests.conftest import free_port
from tests.dashboards import (
    AGGREGATIONS,
    DASHBOARD_DIR,
    MAY_BE_EMPTY,
    ROOT,
    STACK_SERIES,
    STAND_INS,
    Anatomy,
    Query,
    anatomy,
    concrete,
    dashboard_queries,
    load_dashboards,
    panels,
)

GRAFANA = ROOT / "grafana"
PROVISIONING = GRAFANA / "provisioning"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
DASHBOARD_UIDS = [
    "agentwatch-overview",
    "agentwatch-sessions",
    "agentwatch-host",
    "agentwatch-releases",
    "agentwatch-self",
]
UNITS = {
    "short", "none", "bytes", "Bps", "cps", "s", "percentunit", "currencyUSD",
    "dateTimeFromNow",
}  # fmt: skip
RATE_FUNCTIONS = {"rate", "increase", "irate"}
COUNTER_SUFFIXES = ("_total", "_bucket")  # counters, and a histogram's buckets (counters too)
COUNTER_FUNCTIONS = RATE_FUNCTIONS | {"resets", "changes"}
GAUGE_RANGE_FUNCTIONS = {"deriv", "predict_linear", "delta", "idelta"}
TARGET_LABELS = {"job", "instance"}  # added by Prometheus to every scraped series
PROMETHEUS_SERIES = {"ALERTS", "up"}
LEGEND_PANELS = {"timeseries", "bargauge", "state-timeline"}
# What the issue asks each dashboard to show, as metrics its queries must use.
COVERAGE = {
    "agentwatch-overview": {
        "agentwatch_cost_usd_total", "agentwatch_tokens_total", "agentwatch_budget_limit_usd",
        "agentwatch_agent_sessions", "ALERTS", "agentwatch_controller_paused",
        "agentwatch_controller_max_agents", "agentwatch_controller_breaker_state",
        "instance_window:agentwatch_quota_used:ratio",
        "instance_window:agentwatch_quota_resets:timestamp",
        "instance_window:agentwatch_quota_exhausted:timestamp",
        "instance_session:agentwatch_quota_window_share:ratio",
        "agentwatch_budget_spent_usd", "agentwatch_budget_remaining_usd",
        "agentwatch_controller_burn_escalation",
        "instance_session:agentwatch_burn_throttle_effect:ratio",
        "agentwatch_orchestrator_up", "agentwatch_controller_adapter_failing",
        "alertmanager_notifications_failed_total", "prometheus_rule_evaluation_failures_total",
        "agentwatch_filesystem_avail_bytes", "agentwatch_filesystem_size_bytes",
        "agentwatch_ledger_commit_duration_seconds_bucket", "agentwatch_controller_nudges_total",
        "agentwatch_controller_effective_max_agents",
    },
    "agentwatch-sessions": {
        "agentwatch_session_tokens_total", "agentwatch_session_cost_usd_total",
        "agentwatch_api_errors_total", "agentwatch_pane_state", "agentwatch_panes",
        "agentwatch_claude_session_state", "agentwatch_claude_session_info",
        "agentwatch_quota_used_ratio", "agentwatch_sessions_without_commit_total",
        "agentwatch_claude_session_tool_repeats_total",
    },
    "agentwatch-host": {
        "agentwatch_footprint_processes", "agentwatch_footprint_agent_processes",
        "agentwatch_agent_session_cpu_seconds_total",
        "agentwatch_agent_session_resident_memory_bytes",
    },
    "agentwatch-releases": {
        "agentwatch_release_unreleased_commits", "agentwatch_release_publish_blocked",
    },
    "agentwatch-self": {
        "agentwatch_sentinel_up", "agentwatch_ledger_unread_bytes", "up",
    },
}  # fmt: skip


# --- what the documents say exists ---------------------------------------------------------

METRICS_DOC = ROOT / "docs" / "metrics.md"
METRICS_ROW = re.compile(
    r"^\| `((?:agentwatch|bernstein)_[a-z0-9_]+)` \| (counter|gauge|histogram) \| ([a-z_, ]*)\|",
    re.M,
)
THRESHOLD_ROW = re.compile(r"^\| `?([a-z0-9_]+)`? \| [0-9.]+ \|", re.M)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def documented_metrics() -> dict[str, set[str]]:
    """Every metric of the docs/metrics.md tables -> its labels."""
    known: dict[str, set[str]] = {}
    for name, kind, labels in METRICS_ROW.findall(_read(METRICS_DOC)):
        names = {x.strip() for x in labels.split(",") if x.strip()}
        if kind == "histogram":  # served as its three series
            known.setdefault(name + "_bucket", set()).update(names | {"le"})
            known.setdefault(name + "_sum", set()).update(names)
            known.setdefault(name + "_count", set()).update(names)
        else:
            known.setdefault(name, set()).update(names)
    return known


DOCUMENTED = documented_metrics()
THRESHOLDS = set(THRESHOLD_ROW.findall(_read(METRICS_DOC)))

# Recording rules the dashboards read (rules/recording.rules.yml): the labels each keeps
# besides job and instance.
RECORDED: dict[str, set[str]] = {
    "instance_window:agentwatch_quota_used:ratio": {"window", "source"},
    "instance_window:agentwatch_quota_resets:timestamp": {"window", "source"},
    "instance_window:agentwatch_quota_exhausted:timestamp": {"window", "source"},
    "instance_session:agentwatch_quota_window_share:ratio": {"project", "session"},
    "instance_session:agentwatch_burn_throttle_effect:ratio": {"alertname", "project", "session"},
}
KNOWN = {**RECORDED, **STACK_SERIES, **DOCUMENTED}
KNOWN_THRESHOLDS = THRESHOLDS


def _load_builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agentwatch_grafana_build", GRAFANA / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD = _load_builder()


# --- what the dashboards hold ---------------------------------------------------------------


def _content_panels() -> Iterator[tuple[str, dict[str, Any]]]:
    for uid, model in load_dashboards().items():
        for panel in panels(model):
            if panel["type"] != "row":
                yield uid, panel


def _targets() -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    for uid, panel in _content_panels():
        for item in panel["targets"]:
            yield uid, panel, item


PANELS = list(_content_panels())
TARGETS = list(_targets())
QUERIES = list(dashboard_queries())


def _panel_id(case: tuple) -> str:
    return f"{case[0]}:{case[1]['title']}"


def _target_id(case: tuple) -> str:
    return f"{case[0]}:{case[1]['title']}:{case[2]['refId']}"


def _labels_of(parts: Anatomy) -> set[str] | None:
    """Labels the expression's series can carry; None when a series may carry any."""
    labels = set(TARGET_LABELS)
    for selector in parts.selectors:
        if selector.metric == "ALERTS":
            return None
        labels |= KNOWN.get(selector.metric, set())
    return labels


# --- the build ------------------------------------------------------------------------------


def test_the_committed_json_is_what_build_py_writes() -> None:
    rendered = BUILD.render()
    committed = {path.name: path.read_text(encoding="utf-8") for path in
                 DASHBOARD_DIR.glob("*.json")}  # fmt: skip
    assert sorted(committed) == sorted(rendered), "run: python grafana/build.py"
    for name, text in rendered.items():
        assert committed[name] == text, f"{name} is stale; run: python grafana/build.py"


def test_build_check_mode_reports_a_stale_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(BUILD, "OUT_DIR", tmp_path)
    assert BUILD.main(["--check"]) == 1  # nothing written yet
    assert BUILD.main([]) == 0
    assert BUILD.main(["--check"]) == 0
    (tmp_path / "agentwatch-host.json").write_text("{}")
    assert BUILD.main(["--check"]) == 1


def test_the_five_dashboards_exist() -> None:
    assert sorted(load_dashboards()) == sorted(DASHBOARD_UIDS)


# --- dashboard-level rules --------------------------------------------------------------------


@pytest.mark.parametrize("uid", DASHBOARD_UIDS)
def test_dashboard_header(uid: str) -> None:
    model = load_dashboards()[uid]
    assert model["schemaVersion"] == 41  # Grafana 11.6, as grafana-foundation-sdk writes it
    assert len(uid) <= 40 and model["uid"] == uid
    assert model["id"] is None, "provisioned dashboards carry no database id"
    assert model["title"].startswith("agentwatch / ")
    assert "agentwatch" in model["tags"]
    assert model["description"]


def test_uids_and_titles_are_unique_across_dashboards() -> None:
    models = list(load_dashboards().values())
    assert len({m["uid"] for m in models}) == len(models)
    assert len({m["title"] for m in models}) == len(models)


@pytest.mark.parametrize("uid", DASHBOARD_UIDS)
def test_datasource_variable_comes_first_and_defaults_to_the_provisioned_one(uid: str) -> None:
    variables = load_dashboards()[uid]["templating"]["list"]
    first = variables[0]
    assert (first["type"], first["name"], first["query"]) == ("datasource", "datasource",
                                                              "prometheus")  # fmt: skip
    provisioned = yaml.safe_load((PROVISIONING / "datasources" / "agentwatch.yml").read_text())
    assert first["current"]["value"] == provisioned["datasources"][0]["uid"]
    for variable in variables[1:]:
        assert variable["type"] == "query"
        assert variable["datasource"] == DATASOURCE


@pytest.mark.parametrize("uid", DASHBOARD_UIDS)
def test_query_variables_read_documented_labels_of_earlier_variables(uid: str) -> None:
    variables = load_dashboards()[uid]["templating"]["list"]
    defined = {"datasource"}
    for variable in variables[1:]:
        match = re.fullmatch(r"label_values\((.+), (\w+)\)", variable["query"]["query"])
        assert match, variable["query"]
        assert variable["definition"] == variable["query"]["query"]
        parts = anatomy(match.group(1))
        (selector,) = parts.selectors
        assert match.group(2) in DOCUMENTED[selector.metric] | TARGET_LABELS
        used = {m.group(1) or m.group(2) for m in re.finditer(r"\$(?:\{(\w+)\}|(\w+))",
                                                            match.group(1))}  # fmt: skip
        assert used <= defined, f"{variable['name']} uses a variable defined after it"
        assert variable["includeAll"] and variable["allValue"] == ".*"
        defined.add(variable["name"])


@pytest.mark.parametrize("uid", DASHBOARD_UIDS)
def test_job_then_instance_variables_come_first(uid: str) -> None:
    """Every dashboard picks the job, then the hosts (workstations) of that job."""
    variables = load_dashboards()[uid]["templating"]["list"]
    job, instance = variables[1], variables[2]
    assert job["name"] == "job"
    assert instance["name"] == "instance"
    assert instance["query"]["query"] == (
        'label_values(agentwatch_exporter_build_info{job=~"$job"}, instance)'
    )
    assert instance["multi"] and instance["includeAll"] and instance["allValue"] == ".*"


def _per_host(expr: str) -> bool:
    """The expression keeps hosts apart: raw series, or aggregated by instance."""
    parts = anatomy(expr)
    aggregated = any(f in AGGREGATIONS for f in parts.functions)
    return not aggregated or "instance" in parts.grouping_labels


# The only panels that add the selected hosts up: what the agents cost and spend in total,
# and how many alerts fire. Everything else describes one host and keeps hosts apart.
FLEET_PANELS = {
    ("agentwatch-overview", title)
    for title in (
        "Spend today", "Spend this week", "Spend this month", "Firing alerts",
        "Tokens per hour by type", "Tokens per hour by model", "Tokens per hour by project",
        "Spend per hour by project", "Spend by model over the range",
        "Spend by project over the range", "Tokens by type over the range",
        "Spend per hour by agent", "Spend by agent",
    )
}  # fmt: skip


@pytest.mark.parametrize("case", TARGETS, ids=_target_id)
def test_host_panels_keep_hosts_apart(case: tuple) -> None:
    uid, panel, item = case
    if (uid, panel["title"]) in FLEET_PANELS:
        return
    assert _per_host(item["expr"]), f"merges hosts: {item['expr']}"
    if panel["type"] in LEGEND_PANELS and "by (instance" in item["expr"]:
        assert "{{instance}}" in item["legendFormat"], "several hosts need the host in the legend"


def test_per_host_check_can_fail() -> None:
    assert not _per_host('max(a{job=~"$job",instance=~"$instance"})')
    assert not _per_host('sum by (kind) (a{job=~"$job",instance=~"$instance"})')
    assert _per_host('max by (instance, kind) (a{job=~"$job",instance=~"$instance"})')
    assert _per_host('time() - a{job=~"$job",instance=~"$instance"}')


@pytest.mark.parametrize("uid", DASHBOARD_UIDS)
def test_panel_ids_are_unique(uid: str) -> None:
    ids = [panel["id"] for panel in panels(load_dashboards()[uid])]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("uid", DASHBOARD_UIDS)
def test_panel_titles_are_unique(uid: str) -> None:
    titles = [p["title"] for p in panels(load_dashboards()[uid]) if p["type"] != "row"]
    assert len(titles) == len(set(titles)), "the stack test names panels by title"


def _apart(a: dict[str, int], b: dict[str, int]) -> bool:
    """Two grid boxes share no cell."""
    return (
        a["x"] + a["w"] <= b["x"]
        or b["x"] + b["w"] <= a["x"]
        or a["y"] + a["h"] <= b["y"]
        or b["y"] + b["h"] <= a["y"]
    )


@pytest.mark.parametrize("uid", DASHBOARD_UIDS)
def test_layout_fits_24_columns_without_overlap(uid: str) -> None:
    boxes = [(p["title"], p["gridPos"]) for p in panels(load_dashboards()[uid])]
    for title, grid in boxes:
        assert grid["w"] > 0 and grid["h"] > 0, title
        assert grid["x"] >= 0 and grid["y"] >= 0, title
        assert grid["x"] + grid["w"] <= 24, f"{title} goes past column 24"
    for (one, a), (other, b) in combinations(boxes, 2):
        assert _apart(a, b), f"{one!r} overlaps {other!r}"


def test_overlap_check_can_fail() -> None:
    assert not _apart({"x": 0, "y": 0, "w": 12, "h": 8}, {"x": 6, "y": 4, "w": 12, "h": 8})
    assert _apart({"x": 0, "y": 0, "w": 12, "h": 8}, {"x": 12, "y": 0, "w": 12, "h": 8})


@pytest.mark.parametrize("uid", DASHBOARD_UIDS)
def test_dashboard_covers_what_the_issue_asks(uid: str) -> None:
    used = {
        selector.metric
        for panel in panels(load_dashboards()[uid])
        for item in panel.get("targets", [])
        for selector in anatomy(item["expr"]).selectors
    }
    assert sorted(COVERAGE[uid] - used) == []


# --- panel-level rules --------------------------------------------------------------------------


@pytest.mark.parametrize("case", PANELS, ids=_panel_id)
def test_panel_uses_the_datasource_variable(case: tuple) -> None:
    _, panel = case
    assert panel["datasource"] == DATASOURCE
    assert panel["targets"], "a panel without queries"
    for item in panel["targets"]:
        assert item["datasource"] == DATASOURCE


@pytest.mark.parametrize("case", PANELS, ids=_panel_id)
def test_panel_has_a_unit_and_a_description(case: tuple) -> None:
    _, panel = case
    assert panel["fieldConfig"]["defaults"]["unit"] in UNITS
    for override in panel["fieldConfig"]["overrides"]:
        for prop in override["properties"]:
            if prop["id"] == "unit":
                assert prop["value"] in UNITS
    assert len(panel["description"]) > 20, "say what the panel shows"


@pytest.mark.parametrize("case", PANELS, ids=_panel_id)
def test_panel_targets_have_unique_ref_ids_and_legends(case: tuple) -> None:
    _, panel = case
    ref_ids = [item["refId"] for item in panel["targets"]]
    assert len(ref_ids) == len(set(ref_ids))
    if panel["type"] in LEGEND_PANELS:
        for item in panel["targets"]:
            assert item["legendFormat"] not in ("", "__auto"), f"{item['refId']} has no legend"
    if panel["type"] == "timeseries":
        assert panel["options"]["legend"]["showLegend"] is True


@pytest.mark.parametrize("case", PANELS, ids=_panel_id)
def test_override_ref_ids_and_columns_exist(case: tuple) -> None:
    _, panel = case
    ref_ids = {item["refId"] for item in panel["targets"]}
    value_fields = {"Value"} if len(ref_ids) == 1 else {f"Value #{ref}" for ref in ref_ids}
    for override in panel["fieldConfig"]["overrides"]:
        matcher = override["matcher"]
        if matcher["id"] == "byFrameRefID":
            assert matcher["options"] in ref_ids
        elif matcher["id"] == "byName" and panel["type"] == "table":
            assert matcher["options"] in value_fields


# --- query rules --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", TARGETS, ids=_target_id)
def test_counters_appear_only_inside_rate_or_increase(case: tuple) -> None:
    _, _, item = case
    for selector in anatomy(item["expr"]).selectors:
        if selector.metric.endswith(COUNTER_SUFFIXES):
            assert selector.function in COUNTER_FUNCTIONS, (
                f"{selector.metric} outside rate()/increase()"
            )
            assert selector.range, f"{selector.metric} needs a range"


@pytest.mark.parametrize("case", TARGETS, ids=_target_id)
def test_rate_takes_counters_and_trends_take_gauges(case: tuple) -> None:
    _, _, item = case
    for selector in anatomy(item["expr"]).selectors:
        if selector.function in RATE_FUNCTIONS:
            assert selector.metric.endswith(COUNTER_SUFFIXES), (
                f"rate of the gauge {selector.metric}"
            )
        if selector.function in GAUGE_RANGE_FUNCTIONS or (selector.function or "").endswith(
            "_over_time"
        ):
            assert not selector.metric.endswith(COUNTER_SUFFIXES), (
                f"trend of a counter {selector.metric}"
            )


@pytest.mark.parametrize("case", TARGETS, ids=_target_id)
def test_ranges_follow_the_documented_choice(case: tuple) -> None:
    """Graphs use $__rate_interval, instant panels total over $__range, fixed windows are few.

    `$__interval` would undersample rate(); `$__range` in a graph would smear every point
    over the whole range; a fixed window is allowed only where an alert or quota defines it
    (grafana/queries.py EXPLICIT_WINDOWS).
    """
    _, _, item = case
    parts = anatomy(item["expr"])
    assert parts.subqueries == [], "no subqueries"
    for selector in parts.selectors:
        if selector.range is None:
            continue
        if item["instant"]:
            allowed = {"$__range", *EXPLICIT_WINDOWS}
        else:
            allowed = {"$__rate_interval", *EXPLICIT_WINDOWS}
        assert selector.range in allowed, f"[{selector.range}] on {selector.metric}"


@pytest.mark.parametrize("case", TARGETS, ids=_target_id)
def test_instant_flags_match_the_panel(case: tuple) -> None:
    _, panel, item = case
    instant = panel["type"] in ("stat", "gauge", "bargauge", "table")
    assert item["instant"] is instant and item["range"] is (not instant)
    assert item["format"] == ("table" if panel["type"] == "table" else "time_series")


@pytest.mark.parametrize("case", TARGETS, ids=_target_id)
def test_metrics_are_documented(case: tuple) -> None:
    _, _, item = case
    for selector in anatomy(item["expr"]).selectors:
        assert selector.metric in KNOWN or selector.metric in PROMETHEUS_SERIES, (
            f"{selector.metric} is not in docs/metrics.md (nor a contract or recorded name)"
        )


@pytest.mark.parametrize("case", TARGETS, ids=_target_id)
def test_labels_are_documented(case: tuple) -> None:
    """Matchers, by/on lists and legends name only labels the series really carry."""
    _, _, item = case
    parts = anatomy(item["expr"])
    for selector in parts.selectors:
        if selector.metric == "ALERTS":
            continue
        allowed = KNOWN.get(selector.metric, set()) | TARGET_LABELS
        for label, _, _ in selector.matchers:
            assert label in allowed, f"{selector.metric} has no label {label}"
    labels = _labels_of(parts)
    if labels is None:
        return
    assert parts.grouping_labels <= labels, sorted(parts.grouping_labels - labels)
    legend = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", item["legendFormat"]))
    assert legend <= labels, sorted(legend - labels)


@pytest.mark.parametrize("case", TARGETS, ids=_target_id)
def test_selectors_filter_by_job_and_instance_and_variables_are_regex_matched(
    case: tuple,
) -> None:
    """One Prometheus may scrape several workstations: every selector (ALERTS too, whose
    labels carry the alert's job and instance) narrows to the chosen jobs and hosts."""
    uid, _, item = case
    parts = anatomy(item["expr"])
    defined = {v["name"] for v in load_dashboards()[uid]["templating"]["list"]}
    regex_uses = 0
    for selector in parts.selectors:
        if selector.metric in STACK_SERIES:
            assert not any(label in TARGET_LABELS for label, _, _ in selector.matchers)
            continue
        assert ("job", "=~", "$job") in selector.matchers, f"{selector.metric} without job"
        assert ("instance", "=~", "$instance") in selector.matchers, (
            f"{selector.metric} without instance"
        )
        for label, operator, value in selector.matchers:
            if "$" in value:
                assert operator == "=~", f"{label}{operator}{value}: variables need =~"
                assert value[1:] in defined, f"{value} is not a template variable here"
                regex_uses += 1
    macros = sum(1 for s in parts.selectors if s.range and s.range.startswith("$"))
    assert item["expr"].count("$") == regex_uses + macros, "a $ outside a matcher or range"


@pytest.mark.parametrize("case", TARGETS, ids=_target_id)
def test_threshold_names_are_configured_thresholds(case: tuple) -> None:
    _, _, item = case
    for selector in anatomy(item["expr"]).selectors:
        if selector.metric == "agentwatch_alert_threshold":
            names = [value for label, _, value in selector.matchers if label == "name"]
            assert names and set(names) <= KNOWN_THRESHOLDS, names


def test_the_documents_were_read() -> None:
    """The lint is only as good as its source: make sure the tables were really parsed."""
    assert DOCUMENTED["agentwatch_tokens_total"] == {"agent", "project", "model", "type"}
    assert DOCUMENTED["agentwatch_pane_state"] == {"tmux_session", "pane", "agent", "state"}
    assert DOCUMENTED["agentwatch_host_load_average"] == {"window"}
    assert DOCUMENTED["agentwatch_orchestrator_up"] == set()
    assert {"stall_seconds", "quota_5h_tokens", "ledger_database_bytes"} <= THRESHOLDS
    assert len(DOCUMENTED) > 100


def test_recorded_and_stack_names_are_no_agentwatch_metrics() -> None:
    for name in set(RECORDED) | set(STACK_SERIES):
        assert name not in DOCUMENTED, f"{name} is no agentwatch metric: not a docs row"


def test_recorded_names_are_recording_rules_once_written() -> None:
    """Each recorded name the dashboards read is a `record:` of the shipped rules as soon as
    any of them is (before the slices of issue 15 merge, none is)."""
    recorded = set()
    for path in (ROOT / "rules").glob("*.rules.yml"):
        for group in yaml.safe_load(path.read_text())["groups"]:
            recorded |= {rule["record"] for rule in group["rules"] if "record" in rule}
    assert "instance:agentwatch_fresh_tokens:increase5h" in recorded  # the files were read
    if recorded & set(RECORDED):
        assert sorted(set(RECORDED) - recorded) == []


# --- the PromQL reader the rules rely on -----------------------------------------------------


def test_reader_finds_selectors_functions_and_labels() -> None:
    parts = anatomy(
        'sum by (kind) (rate(a_total{job=~"$job",x!="y"}[$__rate_interval])) * 3600'
        ' / on () group_left () max(b{job=~"$job"}) or c'
    )
    assert [(s.metric, s.function, s.range) for s in parts.selectors] == [
        ("a_total", "rate", "$__rate_interval"), ("b", "max", None), ("c", None, None)
    ]  # fmt: skip
    assert parts.selectors[0].matchers == [("job", "=~", "$job"), ("x", "!=", "y")]
    assert parts.grouping_labels == {"kind"}
    assert parts.functions == ["sum", "rate", "max"]


def test_reader_catches_what_the_rules_forbid() -> None:
    bare = anatomy("sum(x_total) + max_over_time(y[5m])")
    assert [(s.metric, s.function) for s in bare.selectors] == [("x_total", "sum"),
                                                                ("y", "max_over_time")]  # fmt: skip
    assert anatomy("max_over_time((x)[1h:5m])").subqueries == ["[1h:5m]"]
    with pytest.raises(ValueError):
        anatomy('{__name__="x"}')
    with pytest.raises(ValueError):
        anatomy("sum(rate(x[5m])")


def test_reader_gives_macros_and_windows_back_as_written() -> None:
    """promql_parser reads no Grafana macro and writes 7 days as 1w: the reader names both as
    the dashboards write them, and refuses a range it could take for a macro's stand-in."""
    parts = anatomy(
        "max_over_time(rate(a_total[${__rate_interval}])[$__range:$__interval])"
        " + max_over_time(b[7d]) + max_over_time(c[90m])"
    )
    assert [s.range for s in parts.selectors] == ["$__rate_interval", "7d", "90m"]
    assert parts.subqueries == ["[$__range:$__interval]"]
    for stand_in in STAND_INS.values():
        with pytest.raises(ValueError):
            anatomy(f"rate(a_total[{stand_in // timedelta(milliseconds=1)}ms])")


def test_concrete_substitutes_macros_and_variables() -> None:
    expr = 'increase(a{p=~"$project",m=~"${model}"}[$__range]) + rate(b[$__rate_interval])'
    assert concrete(expr) == 'increase(a{p=~".*",m=~".*"}[1h]) + rate(b[5m])'
    host = 'up{job=~"$job",instance=~"$instance"}'
    assert concrete(host) == 'up{job=~".*",instance=~".*"}'
    with pytest.raises(ValueError):
        concrete("rate(a[$__unknown_macro])")


def test_may_be_empty_names_real_panels_with_reasons() -> None:
    known = {(q.dashboard, q.panel, q.ref_id) for q in QUERIES}
    for key, reason in MAY_BE_EMPTY.items():
        assert len(reason) > 15, key
        if key[1] == "*":
            assert key[0] in DASHBOARD_UIDS
        elif len(key) == 2:
            assert any(k[:2] == key for k in known), f"no panel {key}"
        else:
            assert key in known, f"no query {key}"


# --- Prometheus reads every query ---------------------------------------------------------------


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus with an empty database on a free loopback port; yields its URL."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus is required (Debian package prometheus); scripts/setup installs it"
    folder = tmp_path_factory.mktemp("prometheus")
    config = folder / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (folder / "prometheus.log").open("wb")
    process = subprocess.Popen(  # argv list, no shell
        [binary, f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, (folder / "prometheus.log").read_text()
            try:
                if requests.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, "prometheus did not become ready"
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def _query(url: str, expr: str) -> requests.Response:
    return requests.get(f"{url}/api/v1/query", params={"query": expr}, timeout=10)


def test_prometheus_rejects_a_bad_query(prometheus: str) -> None:
    answer = _query(prometheus, "sum(rate(x[5m])")
    assert answer.status_code == 400 and answer.json()["errorType"] == "bad_data"


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: f"{q.dashboard}:{q.panel}:{q.ref_id}")
def test_prometheus_accepts_every_query(prometheus: str, query: Query) -> None:
    answer = _query(prometheus, query.expr)
    body = answer.json()
    assert answer.status_code == 200, f"{body.get('error')}\n{query.expr}"
    assert body["status"] == "success"


@pytest.mark.parametrize("uid", DASHBOARD_UIDS)
def test_prometheus_accepts_every_variable_selector(prometheus: str, uid: str) -> None:
    for variable in load_dashboards()[uid]["templating"]["list"][1:]:
        selector = re.fullmatch(r"label_values\((.+), \w+\)", variable["query"]["query"])
        assert selector
        answer = _query(prometheus, concrete(selector.group(1)))
        assert answer.status_code == 200, answer.text


# --- provisioning --------------------------------------------------------------------------------


def test_datasource_provisioning() -> None:
    document = yaml.safe_load((PROVISIONING / "datasources" / "agentwatch.yml").read_text())
    assert document["apiVersion"] == 1
    (source,) = document["datasources"]
    assert source["type"] == "prometheus" and source["access"] == "proxy"
    assert source["uid"] == DATASOURCE_UID == "agentwatch-prometheus"
    assert source["url"] == "http://127.0.0.1:9850"
    assert re.fullmatch(r"\d+s", source["jsonData"]["timeInterval"])


def test_dashboard_provisioning() -> None:
    document = yaml.safe_load((PROVISIONING / "dashboards" / "agentwatch.yml").read_text())
    assert document["apiVersion"] == 1
    (provider,) = document["providers"]
    assert provider["type"] == "file" and provider["folder"] == "agentwatch"
    placeholder = provider["options"]["path"]
    readme = (GRAFANA / "README.md").read_text()
    assert placeholder in readme, "the installer's placeholder must be documented"
