"""What the hostile ledger tests share: a live sentinel, its spool file, promtool on it."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from agentwatch.core import spool
from tests.conftest import CLI, samples

SPOOL_FILE = "token-ledger.prom"


def spool_text(dirs: dict[str, Path]) -> str:
    """The ledger's spool file, parsed by the project's own reader (it must survive it)."""
    raw = (dirs["spool"] / SPOOL_FILE).read_bytes()
    text = raw.decode("utf-8")
    spool.parse_text(text)
    return text


def promtool_clean(path: Path) -> None:
    """`promtool check metrics` accepts the file as it is on disk."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is required (Debian package prometheus); scripts/setup installs it"
    checked = subprocess.run(
        [promtool, "check", "metrics"], input=path.read_bytes(), capture_output=True, check=False
    )
    assert checked.returncode == 0, (checked.stdout + checked.stderr).decode(errors="replace")


def value(text: str, name: str, **labels: str) -> float:
    """One sample's value (0 when absent)."""
    wanted = tuple(sorted(labels.items()))
    return samples(text).get((name, wanted), 0.0)


def rejected(text: str, reason: str) -> float:
    return value(text, "agentwatch_ledger_lines_rejected_total", reason=reason)


def start_live(dirs: dict[str, Path], processes: list, *extra: str) -> subprocess.Popen:
    """The sentinel as systemd runs it (no --once), its log captured in a file."""
    log = open(dirs["state"].parent / "ledger.log", "wb")  # noqa: SIM115 (closed by the fixture)
    process = subprocess.Popen(
        [
            *CLI, "sentinel", "token-ledger", "--spool-dir", str(dirs["spool"]),
            "--state-dir", str(dirs["state"]), *extra,
        ],
        env=dict(os.environ, CLAUDE_CONFIG_DIR=str(dirs["claude"])),
        stdout=subprocess.DEVNULL,
        stderr=log,
    )  # fmt: skip
    log.close()
    processes.append(process)
    return process


def live_log(dirs: dict[str, Path]) -> str:
    return (dirs["state"].parent / "ledger.log").read_text(errors="replace")


def wait_for(dirs: dict[str, Path], predicate: Callable[[str], bool], timeout: float = 30.0) -> str:
    """The spool text once `predicate` holds (the timeout only ends a broken run)."""
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        path = dirs["spool"] / SPOOL_FILE
        if path.exists():
            text = path.read_text(errors="replace")
            try:
                if predicate(text):
                    return spool_text(dirs)
            except (ValueError, KeyError):
                pass
        time.sleep(0.05)
    raise AssertionError(f"condition not met within {timeout} s; last spool file:\n{text[-3000:]}")


def log_lines(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]
