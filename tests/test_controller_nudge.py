"""Nudges through a real tmux server: one message per episode, transcript growth check,
escalation, backoff, allow-list."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentwatch.controller import state
from agentwatch.controller.nudge import FRESH_FOR, Nudger, Tmux, pane_state, transcript_bytes
from agentwatch.controller.policy import NudgeTarget, State
from agentwatch.core import spool_readers
from agentwatch.core.claude import slug
from tests.conftest import run_cli
from tests.test_idle_error import TmuxServer, program

# A stand-in agent: every line typed into its pane is appended to its transcript.
AGENT = (
    "import sys\n"
    "for line in sys.stdin:\n"
    "    with open(sys.argv[1], 'a') as f:\n"
    '        f.write(\'{"type": "user"}\\n\')\n'
)


@pytest.fixture
def tmux() -> Iterator[tuple[str, Tmux]]:
    socket = f"aw-test-{uuid.uuid4().hex[:8]}"
    yield socket, Tmux(socket)
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=10)


def new_session(socket: str, name: str, cwd: Path, *command: str) -> str:
    """Start a detached session; return its pane id (like %0)."""
    out = subprocess.run(
        ["tmux", "-L", socket, "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", name,
         "-c", str(cwd), "-x", "120", "-y", "30", *command],
        capture_output=True, text=True, timeout=10, check=True,
    )  # fmt: skip
    return out.stdout.strip()


def settings(**overrides: Any) -> dict[str, Any]:
    return {
        "enabled": True,
        "allow_sessions": ["work"],
        "message": "please continue",
        "backoff": 600.0,
        "verify_after": 120.0,
        "max_attempts": 2,
        "tmux_socket": None,
        "transcript_dir": None,
    } | overrides


def wait_for_growth(folders: list[Path], above: int) -> None:
    deadline = time.monotonic() + 10
    while transcript_bytes(folders) <= above and time.monotonic() < deadline:
        time.sleep(0.05)


def test_one_nudge_per_episode_and_the_transcript_grows(
    tmux: tuple[str, Tmux], tmp_path: Path
) -> None:
    socket, client = tmux
    project = tmp_path / "repo"
    project.mkdir()
    root = tmp_path / "claude" / "projects"
    folder = root / slug(str(project))
    folder.mkdir(parents=True)
    transcript = folder / "session-1.jsonl"
    transcript.write_text('{"type": "assistant"}\n')
    pane = new_session(socket, "work", project, sys.executable, "-c", AGENT, str(transcript))
    memory = state.Memory(policy=State(level=4))
    nudger = Nudger(settings(), [root], memory, client)
    target = NudgeTarget("work", pane, "AgentwatchPaneStalled")
    before = transcript.stat().st_size

    nudger.step([target], live=True, now=0)
    assert memory.counters["nudges"] == {"sent": 1}
    wait_for_growth([folder], before)
    assert transcript.stat().st_size > before, "the message reached the agent"
    nudger.step([target], live=True, now=60)
    assert memory.counters["nudges"] == {"sent": 1}, "one message per episode"
    nudger.step([target], live=True, now=130)
    assert memory.counters["nudges"] == {"sent": 1, "grew": 1}

    nudger.step([], live=True, now=200)  # the episode ends
    nudger.step([target], live=True, now=300)  # a new one, inside the 600 s backoff
    assert memory.counters["nudges"]["sent"] == 1
    nudger.step([target], live=True, now=600)
    assert memory.counters["nudges"]["sent"] == 2


def test_no_growth_escalates_then_gives_up(
    tmux: tuple[str, Tmux], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    socket, client = tmux
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    pane = new_session(socket, "work", tmp_path, "sleep", "600")
    memory = state.Memory(policy=State(level=4))
    nudger = Nudger(settings(transcript_dir=quiet, max_attempts=1), [], memory, client)
    target = NudgeTarget("work", pane, "AgentwatchPaneStalled")
    with caplog.at_level(logging.INFO, "agentwatch.controller"):
        nudger.step([target], live=True, now=0)
        nudger.step([target], live=True, now=119)
        assert "escalated" not in memory.counters["nudges"]
        nudger.step([target], live=True, now=120)
        assert memory.counters["nudges"] == {"sent": 1, "escalated": 1}
        nudger.step([], live=True, now=130)
        nudger.step([target], live=True, now=5000)  # max_attempts reached: left to humans
    assert memory.counters["nudges"] == {"sent": 1, "escalated": 1, "skipped": 1}
    warnings = [r.message for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "did not resume" in warnings[0] and pane in warnings[0]
    assert "please continue" not in " ".join(r.message for r in caplog.records)


@pytest.mark.parametrize(
    ("overrides", "session_of_alert"),
    [
        ({"enabled": False}, "work"),
        ({}, "other"),  # not allow-listed
        ({"allow_sessions": ["work", "other"]}, "other"),  # the pane is not in that session
    ],
)
def test_skipped_without_typing_anything(
    tmux: tuple[str, Tmux], tmp_path: Path, overrides: dict[str, Any], session_of_alert: str
) -> None:
    socket, client = tmux
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    pane = new_session(socket, "work", tmp_path, sys.executable, "-c", AGENT, str(transcript))
    memory = state.Memory(policy=State(level=4))
    nudger = Nudger(settings(**overrides), [], memory, client)
    target = NudgeTarget(session_of_alert, pane, "AgentwatchPaneStalled")
    nudger.step([target], live=True, now=0)
    nudger.step([target], live=True, now=10)
    assert memory.counters["nudges"] == {"skipped": 1}, "once per episode"
    time.sleep(0.3)
    assert transcript.stat().st_size == 0


def test_blind_cycles_neither_start_nor_end_episodes(
    tmux: tuple[str, Tmux], tmp_path: Path
) -> None:
    socket, client = tmux
    pane = new_session(socket, "work", tmp_path, "sleep", "600")
    memory = state.Memory(policy=State(level=4))
    nudger = Nudger(settings(transcript_dir=tmp_path), [], memory, client)
    target = NudgeTarget("work", pane, "AgentwatchPaneStalled")
    nudger.step([target], live=True, now=0)
    nudger.step([], live=False, now=50)  # Alertmanager down: the episode goes on
    nudger.step([target], live=True, now=60)
    assert memory.counters["nudges"] == {"sent": 1}
    nudger.step([], live=False, now=130)  # verification still runs while blind
    assert memory.counters["nudges"] == {"sent": 1, "escalated": 1}


def test_the_pane_state_is_the_real_idle_error_file_through_the_reader(
    workdirs: dict[str, Path], tmp_path: Path
) -> None:
    """The nudge's last look before typing is the idle-error sentinel's own spool file, read
    through core/spool_readers.py: the state of that pane of that session while the file is
    fresh, else nothing (the alert decides)."""
    folder = Path(tempfile.mkdtemp(prefix="aw-nd-"))  # short: socket paths are < 108 bytes
    server = TmuxServer(folder)
    try:
        claude = program(tmp_path / "bin", "claude")
        err = server.pane("err", claude, "api_error_500.txt")
        busy = server.pane("busy", claude, "working_spinner.txt")
        config = tmp_path / "config.yaml"
        config.write_text(f"agents: {{tmux_sockets: [{server.sock}], names: [claude]}}\n")
        ran = run_cli(
            "--config", str(config), "sentinel", "idle-error", "--once",
            "--spool-dir", str(workdirs["spool"]), "--state-dir", str(workdirs["state"]),
            env=server.env,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
    finally:
        server.kill()
        shutil.rmtree(folder, ignore_errors=True)
    spool, now = workdirs["spool"], time.time()
    assert pane_state(spool, "err", err, now) == "api_error"
    assert pane_state(spool, "busy", busy, now) == "working"
    assert pane_state(spool, "busy", err, now) is None  # that pane is not in that session
    assert pane_state(spool, "err", err, now + FRESH_FOR + 5) is None  # stale: says nothing
    assert pane_state(None, "err", err, now) is None
    spool_readers.path(spool, spool_readers.IDLE_ERROR).write_text("agentwatch_pane_state{ 1\n")
    assert pane_state(spool, "err", err, time.time()) is None  # unusable: the alert decides
