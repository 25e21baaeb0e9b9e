"""The running pair, for real: a line appended to a watched transcript reaches /metrics."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.conftest import CLI, free_port, token_totals
from tests.transcripts import append, assistant, encode, transcript


def _metrics(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            return response.read().decode()
    except OSError:
        return None


def _wait_for(port: int, predicate, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    text = None
    while time.monotonic() < deadline:
        text = _metrics(port)
        if text is not None and predicate(text):
            return text
        time.sleep(0.05)
    raise AssertionError(f"condition not met within {timeout} s; last scrape:\n{text}")


@pytest.mark.slow
def test_appended_line_shows_up_on_metrics(workdirs: dict[str, Path], processes: list) -> None:
    claude = workdirs["claude"]
    path = transcript(claude)
    path.write_bytes(encode(assistant(input_tokens=100)))
    port = free_port()
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude))
    sentinel = subprocess.Popen(
        [
            *CLI,
            "sentinel",
            "token-ledger",
            "--spool-dir",
            str(workdirs["spool"]),
            "--state-dir",
            str(workdirs["state"]),
        ],
        env=env,
    )
    processes.append(sentinel)
    processes.append(
        subprocess.Popen(
            [
                *CLI,
                "exporter",
                "--spool-dir",
                str(workdirs["spool"]),
                "--listen",
                f"127.0.0.1:{port}",
            ]
        )
    )
    _wait_for(port, lambda text: token_totals(text)["input"] == 100)

    append(path, encode(assistant(input_tokens=23)))
    _wait_for(port, lambda text: token_totals(text)["input"] == 123, timeout=5)

    # A new project folder and session appear while running: followed too.
    other = transcript(claude, slug="-home-alice-new", session="s9")
    other.write_bytes(encode(assistant(input_tokens=1000, cwd="/home/alice/new")))
    text = _wait_for(port, lambda text: token_totals(text)["input"] == 1123, timeout=5)
    assert 'project="new"' in text

    # Idle again: our own reads must not wake the loop (inotify open/close events).
    process = psutil.Process(sentinel.pid)
    time.sleep(0.5)
    before = sum(process.cpu_times()[:2])
    time.sleep(2.0)
    assert sum(process.cpu_times()[:2]) - before < 0.2, "the idle sentinel keeps working"

    sentinel.send_signal(signal.SIGTERM)
    assert sentinel.wait(timeout=10) == 0


def test_a_root_created_after_the_start_is_followed(tmp_path: Path, processes: list) -> None:
    """Claude Code run for the first time after agentwatch started: its projects/ folder
    appears later and is watched from the next heartbeat (`interval`), not only from the
    next full rescan."""
    claude = tmp_path / "claude"  # does not exist yet
    config = tmp_path / "config.yaml"
    config.write_text("sentinels:\n  token-ledger: {interval: 1, reconcile_interval: 1h}\n")
    spool = tmp_path / "spool"
    sentinel = subprocess.Popen(
        [*CLI, "--config", str(config), "sentinel", "token-ledger", "--spool-dir", str(spool),
         "--state-dir", str(tmp_path / "state")],
        env=dict(os.environ, CLAUDE_CONFIG_DIR=str(claude)),
    )  # fmt: skip
    processes.append(sentinel)
    deadline = time.monotonic() + 15
    while not (spool / "token-ledger.prom").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    transcript(claude).write_bytes(encode(assistant(input_tokens=77)))
    found = 0.0
    while time.monotonic() < deadline and found != 77:
        time.sleep(0.2)
        found = token_totals((spool / "token-ledger.prom").read_text()).get("input", 0.0)
    assert found == 77
