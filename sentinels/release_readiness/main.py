"""`agentwatch sentinel release-readiness`: check each configured repository on a slow timer.

The sentinel reports facts only — how much is unreleased, since when, and whether publishing
is blocked; how old is too old (2/4/7 days) is for the Prometheus rules. With no repositories
configured it writes its self-metrics and is healthy.
"""

from __future__ import annotations

import logging
from pathlib import Path

from agentwatch.exporter.config import Config
from agentwatch.exporter.runtime import Runner
from agentwatch.sentinels.release_readiness.check import Report, RepositoryCheck, RepoSpec
from agentwatch.sentinels.release_readiness.metrics import families
from agentwatch.sentinels.release_readiness.state import LastSuccess

NAME = "release-readiness"
log = logging.getLogger("agentwatch.release_readiness")


def build_checks(settings: dict) -> list[RepositoryCheck]:
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


def run(config: Config, spool_dir: Path, state_dir: Path, once: bool) -> int:
    settings = config.sentinel(NAME)
    checks = build_checks(settings)
    last_success = LastSuccess(state_dir)
    last_success.keep_only(check.spec.name for check in checks)
    log.info("checking %d repositories every %gs", len(checks), settings["interval"])
    reports: list[Report] = []
    runner = Runner(
        NAME,
        settings["interval"],
        spool_dir,
        lambda: families(reports, len(checks), last_success.times),
    )
    runner.stop_on_signals()
    while True:
        reports = cycle(checks, last_success)
        runner.publish()
        if once or runner.stopping:
            return 0
        runner.wait(runner.interval)
