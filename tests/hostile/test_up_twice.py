"""A second `agentwatch up` on a state folder in use says which PID holds it and exits non-zero,
touching nothing: no child started, the first's children and its demo tmux server untouched
(once it said "agentwatch is running", restarted every child every few seconds and replaced
the first's tmux server, killing its sessions)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import CLI, free_port, local_config


def _tmux_server(socket: Path) -> int | None:
    done = subprocess.run(
        ["tmux", "-S", str(socket), "display-message", "-p", "#{pid}"],
        capture_output=True, text=True, timeout=10, check=False,
    )  # fmt: skip
    return int(done.stdout) if done.returncode == 0 and done.stdout.strip().isdigit() else None


# What an `up` writes when it starts (the running demo writes on in the others): the config
# its children read, when the run's budget counts from, the lock itself.
WRITTEN_AT_START = ("up-config.json", "demo/run-budget.json", "up.lock")


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        name: (path.stat().st_size, path.stat().st_mtime_ns)
        for name in WRITTEN_AT_START
        if (path := folder / name).exists()
    }


@pytest.mark.slow
def test_a_second_up_on_the_same_state_is_refused_touching_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    env.pop("CLAUDE_CONFIG_DIR", None)
    state, spool = tmp_path / "state", tmp_path / "spool"
    config = str(local_config(tmp_path))
    # the demo with simulated sessions (no Claude Code, no Prometheus): it has a tmux server
    argv = [*CLI, "--config", config, "up", "--demo", "--no-claude", "--no-stack",
            "--state-dir", str(state), "--spool-dir", str(spool)]  # fmt: skip
    first = subprocess.Popen(
        [*argv, "--listen", f"127.0.0.1:{free_port()}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        socket = state / "demo" / "tmux.sock"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _tmux_server(socket) is None:
            assert first.poll() is None, first.communicate()[0]
            time.sleep(0.3)
        tmux = _tmux_server(socket)
        assert tmux is not None, "the first up's demo never started its tmux server"
        children = {p.pid for p in psutil.Process(first.pid).children()}
        files = _files(state)
        assert len(files) == len(WRITTEN_AT_START)
        logs = {path.name for path in (state / "logs").iterdir()}

        second = subprocess.run(  # bounded: without the lock it would run on
            [*argv, "--listen", f"127.0.0.1:{free_port()}", "--for", "15"],
            env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        said = second.stdout + second.stderr
        assert second.returncode == 2, said
        assert f"PID {first.pid}" in said and str(state) in said, said
        assert said.count("\n") == 1 and "agentwatch is running" not in said, said

        time.sleep(3)  # long enough for a clash to show as restarts (RESTART_DELAY is 2 s)
        assert first.poll() is None
        assert _tmux_server(socket) == tmux, "the first up's tmux server was replaced"
        assert {p.pid for p in psutil.Process(first.pid).children()} == children
        assert _files(state) == files, "the second up wrote into the state folder"
        assert {path.name for path in (state / "logs").iterdir()} == logs
    finally:
        first.send_signal(signal.SIGINT)
        output, _ = first.communicate(timeout=60)
    assert "exited with status" not in output, output
    # the lock goes with the process: a new up may start once the first is gone
    third = subprocess.run(
        [*argv, "--no-demo", "--listen", f"127.0.0.1:{free_port()}", "--for", "1"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert third.returncode == 0, third.stdout + third.stderr


def test_a_fifo_or_symlink_for_the_lock_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Something put in the lock's place: up says so in one line at once and starts nothing."""
    config = str(local_config(tmp_path))
    for kind in ("fifo", "symlink"):
        state = tmp_path / kind
        state.mkdir()
        if kind == "fifo":
            os.mkfifo(state / "up.lock")
        else:
            (state / "up.lock").symlink_to(tmp_path / "elsewhere")
        started = time.monotonic()
        done = subprocess.run(
            [*CLI, "--config", config, "up", "--no-demo", "--no-stack", "--state-dir",
             str(state), "--spool-dir", str(tmp_path / "spool"), "--for", "15"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        said = done.stdout + done.stderr
        assert done.returncode == 2 and time.monotonic() - started < 10, said
        assert said.count("\n") == 1 and f"cannot lock {state / 'up.lock'}" in said, said
        assert not (state / "logs").exists() and not (tmp_path / "elsewhere").exists()
