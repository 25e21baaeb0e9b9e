"""The controller's state file, replaced by something hostile (a symlink to /dev/zero, a FIFO,
a huge file, JSON nested 100k deep, bytes that are not UTF-8), is set aside, counted and logged
once, and `controller --once` starts fresh instead of hanging, eating memory or failing."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from agentwatch.controller import report
from agentwatch.core.bounded import STATE_LIMIT
from tests.conftest import free_port, run_cli, samples


def symlink_to_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def fifo(path: Path) -> None:
    os.mkfifo(path)


def huge(path: Path) -> None:
    with path.open("wb") as handle:  # sparse: no disk used
        handle.truncate(STATE_LIMIT + 1)


def deep(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def not_utf8(path: Path) -> None:
    path.write_bytes(b'{"internal": "\xff\xfe"}')


def huge_number(path: Path) -> None:
    path.write_text('{"internal": {"counters": {"decisions": {"shrink": 1' + "0" * 400 + "}}}}")


REPLACEMENTS: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "symlink-to-dev-zero": (symlink_to_zero, "not_regular", "a character device"),
    "fifo": (fifo, "not_regular", "a FIFO"),
    "huge": (huge, "too_large", "over the cap"),
    "deep-json": (deep, "invalid", "JSON nested too deep"),
    "not-utf8": (not_utf8, "invalid", "not UTF-8"),
}


def once(tmp_path: Path, state: Path) -> tuple[str, dict]:
    spool = tmp_path / "spool"
    ran = run_cli(
        "controller",
        "--once",
        "--alertmanager",
        f"http://127.0.0.1:{free_port()}",  # nobody listens: the fallback decides
        "--state-file",
        str(state),
        "--spool-dir",
        str(spool),
        env={"XDG_CONFIG_HOME": str(tmp_path / "no-config")},
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stderr, samples((spool / "controller.prom").read_text())


@pytest.mark.parametrize("case", sorted(REPLACEMENTS))
def test_a_hostile_state_file_is_set_aside_and_the_run_starts_fresh(
    tmp_path: Path, case: str
) -> None:
    make, reason, why = REPLACEMENTS[case]
    state = tmp_path / "controller.json"
    make(state)
    kind = stat.S_IFMT(os.lstat(state).st_mode)
    stderr, written = once(tmp_path, state)
    lines = [line for line in stderr.splitlines() if "state file" in line]
    assert len(lines) == 1, stderr
    assert why in lines[0] and "set aside as controller.json.unreadable-" in lines[0]
    assert lines[0].endswith("starting fresh")
    key = ("agentwatch_controller_state_discarded_total", (("reason", reason),))
    assert written[key] == 1
    assert json.loads(state.read_text())["mode"] == "fallback", "a fresh, valid state file"
    [aside] = [p for p in tmp_path.iterdir() if p.name.startswith("controller.json.unreadable-")]
    assert stat.S_IFMT(os.lstat(aside).st_mode) == kind, "renamed as it was, never opened"
    # The next run reads its own file: nothing more to log or count.
    stderr, written = once(tmp_path, state)
    assert "state file" not in stderr
    assert written[key] == 1, "the counter carries over"


def test_a_number_past_float_range_in_the_memory_is_not_fatal(tmp_path: Path) -> None:
    state = tmp_path / "controller.json"
    huge_number(state)
    stderr, written = once(tmp_path, state)
    assert "Traceback" not in stderr and "state file" not in stderr
    assert written[("agentwatch_controller_decisions_total", (("reason", "shrink"),))] == 0


@pytest.mark.parametrize("case", ["symlink-to-dev-zero", "fifo", "huge", "deep-json"])
def test_status_reads_no_hostile_state_file(tmp_path: Path, case: str) -> None:
    make, _, _ = REPLACEMENTS[case]
    state = tmp_path / "controller.json"
    make(state)
    assert report.read_decision(state) is None
