"""Bernstein's commit-completion retries, observed: Bernstein 3.23.0's own code emits
`agent.retry_continuation` into agentwatch's hook script, and the real controller counts it.

3.23.0 ships the retry path (`commit_completion.maybe_retry_continuation`) and the binding
that emits the event into the lifecycle hook registry (`lifecycle.hooks.
bind_retry_continuation_emit`), but nothing in the package calls either, so no run can make
the event. The test calls them itself, in Bernstein's venv, exactly as their docstrings say
the orchestrator would: a trusted project (`bernstein trust`), the hook scripts its registry
discovers in `.bernstein/hooks/`, and an agent that exited 0 without moving HEAD.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agentwatch.controller import state
from agentwatch.controller.continuation import (
    EVENTS_FILE,
    HOOK_NAME,
    HOOK_SCRIPT,
    ContinuationReader,
    reason_of,
)
from agentwatch.controller.policy import State
from tests.bernstein_support import bernstein_command, environment, project
from tests.conftest import CLI, free_port, samples

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

EMIT = """
import sys
from pathlib import Path

from bernstein.adapters.claude import ClaudeCodeAdapter
from bernstein.core.lifecycle.hooks import (
    HookRegistry, bind_retry_continuation_emit, discover_default_hook_scripts)
from bernstein.core.orchestration.commit_completion import (
    CommitCompletionCheck, maybe_retry_continuation)

root = Path.cwd()
registry = HookRegistry()
for event, scripts in discover_default_hook_scripts(root).items():
    for script in scripts:
        registry.register_script(event, script)
bind_retry_continuation_emit(registry)
before = CommitCompletionCheck().snapshot_before(root)
spawned = []
decision, _, _ = maybe_retry_continuation(
    adapter=ClaudeCodeAdapter(), workdir=root, before=before, session_id=sys.argv[1],
    exit_code=0, original_prompt="write the thing",
    spawn_fn=lambda prompt, args: spawned.append(args))
print(decision.reason, len(spawned))
"""


def emit(repo: Path, session: str) -> str:
    """Bernstein's own retry path, run in its venv, for an agent that made no commit."""
    python = Path(bernstein_command()).parent / "python"
    done = subprocess.run(
        [str(python), "-c", EMIT, session],
        cwd=repo,
        env=environment(repo.parent / "home"),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def controller_once(tmp_path: Path, repo: Path) -> dict[tuple[str, tuple], float]:
    config = tmp_path / "config.yaml"
    config.write_text(
        json.dumps({"controller": {"bernstein_config_file": str(repo / "bernstein.yaml")}})
    )
    spool = tmp_path / "spool"
    ran = subprocess.run(
        [*CLI, "--config", str(config), "controller", "--once", "--spool-dir", str(spool),
         "--state-dir", str(tmp_path / "state"), "--state-file", str(tmp_path / "c.json"),
         "--alertmanager", f"http://127.0.0.1:{free_port()}"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return samples((spool / "controller.prom").read_text())


def retries(series: dict[tuple[str, tuple], float], reason: str = "needs_retry") -> float:
    return series[("agentwatch_controller_continuation_retries_total", (("reason", reason),))]


def test_bernsteins_own_retry_event_reaches_the_controller(tmp_path: Path) -> None:
    repo = project(tmp_path / "b")
    hooks = repo / ".bernstein" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / HOOK_NAME).write_text(HOOK_SCRIPT)
    (hooks / HOOK_NAME).chmod(0o755)
    trusted = subprocess.run(
        [bernstein_command(), "trust"],
        cwd=repo,
        env=environment(repo.parent / "home"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr

    assert retries(controller_once(tmp_path, repo)) == 0, "no events file yet: zero"
    assert emit(repo, "sess-a") == "needs_retry 1"
    assert emit(repo, "sess-b") == "needs_retry 1"
    lines = (repo / EVENTS_FILE).read_text().splitlines()
    assert len(lines) == 2
    event = json.loads(lines[0])
    assert event["event"] == "agent.retry_continuation"
    assert event["data"] == {"session_id": "sess-a", "reason": "needs_retry", "attempt": 1}

    series = controller_once(tmp_path, repo)
    assert retries(series) == 2 and retries(series, "other") == 0
    assert series[("agentwatch_controller_continuation_malformed_total", ())] == 0
    assert retries(controller_once(tmp_path, repo)) == 2, "read once, kept across runs"
    assert "sess-a" not in (tmp_path / "spool" / "controller.prom").read_text()


# A line as the hook writes it: LifecycleContext.to_payload() of the event that
# bind_retry_continuation_emit builds (bernstein/core/lifecycle/hooks.py, 3.23.0: event,
# session_id, data {session_id, reason, attempt}; task None, env {}, workdir the cwd).
LINE = (
    '{"event": "agent.retry_continuation", "task": null, "session_id": "s1", "workdir": '
    '"/w", "env": {}, "timestamp": 1796237000.5, "data": {"session_id": "s1", "reason": '
    '"needs_retry", "attempt": 1}}'
)


def test_the_reader_counts_whole_lines_once_and_bad_lines_apart(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    memory = state.Memory(policy=State(level=1))
    reader = ContinuationReader(path, memory)
    reader.read()  # no file: nothing, no error
    assert memory.counters == {} and not reader.gate.failing
    other = LINE.replace('"needs_retry"', '"a new reason"')
    path.write_text(f"{LINE}\n{other}\nnot json\n" + '{"event": "session.start"}\n' + LINE[:30])
    reader.read()
    assert memory.counters["continuation_retries"] == {"needs_retry": 1, "other": 1}
    assert memory.counters["continuation_malformed"] == {"": 2} and reader.gate.failing
    with path.open("a") as out:  # the half-written line is finished
        out.write(LINE[30:] + "\n")
    reader.read()
    assert memory.counters["continuation_retries"]["needs_retry"] == 2
    assert memory.counters["continuation_malformed"] == {"": 2} and not reader.gate.failing
    path.write_text(LINE + "\n")  # replaced by a shorter file: read from its start
    reader.read()
    assert memory.counters["continuation_retries"]["needs_retry"] == 3
    assert reason_of(b"[1]") is None and reason_of(b'{"event": "agent.retry_continuation"}') is None


def test_a_fifo_or_a_folder_is_not_read(tmp_path: Path) -> None:
    memory = state.Memory(policy=State(level=1))
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    for name in ("fifo", "dir"):
        reader = ContinuationReader(tmp_path / name, memory)
        reader.read()
        assert reader.gate.failing and memory.counters == {}


def test_the_documented_hook_is_the_tested_one() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "controller.md").read_text()
    assert HOOK_SCRIPT in doc
