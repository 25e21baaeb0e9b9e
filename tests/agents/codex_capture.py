"""Captures tests/fixtures/agents/codex/: rollouts the real Codex CLI writes when run offline
against the scripted stand-in (tests/fixtures/agents/codex/README.md says what is in them).

    .venv/bin/python -m tests.agents.codex_capture [OUT_DIR]
"""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.agents import codex_tools
from tests.agents.codex_api import Reply, StandIn

FIXTURES = codex_tools.ROOT / "tests" / "fixtures" / "agents" / "codex" / "codex-home"
SCRIPT = [
    Reply("Hello from the scripted stand-in.", 12000, 40, 3000, 1000, 10),
    Reply("A second scripted answer.", 14500, 60, 11800, 0, 25),
    Reply("A third scripted answer, on another model.", 300000, 900, 250000, 20000, 300),
    Reply("Archived session reply.", 5000, 20, 1000, 0, 4),
    Reply("JSON mode reply.", 7000, 30, 6000, 500, 7),
    Reply("Forked session reply.", 8000, 35, 7000, 100, 6),
]


def fork_in_a_terminal(home: Path, codex_home: Path, project: Path, api: StandIn) -> None:
    """`codex fork --last PROMPT` is interactive only: run it in a pty (answering the cursor
    position query), wait for its turn to be served and written, then end it."""
    env = dict(codex_tools.environment(home, codex_home), TERM="xterm-256color")
    served = len(api.served.replies)
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real CLI in the project folder
        os.chdir(project)
        command = codex_tools.codex_command()
        os.execve(command, [command, "fork", "--last", "Scripted prompt six, in a fork."], env)
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline and len(api.served.replies) == served:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready and b"\x1b[6n" in os.read(fd, 65536):
                os.write(fd, b"\x1b[1;1R")
        time.sleep(2)  # the rollout is written after the reply
    finally:
        os.kill(pid, signal.SIGTERM)
        time.sleep(1)
        if os.waitpid(pid, os.WNOHANG) == (0, 0):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)


def _session_id(done: subprocess.CompletedProcess[str]) -> str:
    for line in (done.stdout + done.stderr).splitlines():
        if line.startswith("session id:"):
            return line.split()[-1]
    raise RuntimeError("codex exec printed no session id")


def capture(out: Path) -> None:
    """Six turns: exec, exec resume, exec on gpt-5.4, exec then `codex archive`, exec --json
    (its stdout saved under sessions/, where ccusage reads saved exec output too), and an
    interactive `codex fork --last` of the --json session."""
    scratch = Path(tempfile.mkdtemp(prefix="codex-capture-"))
    home, codex_home, project = scratch / "home", scratch / "codex-home", scratch / "project"
    try:
        with StandIn(SCRIPT) as api:
            codex_tools.prepare_home(codex_home, api.url)
            runs = [
                ("Say hello (scripted prompt one).",),
                ("Say more (scripted prompt two).", "resume", "--last"),
                ("Answer on gpt-5.4 (scripted prompt three).", "-m", "gpt-5.4"),
                ("Scripted prompt four, archived after.",),
            ]
            done = None
            for prompt, *extra in runs:
                done = codex_tools.run_exec(home, codex_home, project, prompt, *extra)
                if done.returncode != 0:
                    raise RuntimeError(done.stderr[-2000:])
            assert done is not None
            archive = [codex_tools.codex_command(), "archive", _session_id(done)]
            env = codex_tools.environment(home, codex_home)
            subprocess.run(archive, env=env, capture_output=True, timeout=60, check=True)
            json_mode = codex_tools.run_exec(
                home, codex_home, project, "Scripted prompt five, JSON mode.", "--json"
            )
            if json_mode.returncode != 0:
                raise RuntimeError(json_mode.stderr[-2000:])
            fork_in_a_terminal(home, codex_home, project, api)
        saved = codex_home / "sessions" / "saved-exec-json" / "exec-output.jsonl"
        saved.parent.mkdir(parents=True)
        saved.write_text(json_mode.stdout, encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for folder in ("sessions", "archived_sessions"):
            shutil.copytree(codex_home / folder, out / folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    capture(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURES)
