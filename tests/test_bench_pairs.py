"""bench/pairs.py, the harness of the peer benchmarks: ratios per pair, their spread, the
alternating order, and the exit status (1 on a missed target, 2 when a side is missing), on
tiny real commands. No timing is asserted: only which side did more work."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "bench" / "pairs.py"
BUSY = f"{sys.executable} -c 'sum(i * i for i in range(3_000_000))'"
IDLE = f"{sys.executable} -S -c pass"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_pairs", PAIRS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_pairs"] = module
    spec.loader.exec_module(module)
    return module


def test_ratios_spread_and_order() -> None:
    pairs = load()
    calls: list[str] = []

    def side(name: str, cpus: list[float]) -> Callable[[], Any]:
        def run() -> Any:
            calls.append(name)
            return pairs.Sample(1.0, cpus[len([c for c in calls if c == name]) - 1], 10.0)

        return run

    result = pairs.run_pairs(
        ("a", side("a", [2.0, 3.0, 4.0, 9.0])),
        ("b", side("b", [1.0, 1.0, 2.0, 1.0])),
        4,
        progress=False,
    )
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert result.ratios("cpu_s") == [2.0, 3.0, 2.0, 9.0]
    assert result.spread("cpu_s") == (2.0, 2.5, 9.0)
    assert pairs.ratio_check(result, "cpu_s", 2.5).ok
    assert not pairs.ratio_check(result, "cpu_s", 2.4).ok
    assert pairs.verdict([pairs.ratio_check(result, "cpu_s", 2.4)]) == 1
    assert pairs.verdict([pairs.ratio_check(result, "wall_s", 1.0)]) == 0
    assert "2.5" in pairs.table(result)


def test_a_whole_process_is_measured() -> None:
    pairs = load()
    busy = pairs.run_command(
        [sys.executable, "-c", "print(sum(i * i for i in range(3_000_000)))"], timeout=120
    )
    idle = pairs.run_command([sys.executable, "-S", "-c", "pass"], timeout=120)
    assert busy.out.strip() == str(sum(i * i for i in range(3_000_000))).encode()
    assert busy.cpu_s > idle.cpu_s
    assert busy.wall_s > 0 and busy.rss_mib > 1


def test_a_failing_command_is_an_error_not_a_sample() -> None:
    pairs = load()
    try:
        pairs.run_command([sys.executable, "-c", "import sys; sys.exit('broken')"], timeout=60)
    except RuntimeError as err:
        assert "broken" in str(err)
    else:
        raise AssertionError("a failed run was measured")


def cli(a: str, b: str, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PAIRS), "--a", a, "--b", b, "--pairs", "2", *more],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_exit_status_follows_the_target() -> None:
    missed = cli(BUSY, IDLE)
    assert missed.returncode == 1, missed.stdout + missed.stderr
    assert "FAIL" in missed.stdout and "load average" in missed.stdout
    met = cli(IDLE, BUSY)
    assert met.returncode == 0, met.stdout + met.stderr
    assert "verdict: PASS" in met.stdout


def test_a_missing_peer_is_a_setup_error() -> None:
    done = cli(IDLE, "/nonexistent/peer --json")
    assert done.returncode == 2
    assert "setup error" in done.stdout


# Every benchmark must be able to fail: its entry point goes through pairs.main_guard (a setup
# problem is exit 2, never a pass) and it decides through pairs.verdict (a missed target is
# exit 1), with no exit status picked by hand; and bench/README.md's table names each one with
# its peer or the reason it has none, and its target. Read by AST: no benchmark is run.
BENCH = ROOT / "bench"


def _benches() -> list[Path]:
    found = sorted(BENCH.glob("bench_*.py"))
    assert len(found) >= 15, found
    return found


def _called(node: ast.AST, name: str) -> bool:
    return any(isinstance(call, ast.Call) and _is(call.func, name) for call in ast.walk(node))


def _is(func: ast.expr, name: str) -> bool:
    return (isinstance(func, ast.Name) and func.id == name) or (
        isinstance(func, ast.Attribute) and func.attr == name
    )


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def _own_returns(function: ast.FunctionDef) -> list[ast.Return]:
    """The return statements of `function` itself, not of functions defined inside it."""
    found, todo = [], list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _guarded(tree: ast.Module, path: Path) -> list[ast.FunctionDef]:
    """The functions main_guard runs (named, or called by a lambda), checking that the
    `__main__` block exits with main_guard's status or with main()'s, which returns it."""
    functions = _functions(tree)
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
    ]
    assert len(blocks) == 1, f"{path.name}: no `if __name__ == '__main__'` block"
    exits = [
        node
        for node in ast.walk(blocks[0])
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("sys.exit", "SystemExit")
    ]
    assert len(exits) == 1 and len(exits[0].args) == 1, f"{path.name}: one exit in __main__"
    status = exits[0].args[0]
    assert isinstance(status, ast.Call), f"{path.name}: exits with {ast.unparse(status)}"
    guards: list[ast.Call] = []
    if _is(status.func, "main_guard"):
        guards.append(status)
    else:
        assert ast.unparse(status.func) == "main", f"{path.name}: exits with {ast.unparse(status)}"
        returns = _own_returns(functions["main"])
        for node in returns:
            value = node.value
            assert isinstance(value, ast.Call) and _is(value.func, "main_guard"), (
                f"{path.name}: main() returns {ast.unparse(value) if value else None}, "
                "not main_guard(...)"
            )
            guards.append(value)
    bodies = []
    for guard in guards:
        body = guard.args[0]
        if isinstance(body, ast.Lambda):
            body = body.body.func if isinstance(body.body, ast.Call) else body.body
        name = ast.unparse(body)
        if name in functions:
            bodies.append(functions[name])
        else:  # a function defined inside main (body = ...), or a shared module's
            nested = [
                node
                for node in ast.walk(tree)
                if isinstance(node, ast.FunctionDef) and node.name == name
            ]
            bodies += nested
    return bodies


def _local_modules(tree: ast.Module) -> list[Path]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return [BENCH / f"{name}.py" for name in sorted(names) if (BENCH / f"{name}.py").is_file()]


def test_every_bench_ends_in_a_verdict() -> None:
    for path in _benches():
        tree = ast.parse(path.read_text(), str(path))
        for function in _guarded(tree, path):
            for node in _own_returns(function):
                value = node.value
                assert not (isinstance(value, ast.Constant) and isinstance(value.value, int)), (
                    f"{path.name}: {function.name}() returns the exit status "
                    f"{ast.unparse(value)} by hand; decide through pairs.verdict"
                )
        shared = [ast.parse(module.read_text()) for module in _local_modules(tree)]
        assert any(_called(module, "verdict") for module in [tree, *shared]), (
            f"{path.name}: no pairs.verdict (a missed target must exit 1)"
        )


def test_the_readme_table_names_every_bench() -> None:
    text = (BENCH / "README.md").read_text()
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if line.startswith("| `bench_") and len(cells) >= 4:
            for name in re.findall(r"bench_\w+\.py", cells[0]):
                rows[name] = cells
    for path in _benches():
        assert path.name in rows, f"bench/README.md's table has no row for {path.name}"
        cells = rows[path.name]
        assert all(cells[1:4]), f"{path.name}: an empty cell in {cells}"
        peer = cells[2].lower()
        assert not peer.startswith("none") or ":" in peer, (
            f"{path.name}: no peer, and no reason given in bench/README.md"
        )
