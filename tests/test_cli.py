"""The command line: help everywhere, version, status, and `up` with the demo workload."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
import yaml

from agentwatch.cli import up
from agentwatch.controller import policy, state
from agentwatch.sentinels import registry
from tests.conftest import CLI, free_port, local_config, run_cli, running_on, token_totals


@pytest.mark.parametrize(
    "args",
    [[], ["exporter"], ["sentinel"], ["up"], ["status"], ["config"], ["config", "check"]],
)
def test_help_everywhere(args: list[str]) -> None:
    result = run_cli(*args, "--help")
    assert result.returncode == 0 and "usage: agentwatch" in result.stdout


def test_the_top_level_help_lists_every_command() -> None:
    from agentwatch.cli.main import COMMANDS

    result = run_cli("--help")
    assert result.returncode == 0
    listed = result.stdout.split("COMMAND", 2)[-1]
    assert all(name in listed for name in COMMANDS)


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["sentinel", "token-ledger", "--once"], "sentinel"),
        (["--config", "up", "status"], "status"),  # a config file named "up"
        (["--log-level", "debug", "prices"], "prices"),
        (["--config=x.yml", "run-budget", "show"], "run-budget"),
        (["--help"], None),
        (["nonsense", "up"], None),
        ([], None),
    ],
)
def test_the_command_is_found_past_the_top_level_options(
    argv: list[str], command: str | None
) -> None:
    from agentwatch.cli.main import command_in

    assert command_in(argv) == command


def test_a_command_imports_only_its_own_module() -> None:
    """A sentinel's start does not pay for the other commands' imports."""
    probe = (
        "import sys; from agentwatch.cli.main import build_parser; "
        "build_parser('sentinel').parse_args(['sentinel', 'token-ledger', '--once']); "
        "print(sorted(m for m in sys.modules if m.startswith('agentwatch.cli.')))"
    )
    out = subprocess.run([CLI[0], "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "agentwatch.cli.sentinel" in out
    for other in ("up", "status", "install", "prices", "ack"):
        assert f"agentwatch.cli.{other}'" not in out


@pytest.mark.parametrize("entry", ["console script", "python -m"])
def test_the_command_exits_without_a_last_full_collection(entry: str) -> None:
    """Everything alive when a command is done is frozen out of the interpreter's last
    garbage collection (cli/entry.py `run`): after the command, nothing is in the collected
    generations. The console script and `python -m agentwatch.cli` both end that way."""
    report = (
        "import atexit, gc, sys; sys.argv[1:] = ['--version']; "
        "atexit.register(lambda: print(gc.get_freeze_count(), gc.get_count()[2]))"
    )
    if entry == "console script":
        probe = f"{report}; from agentwatch.cli.entry import run; run()"
    else:
        probe = f"{report}; import runpy; runpy.run_module('agentwatch.cli', run_name='__main__')"
    result = subprocess.run([CLI[0], "-c", probe], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout.startswith("agentwatch "), result.stderr
    frozen, oldest = map(int, result.stdout.splitlines()[-1].split())
    assert frozen > 10_000 and oldest == 0


def test_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.startswith("agentwatch ")


def test_unknown_sentinel_is_refused() -> None:
    result = run_cli("sentinel", "nope")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_status_reads_the_spool(workdirs: dict[str, Path], tmp_path: Path) -> None:
    config = tmp_path / "only-ledger.yaml"  # the other sentinels are not expected here
    others = [name for name in registry.sentinels() if name != "token-ledger"]
    config.write_text(yaml.safe_dump({"sentinels": {name: {"enabled": False} for name in others}}))
    spool = ["--spool-dir", str(workdirs["spool"]), "--state-dir", str(workdirs["state"])]
    with running_on(workdirs["state"]):
        down = run_cli("--config", str(config), "status", *spool)
    assert down.returncode == 1 and "token-ledger" in down.stdout and "missing" in down.stdout
    env = {"CLAUDE_CONFIG_DIR": str(workdirs["claude"])}
    ran = run_cli("sentinel", "token-ledger", "--once", *spool, env=env)
    assert ran.returncode == 0
    with running_on(workdirs["state"]):  # the ledger has ended: read its file as live
        up = run_cli("--config", str(config), "status", *spool, "--json")
    assert up.returncode == 0 and '"up": true' in up.stdout


@pytest.mark.slow
def test_up_runs_the_demo_and_stops_cleanly(tmp_path: Path) -> None:
    port = free_port()
    home = tmp_path / "home"  # no transcripts anywhere: the demo starts by itself
    home.mkdir()
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    env.pop("AGENTWATCH_BERNSTEIN", None)  # the stand-in (test_demo_bernstein: the real one)
    env.pop("CLAUDE_CONFIG_DIR", None)
    process = subprocess.Popen(
        [
            *CLI,
            "--config",
            str(local_config(tmp_path)),
            "up",
            "--state-dir",
            str(tmp_path / "state"),
            "--spool-dir",
            str(tmp_path / "spool"),
            "--listen",
            f"127.0.0.1:{port}",
            "--no-stack",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        tokens = 0.0
        while time.monotonic() < deadline and tokens == 0:
            time.sleep(0.5)
            spool_file = tmp_path / "spool" / "token-ledger.prom"
            if spool_file.exists():
                tokens = token_totals(spool_file.read_text())["output"]
        assert tokens > 0, "the demo workload produced no tokens"
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert f"http://127.0.0.1:{port}/metrics" in output and "demo:" in output
    assert "agentwatch stopped." in output
    survivors = [
        proc.pid
        for proc in psutil.process_iter(["cmdline"])
        if any(str(tmp_path / "state") in part for part in proc.info["cmdline"] or [])
    ]
    assert survivors == [], "children outlived `agentwatch up`"


@pytest.mark.slow
def test_up_children_die_with_it_even_on_sigkill(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    env.pop("AGENTWATCH_BERNSTEIN", None)  # the stand-in (test_demo_bernstein: the real one)
    process = subprocess.Popen(
        [*CLI, "--config", str(local_config(tmp_path)), "up", "--state-dir",
         str(tmp_path / "state"), "--spool-dir", str(tmp_path / "spool"),
         "--listen", f"127.0.0.1:{free_port()}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    parent = psutil.Process(process.pid)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(parent.children()) < 3:
        time.sleep(0.2)
    children = parent.children()
    assert len(children) >= 3
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    _gone, alive = psutil.wait_procs(children, timeout=15)
    assert alive == [], "components outlived a killed `agentwatch up`"


def test_up_names_alert_states_as_alertmanager_does() -> None:
    """Alertmanager's API v2 states: active, suppressed (by a silence or an inhibition),
    unprocessed; only the active ones ask for nothing to be said."""

    def alert(name: str, state: str, silenced: bool = False, inhibited: bool = False) -> dict:
        return {
            "labels": {"alertname": name},
            "status": {
                "state": state,
                "silencedBy": ["6c1d"] if silenced else [],
                "inhibitedBy": ["93af"] if inhibited else [],
            },
        }

    alerts = [
        alert("A", "active"),
        alert("B", "suppressed", silenced=True),
        alert("C", "suppressed", inhibited=True),
        alert("D", "unprocessed"),
    ]
    # suppressed alerts are neither news nor acted on: not counted as firing
    assert up.alerts_line(alerts) == (
        "alerts firing 2: A, D (unprocessed); suppressed 2: B (silenced), C (inhibited)"
    )
    assert up.alerts_line([alert("C", "suppressed", inhibited=True)]) == (
        "alerts firing 0; suppressed 1: C (inhibited)"
    )
    assert up.alerts_line(None) == "alerts: Alertmanager not answering yet"


def test_status_shows_the_decision_of_up_demo_and_its_reasons(tmp_path: Path) -> None:
    """`up --demo` keeps the controller's state under <state>/demo; status finds it there,
    and a decision written a moment "in the future" (clocks a hair apart) is 0 s old."""
    settings = policy.Settings(max_agents=4, min_agents=1)
    decided = policy.State(
        level=2,
        paused=True,
        actions={"pause": ("AgentwatchHostLoadHigh",)},
        updated_at=time.time() + 0.4,
    )
    public = state.decision(decided, settings, (0.0, "default"))
    state.write(
        tmp_path / "state" / "demo" / "controller.json",
        state.document(public, state.Memory(decided)),
    )
    with running_on(tmp_path / "state"):
        shown = run_cli("status", "--state-dir", str(tmp_path / "state"), "--spool-dir",
                        str(tmp_path))  # fmt: skip
    assert "because: AgentwatchHostLoadHigh (pause)" in shown.stdout, shown.stdout
    assert "updated 0s ago" in shown.stdout and "-0s" not in shown.stdout


def test_up_help_says_the_demo_runs_the_real_claude_code() -> None:
    shown = " ".join(run_cli("up", "--help").stdout.split())
    assert "the real Claude Code when it is installed" in shown
    assert "runs simulated Claude Code sessions" not in shown
