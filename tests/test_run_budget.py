"""The run file of the budget guard: start, stop, show, and bad files that must not blind it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentwatch.cli.main import main
from agentwatch.core import run_budget


def test_start_then_read_then_stop(tmp_path: Path) -> None:
    assert not run_budget.read(tmp_path).active
    run_budget.start(tmp_path, 1_800_000_000.5)
    assert run_budget.read(tmp_path) == run_budget.Run(1_800_000_000.5)
    assert run_budget.stop(tmp_path)
    assert not run_budget.stop(tmp_path)
    assert run_budget.read(tmp_path) == run_budget.Run(None)


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"{not json", "unreadable or not JSON"),
        (b'{"started_at": "yesterday"}', "started_at is not a positive number"),
        (b'{"started_at": -5}', "started_at is not a positive number"),
        (b'{"started_at": true}', "started_at is not a positive number"),
        (b"[1, 2]", "started_at is not a positive number"),
    ],
)
def test_a_bad_file_reads_as_no_run_and_says_why(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    run_budget.path(tmp_path).write_bytes(content)
    found = run_budget.read(tmp_path)
    assert not found.active
    assert found.problem is not None and found.problem.startswith(problem)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(run_budget.path(tmp_path))
    found = run_budget.read(tmp_path)
    assert (found.active, found.problem) == (False, "refused (not_regular)")


def test_the_command_starts_shows_and_stops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yml"
    config.write_text(f"state_dir: {tmp_path / 'state'}\n", encoding="utf-8")
    base = ["--config", str(config), "run-budget"]
    assert main([*base, "show"]) == 0
    assert "no run started" in capsys.readouterr().out
    assert main([*base, "start"]) == 0
    assert "run started at" in capsys.readouterr().out
    saved = json.loads((tmp_path / "state" / "run-budget.json").read_text(encoding="utf-8"))
    assert saved["started_at"] > 0
    assert main([*base, "show"]) == 0
    assert "run started at" in capsys.readouterr().out
    assert main([*base, "stop"]) == 0
    assert not (tmp_path / "state" / "run-budget.json").exists()
    (tmp_path / "state" / "run-budget.json").write_text("{", encoding="utf-8")
    assert main([*base, "show"]) == 1
    assert "unreadable or not JSON" in capsys.readouterr().out
