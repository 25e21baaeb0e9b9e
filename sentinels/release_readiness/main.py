"""One cycle of `agentwatch sentinel release-readiness`: check each configured repository.

The sentinel reports facts only — how much is unreleased, since when, and whether publishing
is blocked; how old is too old (2/4/7 days) is for the Prometheus rules. With no repositories
configured it writes its self-metrics and is healthy. It usually runs from a systemd timer
(`--once` every hour), as a git fetch is slow and needs no faster pace.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client.metrics_core import Metric

from agentwatch.sentinels.contract import Context
from agentwatch.sentinels.release_readiness.check import Report, RepositoryCheck, RepoSpec
from agentwatch.sentinels.release_readiness.metrics import families
from agentwatch.sentinels.release_readiness.state import LastSuccess

log = logging.getLogger("agentwatch.release_readiness")


def build_checks(settings: Mapping[str, Any]) -> list[RepositoryCheck]:
    return [
        RepositoryCheck(
            RepoSpec.from_config(entry), settings["git_timeout"], settings["fetch_timeout"]
        )
        for entry in settings["repositories"]
    ]


def cycle(checks: list[RepositoryCheck], last_success: LastSuccess) -> list[Report]:
    """Check every repository in turn; one broken repository never stops the others."""
    reports = []
    for check in checks:
        report = check.run()
        if report.succeeded:
            last_success.record(report.name, report.finished_at)
        reports.append(report)
    last_success.save()
    return reports


class ReleaseReadiness:
    """The release-readiness sentinel's work: every repository checked once per cycle."""

    def __init__(self, context: Context):
        settings = context.settings
        self.checks = build_checks(settings)
        self.last_success = LastSuccess(context.state_dir)
        self.last_success.keep_only(check.spec.name for check in self.checks)
        self.reports: list[Report] = []
        log.info("checking %d repositories every %gs", len(self.checks), settings["interval"])

    def cycle(self, due: bool = True) -> None:
        self.reports = cycle(self.checks, self.last_success)

    def families(self) -> Iterator[Metric]:
        state = self.last_success
        return families(self.reports, len(self.checks), state.times, state.rejected)

    def close(self) -> None:
        pass
