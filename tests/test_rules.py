"""The Prometheus rules in rules/: promtool lint and unit tests, and the contract of every alert.

promtool proves each alert fires when it should and stays silent in near misses; the structural
tests here prove what promtool cannot: that every alert is documented, has a runbook section, uses
only metrics and thresholds that exist, carries only actions the controller knows, and is covered
by both a firing and a silent promtool case. A few mutations show the promtool tests can fail.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentwatch.core.config import ALERT_THRESHOLDS

ROOT = Path(__file__).resolve().parent.parent
RULES_DIR = ROOT / "rules"
RULE_FILES = sorted(RULES_DIR.glob("*.rules.yml"))
# The team layout's central rules: loaded by the central Prometheus only (docs/team.md).
CENTRAL_FILES = sorted((RULES_DIR / "central").glob("*.rules.yml"))
TEST_FILES = sorted((RULES_DIR / "tests").glob("*_test.yml"))
RUNBOOK = ROOT / "docs" / "runbook.md"
ALERTS_DOC = ROOT / "docs" / "alerts.md"
METRICS_DOC = ROOT / "docs" / "metrics.md"

RUNBOOK_BASE = "https://github.com/agentwatch/agentwatch/blob/main/docs/runbook.md#"
SEVERITIES = {"critical", "warning", "info"}
# The one alert without a severity anyone acts on: always firing, for a dead man's switch.
WATCHDOG = "AgentwatchWatchdog"
# Recording rules over recorded series: never backfilled, never read by an alert.
DERIVED_FILE = "derived.rules.yml"
# Recording rules over raw series only: the back-test backfills these files in one pass.
RAW_FILES = ("recording.rules.yml", "quota.rules.yml")
HISTOGRAM_SUFFIX = re.compile(r"_(bucket|count|sum)$")
TIERS = {"opus", "sonnet"}
ALERT_NAME = re.compile(r"^Agentwatch[A-Z][A-Za-z0-9]*$")
RECORD_NAME = re.compile(r"^[a-z_]+:[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$")
DURATION = re.compile(r"^(?:\d+(?:ms|s|m|h|d|w|y))+$")
DURATION_PART = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")
UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def parse_duration(text: str) -> float:
    """Seconds of a Prometheus duration such as `1h30m`."""
    if not DURATION.match(text):
        raise ValueError(f"not a Prometheus duration: {text!r}")
    return sum(int(n) * UNIT_SECONDS[unit] for n, unit in DURATION_PART.findall(text))


def load_rules(paths: list[Path] = RULE_FILES) -> list[dict[str, Any]]:
    """Every rule of the given files, each with the group and file it came from."""
    found = []
    for path in paths:
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                found.append({**rule, "_group": group["name"], "_file": path.name})
    return found


def alert_rules() -> list[dict[str, Any]]:
    """Every alert, the central ones included."""
    return [rule for rule in load_rules(RULE_FILES + CENTRAL_FILES) if "alert" in rule]


def recording_rules() -> list[dict[str, Any]]:
    return [rule for rule in load_rules() if "record" in rule]


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def runbook_anchors() -> set[str]:
    headings = re.findall(r"^#{1,6} (.+)$", RUNBOOK.read_text(), flags=re.MULTILINE)
    return {github_anchor(heading) for heading in headings}


def documented_actions() -> set[str]:
    """The agentwatch_action values listed in docs/alerts.md's contract table."""
    text = ALERTS_DOC.read_text()
    section = text.split("## The `agentwatch_action` label", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)) - {
        "agentwatch_action"  # the header
    }


def documented_metrics() -> set[str]:
    names = set(re.findall(r"`(agentwatch_[a-z0-9_]+)`", METRICS_DOC.read_text()))
    return names


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is required (Debian package prometheus); scripts/setup installs it"
    return path


# --- promtool -------------------------------------------------------------------------------


def test_rule_files_pass_promtool_lint(promtool: str) -> None:
    assert RULE_FILES, "no rules/*.rules.yml found"
    assert CENTRAL_FILES, "no rules/central/*.rules.yml found"
    result = subprocess.run(
        [promtool, "check", "rules", "--lint=all", *map(str, RULE_FILES + CENTRAL_FILES)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
    assert "lint" not in (result.stdout + result.stderr).lower()


@pytest.mark.slow
def test_promtool_unit_tests_pass(promtool: str) -> None:
    assert TEST_FILES, "no rules/tests/*_test.yml found"
    result = subprocess.run(
        [promtool, "test", "rules", *map(str, TEST_FILES)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=RULES_DIR,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(TEST_FILES), result.stdout


STALE_THRESHOLD = 'agentwatch_alert_threshold{name="quota_stale_seconds"}'

# (rule file, text, replacement, the promtool test file that must now fail): the tests notice
# a weakened threshold, a wrong factor, a missing guard or a widened state set.
MUTATIONS = [
    ("alerts-spend.rules.yml", "> 2 * (\n", "> 1 * (\n", "burn_baseline_test.yml"),
    (
        "alerts-spend.rules.yml",
        "(agentwatch_budget_limit_usd) > 0)\n          >= 0.95",  # the critical alert's guard
        "(agentwatch_budget_limit_usd) >= 0)\n          >= 0.95",
        "quota_budget_test.yml",
    ),
    (
        "alerts-sessions.rules.yml",
        'api_error|rate_limited"}',
        'api_error|rate_limited|approval_prompt"}',
        "sessions_test.yml",
    ),
    ("alerts-release.rules.yml", ">= 2 * 86400", ">= 1.9 * 86400", "release_test.yml"),
    (
        "alerts-capacity.rules.yml",
        "          ) >= 3\n",
        "          ) >= 2\n",
        "capacity_test.yml",
    ),
    # Official quota readings trusted however old they are.
    (
        "quota.rules.yml",
        "group_left ()\n" + " " * 16 + STALE_THRESHOLD,
        "group_left ()\n" + " " * 16 + "1e9 * " + STALE_THRESHOLD,
        "quota_official_test.yml",
    ),
    # A retry loop that is no longer told apart from heavy work.
    (
        "alerts-spend.rules.yml",
        "increase(agentwatch_claude_session_tool_repeats_total[15m])\n            ) >= 5",
        "increase(agentwatch_claude_session_tool_repeats_total[15m])\n            ) >= 50",
        "burn_kind_test.yml",
    ),
    (
        "alerts-claude-sessions.rules.yml",
        '{state="waiting_for_permission"} == 1)',
        '{state=~"waiting_for_permission|working"} == 1)',
        "claude_sessions_test.yml",
    ),
    (
        "alerts-claude-sessions.rules.yml",
        "increase(agentwatch_sessions_without_commit_total[1h])\n          ) > 0",
        "increase(agentwatch_sessions_without_commit_total[1h])\n          ) > 1",
        "claude_sessions_test.yml",
    ),
    # Back to "the most lenient host's threshold applies everywhere".
    (
        "alerts-capacity.rules.yml",
        "on (job, instance) group_left ()\n"
        '            agentwatch_alert_threshold{name="footprint_processes"}',
        "on () group_left ()\n"
        '            max(agentwatch_alert_threshold{name="footprint_processes"})',
        "multihost_test.yml",
    ),
    # One subscription judged by its largest host instead of the sum of its hosts.
    (
        "central/account.rules.yml",
        "sum by (account) (\n            increase(",
        "max by (account) (\n            increase(",
        "central_test.yml",
    ),
    # The account's budget judged by its largest host's spend.
    (
        "central/account.rules.yml",
        "sum by (account) (max by (account, host) (agentwatch_budget_spent_usd))",
        "max by (account) (max by (account, host) (agentwatch_budget_spent_usd))",
        "central_test.yml",
    ),
    # A budget merged over every controller instance.
    (
        "alerts-spend.rules.yml",
        "max by (job, instance) (agentwatch_budget_limit_usd) > 0)\n          >= 0.95",
        "max by (job) (agentwatch_budget_limit_usd) > 0)\n          >= 0.95",
        "multihost_test.yml",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("rule_file", "old", "new", "test_file"), MUTATIONS)
def test_promtool_tests_catch_a_mutated_rule(
    promtool: str, tmp_path: Path, rule_file: str, old: str, new: str, test_file: str
) -> None:
    copy = tmp_path / "rules"
    shutil.copytree(RULES_DIR, copy)
    target = copy / rule_file
    text = target.read_text()
    assert old in text, f"mutation target gone from {rule_file}: {old!r}"
    target.write_text(text.replace(old, new, 1))
    result = subprocess.run(
        [promtool, "test", "rules", str(copy / "tests" / test_file)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0, f"{test_file} still passes with {rule_file} mutated"
    assert "FAILED" in result.stdout + result.stderr


# --- the contract of every alert ------------------------------------------------------------


def test_every_alert_keeps_the_label_and_annotation_contract() -> None:
    rules = alert_rules()
    assert len(rules) >= 25
    problems = []
    for rule in rules:
        name, labels, notes = rule["alert"], rule.get("labels", {}), rule.get("annotations", {})
        if not ALERT_NAME.match(name):
            problems.append(f"{name}: not CamelCase with the Agentwatch prefix")
        if "for" not in rule or parse_duration(str(rule["for"])) <= 0:
            problems.append(f"{name}: needs a positive for:")
        if labels.get("severity") not in SEVERITIES and (name, labels.get("severity")) != (
            WATCHDOG,
            "none",
        ):
            problems.append(f"{name}: severity {labels.get('severity')!r}")
        for key in ("summary", "description", "runbook_url"):
            if not str(notes.get(key, "")).strip():
                problems.append(f"{name}: no {key}")
        if "{{" not in str(notes.get("description", "")):
            problems.append(f"{name}: description is not templated")
        if not str(notes.get("runbook_url", "")).startswith(RUNBOOK_BASE):
            problems.append(f"{name}: runbook_url outside {RUNBOOK_BASE}")
    assert not problems, "\n".join(problems)


def test_every_runbook_url_points_at_a_runbook_heading() -> None:
    anchors = runbook_anchors()
    missing = {
        rule["alert"]: rule["annotations"]["runbook_url"]
        for rule in alert_rules()
        if rule["annotations"]["runbook_url"].removeprefix(RUNBOOK_BASE) not in anchors
    }
    assert not missing, f"no heading in docs/runbook.md for: {missing}"


def test_actions_are_in_the_contract() -> None:
    actions = documented_actions()
    assert actions == {
        "pause",
        "shrink",
        "stop",
        "defer_tier",
        "breaker",
        "nudge",
        "fail_task",
        "burn",
        "grow",
    }
    for rule in alert_rules():
        labels = rule["labels"]
        action = labels.get("agentwatch_action")
        if action is None:
            assert "agentwatch_tier" not in labels, rule["alert"]
            continue
        assert action in actions, f"{rule['alert']}: unknown action {action!r}"
        if action == "defer_tier":
            assert labels.get("agentwatch_tier") in TIERS, rule["alert"]
        else:
            assert "agentwatch_tier" not in labels, rule["alert"]


def promtool_cases() -> Iterator[dict[str, Any]]:
    """Every alert_rule_test entry of every promtool test file."""
    for path in TEST_FILES:
        for case in yaml.safe_load(path.read_text())["tests"]:
            yield from case.get("alert_rule_test", [])


@pytest.mark.slow
def test_actionable_alerts_carry_the_labels_their_action_needs() -> None:
    """nudge needs tmux_session and pane, fail_task needs task: a promtool test shows them."""
    needs = {"nudge": {"tmux_session", "pane"}, "fail_task": {"task"}}
    for rule in alert_rules():
        wanted = needs.get(rule["labels"].get("agentwatch_action", ""))
        if not wanted:
            continue
        shown = [
            set(alert["exp_labels"])
            for check in promtool_cases()
            if check["alertname"] == rule["alert"]
            for alert in check.get("exp_alerts") or []
        ]
        assert shown and all(wanted <= labels for labels in shown), rule["alert"]


def test_every_alert_fires_and_stays_silent_in_some_promtool_test() -> None:
    fires: set[str] = set()
    silent: set[str] = set()
    for check in promtool_cases():
        (fires if check.get("exp_alerts") else silent).add(check["alertname"])
    names = {rule["alert"] for rule in alert_rules()}
    assert names - fires == set(), "never shown firing"
    assert names - silent == set(), "never shown silent in a near miss"
    assert (fires | silent) - names == set(), "tests name alerts that do not exist"


def test_recording_rules_are_named_level_metric_operations() -> None:
    records = recording_rules()
    assert records
    for rule in records:
        assert RECORD_NAME.match(rule["record"]), rule["record"]
        assert rule["record"].split(":")[1].startswith("agentwatch_"), rule["record"]


def test_recording_rules_read_only_raw_series() -> None:
    """One level deep, so `promtool tsdb create-blocks-from rules` backfills them in one pass;
    only derived.rules.yml reads recorded series, and only those of the first level."""
    first_level = {r["record"] for r in recording_rules() if r["_file"] in RAW_FILES}
    derived = {r["record"] for r in recording_rules() if r["_file"] == DERIVED_FILE}
    assert derived, "derived.rules.yml has no rule"
    for rule in recording_rules():
        read = set(re.findall(r"\w+:\w+:\w+", rule["expr"]))
        if rule["_file"] == DERIVED_FILE:
            assert read and read <= first_level, rule["record"]
        else:
            assert rule["_file"] in RAW_FILES and not read, rule["record"]
    for rule in alert_rules():
        assert not derived & set(re.findall(r"\w+:\w+:\w+", rule["expr"])), rule["alert"]


def central_records() -> list[dict[str, Any]]:
    return [rule for rule in load_rules(CENTRAL_FILES) if "record" in rule]


def test_central_rules_stay_off_the_hosts() -> None:
    """The central rules sum over hosts: a host's own Prometheus (install, up) never loads
    them, and they read raw series only (the store's ruler may evaluate groups in any order)."""
    from agentwatch.cli import stack

    assert not any("central" in str(path) for path in stack.rule_files(RULES_DIR))
    records = central_records()
    assert records
    for rule in records:
        assert RECORD_NAME.match(rule["record"]), rule["record"]
        assert rule["record"].startswith("account"), rule["record"]
        assert not re.findall(r"\w+:\w+:\w+", rule["expr"]), rule["record"]
    for rule in load_rules(CENTRAL_FILES):
        if "alert" in rule:
            assert rule["alert"].startswith(("AgentwatchAccount", "AgentwatchHost")), rule


def test_rules_use_only_documented_metrics() -> None:
    documented = documented_metrics()
    recorded = {rule["record"] for rule in recording_rules() + central_records()}
    used: set[str] = set()
    for rule in load_rules(RULE_FILES + CENTRAL_FILES):
        used |= set(re.findall(r"(?<![:\w])(agentwatch_[a-z0-9_]+)", rule["expr"]))
        for note in rule.get("annotations", {}).values():
            used |= set(re.findall(r"\b(agentwatch_[a-z0-9_]+)\{", note))
    used = {HISTOGRAM_SUFFIX.sub("", name) for name in used}
    unknown = {name for name in used if name not in documented and name not in recorded}
    assert not unknown, f"metrics in rules/ that no document defines: {sorted(unknown)}"


def test_rules_use_only_configured_thresholds() -> None:
    used: set[str] = set()
    for rule in load_rules(RULE_FILES + CENTRAL_FILES):
        used |= set(re.findall(r'agentwatch_alert_threshold\{name="([a-z0-9_]+)"\}', rule["expr"]))
    assert used, "no rule reads a configured threshold"
    assert used <= set(ALERT_THRESHOLDS), sorted(used - set(ALERT_THRESHOLDS))


def test_every_alert_is_documented() -> None:
    doc = ALERTS_DOC.read_text()
    missing = sorted({rule["alert"] for rule in alert_rules()} - set(re.findall(r"`(\w+)`", doc)))
    assert not missing, f"not in docs/alerts.md: {missing}"
    runbook = RUNBOOK.read_text()
    missing = sorted(rule["alert"] for rule in alert_rules() if rule["alert"] not in runbook)
    assert not missing, f"not in docs/runbook.md: {missing}"


def test_alertmanager_configs_are_not_rule_files() -> None:
    """Prometheus loads rules/*.rules.yml; the Alertmanager files must stay outside that glob."""
    names = {path.name for path in RULE_FILES}
    assert "alertmanager.yml" not in names and "alertmanager-local.yml" not in names


def test_the_stack_scrapes_prometheus_and_alertmanager_for_their_alerts(
    promtool: str, tmp_path: Path
) -> None:
    """AgentwatchRuleEvaluationFailing and AgentwatchAlertmanagerNotificationsFailing read the
    two servers' own metrics: the stack's Prometheus must scrape both, out of the box."""
    from agentwatch.cli import stack
    from agentwatch.sentinels import registry

    cfg = registry.config_from_mapping({})
    document = stack.prometheus_config(cfg, "127.0.0.1:9847", RULE_FILES)
    jobs = {
        job["job_name"]: job["static_configs"][0]["targets"] for job in document["scrape_configs"]
    }
    assert jobs == {
        "agentwatch": ["127.0.0.1:9847"],
        "prometheus": [cfg["stack"]["prometheus_listen"]],
        "alertmanager": [cfg["stack"]["alertmanager_listen"]],
    }
    used = {
        job
        for rule in alert_rules()
        for job, metric in (
            ("prometheus", "prometheus_"),
            ("alertmanager", "alertmanager_"),
        )
        if re.search(rf"\b{metric}\w+", rule["expr"])
    }
    assert used == {"prometheus", "alertmanager"}
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(document))
    checked = subprocess.run(
        [promtool, "check", "config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
