"""Who may import whom (docs/ARCHITECTURE.md), checked on every import in the package,
including the ones inside functions:

- `core` imports no other agentwatch package;
- `exporter`, `sentinels`, `controller` and `demo` import `core` and themselves only;
- a sentinel package imports only itself, `sentinels.shared` (the host-inspection helpers
  several sentinels use) and `sentinels.contract`; never another sentinel;
- `cli` may import everything, and only `cli` imports `demo`.

One named exception: the agent ledger publishes the token ledger's families for other agents,
so its budget periods and its label folding are the token ledger's own modules (SIBLINGS).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "exporter", "sentinels", "controller", "cli", "demo")
DATA = ("rules", "systemd", "grafana")
MAY_IMPORT = {
    "core": set(),
    "exporter": {"core"},
    "sentinels": {"core"},
    "controller": {"core"},
    "demo": {"core"},
    "cli": set(PACKAGES),
}

# (sentinel, module of another sentinel it may import): docs/ARCHITECTURE.md, "agent-ledger".
SIBLINGS = {
    ("agent_ledger", "agentwatch.sentinels.token_ledger.spend"),
    ("agent_ledger", "agentwatch.sentinels.token_ledger.fold"),
}


def imported(source: str) -> list[tuple[int, str]]:
    """(line, module) of every absolute agentwatch import in the source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            base = node.module
            found += [(node.lineno, base)]
            # `from agentwatch.sentinels import resources` imports a sentinel package too
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.startswith("agentwatch.")]


def violation(importer: str, target: str) -> str | None:
    """Why `importer` (a module name) must not import `target`, or None when it may."""
    layer, wanted = importer.split(".")[1], target.split(".")[1]
    if wanted not in PACKAGES + DATA:
        return None  # `from agentwatch.core import config`: the names are checked as modules
    if wanted == layer:
        return _within_sentinels(importer, target) if layer == "sentinels" else None
    if wanted in MAY_IMPORT.get(layer, set()):
        return None
    return f"{layer} may not import {wanted}"


def _within_sentinels(importer: str, target: str) -> str | None:
    """Inside sentinels/: a sentinel imports only itself, `shared` and `contract`; `shared`
    only itself; the registry and the contract may import any of them."""
    mine, theirs = _part(importer), _part(target)
    if theirs is None or mine in (None, "contract", "registry"):
        return None
    if mine == "shared":
        return None if theirs == "shared" else "sentinels.shared may import only itself and core"
    if theirs in (mine, "shared", "contract"):
        return None
    if any((mine, module) in SIBLINGS for module in _prefixes(target)):
        return None
    return f"sentinel {mine} may not import {theirs} (only itself, shared and contract)"


def _prefixes(module: str) -> list[str]:
    """`a.b.c` -> a, a.b, a.b.c (`from x.fold import OTHER` names x.fold.OTHER)."""
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts) + 1)]


def _part(module: str) -> str | None:
    """`agentwatch.sentinels.X...` -> X; None for the package itself."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else None


def modules() -> list[tuple[str, Path]]:
    found = []
    for package in PACKAGES + DATA:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append(("agentwatch." + ".".join(parts), path))
    return found


MODULES = modules()


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[name for name, _ in MODULES])
def test_imports_follow_the_layers(module: str, path: Path) -> None:
    problems = [
        f"{path.relative_to(ROOT)}:{line}: imports {target}: {why}"
        for line, target in imported(path.read_text(encoding="utf-8"))
        if (why := violation(module, target)) is not None
    ]
    assert problems == []


def test_the_layer_check_can_fail() -> None:
    cases = {
        ("agentwatch.core.config", "agentwatch.sentinels.registry"): "core may not import",
        ("agentwatch.exporter.server", "agentwatch.controller.state"): "exporter may not",
        ("agentwatch.controller.main", "agentwatch.demo.orchestrator"): "controller may not",
        ("agentwatch.sentinels.idle_error.panes", "agentwatch.sentinels.resources.tmux"): (
            "sentinel idle_error may not import resources"
        ),
        ("agentwatch.sentinels.shared.tmux", "agentwatch.sentinels.footprint"): "shared may",
        ("agentwatch.sentinels.agent_ledger.main", "agentwatch.sentinels.token_ledger.ledger"): (
            "sentinel agent_ledger may not import token_ledger"
        ),
    }
    for (importer, target), why in cases.items():
        assert why in (violation(importer, target) or ""), (importer, target)
    allowed = [
        ("agentwatch.cli.up", "agentwatch.demo.workload"),
        ("agentwatch.sentinels.idle_error.panes", "agentwatch.sentinels.shared.tmux"),
        ("agentwatch.sentinels.registry", "agentwatch.sentinels.footprint"),
        ("agentwatch.controller.main", "agentwatch.core.loop"),
        (
            "agentwatch.sentinels.agent_ledger.main",
            "agentwatch.sentinels.token_ledger.spend.PERIODS",
        ),
    ]
    for importer, target in allowed:
        assert violation(importer, target) is None, (importer, target)
    source = "def f():\n    from agentwatch.sentinels.resources import tmux\n"
    assert (2, "agentwatch.sentinels.resources.tmux") in imported(source)  # lazy imports count


def test_every_package_folder_is_checked() -> None:
    checked = {name.split(".")[1] for name, _ in MODULES}
    assert checked == set(PACKAGES + DATA)
    assert len(MODULES) > 100


def test_benchmarks_import_without_path_tricks() -> None:
    for path in sorted((ROOT / "bench").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "path"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ):
                pytest.fail(f"{path.relative_to(ROOT)}:{node.lineno} changes sys.path")
        assert "from tests" not in path.read_text(encoding="utf-8"), path
