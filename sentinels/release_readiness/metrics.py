"""The release-readiness metric families, built fresh from the latest reports at each write.

Every family is always written (HELP and TYPE, even without samples), and the only label
values are configured repository names and the fixed probe and CI status names, so series
are bounded and vanish with the configuration. While a repository's latest check failed its
facts (unreleased, tag, blocked, probes) are left OUT, not zeroed: a broken repository must not
read as "nothing to release"; `check_success` 0 and the last success time say what happened.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from agentwatch.sentinels.release_readiness.check import Report
from agentwatch.sentinels.release_readiness.github import STATUSES
from agentwatch.sentinels.release_readiness.state import REJECT_REASONS

PREFIX = "agentwatch_release_"


def _family(name: str, doc: str, *labels: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, labels=["repo", *labels])


def families(
    reports: Iterable[Report],
    configured: int,
    last_success: Mapping[str, float],
    state_rejected: Mapping[str, int] | None = None,
) -> Iterator[Metric]:
    unreleased = _family(
        "unreleased_commits",
        "Non-merge commits on the release branch that no release tag contains.",
    )
    oldest = _family(
        "oldest_unreleased_commit_timestamp_seconds",
        "Commit time of the oldest unreleased commit (absent when none).",
    )
    newest = _family(
        "newest_unreleased_commit_timestamp_seconds",
        "Commit time of the newest unreleased commit (absent when none).",
    )
    last_tag = _family(
        "last_tag_timestamp_seconds",
        "Time of the newest release tag on the branch: tagger date (annotated) or commit time.",
    )
    blocked = _family("publish_blocked", "1 when any probe says publishing is blocked.")
    probe_blocked = _family(
        "probe_blocked", "1 when this probe says publishing is blocked.", "probe"
    )
    probe_error = _family(
        "probe_error", "1 when this probe could not decide (counts as not blocked).", "probe"
    )
    ci_status = _family(
        "ci_status", "CI status of the branch head on GitHub as a state set.", "status"
    )
    fetched = _family("fetch_success", "1 when the latest fetch of the remote succeeded.")
    succeeded = _family("check_success", "1 when the latest check could read the repository.")
    last = _family("last_success_timestamp_seconds", "When the last successful check finished.")
    duration = _family("check_duration_seconds", "Wall time of the latest check.")

    for report in reports:
        repo = [report.name]
        succeeded.add_metric(repo, int(report.succeeded))
        duration.add_metric(repo, report.duration)
        if report.fetched is not None:
            fetched.add_metric(repo, int(report.fetched))
        if report.name in last_success:
            last.add_metric(repo, last_success[report.name])
        if not report.succeeded or report.unreleased is None:
            continue
        unreleased.add_metric(repo, report.unreleased)
        if report.oldest is not None and report.newest is not None:
            oldest.add_metric(repo, report.oldest)
            newest.add_metric(repo, report.newest)
        if report.last_tag is not None:
            last_tag.add_metric(repo, report.last_tag.timestamp)
        blocked.add_metric(repo, int(report.blocked))
        for probe, verdict in report.verdicts.items():
            probe_blocked.add_metric([report.name, probe], int(verdict.blocked))
            probe_error.add_metric([report.name, probe], int(verdict.error))
        if report.ci_status is not None:
            for status in STATUSES:
                ci_status.add_metric([report.name, status], int(status == report.ci_status))

    yield from (unreleased, oldest, newest, last_tag, blocked, probe_blocked, probe_error)
    yield from (ci_status, fetched, succeeded, last, duration)
    yield GaugeMetricFamily(
        PREFIX + "repositories", "Repositories configured for the release check.", value=configured
    )
    rejected = CounterMetricFamily(
        PREFIX + "state_rejected",
        "Times the state file was set aside and the sentinel started without it, by reason.",
        labels=["reason"],
    )
    for reason in REJECT_REASONS:
        rejected.add_metric([reason], (state_rejected or {}).get(reason, 0))
    yield rejected
