"""One repository's check: fetch (optional), unreleased work since the last release, probes.

A broken repository, a failed fetch or a probe that cannot decide is recorded in the report
and logged once through a FailureGate per input; it never raises out of `run`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentwatch.core.log import FailureGate
from agentwatch.core.sanitize import label_value, mask_urls
from agentwatch.sentinels.release_readiness import probes
from agentwatch.sentinels.release_readiness.github import CiSettings, GitHubCi
from agentwatch.sentinels.release_readiness.gitrepo import GitError, Repository, Tag
from agentwatch.sentinels.release_readiness.probes import Verdict

log = logging.getLogger("agentwatch.release_readiness")


def loggable(text: str, limit: int = 500) -> str:
    """A probe's reason as one log line: it names configured commands and paths (anyone's
    text), so controls are escaped, URLs masked and the length capped."""
    return mask_urls(label_value(text, limit=limit))


@dataclass(frozen=True)
class RepoSpec:
    """A repository as configured (sentinels.release-readiness.repositories[i])."""

    name: str
    path: Path
    branch: str = "main"
    remote: str | None = None
    tag_pattern: str = "v*"
    command: tuple[str, ...] | None = None
    command_timeout: float = 60.0
    required_file: str | None = None
    template_markers: tuple[str, ...] = ()
    ci: CiSettings | None = None

    @classmethod
    def from_config(cls, entry: Mapping[str, Any]) -> RepoSpec:
        found = entry["probes"]
        return cls(
            name=label_value(entry["name"]),  # the `repo` label, and the prefix of log lines
            path=Path(entry["path"]),
            branch=entry["branch"],
            remote=entry["remote"],
            tag_pattern=entry["tag_pattern"],
            command=tuple(found["command"]) if found["command"] else None,
            command_timeout=found["command_timeout"],
            required_file=found["required_file"],
            template_markers=tuple(found["template_markers"]),
            ci=CiSettings(**found["ci"]) if found["ci"] else None,
        )

    @property
    def ref(self) -> str:
        """The ref that is released: the remote-tracking branch when a remote is configured."""
        if self.remote:
            return f"refs/remotes/{self.remote}/{self.branch}"
        return f"refs/heads/{self.branch}"

    @property
    def probe_names(self) -> tuple[str, ...]:
        configured = {
            probes.COMMAND: self.command,
            probes.REQUIRED_FILE: self.required_file,
            probes.CI: self.ci,
        }
        return tuple(name for name in probes.PROBES if configured[name])


@dataclass
class Report:
    """What one check of one repository found. Facts are None when the check failed."""

    name: str
    finished_at: float
    duration: float = 0.0
    error: str | None = None
    fetched: bool | None = None  # None: no remote configured
    head: str | None = None
    unreleased: int | None = None
    oldest: float | None = None
    newest: float | None = None
    last_tag: Tag | None = None
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    ci_status: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.error is None

    @property
    def blocked(self) -> bool:
        return any(verdict.blocked for verdict in self.verdicts.values())


class RepositoryCheck:
    """Checks one configured repository; lives as long as the sentinel (gates, CI backoff)."""

    def __init__(
        self,
        spec: RepoSpec,
        git_timeout: float,
        fetch_timeout: float,
        ci: GitHubCi | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.spec = spec
        self.fetch_timeout = fetch_timeout
        self.repo = Repository(spec.path, git_timeout)
        self.ci = ci or (GitHubCi(spec.ci, clock=clock) if spec.ci else None)
        self.clock = clock
        self._gates: dict[str, FailureGate] = {}
        self._last_blocked: dict[str, bool] = {}

    def run(self) -> Report:
        started = time.perf_counter()
        report = Report(self.spec.name, finished_at=self.clock())
        if self.spec.remote:
            report.fetched = self._fetch()
        try:
            self._read_history(report)
        except GitError as err:
            report.error = str(err)
            self._gate("repository").failed(err)
        else:
            self._gate("repository").succeeded()
            self._probe(report)
        report.duration = time.perf_counter() - started
        report.finished_at = self.clock()
        return report

    def _fetch(self) -> bool:
        try:
            self.repo.fetch(self.spec.remote or "", self.spec.branch, self.fetch_timeout)
        except GitError as err:
            self._gate("fetch").failed(err)
            return False
        self._gate("fetch").succeeded()
        return True

    def _read_history(self, report: Report) -> None:
        """Unreleased = non-merge commits of the branch head that no matching tag contains,
        whether or not that tag is on the branch (work released from a release branch is
        released). The last release tag = the newest matching tag in the branch's history."""
        head = self.repo.resolve(self.spec.ref)
        tags = self.repo.tags(self.spec.tag_pattern)
        unreleased = self.repo.unreleased(head, (tag.commit for tag in tags))
        on_branch = self.repo.ancestors_among(head, tags) if tags else []
        report.head = head
        report.unreleased, report.oldest, report.newest = (
            unreleased.count,
            unreleased.oldest,
            unreleased.newest,
        )
        report.last_tag = max(on_branch, key=lambda tag: (tag.timestamp, tag.name), default=None)

    def _probe(self, report: Report) -> None:
        head = report.head or ""
        spec = self.spec
        if spec.command:
            context = {
                "AGENTWATCH_RELEASE_REPO": spec.name,
                "AGENTWATCH_RELEASE_BRANCH": spec.branch,
                "AGENTWATCH_RELEASE_HEAD": head,
            }
            report.verdicts[probes.COMMAND] = probes.run_command(
                spec.command, spec.command_timeout, spec.path, context
            )
        if spec.required_file:
            report.verdicts[probes.REQUIRED_FILE] = probes.check_required_file(
                self.repo, head, spec.required_file, spec.template_markers
            )
        if self.ci is not None:
            result = self.ci.check(head)
            report.verdicts[probes.CI] = result.verdict
            report.ci_status = result.status
        for name, verdict in report.verdicts.items():
            self._note(name, verdict)

    def _note(self, probe: str, verdict: Verdict) -> None:
        """Log a probe's error through its gate, and a change of its blocked state once."""
        gate = self._gate(f"{probe} probe")
        reason = loggable(verdict.reason)
        if verdict.error:
            gate.failed(reason)
            return
        gate.succeeded()
        if self._last_blocked.get(probe) != verdict.blocked:
            if verdict.blocked:
                log.info("%s: publishing blocked by %s: %s", self.spec.name, probe, reason)
            elif probe in self._last_blocked:
                log.info("%s: %s no longer blocks: %s", self.spec.name, probe, reason)
            self._last_blocked[probe] = verdict.blocked

    def _gate(self, what: str) -> FailureGate:
        gate = self._gates.get(what)
        if gate is None:
            gate = self._gates[what] = FailureGate(log, f"{self.spec.name}: {what}")
        return gate
