"""Shared fixtures: temp dirs laid out like a workstation, and the CLI run for real."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from bench.pairs import free_port  # never the same port twice in a run: tests import it here

CLI = [sys.executable, "-m", "agentwatch.cli"]


@contextlib.contextmanager
def running_on(state: Path) -> Iterator[None]:
    """Hold <state>/up.lock as a running `agentwatch up` does: `status` then reads the spool
    as live (with nothing running it says "stopped")."""
    from agentwatch.core import single

    state.mkdir(parents=True, exist_ok=True)
    lock = single.hold(state / "up.lock")
    try:
        yield
    finally:
        single.release(lock)


@contextlib.contextmanager
def midday_zone() -> Iterator[str]:
    """Run in a zone (TZ, for this process and its children) where it is now 12:00-12:59, so
    responses written "a few hours ago" fall on today's local day, week and month even when the
    suite runs just after midnight."""
    zone = f"AWT{time.gmtime().tm_hour - 12:+d}"  # POSIX sign: AWT-3 is three hours east of UTC
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield zone
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.fixture
def workdirs(tmp_path: Path) -> dict[str, Path]:
    dirs = {name: tmp_path / name for name in ("claude", "spool", "state")}
    for path in dirs.values():
        path.mkdir()
    return dirs


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    merged = dict(os.environ, **(env or {}))
    return subprocess.run(
        [*CLI, *args], env=merged, capture_output=True, text=True, timeout=timeout, check=False
    )


def run_ledger_once(dirs: dict[str, Path], *extra: str) -> subprocess.CompletedProcess:
    result = run_cli(
        "sentinel",
        "token-ledger",
        "--once",
        "--spool-dir",
        str(dirs["spool"]),
        "--state-dir",
        str(dirs["state"]),
        *extra,
        env={"CLAUDE_CONFIG_DIR": str(dirs["claude"])},
    )
    assert result.returncode == 0, result.stderr
    return result


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition as {(name, sorted labels): value}."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def token_totals(text: str) -> dict[str, float]:
    """Sum of agentwatch_tokens_total per type, plus 'cost'."""
    totals = {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_creation": 0.0, "cost": 0.0}
    for (name, labels), value in samples(text).items():
        if name == "agentwatch_tokens_total":
            totals[dict(labels)["type"]] += value
        elif name == "agentwatch_cost_usd_total":
            totals["cost"] += value
    return totals


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen]]:
    """Children started by a test; all of them are killed at the end, whatever happens."""
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def local_config(tmp_path: Path, extra: dict | None = None) -> Path:
    """A config whose every listener is on a free loopback port, so a test's `up` never
    collides with a running agentwatch (or another test); `extra` is merged on top."""
    values: dict = {
        "exporter": {"listen": f"127.0.0.1:{free_port()}"},
        "controller": {"listen": f"127.0.0.1:{free_port()}"},
        "stack": {
            name: f"127.0.0.1:{free_port()}"
            for name in ("prometheus_listen", "alertmanager_listen", "webhook_listen")
        },
        "demo": {"orchestrator_listen": f"127.0.0.1:{free_port()}"},
        "sentinels": {"otel": {"listen": f"127.0.0.1:{free_port()}"}},
    }
    for section, settings in (extra or {}).items():
        if isinstance(settings, dict) and isinstance(values.get(section), dict):
            values[section] = {**values[section], **settings}
        else:
            values[section] = settings
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(values))
    return path
