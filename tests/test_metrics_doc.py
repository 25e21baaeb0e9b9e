"""docs/metrics.md lists exactly the metric families the exporter really serves."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from agentwatch.exporter import config
from agentwatch.exporter.cli import SENTINELS
from agentwatch.exporter.server import SpoolCollector
from tests.conftest import free_port, run_cli, run_ledger_once
from tests.transcripts import assistant, encode, transcript

DOC = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"
ROW = re.compile(r"^\| `(agentwatch_[a-z0-9_]+)` \| (counter|gauge) \| ?([a-z_, ]*?) ?\|", re.M)


def _documented() -> dict[str, tuple[str, set[str]]]:
    rows = ROW.findall(DOC.read_text())
    assert rows, "no metric rows found in docs/metrics.md"
    return {
        name: (kind, {x.strip() for x in labels.split(",") if x.strip()})
        for name, kind, labels in rows
    }


def _served(workdirs: dict[str, Path]) -> dict[str, tuple[str, set[str]]]:
    """Every family the exporter serves after one cycle of every sentinel."""
    transcript(workdirs["claude"]).write_bytes(encode(assistant()))
    run_ledger_once(workdirs)
    for name in SENTINELS:
        if name != "token-ledger":
            ran = run_cli("sentinel", name, "--once", "--spool-dir", str(workdirs["spool"]),
                          "--state-dir", str(workdirs["state"]))  # fmt: skip
            assert ran.returncode == 0, ran.stderr
    unreachable = f"http://127.0.0.1:{free_port()}"  # every family is written even so
    state = ["--spool-dir", str(workdirs["spool"]), "--state-dir", str(workdirs["state"])]
    ran = run_cli("controller", "--once", "--alertmanager", unreachable,
                  "--state-file", str(workdirs["state"] / "controller.json"), *state)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    registry = CollectorRegistry(auto_describe=False)
    collector = SpoolCollector(
        workdirs["spool"],
        expected=list(SENTINELS),
        thresholds=config.from_mapping({})["thresholds"],
    )
    registry.register(collector)  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    served: dict[str, tuple[str, set[str]]] = {}
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
        full = name + "_total" if kind == "counter" and not name.endswith("_total") else name
        served[full] = (kind, set())
    for name, labels in re.findall(r"^([a-z_0-9]+)(?:\{([^}]*)\})? ", text, re.M):
        if name in served:
            served[name][1].update(re.findall(r'([a-z_]+)="', labels or ""))
    return served


def test_docs_match_the_real_output(workdirs: dict[str, Path]) -> None:
    documented, served = _documented(), _served(workdirs)
    assert sorted(set(served) - set(documented)) == [], "served but not documented"
    assert sorted(set(documented) - set(served)) == [], "documented but not served"
    for name, (kind, labels) in served.items():
        assert documented[name][0] == kind, name
        # Families without samples in this run show no labels; the rest must match exactly.
        if labels:
            assert documented[name][1] == labels, name


def test_the_thresholds_table_lists_every_configurable_threshold() -> None:
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| ([0-9.]+) \|", DOC.read_text(), re.M)
    assert {name: float(value) for name, value in rows} == {
        name: default for name, (default, _) in config.ALERT_THRESHOLDS.items()
    }
