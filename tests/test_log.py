"""Loud failures, quiet logs: one line when an input starts failing, reminders, recovery."""

from __future__ import annotations

import logging

import pytest

from agentwatch.core.log import FailureGate


def test_failure_gate_logs_state_changes_not_attempts(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.gate")
    gate = FailureGate(logger, "input X", remind_every=10)
    with caplog.at_level(logging.INFO, logger="test.gate"):
        for _ in range(25):
            gate.failed("boom")
        assert gate.failing
        gate.succeeded()
        gate.succeeded()
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "input X failing: boom",
        "input X still failing after 10 attempts: boom",
        "input X still failing after 20 attempts: boom",
        "input X recovered after 25 failed attempts",
    ]
    assert not gate.failing


def test_one_log_format_everywhere() -> None:
    """Every component logs through core/log.py's format (demo.log included): no module sets
    up a format of its own."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    own = []
    for path in sorted(root.glob("[a-z]*/**/*.py")):
        if path.parts[len(root.parts)] in ("tests", "build", "bench") or ".venv" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("basicConfig", "Formatter")):  # fmt: skip
                own.append(f"{path.relative_to(root)}:{node.lineno}")
    assert own == ["core/log.py:13"]
