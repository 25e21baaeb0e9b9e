"""The fast tier (`scripts/test --fast`, docs/tests.md) leaves out what is slow by nature: every
module that runs a real agent CLI, the whole stack, the team, the soak and the wheel carries the
`slow` mark for the whole module, so a new test there cannot slip into the edit-test loop."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
# Slow by nature besides every `*real*` module (real Claude Code, Gemini, Codex, OpenCode,
# Bernstein): the whole stack, several hosts, the soak, the wheel, the rules' back-test.
WHOLE = ("test_stack", "test_team", "test_multihost", "test_soak", "test_wheel")
WHOLE += ("test_rules_backtest", "test_bernstein_continuation", "test_bernstein_metrics")


def module_marks(source: str) -> set[str]:
    """The marks of a module's top-level `pytestmark` (a mark or a list of marks)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            values = node.value.elts if isinstance(node.value, ast.List) else [node.value]
            return {ast.unparse(value) for value in values}
    return set()


def slow_by_nature() -> list[Path]:
    found = [path for path in TESTS.rglob("test_*.py") if "real" in path.stem]
    found += [TESTS / f"{name}.py" for name in WHOLE]
    return sorted(set(found))


def test_slow_by_nature_modules_are_marked_slow() -> None:
    paths = slow_by_nature()
    assert len(paths) >= 20 and all(path.exists() for path in paths), paths
    unmarked = [
        str(path.relative_to(ROOT))
        for path in paths
        if "pytest.mark.slow" not in module_marks(path.read_text(encoding="utf-8"))
    ]
    assert unmarked == []


def test_the_mark_check_can_fail() -> None:
    assert module_marks("import pytest\npytestmark = pytest.mark.ccusage\n") == {
        "pytest.mark.ccusage"
    }
    assert "pytest.mark.slow" in module_marks("pytestmark = [pytest.mark.soak, pytest.mark.slow]")
    assert module_marks("def f():\n    pytestmark = pytest.mark.slow\n") == set()


def test_scripts_test_fast_deselects_the_slow_mark() -> None:
    script = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    assert '"--fast"' in script and '-m "not slow"' in script
    assert "scripts/test\n" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")  # CI: all
