"""The controller's nudge on the real Claude Code: a session stalled on an API error resends
after the nudge and its transcript grows; a session that is working gets no message.

Two interactive Claude Code 2.1.328 sessions run in tmux against the scripted API, the real
idle-error sentinel writes what it sees, and the controller's Nudger acts on two `nudge`
targets as an alert would hand them over — one of them already stale (the pane is working).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentwatch.controller import state
from agentwatch.controller.nudge import Nudger, Tmux, transcript_bytes
from agentwatch.controller.policy import NudgeTarget, State
from agentwatch.core.claude import slug
from tests.conftest import run_cli
from tests.real_screens import TASK, Scenario, _error, drive, sessions

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

STALLED = Scenario(
    "stalled", "api_error",
    [_error(500, "api_error", "Internal server error"), {"answer": {"text": "Resumed, done."}}],
    ((TASK, r"API Error: 500"),),
)  # fmt: skip
BUSY = Scenario(
    "busy", "working", [{"answer": {"text": "Done."}, "delay": 900}],
    ((TASK, r"(?i)esc to interrupt"),), settle=0,
)  # fmt: skip
MESSAGE = "please continue"


def test_the_stalled_session_resends_and_the_working_one_is_left_alone(tmp_path: Path) -> None:
    with sessions([STALLED, BUSY], tmp_path) as (tmux, api):
        drive(tmux, [STALLED, BUSY])
        config = tmp_path / "config.yaml"
        config.write_text(f"agents: {{tmux_sockets: [{tmux.socket}]}}\n")
        spool = tmp_path / "spool"
        done = run_cli("--config", str(config), "sentinel", "idle-error", "--once",
                       "--spool-dir", str(spool), "--state-dir", str(tmp_path / "st"))  # fmt: skip
        assert done.returncode == 0, done.stderr
        panes = {name: tmux.run("list-panes", "-t", name, "-F", "#{pane_id}").strip()
                 for name in ("stalled", "busy")}  # fmt: skip
        roots = [tmp_path / "home" / ".claude" / "projects"]
        memory = state.Memory(policy=State(level=4))
        settings = {
            "enabled": True, "allow_sessions": ["stalled", "busy"], "message": MESSAGE,
            "backoff": 600.0, "verify_after": 5.0, "max_attempts": 2,
            "tmux_socket": str(tmux.socket), "transcript_dir": None,
        }  # fmt: skip
        nudger = Nudger(settings, roots, memory, Tmux(str(tmux.socket)), spool_dir=spool)
        stalled_folder = [roots[0] / slug(str(tmp_path / "work" / "stalled"))]
        before = transcript_bytes(stalled_folder)
        served_before = len(api.served.records)
        targets = [NudgeTarget(name, pane, "AgentwatchSessionStalledOnError")
                   for name, pane in panes.items()]  # fmt: skip

        nudger.step(targets, live=True, now=0)
        assert memory.counters["nudges"] == {"sent": 1}, "only the stalled pane is nudged"
        deadline = time.monotonic() + 30
        while transcript_bytes(stalled_folder) <= before and time.monotonic() < deadline:
            time.sleep(0.2)
        nudger.step(targets, live=True, now=6)
        assert memory.counters["nudges"] == {"sent": 1, "grew": 1}
        resent = [r for r in api.served.records[served_before:] if r["status"] == 200]
        assert resent, "the stalled session sent its request again"
        assert MESSAGE not in tmux.capture("busy"), "a working session got a message"
