"""The running pair, for real: a statusline snapshot and hook events reach the exporter's
/metrics through a live claude-sessions sentinel woken by inotify."""

from __future__ import annotations

import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.claude_spool import append, event, snapshot
from tests.conftest import CLI, free_port, samples

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`


def _scrape(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            return response.read().decode()
    except OSError:
        return None


def _within(port: int, seconds: float, wanted: tuple[str, dict[str, str], float]) -> float:
    """Seconds until the sample shows (AssertionError past the bound)."""
    name, labels, value = wanted
    key = (name, tuple(sorted(labels.items())))
    started = time.monotonic()
    text = None
    while time.monotonic() - started < seconds:
        text = _scrape(port)
        if text is not None and samples(text).get(key) == value:
            return time.monotonic() - started
        time.sleep(0.02)
    raise AssertionError(f"{name}{labels} {value} not served within {seconds} s:\n{text}")


def test_a_snapshot_and_an_end_reach_the_exporter_within_two_seconds(
    tmp_path: Path, processes: list
) -> None:
    spool, state, port = tmp_path / "spool", tmp_path / "state", free_port()
    dirs = ["--spool-dir", str(spool), "--state-dir", str(state)]
    sentinel = subprocess.Popen([*CLI, "sentinel", "claude-sessions", *dirs])
    processes.append(sentinel)
    serve = ["--spool-dir", str(spool), "--listen", f"127.0.0.1:{port}"]
    exporter = subprocess.Popen([*CLI, "exporter", *serve])
    processes.append(exporter)
    # Both up: the sentinel's first file is served (it has no session yet).
    _within(port, 30, ("agentwatch_claude_sessions", {"state": "working"}, 0))

    limits = {"five_hour": {"used_ratio": 0.42, "resets_at": time.time() + 3600}}
    snapshot(state, "s1", p="web", rate_limits=limits)
    took = _within(port, 2, ("agentwatch_quota_used_ratio", {"window": "five_hour"}, 0.42))
    print(f"quota reading on /metrics after {took:.2f} s")

    append(state, event("s1", "SessionStart", p="web", head=""))
    append(state, event("s1", "SessionEnd", p="web", reason="other"))
    labels = {"session": "s1", "project": "web", "state": "ended"}
    took = _within(port, 2, ("agentwatch_claude_session_state", labels, 1))
    print(f"SessionEnd on /metrics after {took:.2f} s")

    # Idle again: our own reads must not wake the loop.
    process = psutil.Process(sentinel.pid)
    time.sleep(0.5)
    before = sum(process.cpu_times()[:2])
    time.sleep(2.0)
    assert sum(process.cpu_times()[:2]) - before < 0.2, "the idle sentinel keeps working"
    sentinel.send_signal(signal.SIGTERM)
    assert sentinel.wait(timeout=10) == 0
