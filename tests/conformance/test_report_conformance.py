"""`agentwatch report daily|weekly|monthly|session|blocks --json` against the same reports of
ccusage 20.0.24 on the conformance corpora (docs/reports.md).

Both read the same tree: the real token-ledger sentinel counts it once, then the report reads
its database; ccusage runs each report command on the files. The tokens must be equal: per day
(every type, every model), and per week, month, session and 5-hour block. The cost of the
daily report equals ccusage's except for the requests where the ledger follows Anthropic's
page (test_ccusage_conformance.expected, oracle.py).

ccusage reads its weekly, monthly, session and blocks reports with another loader than daily
(docs/ledger-rules.md, "Billing blocks"), and on some corpora its own reports disagree with its
daily one. There the report's entries are compared with ccusage's daily totals (the ledger
follows daily's rules), and LOADERS_DIFFER pins which corpora those are: if ccusage's reports
come to agree, the test says so.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from . import corpus
from .test_ccusage_conformance import (
    TIMEOUT,
    _environment,
    _finish_ccusage,
    _start_ccusage,
    ccusage_command,
    expected,
    run_ledger,
)

pytestmark = [pytest.mark.ccusage, pytest.mark.slow]

TYPES = ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens")
BLOCK_TYPES = dict(zip(TYPES, ("inputTokens", "outputTokens", "cacheCreationInputTokens",
                               "cacheReadInputTokens"), strict=True))  # fmt: skip
KEYS = {"weekly": ("weekly", "week"), "monthly": ("monthly", "month"),
        "session": ("sessions", "sessionId"), "blocks": ("blocks", "startTime")}  # fmt: skip
# Corpora where ccusage's weekly/monthly/session/blocks totals differ from its own daily ones.
LOADERS_DIFFER = {"s02_wrong_types", "s04_dedup", "s05_sidechains", "s12_progress", "random"}
# Corpora with transcripts where Claude Code never writes them (`projects/top.jsonl`, deeper
# folders): the ledger names their sessions by core/claude.py's rule, ccusage otherwise; their
# sessions are compared by their tokens alone.
SESSION_NAMES_DIFFER = {"s14_discovery_walk", "s14_discovery_config_list"}
CORPORA = {**corpus.EDGE_CORPORA,
           "random": lambda root: corpus.random_corpus(root, 101, 600)}  # fmt: skip


def _counts(item: dict[str, Any]) -> tuple[int, ...]:
    counts = item.get("tokenCounts")
    if counts is not None:
        return tuple(counts[BLOCK_TYPES[name]] for name in TYPES)
    return tuple(item[name] for name in TYPES)


def _by(entries: list[dict[str, Any]], key: str) -> dict[str, tuple[int, ...]]:
    """Tokens by type per entry key (entries of one key summed; gaps and empty ones out)."""
    found: dict[str, tuple[int, ...]] = {}
    for item in entries:
        if item.get("isGap") or not any(_counts(item)):
            continue
        old = found.get(item[key], (0, 0, 0, 0))
        found[item[key]] = tuple(a + b for a, b in zip(old, _counts(item), strict=True))
    return found


def _cells(daily: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """(day, model) -> tokens; ccusage's `<model>-fast` entries merged with their model (on
    both sides, every trailing `-fast`: a model named `x-fast` is `x-fast-fast` in fast mode
    there, ambiguous otherwise). ccusage
    leaves responses without a model name out of its breakdowns (the ledger names them
    `unknown`) and `<synthetic>` ones too (the day totals hold them: compared too)."""
    cells: dict[tuple[str, str], int] = {}
    for day in daily:
        for row in day.get("modelBreakdowns", []):
            tokens = sum(row[name] for name in TYPES)
            if tokens and row["modelName"] not in ("unknown", "<synthetic>"):
                name = row["modelName"]
                while name.endswith("-fast"):
                    name = name.removesuffix("-fast")
                cell = (day["date"], name)
                cells[cell] = cells.get(cell, 0) + tokens
    return cells


def _total(report: dict[str, Any]) -> tuple[int, ...]:
    """The report's tokens by type (ccusage's blocks report has no totals: its blocks')."""
    if "totals" in report:
        return tuple(report["totals"][name] for name in TYPES)
    entries = [item for item in report["blocks"] if not item.get("isGap")]
    return tuple(sum(_counts(item)[i] for item in entries) for i in range(len(TYPES)))


def _ccusage(kind: str, case: corpus.Corpus, scratch: Path) -> subprocess.Popen[str]:
    folder = scratch / f"ccusage-{kind}"
    folder.mkdir(parents=True)
    return subprocess.Popen(
        [ccusage_command(), "claude", kind, "--json", "--offline"],
        env=_environment(case, folder), cwd=case.cwd or folder,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _ours(kind: str, case: corpus.Corpus, scratch: Path, state: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "agentwatch.cli", "report", kind, "--json", "--state-dir",
         str(state)],
        env=_environment(case, scratch / "ours"), capture_output=True, text=True,
        timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", list(CORPORA))
def test_reports_equal_ccusages(name: str, tmp_path: Path) -> None:
    case = CORPORA[name](tmp_path / "corpus")
    scratch, state = tmp_path / "run", tmp_path / "state"
    scratch.mkdir()
    (scratch / "ours").mkdir()
    started = {kind: _ccusage(kind, case, scratch) for kind in KEYS}
    (scratch / "daily").mkdir()
    daily_reference = _finish_ccusage(_start_ccusage(case, scratch / "daily"))
    run_ledger(case, scratch / "ledger", state)
    theirs: dict[str, Any] = {}
    for kind, process in started.items():
        stdout, stderr = process.communicate(timeout=TIMEOUT)
        assert process.returncode == 0, stderr[-3000:]
        theirs[kind] = json.loads(stdout)
    daily_json = subprocess.run(
        [ccusage_command(), "claude", "daily", "--json", "--offline"],
        env=_environment(case, scratch / "daily"), cwd=case.cwd or scratch / "daily",
        capture_output=True, text=True, timeout=TIMEOUT, check=True,
    ).stdout  # fmt: skip
    their_daily = json.loads(daily_json)

    daily = _ours("daily", case, scratch, state)
    assert _by(daily["daily"], "date") == _by(their_daily["daily"], "date")
    assert _cells(daily["daily"]) == _cells(their_daily["daily"])
    want = expected(case, daily_reference, state).cost  # ccusage's, but for the page's rules
    assert math.isclose(daily["totals"]["totalCost"], want, rel_tol=1e-6, abs_tol=1e-9)

    differ = set()
    for kind, (key, field) in KEYS.items():
        ours = _ours(kind, case, scratch, state)
        assert _total(ours) == _total(daily), f"{kind} adds up to the daily report"
        if _total(theirs[kind]) != _total(their_daily):
            differ.add(kind)  # ccusage's other loader: its daily rules are the reference
            continue
        mine, reference = _by(ours[key], field), _by(theirs[kind][key], field)
        if kind == "session" and name in SESSION_NAMES_DIFFER:
            assert sorted(mine.values()) == sorted(reference.values()), kind
        else:
            assert mine == reference, kind
    assert bool(differ) == (name in LOADERS_DIFFER), (
        f"ccusage's reports {sorted(differ)} disagree with its daily one"
        if differ else "ccusage's reports agree with its daily one now: update LOADERS_DIFFER"
    )  # fmt: skip
