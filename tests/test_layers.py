"""Who may import whom (docs/ARCHITECTURE.md), checked on every import in the package,
including the ones inside functions and the relative ones (`from . import x`, `from ..core
import y`: resolved against the importing module's name):

- `core` imports no other agentwatch package;
- `exporter`, `sentinels`, `controller` and `demo` import `core` and themselves only;
- a sentinel package imports only itself, `sentinels.shared` (the host-inspection helpers
  several sentinels use) and `sentinels.contract`; never another sentinel;
- `cli` may import everything, and only `cli` imports `demo`;
- a sentinel's spool file is named only in its own package and in `core/spool_readers.py`,
  the declared reader every other component reads it through, and every family that reader
  reads is one its sentinel declares.

No exceptions: what two sentinels must agree on (the ledgers' shared families, budget
periods, label folding, writer lock) is in `core`.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
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


def imported(source: str, module: str = "", package: bool = False) -> list[tuple[int, str]]:
    """(line, module) of every agentwatch import in the source; relative ones are resolved
    against `module`, the importer's name (`package`: its source is that package's
    __init__.py)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node, module, package)
            found += [(node.lineno, base)]
            # `from agentwatch.sentinels import resources` imports a sentinel package too
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.startswith("agentwatch.")]


def absolute(node: ast.ImportFrom, module: str, package: bool) -> str:
    """The absolute name a `from ... import` reads from: `from ..core import y` in
    agentwatch.sentinels.x is agentwatch.core (Python's own rule, importlib.util.resolve_name)."""
    if node.level == 0:
        return node.module or ""
    parts = module.split(".") if package else module.split(".")[:-1]
    if not module or node.level - 1 >= len(parts):
        raise ValueError(f"{module}:{node.lineno}: relative import beyond the top package")
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def problems(module: str, path: Path) -> list[str]:
    """Every import of this module (file) that breaks the layers, as `file:line: why`."""
    found = imported(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [
        f"{shown}:{line}: imports {target}: {why}"
        for line, target in found
        if (why := violation(module, target)) is not None
    ]


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
    return f"sentinel {mine} may not import {theirs} (only itself, shared and contract)"


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
    assert problems(module, path) == []


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
        ("agentwatch.sentinels.agent_ledger.main", "agentwatch.sentinels.token_ledger.spend"): (
            "sentinel agent_ledger may not import token_ledger"  # no sibling exception
        ),
    }
    for (importer, target), why in cases.items():
        assert why in (violation(importer, target) or ""), (importer, target)
    allowed = [
        ("agentwatch.cli.up", "agentwatch.demo.workload"),
        ("agentwatch.sentinels.idle_error.panes", "agentwatch.sentinels.shared.tmux"),
        ("agentwatch.sentinels.registry", "agentwatch.sentinels.footprint"),
        ("agentwatch.controller.main", "agentwatch.core.loop"),
        ("agentwatch.sentinels.agent_ledger.main", "agentwatch.core.spend.PERIODS"),
    ]
    for importer, target in allowed:
        assert violation(importer, target) is None, (importer, target)
    source = "def f():\n    from agentwatch.sentinels.resources import tmux\n"
    assert (2, "agentwatch.sentinels.resources.tmux") in imported(source)  # lazy imports count


def test_relative_imports_are_resolved_and_checked(tmp_path: Path) -> None:
    """`from ..token_ledger import ledger` is the same import as the absolute one: it fails
    the same way, from a real file through the check every module gets."""
    cases = {
        # (importer, is __init__.py, source) -> resolved names
        ("agentwatch.sentinels.agent_ledger.qwen", False, "from . import ccusage_rules\n"): [
            "agentwatch.sentinels.agent_ledger",
            "agentwatch.sentinels.agent_ledger.ccusage_rules",
        ],
        ("agentwatch.sentinels.agent_ledger", True, "from .base import AgentUsage\n"): [
            "agentwatch.sentinels.agent_ledger.base",
            "agentwatch.sentinels.agent_ledger.base.AgentUsage",
        ],
        ("agentwatch.sentinels.otel.fold", False, "from ...core import spool\n"): [
            "agentwatch.core",
            "agentwatch.core.spool",
        ],
    }
    for (module, package, source), names in cases.items():
        assert [name for _, name in imported(source, module, package)] == names, source
    bad = tmp_path / "agentwatch" / "sentinels" / "agent_ledger" / "bad.py"
    bad.parent.mkdir(parents=True)
    for source, why in {
        "from ..token_ledger import ledger\n": "sentinel agent_ledger may not import token_ledger",
        "def f():\n    from ...controller import state\n": "sentinels may not import controller",
        "from .. import resources\n": "sentinel agent_ledger may not import resources",
    }.items():
        bad.write_text(source, encoding="utf-8")
        found = problems("agentwatch.sentinels.agent_ledger.bad", bad)
        assert found and all(why in line for line in found), (source, found)
    bad.write_text("from .... import core\n", encoding="utf-8")
    with pytest.raises(ValueError, match="beyond the top package"):
        problems("agentwatch.sentinels.agent_ledger.bad", bad)


def test_every_package_folder_is_checked() -> None:
    checked = {name.split(".")[1] for name, _ in MODULES}
    assert checked == set(PACKAGES + DATA)
    assert len(MODULES) > 100


def test_agentwatch_resolves_from_the_checkout() -> None:
    """`agentwatch/<folder>` is a committed relative symlink to each package folder, so every
    module's name is a path from the checkout's root (what mypy and an editor follow), and
    Python finds it with nothing installed (-S: no site-packages, no editable finder)."""
    entries = list((ROOT / "agentwatch").iterdir())
    links = {path.name: os.readlink(path) for path in entries if path.is_symlink()}
    assert links == {folder: f"../{folder}" for folder in PACKAGES + DATA}
    others = {path.name for path in entries if not path.is_symlink()}
    assert others <= {"__init__.py", "__pycache__"} and (ROOT / "agentwatch/__init__.py").is_file()
    for module, path in MODULES:
        named = ROOT.joinpath(*module.split("."))
        found = named / "__init__.py" if path.name == "__init__.py" else named.with_suffix(".py")
        assert found.resolve() == path.resolve(), module
    code = "import agentwatch.core.fold as m; print(m.__file__)"
    ran = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == str(ROOT / "agentwatch" / "core" / "fold.py")


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


# -- the spool files: who may name them -----------------------------------------------------

READER = "agentwatch.core.spool_readers"  # the declared reader (docs/ARCHITECTURE.md)
# The code that may read a file at run time; the data folders' code (grafana/build.py) builds
# dashboards over Prometheus and reads no spool, its legends name sentinels.
CODE = [(name, path) for name, path in MODULES if name.split(".")[1] in PACKAGES]


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the constants that are docstrings (prose may mention a file)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            found.add(id(first.value))
    return found


def _config_sections(tree: ast.AST) -> set[int]:
    """ids of the constants that name a sentinel's config section or a path segment, not its
    spool file: `cfg.sentinel("otel")`, `{"sentinels": {"token-ledger": ...}}`,
    `home / ".copilot" / "otel"`."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "sentinel" and node.args:
                found.add(id(node.args[0]))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                config = isinstance(key, ast.Constant) and key.value == "sentinels"
                if config and isinstance(value, ast.Dict):
                    found.update(id(k) for k in value.keys if k is not None)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found.update(id(side) for side in (node.left, node.right))
    return found


def spool_names(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, literal) of every string literal naming one of the spool files: a sentinel's
    name (`"idle-error"`, as `spool_path` and the readers take it) or its file name
    (`"idle-error.prom"`, anywhere in the literal), and every call of `spool_path`."""
    tree = ast.parse(source)
    prose, sections = _docstrings(tree), _config_sections(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            text = node.value
            named = text in names and id(node) not in sections
            if named or any(f"{name}.prom" in text for name in names):
                found.append((node.lineno, text))
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called == "spool_path":
                found.append((node.lineno, "spool_path()"))
    return found


def spool_violation(module: str, literal: str) -> str | None:
    """Why `module` must not name the spool file `literal`, or None when it may: the reader,
    the spool format itself, and the sentinel that writes the file."""
    if module in (READER, "agentwatch.core.spool"):
        return None
    sentinel = literal.removesuffix(".prom").rsplit("/", 1)[-1]
    own = "agentwatch.sentinels." + sentinel.replace("-", "_")
    if literal != "spool_path()" and (module == own or module.startswith(own + ".")):
        return None
    return f"names a spool file outside its sentinel: read it through {READER}"


def _sentinels() -> dict[str, tuple[str, ...]]:
    from agentwatch.sentinels import registry

    return {name: tuple(item.metrics) for name, item in registry.sentinels().items()}


def test_spool_files_are_named_only_by_their_writer_and_the_reader() -> None:
    names = set(_sentinels())
    problems = [
        f"{path.relative_to(ROOT)}:{line}: {literal!r}: {why}"
        for module, path in CODE
        for line, literal in spool_names(path.read_text(encoding="utf-8"), names)
        if (why := spool_violation(module, literal)) is not None
    ]
    assert problems == []
    assert len(CODE) > 100


def test_the_reader_reads_what_the_sentinels_declare() -> None:
    from agentwatch.core import spool_readers

    declared = _sentinels()
    assert set(spool_readers.READS) <= set(declared)
    for sentinel, families in spool_readers.READS.items():
        assert set(families) <= set(declared[sentinel]), sentinel
    for sentinel in spool_readers.SPEND_FILES:
        assert spool_readers.SPEND in spool_readers.READS[sentinel]


def test_the_spool_check_can_fail() -> None:
    names = set(_sentinels())
    bad = {
        "agentwatch.controller.nudge": 'PANES = "idle-error"\n',
        "agentwatch.cli.status": 'path = spool_dir / "token-ledger.prom"\n',
        "agentwatch.cli.report": 'path = f"{spool_dir}/agent-ledger.prom"\n',
        "agentwatch.sentinels.otel.main": 'x = read(d, "token-ledger")\n',
        "agentwatch.sentinels.idle_error.main": "p = spool.spool_path(d, NAME)\n",
    }
    for module, source in bad.items():
        found = spool_names(source, names)
        assert found, source
        assert all("read it through" in (spool_violation(module, lit) or "") for _, lit in found)
    not_files = [  # a config section, a path segment, prose
        'settings = cfg.sentinel("token-ledger")\n',
        'EXTRA = {"sentinels": {"token-ledger": {"block_token_limit": 1}}}\n',
        'p = home / ".copilot" / "otel"\n',
        '"""Reads token-ledger.prom through the reader."""\n',
    ]
    for source in not_files:
        assert spool_names(source, names) == [], source
    assert spool_violation("agentwatch.sentinels.idle_error.main", "idle-error") is None
    assert spool_violation(READER, "token-ledger") is None
    assert spool_violation("agentwatch.sentinels.token_ledger.main", "idle-error") is not None
