"""The families several sentinels write are declared once (core/session_families.py): no
sentinel builds one of them under its own HELP text, so the exporter's merge cannot show
whichever text it read first."""

from __future__ import annotations

import ast
from pathlib import Path

from agentwatch.core import session_families as shared
from agentwatch.sentinels.agent_ledger import main as agent_main
from agentwatch.sentinels.token_ledger import metrics as token_metrics

ROOT = Path(__file__).resolve().parents[1]
NAMES = {family.name for family in vars(shared).values() if isinstance(family, shared.Shared)}


def own_declarations(source: str) -> list[tuple[int, str]]:
    """(line, name) of every `...MetricFamily("<shared name>", ...)` in the source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        first = node.args[0]
        if (
            called.endswith("MetricFamily")
            and isinstance(first, ast.Constant)
            and first.value in NAMES
        ):
            found.append((node.lineno, first.value))
    return found


def test_no_sentinel_declares_a_shared_family_of_its_own() -> None:
    assert len(NAMES) >= 9
    problems = [
        f"{path.relative_to(ROOT)}:{line}: declares {name}"
        for folder in ("sentinels", "exporter", "controller")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, name in own_declarations(path.read_text(encoding="utf-8"))
    ]
    assert problems == []
    bad = 'f = CounterMetricFamily("agentwatch_session_tokens", "my own help", labels=[])\n'
    assert own_declarations(bad) == [(1, "agentwatch_session_tokens")]  # the check can fail


def test_both_ledgers_render_the_one_help_text() -> None:
    for family in (shared.TOKENS, shared.COST, shared.RESPONSES):
        assert token_metrics.COUNTERS[family.name][0] == family.help
        assert agent_main.COUNTERS[family.name][0] == family.help
    assert shared.SESSION_TOKENS.counter().documentation == shared.SESSION_TOKENS.help
