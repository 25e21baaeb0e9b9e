"""What release-readiness's log lines may quote (issue 12, case 7): git's own error lines name
the remote's URL, and a repository's path is anyone's text. A real git repository whose remote
carries a token twice (user:password@ and ?token=) is fetched for real from a closed port: the
one log line about it shows neither; a broken repository at a path full of control characters
is one escaped line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from agentwatch.core.sanitize import label_value
from tests.hostile.sentinel_support import HOSTILE_TEXT, once, warnings

REMOTE = "https://user:tok3n@127.0.0.1:1/repo.git?token=SECRET&x=1"


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    done = subprocess.run(
        ["git", "-C", repo, *args], env=env, capture_output=True, text=True, timeout=30, check=True
    )
    return done.stdout


def test_a_token_in_the_remote_url_is_never_logged(workdirs: dict[str, Path]) -> None:
    repo = workdirs["state"].parent / "widget"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    git(repo, "remote", "add", "origin", REMOTE)
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")  # fetched once, long ago
    config = {"sentinels": {"release-readiness": {"repositories": [
        {"path": str(repo), "remote": "origin"}]}}}  # fmt: skip
    result, values = once("release-readiness", workdirs, config)
    assert values[("agentwatch_release_fetch_success", (("repo", "widget"),))] == 0
    assert values[("agentwatch_release_check_success", (("repo", "widget"),))] == 1  # stale, read
    assert values[("agentwatch_release_unreleased_commits", (("repo", "widget"),))] == 1
    lines = warnings(result.stderr)
    assert len(lines) == 1, result.stderr
    assert "widget: fetch failing: git fetch exited 128:" in lines[0]
    assert "https://127.0.0.1:1/repo.git?***" in lines[0]  # where, but not with what
    for secret in ("tok3n", "SECRET", "x=1", "user:"):
        assert secret not in result.stderr


def test_a_broken_repository_at_a_hostile_path_is_one_escaped_line(
    workdirs: dict[str, Path],
) -> None:
    folder = workdirs["state"].parent / HOSTILE_TEXT
    folder.mkdir()  # a folder, not a repository
    config = {"sentinels": {"release-readiness": {"repositories": [{"path": str(folder)}]}}}
    result, values = once("release-readiness", workdirs, config)
    name = label_value(HOSTILE_TEXT)
    assert values[("agentwatch_release_check_success", (("repo", name),))] == 0
    lines = warnings(result.stderr)
    assert len(lines) == 1, result.stderr
    assert f"{name}: repository failing: git rev-parse exited" in lines[0]
    assert "\\x0d" in lines[0] and "\\x1b" in lines[0]  # escaped, visible
    # the whole log is lines of printable text: no raw control character cuts or colours it
    raw = [c for c in result.stderr if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) < 0xA0]
    assert raw == []
