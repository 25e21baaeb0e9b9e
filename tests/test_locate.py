"""Commands find the running stack and the demo's state (cli/locate.py): `ack` posts to the
stack's Alertmanager, `prices` reads the demo's ledger, `status` says "stopped" when nothing
runs. Each test fails on the commands that read only the user's config and <state>."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import requests
import yaml

from agentwatch.cli import locate
from agentwatch.core import single
from agentwatch.sentinels import registry
from tests.conftest import free_port, local_config, run_cli, running_on
from tests.test_controller_alertmanager import start_alertmanager
from tests.transcripts import assistant, encode, transcript


def silences(url: str) -> list[dict]:
    return requests.get(f"{url}/api/v2/silences", timeout=5).json()


def test_ack_posts_to_the_running_ups_alertmanager(
    tmp_path: Path, processes: list[subprocess.Popen]
) -> None:
    """`up` runs with its derived config (the stack's Alertmanager on its own port); ack with
    the user's plain config and no --alertmanager finds it, not the default 127.0.0.1:9851."""
    am = start_alertmanager(tmp_path, "am", processes)
    state = tmp_path / "state"
    state.mkdir()
    (state / locate.UP_CONFIG).write_text(json.dumps({"controller": {"alertmanagers": [am.url]}}))
    user_config = tmp_path / "user.yaml"
    user_config.write_text("{}\n")
    argv = ["--config", str(user_config), "ack", "AgentwatchHostLoadHigh", "--state-dir",
            str(state), "--comment", "from the stack"]  # fmt: skip
    with running_on(state):
        acked = run_cli(*argv)
    assert acked.returncode == 0, acked.stderr
    assert [s["comment"] for s in silences(am.url)] == ["from the stack"]


def test_ack_without_up_tries_the_configured_stack_port(
    tmp_path: Path, processes: list[subprocess.Popen]
) -> None:
    """No `up` runs (e.g. the stack under systemd): the config's stack.alertmanager_listen is
    tried after controller.alertmanagers (whose default is not the stack's port here)."""
    am = start_alertmanager(tmp_path, "am", processes)
    config = tmp_path / "config.yaml"
    dead = f"http://127.0.0.1:{free_port()}"
    config.write_text(yaml.safe_dump({
        "controller": {"alertmanagers": [dead]},
        "stack": {"alertmanager_listen": am.url.removeprefix("http://")},
    }))  # fmt: skip
    acked = run_cli("--config", str(config), "ack", "AgentwatchHostLoadHigh",
                    "--state-dir", str(tmp_path / "state"))  # fmt: skip
    assert acked.returncode == 0, acked.stderr
    assert len(silences(am.url)) == 1


def test_prices_reads_the_demos_ledger(workdirs: dict[str, Path], tmp_path: Path) -> None:
    """After `up --demo` the ledger's database is under <state>/demo; prices finds it."""
    state = workdirs["state"]
    transcript(workdirs["claude"]).write_bytes(encode(assistant(), assistant()))
    ran = run_cli("sentinel", "token-ledger", "--once", "--spool-dir", str(workdirs["spool"]),
                  "--state-dir", str(state / "demo"),
                  env={"CLAUDE_CONFIG_DIR": str(workdirs["claude"])})  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    shown = run_cli("prices", "--state-dir", str(state), "--json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    found = json.loads(shown.stdout)
    assert found["database"] == str(state / "demo" / "token-ledger.sqlite")
    assert found["models"], "the demo's models are listed"


def test_status_says_stopped_when_nothing_runs(workdirs: dict[str, Path], tmp_path: Path) -> None:
    """Fresh spool files of a sentinel that has ended are not a running stack: "stopped",
    exit 3; the same files while `up` holds its lock are read as live."""
    transcript(workdirs["claude"]).write_bytes(encode(assistant(), assistant()))
    config = local_config(tmp_path)
    dirs = ["--spool-dir", str(workdirs["spool"]), "--state-dir", str(workdirs["state"])]
    for name in ("token-ledger", "claude-sessions"):
        ran = run_cli("--config", str(config), "sentinel", name, "--once", *dirs,
                      env={"CLAUDE_CONFIG_DIR": str(workdirs["claude"])})  # fmt: skip
        assert ran.returncode == 0, ran.stderr
    shown = run_cli("--config", str(config), "status", *dirs)
    assert shown.returncode == 3, shown.stdout
    assert "agentwatch: stopped" in shown.stdout and " up " not in shown.stdout
    as_json = run_cli("--config", str(config), "status", "--json", *dirs)
    assert as_json.returncode == 3 and json.loads(as_json.stdout)["state"] == "stopped"
    with running_on(workdirs["state"]):
        live = run_cli("--config", str(config), "status", *dirs)
    assert "agentwatch: stopped" not in live.stdout and "claude-sessions      up" in live.stdout


def test_a_running_ledger_is_running_and_its_folder_is_found(tmp_path: Path) -> None:
    """A ledger under systemd (no `up`) holds its database lock: running, on its folder."""
    state = tmp_path / "state"
    (state / "demo").mkdir(parents=True)
    cfg = registry.config_from_mapping({})
    assert not locate.find(cfg, state).running
    lock = single.hold(state / "demo" / "token-ledger.sqlite.lock")
    try:
        place = locate.find(cfg, state)
        assert place.running and place.demo and not place.up
    finally:
        single.release(lock)
    assert not locate.find(cfg, state).running
    assert not locate.held(state / "no-such.lock")
    os.mkfifo(state / "fifo.lock")
    assert not locate.held(state / "fifo.lock")  # never blocks on a FIFO
