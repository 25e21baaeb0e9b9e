"""docs/metrics.md lists exactly the metric families the exporter really serves, and every
sentinel declares (in its SENTINEL) exactly the families it really writes.

The check runs over the registry, so a new sentinel is checked without an edit here
(tests/test_sentinel_contract.py proves it with a throwaway one)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from agentwatch.core import config
from agentwatch.core.loop import CYCLE_FAILURES
from agentwatch.core.spool import INTERVAL_METRIC
from agentwatch.exporter.collector import SpoolCollector
from agentwatch.sentinels import registry
from tests.conftest import free_port, run_cli, run_ledger_once
from tests.transcripts import assistant, encode, transcript

DOC = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"
ROW = re.compile(
    r"^\| `((?:agentwatch|bernstein)_[a-z0-9_]+)` \| (counter|gauge|histogram) "
    r"\| ?([a-z_, ]*?) ?\|",
    re.M,
)
LOOP_FAMILIES = {INTERVAL_METRIC, CYCLE_FAILURES + "_total"}  # every loop writes these

Families = dict[str, tuple[str, set[str]]]  # served name -> (type, labels seen)


def documented(doc: str) -> Families:
    rows = ROW.findall(doc)
    assert rows, "no metric rows found in docs/metrics.md"
    return {
        name: (kind, {x.strip() for x in labels.split(",") if x.strip()})
        for name, kind, labels in rows
    }


def families_of(text: str) -> Families:
    """The families of an exposition by their served names (counters with `_total`)."""
    found: Families = {}
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
        full = name + "_total" if kind == "counter" and not name.endswith("_total") else name
        found[full] = (kind, set())
    for name, labels in re.findall(r"^([a-z_0-9]+)(?:\{([^}]*)\})? ", text, re.M):
        if name in found:
            found[name][1].update(re.findall(r'([a-z_]+)="', labels or ""))
    return found


def run_every_sentinel_once(workdirs: dict[str, Path], names: Iterable[str]) -> None:
    """One cycle of each sentinel (and the controller) into the spool."""
    transcript(workdirs["claude"]).write_bytes(encode(assistant()))
    run_ledger_once(workdirs)
    state = ["--spool-dir", str(workdirs["spool"]), "--state-dir", str(workdirs["state"])]
    for name in names:
        if name != "token-ledger":
            ran = run_cli("sentinel", name, "--once", *state)
            assert ran.returncode == 0, ran.stderr
    unreachable = f"http://127.0.0.1:{free_port()}"  # every family is written even so
    ran = run_cli("controller", "--once", "--alertmanager", unreachable,
                  "--state-file", str(workdirs["state"] / "controller.json"), *state)  # fmt: skip
    assert ran.returncode == 0, ran.stderr


def served(spool: Path, expected: list[str]) -> Families:
    """Every family the exporter serves from the spool."""
    metrics = CollectorRegistry(auto_describe=False)
    collector = SpoolCollector(
        spool, expected=expected, thresholds=registry.config_from_mapping({})["thresholds"]
    )
    metrics.register(collector)  # type: ignore[arg-type]
    return families_of(generate_latest(metrics).decode())


def doc_problems(doc: Families, real: Families) -> list[str]:
    """How the document and the real output disagree (empty: they agree)."""
    problems = [f"served but not documented: {name}" for name in sorted(set(real) - set(doc))]
    problems += [f"documented but not served: {name}" for name in sorted(set(doc) - set(real))]
    for name, (kind, labels) in real.items():
        if name not in doc:
            continue
        if doc[name][0] != kind:
            problems.append(f"{name}: documented as a {doc[name][0]}, served as a {kind}")
        # Families without samples in this run show no labels; the rest must match exactly.
        if labels and doc[name][1] != labels:
            problems.append(f"{name}: documented labels {doc[name][1]}, served {labels}")
    return problems


def declaration_problems(spool: Path, names: Iterable[str]) -> list[str]:
    """Where a sentinel's SENTINEL.metrics differs from what its spool file holds."""
    problems = []
    for name in names:
        declared = set(registry.get(name).metrics)
        written = set(families_of((spool / f"{name}.prom").read_text())) - LOOP_FAMILIES
        if declared != written:
            problems.append(
                f"{name}: declares {sorted(declared - written)} it does not write, writes "
                f"{sorted(written - declared)} it does not declare"
            )
    return problems


def undocumented(doc: str) -> list[str]:
    """Families some registered sentinel declares that the document has no row for."""
    rows = documented(doc)
    return [
        f"{name}: {metric} is not in docs/metrics.md"
        for name, item in registry.sentinels().items()
        for metric in item.metrics
        if metric not in rows
    ]


@pytest.mark.slow
def test_docs_match_the_real_output(workdirs: dict[str, Path]) -> None:
    names = list(registry.sentinels())
    run_every_sentinel_once(workdirs, names)
    assert doc_problems(documented(DOC.read_text()), served(workdirs["spool"], names)) == []
    assert declaration_problems(workdirs["spool"], names) == []
    assert undocumented(DOC.read_text()) == []


def test_the_doc_check_can_fail() -> None:
    doc = {"agentwatch_a": ("gauge", {"x"}), "agentwatch_b_total": ("counter", set())}
    real = {"agentwatch_a": ("gauge", {"y"}), "agentwatch_c": ("gauge", set())}
    assert doc_problems(doc, real) == [
        "served but not documented: agentwatch_c",
        "documented but not served: agentwatch_b_total",
        "agentwatch_a: documented labels {'x'}, served {'y'}",
    ]


def test_the_thresholds_table_lists_every_configurable_threshold() -> None:
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| ([0-9.]+) \|", DOC.read_text(), re.M)
    assert {name: float(value) for name, value in rows} == {
        name: default for name, (default, _) in config.ALERT_THRESHOLDS.items()
    }
