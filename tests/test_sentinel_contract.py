"""Adding a sentinel is one package under sentinels/, its rule file and its docs rows.

The test adds a throwaway sentinel exactly that way — a package beside the real ones and a
rule file beside theirs, in the installed tree — and finds it, with no other edit, in
`agentwatch sentinel --help`, `config show`, `install --dry-run`'s units, `up`'s processes,
`status` and the metrics-doc check; then removes both."""

from __future__ import annotations

import importlib
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import agentwatch.rules
import agentwatch.sentinels
from agentwatch.sentinels import registry
from tests.conftest import free_port, local_config, run_cli, running_on
from tests.test_metrics_doc import DOC, declaration_problems, undocumented

NAME = "throwaway-probe"
PACKAGE = Path(agentwatch.sentinels.__file__).parent / "throwaway_probe"
RULES = Path(agentwatch.rules.__file__).parent / f"{NAME}.rules.yml"
METRIC = "agentwatch_throwaway_probe_cycles_total"

SOURCE = '''"""A throwaway sentinel: it counts its own cycles (tests/test_sentinel_contract.py)."""

from __future__ import annotations

from prometheus_client.metrics_core import CounterMetricFamily

from agentwatch.core.config import Key, positive_int
from agentwatch.sentinels.contract import Context, Sentinel


class Probe:
    def __init__(self, context: Context):
        self.cycles = 0
        self.answer = context.settings["answer"]

    def cycle(self, due: bool) -> None:
        self.cycles += 1

    def families(self):
        family = CounterMetricFamily(
            "agentwatch_throwaway_probe_cycles", "Cycles of the probe.", labels=["answer"]
        )
        family.add_metric([str(self.answer)], self.cycles)
        yield family

    def close(self) -> None:
        pass


SENTINEL = Sentinel(
    name="throwaway-probe",
    summary="a throwaway sentinel that counts its cycles",
    interval=1.0,
    keys={"answer": Key(42, positive_int, "the number the probe reports")},
    metrics=("agentwatch_throwaway_probe_cycles_total",),
    build=Probe,
)
'''
RULE_FILE = {
    "groups": [
        {
            "name": "throwaway-probe",
            "rules": [
                {
                    "alert": "AgentwatchThrowawayProbeSilent",
                    "expr": f"absent({METRIC})",
                    "for": "5m",
                    "labels": {"severity": "info"},
                    "annotations": {"summary": "The throwaway probe writes nothing"},
                }
            ],
        }
    ]
}
DOC_ROWS = (
    "\n## Throwaway probe\n\n| metric | type | labels | meaning |\n|---|---|---|---|\n"
    f"| `{METRIC}` | counter | answer | cycles of the probe |\n"
)


@pytest.fixture
def throwaway() -> Iterator[None]:
    assert not PACKAGE.exists() and not RULES.exists(), "left over from a killed run"
    PACKAGE.mkdir()
    try:
        (PACKAGE / "__init__.py").write_text(SOURCE)
        RULES.write_text(yaml.safe_dump(RULE_FILE, sort_keys=False))
        _forget()
        yield
    finally:
        shutil.rmtree(PACKAGE, ignore_errors=True)
        RULES.unlink(missing_ok=True)
        _forget()


def _forget() -> None:
    """Make this process look at the sentinels folder afresh."""
    for module in [name for name in sys.modules if "throwaway_probe" in name]:
        del sys.modules[module]
    importlib.invalidate_caches()
    registry.sentinels.cache_clear()


@pytest.mark.slow
def test_a_new_sentinel_package_is_found_everywhere(throwaway: None, tmp_path: Path) -> None:
    assert NAME in registry.sentinels()

    helped = run_cli("sentinel", "--help")
    assert helped.returncode == 0 and "throwaway-probe: a throwaway sentinel" in helped.stdout

    shown = run_cli("config", "show")
    assert shown.returncode == 0
    assert "  # throwaway-probe:\n    # enabled: true" in shown.stdout
    assert "    # answer: 42    # the number the probe reports" in shown.stdout

    xdg = {name: str(tmp_path / name) for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME")}
    xdg["CLAUDE_CONFIG_DIR"] = str(tmp_path / "claude")  # never the developer's own settings
    installed = run_cli("install", "--dry-run", env=xdg)
    assert installed.returncode == 0, installed.stderr
    assert "agentwatch-sentinel@throwaway-probe.service" in installed.stdout
    assert f"rules/{NAME}.rules.yml" in installed.stdout

    real = {name: {"enabled": False} for name in registry.sentinels() if name != NAME}
    config = local_config(tmp_path, {"sentinels": real})
    spool = tmp_path / "spool"
    dirs = ["--spool-dir", str(spool), "--state-dir", str(tmp_path / "state")]
    started = time.monotonic()
    ran = run_cli("--config", str(config), "up", "--no-stack", "--no-demo", *dirs,
                  "--listen", f"127.0.0.1:{free_port()}", "--for", "6",
                  env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")},
                  timeout=60)  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "agentwatch is running (exporter, throwaway-probe)" in ran.stdout
    assert time.monotonic() - started < 40
    assert f'{METRIC}{{answer="42"}}' in (spool / f"{NAME}.prom").read_text()

    with running_on(tmp_path / "state"):  # `up` has ended: read its files as live
        status = run_cli("--config", str(config), "status", *dirs)
    assert "throwaway-probe      up" in status.stdout, status.stdout

    assert declaration_problems(spool, [NAME]) == []
    doc = DOC.read_text()
    assert undocumented(doc) == [f"{NAME}: {METRIC} is not in docs/metrics.md"]
    assert undocumented(doc + DOC_ROWS) == []


def test_a_sentinel_named_unlike_its_package_is_refused(throwaway: None) -> None:
    (PACKAGE / "__init__.py").write_text(SOURCE.replace('name="throwaway-probe"', 'name="x"'))
    with pytest.raises(TypeError, match="named like its package"):
        registry.sentinels()
