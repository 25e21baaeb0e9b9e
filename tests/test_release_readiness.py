"""The release-readiness sentinel on real git repositories built here, GitHub mocked with
`responses`, and the real CLI checked with promtool."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
import yaml
from responses import matchers

from agentwatch.core import config, spool
from agentwatch.sentinels import registry
from agentwatch.sentinels.release_readiness.check import Report, RepositoryCheck, RepoSpec
from agentwatch.sentinels.release_readiness.github import CiSettings, GitHubCi
from agentwatch.sentinels.release_readiness.main import cycle
from agentwatch.sentinels.release_readiness.metrics import families
from agentwatch.sentinels.release_readiness.state import LastSuccess
from tests.conftest import run_cli, samples

DAY = 86400
NOW = int(time.time())
PROMTOOL = shutil.which("promtool")
API = "https://api.github.com/repos/acme/widget/commits"
SHA = "a" * 40
LOGGER = "agentwatch.release_readiness"

# A git of our own for building the fixtures: no user/system config (gpg signing, hooks...).
GIT_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def git(repo: Path, *args: str, when: float | None = None) -> str:
    env = dict(GIT_ENV)
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{int(when)} +0000"
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def new_repo(path: Path, branch: str = "main") -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", branch)
    return path


def commit(repo: Path, days_ago: float, files: dict[str, str] | None = None) -> str:
    when = NOW - days_ago * DAY
    for name, text in (files or {}).items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "--allow-empty", "-m", f"work {days_ago}", when=when)
    return git(repo, "rev-parse", "HEAD")


def check(path: Path, fetch_timeout: float = 30, **spec: Any) -> Report:
    fields = {"name": path.name, "path": path, **spec}
    return RepositoryCheck(RepoSpec(**fields), git_timeout=10, fetch_timeout=fetch_timeout).run()


def exported(reports: list[Report], last: dict[str, float] | None = None) -> dict:
    text = spool.render(families(reports, len(reports), last or {}))
    return samples(text)


def series(values: dict, name: str, **labels: str) -> float | None:
    return values.get((f"agentwatch_release_{name}", tuple(sorted(labels.items()))))


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """v1.0 twenty days ago; then a feature branch merged with --no-ff, and more work."""
    repo = new_repo(tmp_path / "widget")
    commit(repo, 30)
    commit(repo, 20)
    git(repo, "tag", "v1.0")
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, 6)
    git(repo, "checkout", "-q", "main")
    commit(repo, 5)
    git(repo, "merge", "-q", "--no-ff", "-m", "merge", "feature", when=NOW - 4 * DAY)
    commit(repo, 2)
    return repo


# --- unreleased work and tags ---------------------------------------------------------------


def test_counts_and_ages_since_the_last_tag(history: Path) -> None:
    report = check(history)
    assert report.succeeded, report.error
    assert (report.unreleased, report.oldest, report.newest) == (3, NOW - 6 * DAY, NOW - 2 * DAY)
    assert report.last_tag is not None and report.last_tag.timestamp == NOW - 20 * DAY
    values = exported([report])
    assert series(values, "unreleased_commits", repo="widget") == 3  # the merge is not counted
    assert series(values, "oldest_unreleased_commit_timestamp_seconds", repo="widget") == (
        NOW - 6 * DAY
    )
    assert series(values, "newest_unreleased_commit_timestamp_seconds", repo="widget") == (
        NOW - 2 * DAY
    )
    assert series(values, "last_tag_timestamp_seconds", repo="widget") == NOW - 20 * DAY
    assert series(values, "publish_blocked", repo="widget") == 0  # no probes configured
    assert series(values, "check_success", repo="widget") == 1
    assert series(values, "fetch_success", repo="widget") is None  # no remote configured


def test_a_new_tag_clears_the_backlog(history: Path) -> None:
    assert check(history).unreleased == 3
    git(history, "tag", "-a", "v1.1", "-m", "release", when=NOW - DAY)
    report = check(history)
    assert (report.unreleased, report.oldest, report.newest) == (0, None, None)
    # an annotated tag's time is its tagger date, not its commit's time (two days ago)
    assert report.last_tag is not None and report.last_tag.name == "v1.1"
    assert report.last_tag.timestamp == NOW - DAY
    values = exported([report])
    assert series(values, "unreleased_commits", repo="widget") == 0
    assert series(values, "oldest_unreleased_commit_timestamp_seconds", repo="widget") is None
    assert series(values, "newest_unreleased_commit_timestamp_seconds", repo="widget") is None


def test_a_repository_without_tags_counts_from_the_root(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "fresh")
    for days_ago in (9, 8, 7):
        commit(repo, days_ago)
    git(repo, "tag", "nightly-1")  # does not match the default pattern v*
    report = check(repo)
    assert (report.unreleased, report.oldest, report.newest) == (3, NOW - 9 * DAY, NOW - 7 * DAY)
    assert report.last_tag is None
    assert series(exported([report]), "last_tag_timestamp_seconds", repo="fresh") is None
    assert check(repo, tag_pattern="nightly-*").unreleased == 0


def test_work_released_from_a_release_branch_counts_as_released(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "branches")
    commit(repo, 10)
    git(repo, "tag", "v1.0")
    commit(repo, 8)  # shipped in v1.1 from the release branch below
    git(repo, "checkout", "-q", "-b", "release-1")
    commit(repo, 7)
    git(repo, "tag", "v1.1")  # not in main's history
    git(repo, "checkout", "-q", "main")
    commit(repo, 3)
    report = check(repo)
    assert (report.unreleased, report.oldest) == (1, NOW - 3 * DAY)
    assert report.last_tag is not None and report.last_tag.name == "v1.0"  # newest on main


# --- remote, broken repositories ------------------------------------------------------------


def test_fetch_reads_the_remote_branch_and_leaves_the_working_tree_alone(tmp_path: Path) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    author = new_repo(tmp_path / "author")
    commit(author, 10, {"README": "one"})
    git(author, "tag", "v1.0")
    git(author, "push", "-q", str(origin), "main", "--tags")
    watched = tmp_path / "watched"
    git(tmp_path, "clone", "-q", str(origin), str(watched))
    (watched / "README").write_text("local edit, not committed")
    head_before = git(watched, "rev-parse", "HEAD")

    commit(author, 4)
    commit(author, 3)
    git(author, "push", "-q", str(origin), "main")
    report = check(watched, remote="origin")
    assert report.fetched is True and report.unreleased == 2
    assert report.oldest == NOW - 4 * DAY

    git(author, "tag", "v1.1")
    git(author, "push", "-q", str(origin), "--tags")
    report = check(watched, remote="origin")
    assert report.unreleased == 0 and report.last_tag is not None
    assert report.last_tag.name == "v1.1"
    # the working tree, the local branch and the depth are untouched
    assert git(watched, "rev-parse", "HEAD") == head_before
    assert (watched / "README").read_text() == "local edit, not committed"
    assert git(watched, "status", "--porcelain") == "M README"
    assert git(watched, "rev-parse", "--is-shallow-repository") == "false"
    assert series(exported([report]), "fetch_success", repo="watched") == 1

    git(watched, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    report = check(watched, remote="origin")
    assert report.fetched is False  # reported, and the check goes on with the refs it has
    assert report.succeeded and report.unreleased == 0
    assert series(exported([report]), "fetch_success", repo="watched") == 0


def test_a_hanging_fetch_is_killed_at_its_timeout(
    history: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # an ssh that never answers (and a child of it): the whole group goes at the deadline
    git(history, "config", "core.sshCommand", "sh -c 'sleep 30 & sleep 30' --")
    git(history, "remote", "add", "origin", "ssh://example.invalid/widget.git")
    git(history, "update-ref", "refs/remotes/origin/main", "HEAD")
    started = time.monotonic()
    report = check(history, remote="origin", fetch_timeout=0.5)
    assert time.monotonic() - started < 5
    assert report.fetched is False and report.succeeded and report.unreleased == 3
    assert "git fetch: git ran longer than 0.5 s" in caplog.text


def test_broken_repositories_are_reported_not_fatal(
    tmp_path: Path, history: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outer = new_repo(tmp_path / "outer")
    commit(outer, 1)
    (outer / "inner").mkdir()  # a plain folder inside a repository is not that repository
    corrupt = new_repo(tmp_path / "corrupt")
    commit(corrupt, 5)
    lost = commit(corrupt, 4)
    commit(corrupt, 3)
    (corrupt / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    checks = [
        RepositoryCheck(RepoSpec(name, path, **extra), git_timeout=10, fetch_timeout=10)
        for name, path, extra in [
            ("missing", tmp_path / "nowhere", {}),
            ("inner", outer / "inner", {}),
            ("corrupt", corrupt, {}),
            ("nobranch", history, {"branch": "release"}),
            ("widget", history, {}),
        ]
    ]
    last = LastSuccess(tmp_path / "state")
    caplog.set_level(logging.INFO, LOGGER)
    reports = cycle(checks, last)
    assert [r.succeeded for r in reports] == [False, False, False, False, True]
    assert "not a directory" in (reports[0].error or "")
    assert "not a git repository" in (reports[1].error or "")
    assert "refs/heads/release does not exist" in (reports[3].error or "")
    values = exported(reports, last.times)
    for name in ("missing", "inner", "corrupt", "nobranch"):
        assert series(values, "check_success", repo=name) == 0
        assert series(values, "unreleased_commits", repo=name) is None  # a gap, not a zero
        assert series(values, "publish_blocked", repo=name) is None
        assert series(values, "last_success_timestamp_seconds", repo=name) is None
    assert series(values, "unreleased_commits", repo="widget") == 3
    assert series(values, "last_success_timestamp_seconds", repo="widget") is not None
    # the failures are logged once each, and not again while they persist
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 4
    cycle(checks, last)
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 4


# --- local probes ---------------------------------------------------------------------------


def test_command_probe_blocked_clear_and_undecided(history: Path) -> None:
    head = git(history, "rev-parse", "HEAD")
    expects = f"import os,sys; sys.exit(os.environ['AGENTWATCH_RELEASE_HEAD'] != '{head}')"
    cases = {
        ("true",): (False, False),
        ("false",): (True, False),
        (sys.executable, "-c", expects): (False, False),
        (sys.executable, "-c", "import sys; sys.exit(3)"): (True, False),
        ("./no-such-check",): (False, True),
    }
    for argv, (blocked, error) in cases.items():
        report = check(history, command=argv)
        verdict = report.verdicts["command"]
        assert (verdict.blocked, verdict.error) == (blocked, error), argv
        values = exported([report])
        assert series(values, "publish_blocked", repo="widget") == int(blocked)
        assert series(values, "probe_blocked", repo="widget", probe="command") == int(blocked)
        assert series(values, "probe_error", repo="widget", probe="command") == int(error)


def test_command_probe_timeout_kills_the_whole_group(history: Path) -> None:
    started = time.monotonic()
    report = check(history, command=("sh", "-c", "sleep 30 & sleep 30"), command_timeout=0.3)
    assert time.monotonic() - started < 5
    verdict = report.verdicts["command"]
    assert (verdict.blocked, verdict.error) == (False, True)


def test_required_file_probe(history: Path) -> None:
    def verdict(**spec: Any) -> tuple[bool, bool]:
        spec.setdefault("template_markers", ("TODO", "<!-- template -->"))
        found = check(history, required_file="docs/NOTES.md", **spec).verdicts["required_file"]
        return found.blocked, found.error

    assert verdict() == (True, False)  # missing
    (history / "docs").mkdir()
    (history / "docs" / "NOTES.md").write_text("Fixed the frobnicator.\n")
    assert verdict() == (True, False)  # only in the working tree, not on the branch
    commit(history, 1, {"docs/NOTES.md": "<!-- template -->\n## Changes\n"})
    assert verdict() == (True, False)  # still the template
    commit(history, 1, {"docs/NOTES.md": "   \n"})
    assert verdict() == (True, False)  # empty
    commit(history, 1, {"docs/NOTES.md": "## Changes\nFixed the frobnicator (TODO: none).\n"})
    assert verdict() == (True, False)
    assert verdict(template_markers=()) == (False, False)  # markers are configurable
    commit(history, 1, {"docs/NOTES.md": "## Changes\nFixed the frobnicator.\n"})
    assert verdict() == (False, False)
    found = check(history, required_file="docs", template_markers=()).verdicts["required_file"]
    assert found.blocked  # a folder is not the required file


# --- the GitHub CI probe --------------------------------------------------------------------


@pytest.fixture
def github() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def ci(**settings: Any) -> GitHubCi:
    return GitHubCi(CiSettings(github_repo="acme/widget", **settings), clock=lambda: clock[0])


clock = [1_000_000.0]


def answer(
    mock: responses.RequestsMock, state: str = "success", runs: list | None = None, total: int = 1
) -> None:
    mock.get(f"{API}/{SHA}/status", json={"state": state, "total_count": total, "statuses": []})
    mock.get(
        f"{API}/{SHA}/check-runs", json={"total_count": len(runs or []), "check_runs": runs or []}
    )


def run(status: str, conclusion: str | None = None) -> dict:
    return {"name": "build", "status": status, "conclusion": conclusion}


@pytest.mark.parametrize(
    ("state", "total", "runs", "expected", "blocked"),
    [
        ("success", 1, [run("completed", "success"), run("completed", "skipped")], "success", 0),
        ("failure", 1, [], "failure", 1),
        ("error", 1, [run("completed", "success")], "failure", 1),
        ("success", 1, [run("completed", "failure")], "failure", 1),
        ("pending", 0, [run("completed", "timed_out")], "failure", 1),
        ("pending", 1, [run("completed", "success")], "pending", 0),
        ("success", 1, [run("in_progress")], "pending", 0),
        ("pending", 0, [], "none", 0),  # GitHub says "pending" when there are no statuses
        ("pending", 0, [run("completed", "neutral")], "success", 0),
    ],
)
def test_ci_status(
    github: responses.RequestsMock,
    monkeypatch: pytest.MonkeyPatch,
    state: str,
    total: int,
    runs: list,
    expected: str,
    blocked: int,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret123")
    answer(github, state, runs, total)
    result = ci().check(SHA)
    assert (result.status, result.verdict.blocked, result.verdict.error) == (
        expected,
        bool(blocked),
        False,
    )
    assert all(c.request.headers["Authorization"] == "Bearer ghp_secret123" for c in github.calls)


@pytest.mark.parametrize(
    ("mocked", "reason"),
    [
        ({"status": 500, "json": {"message": "boom"}}, "HTTP 500"),
        ({"status": 502, "body": "<html>bad gateway</html>"}, "HTTP 502"),
        ({"status": 401, "json": {"message": "Bad credentials"}}, "rejected"),
        ({"status": 403, "json": {"message": "Resource not accessible"}}, "refused"),
        ({"status": 404, "json": {"message": "Not Found"}}, "HTTP 404"),
        ({"status": 422, "json": {"message": "No commit found"}}, "does not know"),
        ({"body": "<html>captive portal</html>"}, "not JSON"),
        ({"json": ["a", "list"]}, "not the expected JSON"),
        ({"body": requests.exceptions.ReadTimeout("slow")}, "timed out"),
        ({"body": requests.exceptions.ConnectionError("no route")}, "unreachable"),
    ],
)
def test_ci_failures_are_errors_not_blocked(
    github: responses.RequestsMock, mocked: dict, reason: str
) -> None:
    github.get(f"{API}/{SHA}/status", **mocked)
    github.get(f"{API}/{SHA}/check-runs", json={"total_count": 0, "check_runs": []})
    result = ci().check(SHA)
    assert (result.verdict.blocked, result.verdict.error, result.status) == (False, True, None)
    assert reason in result.verdict.reason


def test_ci_rate_limit_is_an_error_and_pauses_asking(github: responses.RequestsMock) -> None:
    reset = clock[0] + 600
    limited = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(reset))}
    github.get(f"{API}/{SHA}/status", status=403, json={"message": "rate"}, headers=limited)
    probe = ci()
    result = probe.check(SHA)
    assert (result.verdict.blocked, result.verdict.error) == (False, True)
    assert "rate limited" in result.verdict.reason
    assert len(github.calls) == 1
    assert probe.check(SHA).verdict.error and len(github.calls) == 1  # not asked again yet
    clock[0] = reset + 1
    try:
        status = {"state": "success", "total_count": 1}
        github.replace(responses.GET, f"{API}/{SHA}/status", json=status)
        github.get(f"{API}/{SHA}/check-runs", json={"total_count": 0, "check_runs": []})
        assert probe.check(SHA).status == "success" and len(github.calls) == 3
    finally:
        clock[0] = 1_000_000.0


def test_ci_secondary_rate_limit_uses_retry_after(github: responses.RequestsMock) -> None:
    github.get(f"{API}/{SHA}/status", status=429, headers={"Retry-After": "30"})
    probe = ci()
    assert probe.check(SHA).verdict.error
    assert probe.quiet_until == clock[0] + 30


def test_ci_token_from_file_env_or_none(
    github: responses.RequestsMock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "from-env")
    token_file = tmp_path / "token"
    token_file.write_text("ghp_fromfile\n")
    token_file.chmod(0o600)  # a token file others can read is refused
    answer(github)
    assert not ci(token_file=token_file).check(SHA).verdict.error
    assert github.calls[0].request.headers["Authorization"] == "Bearer ghp_fromfile"
    monkeypatch.delenv("GITHUB_TOKEN")
    monkeypatch.setenv("MY_TOKEN", "ghp_custom")
    ci(token_env="MY_TOKEN").check(SHA)
    assert github.calls[-1].request.headers["Authorization"] == "Bearer ghp_custom"
    monkeypatch.delenv("MY_TOKEN")
    ci(token_env="MY_TOKEN").check(SHA)
    assert "Authorization" not in github.calls[-1].request.headers  # public repos work without
    missing = ci(token_file=tmp_path / "absent").check(SHA)
    assert missing.verdict.error and "token file" in missing.verdict.reason


def test_ci_errors_are_logged_once_without_the_token(
    github: responses.RequestsMock,
    history: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret123")
    head = git(history, "rev-parse", "HEAD")
    github.get(f"{API}/{head}/status", status=401, json={"message": "Bad credentials"})
    repo_check = RepositoryCheck(
        RepoSpec("widget", history, ci=CiSettings("acme/widget")), git_timeout=10, fetch_timeout=10
    )
    caplog.set_level(logging.DEBUG)
    for _ in range(3):
        report = repo_check.run()
    values = exported([report])
    assert series(values, "probe_error", repo="widget", probe="ci") == 1
    assert series(values, "probe_blocked", repo="widget", probe="ci") == 0
    assert series(values, "publish_blocked", repo="widget") == 0
    assert series(values, "ci_status", repo="widget", status="failure") is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "HTTP 401" in warnings[0]
    assert "ghp_secret123" not in caplog.text


def test_ci_follows_pages_on_the_same_host_only(github: responses.RequestsMock) -> None:
    github.get(f"{API}/{SHA}/status", json={"state": "success", "total_count": 1})
    page2 = f"{API}/{SHA}/check-runs?per_page=100&page=2"
    github.get(
        f"{API}/{SHA}/check-runs",
        json={"check_runs": [run("completed", "failure")]},
        match=[matchers.query_param_matcher({"per_page": "100", "page": "2"})],
    )
    github.get(
        f"{API}/{SHA}/check-runs",
        json={"check_runs": [run("completed", "success")]},
        headers={"Link": f'<{page2}>; rel="next"'},
        match=[matchers.query_param_matcher({"per_page": "100"})],
    )
    assert ci().check(SHA).status == "failure"  # the failure was on page 2

    github.reset()
    github.get(f"{API}/{SHA}/status", json={"state": "success", "total_count": 1})
    github.get(
        f"{API}/{SHA}/check-runs",
        json={"check_runs": []},
        headers={"Link": '<https://evil.example/steal>; rel="next"'},
    )
    result = ci().check(SHA)
    assert result.verdict.error and "another host" in result.verdict.reason


def test_ci_probe_in_a_whole_check(github: responses.RequestsMock, history: Path) -> None:
    head = git(history, "rev-parse", "HEAD")
    github.get(f"{API}/{head}/status", json={"state": "failure", "total_count": 2})
    github.get(f"{API}/{head}/check-runs", json={"total_count": 0, "check_runs": []})
    report = check(history, ci=CiSettings("acme/widget"), required_file="README")
    values = exported([report])
    assert series(values, "publish_blocked", repo="widget") == 1
    assert series(values, "probe_blocked", repo="widget", probe="ci") == 1
    assert series(values, "probe_blocked", repo="widget", probe="required_file") == 1
    assert series(values, "ci_status", repo="widget", status="failure") == 1
    assert series(values, "ci_status", repo="widget", status="success") == 0


# --- state, config and the real CLI ---------------------------------------------------------


def test_last_success_state_survives_and_a_corrupt_file_is_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = LastSuccess(tmp_path)
    state.record("widget", 123.5)
    state.record("old", 1.0)
    state.keep_only(["widget"])
    state.save()
    assert LastSuccess(tmp_path).times == {"widget": 123.5}
    for garbage in ("{not json", '["a"]', '{"version": 1, "last_success": 3}', "\xff"):
        (tmp_path / "release-readiness.json").write_text(garbage, errors="surrogateescape")
        caplog.clear()
        with caplog.at_level(logging.WARNING, LOGGER):
            state = LastSuccess(tmp_path)
        assert state.times == {} and "replacing it" in caplog.text
        state.save()
        assert json.loads((tmp_path / "release-readiness.json").read_text())["version"] == 1


def test_config_names_the_bad_key(tmp_path: Path) -> None:
    def problems(repositories: Any) -> str:
        raw = {"sentinels": {"release-readiness": {"repositories": repositories}}}
        with pytest.raises(config.ConfigError) as caught:
            registry.config_from_mapping(raw)
        return str(caught.value)

    assert "repositories: expected a list" in problems({"path": "/x"})
    assert "[0].path: required" in problems([{"name": "x"}])
    assert "[0].path: 'rel' is not an absolute path" in problems([{"path": "rel"}])
    assert "[1].branch: expected a string" in problems(
        [{"path": "/a"}, {"path": "/b", "branch": 3}]
    )
    assert "[0].branch: '--upload-pack=x' is not" in problems(
        [{"path": "/a", "branch": "--upload-pack=x"}]
    )
    assert "[1].name: 'a' is used twice" in problems([{"path": "/x/a"}, {"path": "/y/a"}])
    assert "[0].probes.command: expected a list of arguments" in problems(
        [{"path": "/a", "probes": {"command": "make check"}}]
    )
    assert "[0].probes.required_file: '../x'" in problems(
        [{"path": "/a", "probes": {"required_file": "../x"}}]
    )
    assert "[0].probes.ci.github_repo: required" in problems(
        [{"path": "/a", "probes": {"ci": {"token_env": "X"}}}]
    )
    assert "[0].probes.ci.api_url" in problems(
        [{"path": "/a", "probes": {"ci": {"github_repo": "o/r", "api_url": "http://x.com"}}}]
    )
    assert "[0].probes.bogus: unknown key" in problems([{"path": "/a", "probes": {"bogus": 1}}])

    settings = registry.config_from_mapping({}).sentinel("release-readiness")
    assert settings["repositories"] == [] and settings["interval"] == 3600
    entry = registry.config_from_mapping(
        {"sentinels": {"release-readiness": {"repositories": [{"path": "/srv/widget"}]}}}
    ).sentinel("release-readiness")["repositories"][0]
    spec = RepoSpec.from_config(entry)
    assert (spec.name, spec.branch, spec.remote, spec.tag_pattern) == ("widget", "main", None, "v*")
    assert spec.probe_names == () and "TODO" in spec.template_markers


def _write_config(tmp_path: Path, repositories: list[dict], **extra: Any) -> Path:
    path = tmp_path / "config.yaml"
    section = {"repositories": repositories, **extra}
    path.write_text(yaml.safe_dump({"sentinels": {"release-readiness": section}}))
    return path


def _once(tmp_path: Path, config_file: Path) -> tuple[subprocess.CompletedProcess, str]:
    spool_dir, state_dir = tmp_path / "spool", tmp_path / "state"
    ran = run_cli(
        "--config", str(config_file), "sentinel", "release-readiness", "--once",
        "--spool-dir", str(spool_dir), "--state-dir", str(state_dir),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return ran, (spool_dir / "release-readiness.prom").read_text()


def _promtool_ok(text: str) -> None:
    assert PROMTOOL is not None, "promtool is needed (scripts/setup --test installs it)"
    checked = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_cli_once_writes_a_valid_file(tmp_path: Path, history: Path) -> None:
    commit(history, 1, {"NOTES.md": "TODO\n"})
    config_file = _write_config(
        tmp_path,
        [
            {"path": str(history), "probes": {"command": ["true"], "required_file": "NOTES.md"}},
            {"path": str(tmp_path / "gone"), "name": "gone"},
        ],
    )
    ran, text = _once(tmp_path, config_file)
    _promtool_ok(text)
    values = samples(text)
    assert series(values, "unreleased_commits", repo="widget") == 4
    assert series(values, "probe_blocked", repo="widget", probe="required_file") == 1
    assert series(values, "probe_blocked", repo="widget", probe="command") == 0
    assert series(values, "publish_blocked", repo="widget") == 1
    assert series(values, "check_success", repo="gone") == 0
    assert series(values, "repositories") == 2
    first_success = series(values, "last_success_timestamp_seconds", repo="widget")
    assert first_success is not None and "gone" in ran.stderr

    # the repository breaks: the last success survives the next --once run
    history.rename(tmp_path / "moved")
    _, text = _once(tmp_path, config_file)
    values = samples(text)
    assert series(values, "check_success", repo="widget") == 0
    assert series(values, "unreleased_commits", repo="widget") is None
    assert series(values, "last_success_timestamp_seconds", repo="widget") == first_success


def test_cli_once_without_repositories_is_healthy(tmp_path: Path) -> None:
    _, text = _once(tmp_path, _write_config(tmp_path, []))
    _promtool_ok(text)
    values = samples(text)
    assert series(values, "repositories") == 0
    assert {name for name, _ in values} == {
        "agentwatch_release_repositories",
        "agentwatch_sentinel_interval_seconds",
        "agentwatch_sentinel_cycle_failures_total",  # the loop's own, 0 here
        "agentwatch_release_state_rejected_total",  # 0 for every reason
    }
    assert "# TYPE agentwatch_release_unreleased_commits gauge" in text  # listed, no series


def test_cli_loop_rechecks_and_stops_on_sigterm(tmp_path: Path, history: Path) -> None:
    config_file = _write_config(tmp_path, [{"path": str(history)}], interval="1s")
    spool_file = tmp_path / "spool" / "release-readiness.prom"
    child = subprocess.Popen(
        [sys.executable, "-m", "agentwatch.cli", "--config", str(config_file),
         "sentinel", "release-readiness", "--spool-dir", str(tmp_path / "spool"),
         "--state-dir", str(tmp_path / "state")],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20

        def unreleased() -> float | None:
            while time.monotonic() < deadline:
                if spool_file.exists():
                    found = series(
                        samples(spool_file.read_text()), "unreleased_commits", repo="widget"
                    )
                    if found is not None:
                        return found
                time.sleep(0.1)
            return None

        assert unreleased() == 3
        git(history, "tag", "v2.0")
        while unreleased() != 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert unreleased() == 0
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=10) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
