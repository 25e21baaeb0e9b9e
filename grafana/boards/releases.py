"""The Releases dashboard: unreleased commits, the last release, publish probes and the
readiness checks' health."""

from __future__ import annotations

from functools import partial

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row

from agentwatch.grafana.panels import (
    NO_YES_BAD,
    OK_FAILING,
    dashboard,
    label_variable,
    mapping,
    stat,
    table,
    timeseries,
)
from agentwatch.grafana.queries import REPO, age, gauges_by, level, target, when


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
