"""Files another process can replace, read by the sentinels (issue 12, case 4): each sentinel's
state file, the CI token file, the orchestrator pid file and the signatures override. Each is
put in place as a link to /dev/zero, a FIFO, a file past its cap and garbage; a real `--once`
run must finish (a FIFO must not hang it), count the rejection as a metric and log it once,
never quoting the file's content.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from agentwatch.core import bounded
from bench.generators.processes import kill_tree, spawn_session
from tests.conftest import run_cli
from tests.hostile.sentinel_support import once, series, warnings

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _fifo(path: Path) -> None:
    os.mkfifo(path, 0o600)


def _too_large(limit: int) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        with open(path, "wb") as handle:  # sparse: no disk, but st_size says limit + 1
            handle.truncate(limit + 1)
        path.chmod(0o600)

    return make


def _text(content: bytes) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.write_bytes(content)
        path.chmod(0o600)

    return make


STATE_CASES = {
    "dev_zero": (_dev_zero, "not_regular"),
    "fifo": (_fifo, "not_regular"),
    "too_large": (_too_large(bounded.STATE_LIMIT), "too_large"),
    "deep": (_text(b"[" * 100_000 + b"]" * 100_000), "corrupt"),
    "not_utf8": (_text(b'{"version": 1, "\xff": 1}'), "corrupt"),
    "key": (_text(KEY.encode()), "corrupt"),
}
# A time past float range; a count past 2**53: values a reader must range-check.
HUGE = "1" + "0" * 400
BAD_VALUES = {
    "release-readiness": f'{{"version": 1, "last_success": {{"widget": {HUGE}}}}}',
    "idle-error": f'{{"version": 1, "panes": {{}}, "fired": {{"api_error": {HUGE}}}}}',
}
STATE_FILES = {"release-readiness": "release-readiness.json", "idle-error": "idle-error.json"}
REJECTED = {
    "release-readiness": "agentwatch_release_state_rejected_total",
    "idle-error": "agentwatch_idle_error_state_rejected_total",
}


@pytest.mark.parametrize("sentinel", sorted(STATE_FILES))
@pytest.mark.parametrize("case", [*sorted(STATE_CASES), "huge_number"])
def test_a_state_file_that_is_not_ours_is_set_aside(
    sentinel: str, case: str, workdirs: dict[str, Path], tmp_path: Path
) -> None:
    path = workdirs["state"] / STATE_FILES[sentinel]
    if case == "huge_number":
        make, reason = _text(BAD_VALUES[sentinel].encode()), "corrupt"
    else:
        make, reason = STATE_CASES[case]
    make(path)
    env = {"TMUX_TMPDIR": str(tmp_path)}  # idle-error: no tmux server to ask
    result, values = once(sentinel, workdirs, env=env, timeout=60)
    rejected = {labels["reason"]: value for labels, value in series(values, REJECTED[sentinel])}
    assert rejected == {
        name: float(name == reason)
        for name in ("not_regular", "too_large", "unreadable", "corrupt")
    }
    lines = warnings(result.stderr)
    assert len(lines) == 1 and f"({reason}): starting" in lines[0], result.stderr
    assert "BEGIN" not in result.stderr and "b3Bl" not in result.stderr
    assert path.is_file() and not path.is_symlink()  # replaced by a state file of ours
    assert path.stat().st_size < 1000
    # the next run reads the new file: still counted (monotonic across --once), not logged
    again, values = once(sentinel, workdirs, env=env, timeout=60)
    assert warnings(again.stderr) == []
    kept = {labels["reason"]: value for labels, value in series(values, REJECTED[sentinel])}
    assert kept == rejected


TOKEN_CASES = {
    "fifo": (_fifo, "not a regular file (a FIFO)"),
    "too_large": (_too_large(bounded.SECRET_LIMIT), "over the cap"),
}


@pytest.mark.parametrize("case", sorted(TOKEN_CASES))
def test_a_token_file_that_is_not_a_file_makes_the_ci_probe_undecided(
    case: str, workdirs: dict[str, Path], tmp_path: Path
) -> None:
    repo = tmp_path / "widget"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", repo, *args], env=_git_env(), check=True, timeout=30)
    token = tmp_path / "token"
    make, shown = TOKEN_CASES[case]
    make(token)
    ci = {"github_repo": "o/widget", "token_file": str(token), "api_url": "http://127.0.0.1:1"}
    config = {"sentinels": {"release-readiness": {"repositories": [
        {"path": str(repo), "probes": {"ci": ci}}]}}}  # fmt: skip
    result, values = once("release-readiness", workdirs, config, timeout=60)
    assert values[("agentwatch_release_probe_error", (("probe", "ci"), ("repo", "widget")))] == 1
    assert values[("agentwatch_release_probe_blocked", (("probe", "ci"), ("repo", "widget")))] == 0
    lines = warnings(result.stderr)
    assert len(lines) == 1 and "ci probe failing: cannot read the token file" in lines[0]
    assert shown in lines[0], lines


def _git_env() -> dict[str, str]:
    return {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }


PIDFILE_CASES = {
    "fifo": (_fifo, "not a regular file (a FIFO)"),
    "dev_zero": (_dev_zero, "not a regular file (a character device)"),
    "too_large": (_too_large(4096), "over the cap"),
    "key": (_text(KEY.encode()), "not a pid file"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(PIDFILE_CASES))
def test_an_orchestrator_pid_file_that_is_not_one(
    case: str, workdirs: dict[str, Path], tmp_path: Path
) -> None:
    bindir = tmp_path / "bin"
    root = spawn_session(bindir)
    pidfile = tmp_path / "orchestrator.pid"
    make, shown = PIDFILE_CASES[case]
    make(pidfile)
    config = {
        "agents": {"names": ["claude"]},
        "sentinels": {"resources": {"orchestrator_pidfile": str(pidfile)}},
    }
    try:
        result, values = once("resources", workdirs, config, timeout=60)
    finally:
        kill_tree(root)
    assert values[("agentwatch_resources_orchestrator_pidfile_failing", ())] == 1
    assert values[("agentwatch_resources_orchestrator_running", ())] == 0
    sessions = series(values, "agentwatch_agent_session_processes")
    assert str(root.pid) in [labels["pid"] for labels, _ in sessions]  # the rest is served
    lines = warnings(result.stderr)
    assert len(lines) == 1 and shown in lines[0], result.stderr  # --once: two cycles, one line
    assert "BEGIN" not in result.stderr and "OPENSSH" not in result.stderr


def test_a_readable_pid_file_still_works(workdirs: dict[str, Path], tmp_path: Path) -> None:
    orchestrator = spawn_session(tmp_path / "bin", agent="orch")
    pidfile = tmp_path / "orchestrator.pid"
    pidfile.write_text(f"{orchestrator.pid}\n")
    config = {"sentinels": {"resources": {"orchestrator_pidfile": str(pidfile)}}}
    try:
        result, values = once("resources", workdirs, config, timeout=60)
    finally:
        kill_tree(orchestrator)
    assert values[("agentwatch_resources_orchestrator_pidfile_failing", ())] == 0
    assert values[("agentwatch_resources_orchestrator_running", ())] == 1
    assert warnings(result.stderr) == []


# A signature whose id is 600,000 characters of terminal escapes: quoted short, escaped.
LONG_ID = b'[{"id": "' + b"\\u001b[2J" * 100_000 + b'", "kind": "Bad"}]'
SIGNATURE_CASES = {
    "fifo": (_fifo, "not a regular file (a FIFO)"),
    "dev_zero": (_dev_zero, "not a regular file (a character device)"),
    "too_large": (_too_large(bounded.DATA_LIMIT), "over the cap"),
    "deep": (_text(b"[" * 100_000), "nested too deep"),
    "key": (_text(KEY.encode()), "Expecting value"),
    "long_id": (
        _text(b'[{"id": "' + b"\\u001b[2J" * 100_000 + b'", "kind": "Bad"}]'),
        "characters)",
    ),
}


@pytest.mark.parametrize("case", sorted(SIGNATURE_CASES))
def test_a_signatures_file_that_is_not_one_is_a_config_error(
    case: str, workdirs: dict[str, Path], tmp_path: Path
) -> None:
    """The override is configuration: the sentinel refuses to start (exit 2, one line), as for
    any bad signature list, instead of hanging on a FIFO or reading /dev/zero until killed."""
    path = tmp_path / "signatures.json"
    make, shown = SIGNATURE_CASES[case]
    make(path)
    config = tmp_path / "config.yaml"
    config.write_text(f"sentinels:\n  footprint:\n    signatures_file: {path}\n")
    result = run_cli(
        "--config", str(config), "sentinel", "footprint", "--once",
        "--spool-dir", str(workdirs["spool"]), "--state-dir", str(workdirs["state"]),
        timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot load the signatures" in lines[0], result.stderr
    assert shown in lines[0], lines[0]
    assert len(lines[0]) < 500 and "\x1b" not in lines[0] and "BEGIN" not in lines[0]
    assert "Traceback" not in result.stderr
    assert not (workdirs["spool"] / "footprint.prom").exists()
