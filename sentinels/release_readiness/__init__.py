"""Release readiness: unreleased work and whether publishing is blocked, per repository."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentwatch.core.config import Key, duration
from agentwatch.sentinels.contract import Context, Sentinel
from agentwatch.sentinels.release_readiness import settings

if TYPE_CHECKING:
    from agentwatch.core.loop import Work


def _build(context: Context) -> Work:
    from agentwatch.sentinels.release_readiness.main import ReleaseReadiness

    return ReleaseReadiness(context)


SENTINEL = Sentinel(
    name="release-readiness",
    summary="unreleased commits per repository and whether publishing is blocked",
    interval=3600.0,
    keys={
        "repositories": Key(
            [],
            settings.repositories,
            "repositories to watch: path, name, branch, remote, tag_pattern, probes "
            "(command, command_timeout, required_file, template_markers, ci)",
            settings.missing_repositories,
        ),
        "git_timeout": Key(30.0, duration, "seconds one local git command may take"),
        "fetch_timeout": Key(120.0, duration, "seconds a `git fetch` of the remote may take"),
    },
    metrics=(
        "agentwatch_release_unreleased_commits",
        "agentwatch_release_oldest_unreleased_commit_timestamp_seconds",
        "agentwatch_release_newest_unreleased_commit_timestamp_seconds",
        "agentwatch_release_last_tag_timestamp_seconds",
        "agentwatch_release_publish_blocked",
        "agentwatch_release_probe_blocked",
        "agentwatch_release_probe_error",
        "agentwatch_release_ci_status",
        "agentwatch_release_fetch_success",
        "agentwatch_release_check_success",
        "agentwatch_release_last_success_timestamp_seconds",
        "agentwatch_release_check_duration_seconds",
        "agentwatch_release_repositories",
        "agentwatch_release_state_rejected_total",
    ),
    build=_build,
    schedule="timer",
    secret_files=settings.secret_files,
)
