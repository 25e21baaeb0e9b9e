"""`up` forks its own children (cli/forked.py): they share the modules `up` imported, never
inherit its lock, and behave as `python -m agentwatch.cli ...` would."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests.conftest import CLI, local_config

ROOT = Path(__file__).resolve().parents[1]
FORK_ONE = """
import sys
from pathlib import Path
from agentwatch.cli import forked
log = Path(sys.argv[1])
child = forked.start("probe", sys.argv[2], sys.argv[3:], {"PATH": "/usr/bin:/bin"}, log)
print(child.wait(timeout=60))
"""


def fork_one(tmp_path: Path, module: str, *args: str) -> tuple[int, str]:
    """Fork `module.main(args)` from a fresh one-thread interpreter: its status and log."""
    log = tmp_path / "child.log"
    ran = subprocess.run(
        [sys.executable, "-c", FORK_ONE, str(log), module, *args],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return int(ran.stdout.strip().splitlines()[-1]), log.read_text()


def test_a_forked_command_writes_its_log_and_exits_with_its_status(tmp_path: Path) -> None:
    code, log = fork_one(tmp_path, "agentwatch.cli.entry", "--version")
    assert code == 0 and log.startswith("agentwatch ")
    code, log = fork_one(tmp_path, "agentwatch.cli.entry", "no-such-command")
    assert code == 2 and "invalid choice" in log  # argparse's usage error, its status


FORK_PREPARED = """
import os, sys
from pathlib import Path
from agentwatch.cli import forked
log, args = Path(sys.argv[1]), sys.argv[2:]
prepared = forked.prepare("agentwatch.cli.entry", args, dict(os.environ))
if prepared is None:
    print("not prepared")
    sys.exit(0)
child = forked.start("probe", "agentwatch.cli.entry", args, dict(os.environ), log, False, prepared)
print(child.wait(timeout=120))
"""


def fork_prepared(tmp_path: Path, *args: str) -> tuple[str, str]:
    """Parse and load in a fresh interpreter, fork the prepared command: what it printed
    (its status, or "not prepared") and what reached its stdout and stderr."""
    log = tmp_path / "child.log"
    ran = subprocess.run(
        [sys.executable, "-c", FORK_PREPARED, str(log), *args],
        capture_output=True, text=True, timeout=180, cwd=ROOT,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip(), ran.stderr + (log.read_text() if log.exists() else "")


def test_a_prepared_command_runs_as_its_command_line_would(tmp_path: Path) -> None:
    """`up` parses a child's command line and loads its config before the fork; the child
    then does what `python -m agentwatch.cli ...` does with them."""
    spool, state = tmp_path / "spool", tmp_path / "state"
    config = str(local_config(tmp_path))
    status, _ = fork_prepared(tmp_path, "--config", config, "sentinel", "footprint", "--once",
                              "--spool-dir", str(spool), "--state-dir", str(state))  # fmt: skip
    assert status == "0"
    assert "agentwatch_" in (spool / "footprint.prom").read_text()


def test_a_command_that_cannot_be_prepared_is_left_to_the_child(tmp_path: Path) -> None:
    """A bad command line or config is not `up`'s to print: the child finds it again and
    says so in its own log."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("exporter:\n  listen: nowhere\n")
    for args in (["--config", str(bad), "exporter"], ["sentinel", "no-such-sentinel"]):
        status, said = fork_prepared(tmp_path, *args)
        assert (status, said) == ("not prepared", ""), args
    from agentwatch.cli import forked

    assert forked.prepare("agentwatch.demo.workload", ["x"], {}) is None


def test_only_agentwatch_commands_are_forked() -> None:
    from agentwatch.cli import forked

    args = ["--config", "c.json", "sentinel", "footprint"]
    assert forked.entry_of([sys.executable, "-m", "agentwatch.cli", *args]) == (
        "agentwatch.cli.entry",
        args,
    )
    assert forked.entry_of(["/usr/bin/prometheus", "--config.file=p.yml"]) is None
    assert forked.entry_of([sys.executable, "-m", "agentwatch.demo.workload", "x"]) is None
    assert "agentwatch.sentinels.footprint.main" in forked.modules_for(
        [[sys.executable, "-m", "agentwatch.cli", *args]]
    )


@pytest.mark.slow
def test_up_children_are_forked_share_pages_and_never_hold_its_lock(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    state, spool = tmp_path / "state", tmp_path / "spool"
    process = subprocess.Popen(
        [*CLI, "--config", str(local_config(tmp_path)), "up", "--no-demo", "--no-stack",
         "--state-dir", str(state), "--spool-dir", str(spool)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        up = psutil.Process(process.pid)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (spool / "footprint.prom").exists():
            time.sleep(0.5)
        assert (spool / "footprint.prom").exists(), "the forked footprint sentinel wrote nothing"
        children = {child.name(): child for child in up.children()}
        assert {"exporter", "footprint", "token-ledger", "resources"} <= set(children)
        lock = str(state / "up.lock")
        for name, child in children.items():
            assert child.cmdline() == up.cmdline(), f"{name} was started anew, not forked"
            assert lock not in [opened.path for opened in child.open_files()], name
            rollup = Path(f"/proc/{child.pid}/smaps_rollup").read_text().split()
            pss, rss = (int(rollup[rollup.index(key) + 1]) for key in ("Pss:", "Rss:"))
            assert pss < 0.7 * rss, f"{name}: PSS {pss} of RSS {rss} kB, its pages not shared"
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    assert "agentwatch stopped." in output
    assert all(not child.is_running() for child in children.values())


@pytest.mark.slow
def test_the_sink_answers_in_up_and_a_killed_child_is_forked_again(tmp_path: Path) -> None:
    """The webhook sink is served by `up` itself (no process of its own, no thread: `up`
    keeps one thread, so a child that dies is forked again, not started anew), and it
    answers before and after such a restart."""
    from agentwatch.cli import stack

    if stack.missing():
        pytest.skip(f"the stack needs {', '.join(stack.missing())} (scripts/setup)")
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / "config"))
    state, spool = tmp_path / "state", tmp_path / "spool"
    config = local_config(tmp_path)
    listen = yaml.safe_load(config.read_text())["stack"]["webhook_listen"]
    process = subprocess.Popen(
        [*CLI, "--config", str(config), "up", "--no-demo",
         "--state-dir", str(state), "--spool-dir", str(spool)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    body = json.dumps({"status": "firing", "alerts": [{"labels": {"alertname": "Probe"}}]})

    def post() -> int | None:
        try:
            conn = http.client.HTTPConnection(*listen.rsplit(":", 1), timeout=10)
            conn.request("POST", "/", body=body, headers={"Content-Type": "application/json"})
            return conn.getresponse().status
        except OSError:
            return None

    def child(name: str) -> psutil.Process | None:
        return next((c for c in up.children() if c.name() == name), None)

    try:
        up = psutil.Process(process.pid)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and (post() != 200 or child("footprint") is None):
            time.sleep(0.5)
        assert post() == 200, "the sink in `up` does not answer"
        assert "webhook-sink" not in {c.name() for c in up.children()}
        first = child("footprint")
        assert first is not None
        first.kill()
        first.wait(30)
        again = None
        while time.monotonic() < deadline + 60 and (again is None or again.pid == first.pid):
            again = child("footprint")
            time.sleep(0.5)
        assert again is not None and again.pid != first.pid, "footprint was not restarted"
        assert again.cmdline() == up.cmdline(), "restarted anew, not forked"
        assert up.num_threads() == 1
        assert post() == 200
        log = (state / "stack" / "alerts.jsonl").read_text().splitlines()
        assert len(log) >= 2 and all(json.loads(line)["payload"]["alerts"] for line in log)
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    assert "footprint exited with status" in output and "Probe" in output
