"""The wheel is the whole product: built from this tree, installed into a fresh virtualenv
with nothing else, it installs, shows its config and runs `up` — rules, units, dashboards and
the sentinels' data files travel inside it (what `pipx install` does for a user)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from agentwatch.sentinels import registry
from tests.conftest import free_port

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

ROOT = Path(__file__).resolve().parents[1]
DATA = (
    r"agentwatch/rules/alerts-[a-z]+\.rules\.yml",
    r"agentwatch/rules/alertmanager\.yml",
    r"agentwatch/rules/central/account\.rules\.yml",
    r"agentwatch/rules/templates/agentwatch\.tmpl",
    r"agentwatch/systemd/agentwatch-sentinel@\.service",
    r"agentwatch/systemd/agentwatch-release-readiness\.timer",
    r"agentwatch/grafana/dashboards/agentwatch-overview\.json",
    r"agentwatch/grafana/provisioning/dashboards/agentwatch\.yml",
    r"agentwatch/sentinels/token_ledger/pricing\.json",
    r"agentwatch/sentinels/footprint/signatures\.json",
    r"agentwatch/sentinels/idle_error/patterns\.json",
    r"agentwatch/exporter/overview\.css",
)


def _run(
    command: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=False, cwd=cwd, env=env
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the virtualenv it is installed in)."""
    base = tmp_path_factory.mktemp("wheel")
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(base), str(ROOT)]
    )
    assert built.returncode == 0, built.stderr
    wheels = list(base.glob("agentwatch-*.whl"))
    assert len(wheels) == 1, wheels
    venv = base / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)])
    assert made.returncode == 0, made.stderr
    added = _run([str(venv / "bin" / "pip"), "install", "-q", str(wheels[0])])
    assert added.returncode == 0, added.stderr
    return wheels[0], venv


def _env(home: Path) -> dict[str, str]:
    """A user with nothing: an empty home, no XDG or Claude variables, no source tree."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("XDG_", "CLAUDE_", "AGENTWATCH_", "PYTHON"))
    }
    home.mkdir(exist_ok=True)
    return {**env, "HOME": str(home)}


def test_the_wheel_holds_the_data_and_no_tests(installed: tuple[Path, Path]) -> None:
    names = zipfile.ZipFile(installed[0]).namelist()
    for pattern in DATA:
        assert any(re.fullmatch(pattern, name) for name in names), pattern
    assert not [name for name in names if name.startswith(("tests/", "bench/", "agentwatch/tests"))]


def test_the_wheel_holds_no_test_generators(installed: tuple[Path, Path]) -> None:
    """The corpus and process-tree generators only the tests and the benchmarks use stay in
    bench/generators/; no module of that name ships, wherever it would be in the package."""
    names = zipfile.ZipFile(installed[0]).namelist()
    generators = {path.name for path in (ROOT / "bench" / "generators").glob("*.py")}
    generators -= {"__init__.py"}
    assert {"corpus.py", "gemini_corpus.py", "opencode_corpus.py", "processes.py"} <= generators
    shipped = {name.rsplit("/", 1)[-1] for name in names if name.startswith("agentwatch/")}
    assert "transcripts.py" in shipped  # the demo's own line builder still ships
    assert sorted(generators & shipped) == []


def test_the_installed_wheel_installs_shows_config_and_runs_up(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    command = str(installed[1] / "bin" / "agentwatch")
    env = _env(tmp_path / "home")
    where = {"cwd": tmp_path, "env": env}  # not the source tree: nothing to import from there

    dry = _run([command, "install", "--dry-run"], **where)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "would create" in dry.stdout and "rules/alerts-spend.rules.yml" in dry.stdout
    assert "agentwatch-sentinel@token-ledger.service" in dry.stdout

    shown = _run([command, "config", "show"], **where)
    assert shown.returncode == 0, shown.stderr
    for name in registry.sentinels():
        assert f"  # {name}:\n" in shown.stdout

    listen = f"127.0.0.1:{free_port()}"
    orchestrator = f"127.0.0.1:{free_port()}"
    config = tmp_path / "config.yaml"
    receiver = f"127.0.0.1:{free_port()}"  # not the otel sentinel's default port
    config.write_text(
        f"demo: {{orchestrator_listen: '{orchestrator}'}}\n"
        f"sentinels: {{otel: {{listen: '{receiver}'}}}}\n"
    )
    up = _run(
        [command, "--config", str(config), "up", "--no-stack", "--for", "15", "--listen", listen],
        **where,
    )
    assert up.returncode == 0, up.stdout + up.stderr
    assert "agentwatch is running" in up.stdout and "agentwatch stopped." in up.stdout
    assert "demo:" in up.stdout  # no transcripts in this home: the demo workload ran
    statuses = re.findall(r"sentinels up (\d+)/(\d+)", up.stdout)
    assert statuses and statuses[-1] == (str(len(registry.sentinels())),) * 2, up.stdout
