"""Local "is publishing blocked?" probes: a check command, and a required file.

A probe answers blocked, clear, or "could not decide" (an error, which is NOT blocked: a broken
probe must page as broken, not as a release problem). Reasons are for the log only and never
carry file contents or command output.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentwatch.sentinels.release_readiness import process
from agentwatch.sentinels.release_readiness.gitrepo import GitError, Repository

COMMAND = "command"
REQUIRED_FILE = "required_file"
CI = "ci"
PROBES = (COMMAND, REQUIRED_FILE, CI)
MAX_REQUIRED_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class Verdict:
    blocked: bool
    error: bool = False
    reason: str = ""

    @classmethod
    def clear(cls, reason: str = "clear") -> Verdict:
        return cls(blocked=False, reason=reason)

    @classmethod
    def block(cls, reason: str) -> Verdict:
        return cls(blocked=True, reason=reason)

    @classmethod
    def undecided(cls, reason: str) -> Verdict:
        return cls(blocked=False, error=True, reason=reason)


def run_command(
    argv: Sequence[str], timeout: float, cwd: Path, context: Mapping[str, str]
) -> Verdict:
    """Blocked when the command exits non-zero; undecided when it cannot start or times out.
    It runs in the repository folder with AGENTWATCH_RELEASE_* variables describing the check;
    its output is discarded (it may print anything, secrets included)."""
    env = dict(os.environ, **context)
    try:
        done = process.run(argv, cwd=cwd, timeout=timeout, env=env, capture=False)
    except process.TimedOut as err:
        return Verdict.undecided(str(err))
    except OSError as err:
        return Verdict.undecided(f"cannot run {argv[0]}: {err.strerror or err}")
    if done.returncode != 0:
        return Verdict.block(f"{argv[0]} exited {done.returncode}")
    return Verdict.clear(f"{argv[0]} exited 0")


def check_required_file(
    repo: Repository, commit: str, path: str, template_markers: Sequence[str]
) -> Verdict:
    """Blocked when `path` is missing from the release branch head, empty, or still contains
    one of the template markers (i.e. nobody filled it in yet). The file is read from the
    commit that would be released, not from the working tree."""
    try:
        content = repo.blob(commit, path, MAX_REQUIRED_FILE_BYTES)
    except GitError as err:
        return Verdict.undecided(str(err))
    if content is None:
        return Verdict.block(f"{path} is missing on the release branch")
    text = content.decode("utf-8", "replace")
    if not text.strip():
        return Verdict.block(f"{path} is empty")
    for index, marker in enumerate(template_markers):
        if marker in text:
            return Verdict.block(f"{path} is still the template (marker #{index + 1} {marker!r})")
    return Verdict.clear(f"{path} is filled in")
