"""The token ledger's totals equal those of the reference reader, ccusage 20.0.24.

The acceptance rule: on any set of transcripts, the sums of `agentwatch_tokens_total` per type
and of `agentwatch_cost_usd_total` equal the `totals` of `ccusage claude daily --json
--offline`, tokens exactly and cost within 1e-6 relative. So every test here runs the real
ccusage binary and the real sentinel (as a subprocess, the way systemd runs it) on the same
tree and compares. The trees come from corpus.py: one per section of the counting rules, a
large randomized mix, and the same data appended in pieces between runs.

ccusage is required, never skipped: without it the suite would pass while proving nothing.
Set AGENTWATCH_CCUSAGE to its path, or install it where the default points.

Tests named test_regression_* pin differences that were found by this suite and fixed in the
ledger (docs/ledger-rules.md lists the deliberate differences, which are kept out of the
corpora and pinned by their own tests).
"""

from __future__ import annotations

import functools
import json
import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from . import corpus, oracle

pytestmark = [pytest.mark.ccusage, pytest.mark.slow]

CCUSAGE_VERSION = "20.0.24"
DEFAULT_CCUSAGE = "/opt/ccusage/node_modules/.bin/ccusage"
INSTALL_HINT = f"npm install --prefix /opt/ccusage ccusage@{CCUSAGE_VERSION}"
TOKEN_TYPES = ("input", "output", "cache_read", "cache_creation")
COST_RTOL = 1e-6
TIMEOUT = 300


# ----------------------------------------------------------------------------- the readers


@functools.cache
def ccusage_command() -> str:
    """Path of the ccusage binary, checked to be the version whose rules the ledger follows.

    Fails (never skips) when it is missing: a conformance suite that silently passes without
    its reference would hide every regression.
    """
    path = os.environ.get("AGENTWATCH_CCUSAGE") or DEFAULT_CCUSAGE
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        hint = INSTALL_HINT
        suffix = "/node_modules/.bin/ccusage"
        if path != DEFAULT_CCUSAGE and path.endswith(suffix):  # install where it points
            hint = f"npm install --prefix {path[: -len(suffix)]} ccusage@{CCUSAGE_VERSION}"
        pytest.fail(
            f"ccusage not found at {path} (AGENTWATCH_CCUSAGE, default {DEFAULT_CCUSAGE}). "
            f"The conformance suite needs the reference reader; install it with:\n    {hint}",
            pytrace=False,
        )
    found = subprocess.run(
        [path, "--version"], capture_output=True, text=True, timeout=60, check=False
    ).stdout.strip()
    if CCUSAGE_VERSION not in found:
        pytest.fail(
            f"{path} is {found!r}; the ledger follows the rules of ccusage {CCUSAGE_VERSION}. "
            f"Install that version with:\n    {INSTALL_HINT}",
            pytrace=False,
        )
    return path


@dataclass
class Totals:
    """What both readers are compared on, plus per-model figures for failure messages."""

    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_TYPES, 0))
    cost: float = 0.0
    by_model: dict[str, list[float]] = field(default_factory=dict)  # model -> [tokens, cost]
    cells: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (day, model)

    def add_model(self, model: str, tokens: float = 0, cost: float = 0.0) -> None:
        row = self.by_model.setdefault(model, [0, 0.0])
        row[0] += tokens
        row[1] += cost


def _environment(case: corpus.Corpus, scratch: Path) -> dict[str, str]:
    """The same, isolated environment for both readers: no user config, no real transcripts."""
    home = case.home or scratch / "home"
    xdg = scratch / "xdg-config"  # empty: no agentwatch config file, no ~/.config/claude
    for folder in (home, xdg):
        folder.mkdir(parents=True, exist_ok=True)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CLAUDE_", "XDG_", "CCUSAGE", "AGENTWATCH_"))
    }
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(xdg), TZ="UTC",
               CLAUDE_CONFIG_DIR=case.config_dir)  # fmt: skip
    return env


def _start_ccusage(case: corpus.Corpus, scratch: Path) -> subprocess.Popen[str]:
    command = [ccusage_command(), "claude", "daily", "--json", "--offline", "--breakdown"]
    return subprocess.Popen(
        command, env=_environment(case, scratch), cwd=case.cwd or scratch,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _finish_ccusage(process: subprocess.Popen[str]) -> Totals:
    stdout, stderr = process.communicate(timeout=TIMEOUT)
    if process.returncode != 0 or not stdout.strip():
        pytest.fail(f"ccusage failed (exit {process.returncode}):\n{stderr[-3000:]}", pytrace=False)
    report = json.loads(stdout)
    raw = report["totals"]
    totals = Totals(
        tokens={
            "input": raw["inputTokens"], "output": raw["outputTokens"],
            "cache_read": raw["cacheReadTokens"], "cache_creation": raw["cacheCreationTokens"],
        },
        cost=raw["totalCost"],
    )  # fmt: skip
    for day in report["daily"]:
        for row in day.get("modelBreakdowns", []):
            tokens = sum(row[k] for k in ("inputTokens", "outputTokens", "cacheReadTokens",
                                          "cacheCreationTokens"))  # fmt: skip
            totals.add_model(row["modelName"], tokens, row["cost"])
            name = row["modelName"].removesuffix("-fast")  # ccusage's name of fast entries
            cell = totals.cells.setdefault((day["date"], name), [0, 0.0])
            cell[0] += tokens
            cell[1] += row["cost"]
    return totals


@dataclass
class LedgerRun:
    """One `--once` run of the sentinel: the totals and every sample of its spool file."""

    totals: Totals
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _start_ledger(case: corpus.Corpus, scratch: Path, state: Path) -> subprocess.Popen[str]:
    spool = scratch / "spool"
    command = [
        sys.executable, "-m", "agentwatch.cli", "--log-level", "warning",
        "sentinel", "token-ledger", "--once", "--spool-dir", str(spool), "--state-dir", str(state),
    ]  # fmt: skip
    return subprocess.Popen(
        command, env=_environment(case, scratch), cwd=case.cwd or scratch,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _finish_ledger(process: subprocess.Popen[str], scratch: Path) -> LedgerRun:
    _, stderr = process.communicate(timeout=TIMEOUT)
    if process.returncode != 0:
        pytest.fail(
            f"the token-ledger sentinel failed (exit {process.returncode}):\n{stderr[-4000:]}",
            pytrace=False,
        )
    text = (scratch / "spool" / "token-ledger.prom").read_text(encoding="utf-8")
    totals = Totals()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
            if sample.name == "agentwatch_tokens_total":
                assert float(sample.value).is_integer(), sample
                kind = sample.labels["type"]  # an unexpected type shows up as a difference
                totals.tokens[kind] = totals.tokens.get(kind, 0) + int(sample.value)
                totals.add_model(sample.labels["model"], tokens=int(sample.value))
            elif sample.name == "agentwatch_cost_usd_total":
                totals.cost += sample.value
                totals.add_model(sample.labels["model"], cost=sample.value)
    return LedgerRun(totals, samples)


def run_ccusage(case: corpus.Corpus, scratch: Path) -> Totals:
    scratch.mkdir(parents=True, exist_ok=True)
    return _finish_ccusage(_start_ccusage(case, scratch))


def run_ledger(case: corpus.Corpus, scratch: Path, state: Path) -> LedgerRun:
    scratch.mkdir(parents=True, exist_ok=True)
    return _finish_ledger(_start_ledger(case, scratch, state), scratch)


def run_both(case: corpus.Corpus, scratch: Path, state: Path) -> tuple[Totals, LedgerRun]:
    """Both readers at once (two cores: the suite's time is the slower reader's)."""
    scratch.mkdir(parents=True, exist_ok=True)
    reference = _start_ccusage(case, scratch / "ccusage")
    ours = _start_ledger(case, scratch, state)
    return _finish_ccusage(reference), _finish_ledger(ours, scratch)


# ------------------------------------------------------------------------------ comparing


def _bits(value: int) -> list[int]:
    return [bit for bit in range(value.bit_length()) if value >> bit & 1]


def differences(reference: Totals, ours: Totals) -> list[str]:
    """Human-readable differences; empty when the acceptance rule holds."""
    problems = []
    for kind in sorted(set(reference.tokens) | set(ours.tokens)):
        want, got = reference.tokens.get(kind, 0), ours.tokens.get(kind, 0)
        if want != got:
            line = f"{kind} tokens: ccusage {want}, ledger {got} (ledger - ccusage = {got - want})"
            if 0 <= want < 2**63 and 0 <= got < 2**63:  # probe corpora: which bits differ
                only_ref, only_ours = _bits(want & ~got), _bits(got & ~want)
                line += f"; bits only in ccusage {only_ref}, only in the ledger {only_ours}"
            problems.append(line)
    if not math.isclose(reference.cost, ours.cost, rel_tol=COST_RTOL, abs_tol=1e-12):
        problems.append(f"cost: ccusage {reference.cost!r}, ledger {ours.cost!r}")
    return problems


def _ledger_cells(state: Path) -> dict[tuple[str, str], list[float]]:
    """(day, model) -> [tokens, cost] from the ledger's minute buckets (read-only)."""
    db = sqlite3.connect(f"file:{state / 'token-ledger.sqlite'}?mode=ro", uri=True)
    cells: dict[tuple[str, str], list[float]] = {}
    query = ("SELECT b.first_ms, l.model, b.t_in + b.t_out + b.t_cr + b.t_cc, b.cost "
             "FROM buckets b JOIN labelsets l ON l.id = b.labels")  # fmt: skip
    for first_ms, model, tokens, cost in db.execute(query):
        day = time.strftime("%Y-%m-%d", time.gmtime(first_ms / 1000))
        cell = cells.setdefault((day, model), [0, 0.0])
        cell[0] += tokens
        cell[1] += cost
    db.close()
    return cells


def _ledger_responses(state: Path) -> list[tuple[oracle.Request, float]]:
    """Every response the ledger counted, as the oracle sees it, with the ledger's cost (cache
    writes as 5-minute ones: the database keeps their sum only, so corpora whose differing
    requests split them declare those requests instead)."""
    db = sqlite3.connect(f"file:{state / 'token-ledger.sqlite'}?mode=ro", uri=True)
    query = ("SELECT l.model, r.c_in, r.c_out, r.c_cr, r.c_cc, r.cost FROM responses r "
             "JOIN labelsets l ON l.id = r.labels")  # fmt: skip
    found = [(oracle.Request("", model, int(i), int(o), int(cr), int(cc)), cost)
             for model, i, o, cr, cc, cost in db.execute(query)]  # fmt: skip
    db.close()
    return found


def expected(case: corpus.Corpus, reference: Totals, state: Path) -> Totals:
    """What the ledger must report: ccusage's totals, except the requests where the ledger
    prices by Anthropic's long-context rule (docs/ledger-rules.md), which must cost what the
    independent oracle says. A corpus that declares its differing requests has each alone in
    a (day, model) cell, checked one by one; otherwise the ledger's counted responses are
    repriced by the oracle (ccusage's rule out, the page's in)."""
    adjusted = Totals(dict(reference.tokens), reference.cost, dict(reference.by_model))
    if case.oracle:
        ours = _ledger_cells(state)
        differ = 0
        for request in case.oracle:
            key = (request.day, request.model)
            want = oracle.anthropic(request)
            got, theirs = ours.get(key, [0, 0.0]), reference.cells.get(key, [0, 0.0])
            assert got[0] == theirs[0] == request.tokens, (key, got, theirs, request)
            assert math.isclose(got[1], want, rel_tol=1e-9), (key, got[1], want, request)
            differ += not math.isclose(theirs[1], want, rel_tol=1e-9)
            adjusted.cost += want - theirs[1]
        assert differ, "ccusage prices every declared request as the page does"
        return adjusted
    for request, cost in _ledger_responses(state):
        if not oracle.differs(request):
            continue
        page, theirs = oracle.anthropic(request), oracle.marginal(request)
        assert not math.isclose(cost, theirs, rel_tol=1e-9), f"priced by ccusage's rule: {request}"
        if math.isclose(cost, page, rel_tol=1e-9):  # otherwise its costUSD, as in ccusage
            adjusted.cost += page - theirs
    return adjusted


def assert_conforms(reference: Totals, ours: Totals, what: str) -> None:
    problems = differences(reference, ours)
    if not problems:
        return
    header = ("model", "ccusage tokens", "cost", "ledger tokens", "cost")
    rows = ["  {:<48} {:>16} {:>14} {:>16} {:>14}".format(*header)]
    for model in sorted(set(reference.by_model) | set(ours.by_model)):
        want = reference.by_model.get(model, [0, 0.0])
        got = ours.by_model.get(model, [0, 0.0])
        if want != got:
            rows.append(f"  {model[:48]:<48} {want[0]:>16.0f} {want[1]:>14.6f} "
                        f"{got[0]:>16.0f} {got[1]:>14.6f}")  # fmt: skip
    pytest.fail(
        f"{what}: the ledger differs from ccusage {CCUSAGE_VERSION}\n  "
        + "\n  ".join(problems)
        + "\nper model (only rows that differ; ccusage names fast entries <model>-fast and "
        "leaves <synthetic> out):\n" + "\n".join(rows),
        pytrace=False,
    )


def _token_and_cost_samples(run: LedgerRun) -> dict:
    wanted = (
        "agentwatch_tokens_total", "agentwatch_cost_usd_total", "agentwatch_api_responses_total",
    )  # fmt: skip
    return {key: value for key, value in run.samples.items() if key[0] in wanted}


# ---------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("name", list(corpus.EDGE_CORPORA))
def test_edge_corpus_matches_ccusage(name: str, tmp_path: Path) -> None:
    """One corpus per rule of docs/ledger-rules.md, numbered like the sections (1-15) of the
    experiments that found ccusage's rules."""
    case = corpus.EDGE_CORPORA[name](tmp_path / "corpus")
    reference, ours = run_both(case, tmp_path / "run", tmp_path / "state")
    assert_conforms(expected(case, reference, tmp_path / "state"), ours.totals, name)


RANDOM_CASES = [  # (seed, lines, multi-MB lines)
    pytest.param(101, 3000, 0, id="seed101"),
    pytest.param(202, 3000, 0, id="seed202"),
    pytest.param(303, 2500, 20, id="seed303-80MB"),
]


@pytest.mark.parametrize(("seed", "n_lines", "big_lines"), RANDOM_CASES)
def test_random_corpus_matches_ccusage(
    seed: int, n_lines: int, big_lines: int, tmp_path: Path
) -> None:
    """Everything mixed the way real sessions mix it, over thousands of lines."""
    case = corpus.random_corpus(tmp_path / "corpus", seed, n_lines, big_lines=big_lines)
    reference, ours = run_both(case, tmp_path / "run", tmp_path / "state")
    assert_conforms(expected(case, reference, tmp_path / "state"), ours.totals, f"seed {seed}")


def test_random_corpus_is_deterministic(tmp_path: Path) -> None:
    """A failing seed must reproduce byte for byte, or it cannot be debugged."""

    def snapshot(root: Path) -> dict[str, tuple[bytes, float]]:
        case = corpus.random_corpus(root, 7, 800)
        base = Path(case.config_dir)
        return {str(path.relative_to(base)): (path.read_bytes(), path.stat().st_mtime)
                for path in sorted(base.rglob("*")) if path.is_file()}  # fmt: skip

    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")


def test_second_run_adds_nothing(tmp_path: Path) -> None:
    """A restart on the same state re-reads nothing and counts nothing twice."""
    case = corpus.random_corpus(tmp_path / "corpus", 404, 1500)
    state = tmp_path / "state"
    first = run_ledger(case, tmp_path / "run1", state)
    second = run_ledger(case, tmp_path / "run2", state)
    assert _token_and_cost_samples(second) == _token_and_cost_samples(first)
    read = ("agentwatch_ledger_bytes_read_total", ())
    assert second.samples[read] == first.samples[read] > 0
    reference = expected(case, run_ccusage(case, tmp_path / "ccusage"), state)
    assert_conforms(reference, second.totals, "second run")


def _cut_plan(files: dict[Path, bytes], rng: random.Random) -> dict[Path, list[int]]:
    """Per file, the sizes it has after each stage (the last stage is the whole file).

    Some files appear only at a later stage; cuts fall anywhere, and on purpose once right
    after a line's `"usage":{` (a partial candidate line, completed later) and once just
    before a line's newline (a whole object whose newline arrives with the next append).
    """
    plan: dict[Path, list[int]] = {}
    for path, data in files.items():
        first = 0 if rng.random() < 0.2 else rng.randint(0, len(data))
        second = rng.randint(first, len(data))
        plan[path] = [first, second, len(data)]
    marker = b'"usage":{'
    for path in sorted(files, key=lambda p: len(files[p]), reverse=True):
        data = files[path]
        first = data.find(marker, len(data) // 3)
        second = data.find(marker, data.find(b"\n", first)) if first > 0 else -1
        newline = data.find(b"\n", second) if second > 0 else -1
        if 0 < first < second < newline:
            plan[path] = [first + len(marker), newline, len(data)]
            return plan
    raise AssertionError("no file has two usage lines to cut")


def test_appends_between_runs_match_ccusage_at_every_stage(tmp_path: Path) -> None:
    """Files grow between runs, lines are cut in the middle and completed later, new files
    appear: after every run the ledger equals ccusage on the files as they are then."""
    full = corpus.random_corpus(tmp_path / "full", 505, 1200)
    base = Path(full.config_dir)
    files = {path.relative_to(base): path.read_bytes()
             for path in sorted(base.rglob("*.jsonl")) if path.is_file()}  # fmt: skip
    plan = _cut_plan(files, random.Random(505))
    live = tmp_path / "live"
    case = corpus.Corpus(str(live))
    state = tmp_path / "state"
    for stage in range(3):
        for rel, sizes in plan.items():
            start = sizes[stage - 1] if stage else 0
            if sizes[stage] > start:
                target = live / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("ab") as handle:  # append: same inode, as Claude Code does
                    handle.write(files[rel][start : sizes[stage]])
        reference, ours = run_both(case, tmp_path / f"run{stage}", state)
        reference = expected(case, reference, state)
        assert_conforms(reference, ours.totals, f"after append stage {stage + 1} of 3")


# ------------------------------------------------------------------- deliberate differences


@dataclass(frozen=True)
class Deliberate:
    """A documented difference: what the ledger must report, and that ccusage still differs."""

    lines: list[corpus.Line]
    ledger_tokens: dict[str, int]
    ledger_cost: float
    later: list[corpus.Line] = field(default_factory=list)  # appended, then a second run


def _deliberate_cases() -> Iterator[tuple[str, Deliberate]]:
    sonnet = corpus.SONNET_45
    yield (
        "shrinking_copy_keeps_the_larger_count",
        Deliberate(
            [corpus.assistant("m", "r", input_tokens=100)],
            {"input": 100, "output": 100, "cache_read": 0, "cache_creation": 0},
            100 * 15e-6,  # the input stays counted; the cost is the winner's (the larger one)
            later=[corpus.assistant("m", "r", output_tokens=100)],  # wins: costlier, same total
        ),
    )
    yield (
        "lower_cost_winner_keeps_the_higher_cost",
        Deliberate(
            [corpus.assistant("m", "r", model=corpus.OPUS_46, input_tokens=100)],
            {"input": 100, "output": 1, "cache_read": 0, "cache_creation": 0},
            100 * 5e-6,  # the opus copy's cost stays; the sonnet winner is cheaper
            later=[corpus.assistant("m", "r", input_tokens=100, output_tokens=1)],
        ),
    )
    yield "negative_cost_usd_is_not_subtracted", Deliberate(
        [corpus.assistant("m1", "r1", input_tokens=1, changes={"costUSD": -0.5}),
         corpus.assistant("m2", "r2", input_tokens=1, changes={"costUSD": 1.5})],
        {"input": 2, "output": 0, "cache_read": 0, "cache_creation": 0}, 1.5,
    )  # fmt: skip
    yield (
        "tokens_above_2_53_reject_the_line",
        Deliberate(
            [
                corpus.assistant("m", "r", model="foo", input_tokens=2**53 + 1),
                corpus.assistant("m2", "r2", model="foo", input_tokens=2**53),
            ],
            {"input": 2**53, "output": 0, "cache_read": 0, "cache_creation": 0},
            0.0,
        ),
    )
    yield "odd_model_names_are_not_fuzzy_matched", Deliberate(
        [corpus.assistant(f"m{n}", f"r{n}", model=model, input_tokens=1000)
         for n, model in enumerate(["sonnet", "claude-opus", "gpt-4", "claude-opus-4-6@default",
                                    "claude-opus-4-8-fast", "claude-3-5-sonnet-latest"])],
        # -latest as claude-3-5-sonnet, -fast as opus-4-8, @default as opus-4-6 (untiered)
        {"input": 6000, "output": 0, "cache_read": 0, "cache_creation": 0}, 1000 * 13e-6,
    )  # fmt: skip
    yield (
        "long_context_bills_every_token_of_the_request",
        Deliberate(
            [corpus.assistant("m", "r", model=sonnet, input_tokens=300_000)],
            {"input": 300_000, "output": 0, "cache_read": 0, "cache_creation": 0},
            1.80,  # the example: $1.20 in ccusage (only the 100k above 200k at $6)
        ),
    )
    yield "cache_creation_given_as_an_array_drops_the_line", Deliberate(
        [corpus.assistant("m", "r", model=sonnet, input_tokens=1,
                          changes={"message.usage.cache_creation": [1000, 2000]})],
        {"input": 0, "output": 0, "cache_read": 0, "cache_creation": 0}, 0.0,
    )  # fmt: skip


DELIBERATE = dict(_deliberate_cases())


@pytest.mark.parametrize("name", list(DELIBERATE))
def test_deliberate_difference_is_as_documented(name: str, tmp_path: Path) -> None:
    """docs/ledger-rules.md lists these; the ledger must behave as written there, and the test
    notices when ccusage stops differing (then the difference can be dropped from the docs)."""
    case_spec = DELIBERATE[name]
    tree = corpus.Tree(tmp_path / "corpus")
    path = tree.session(case_spec.lines)
    reference, ours = run_both(tree.corpus(), tmp_path / "run", tmp_path / "state")
    if case_spec.later:
        with path.open("ab") as handle:
            handle.write(b"".join(corpus.encode(line) + b"\n" for line in case_spec.later))
        reference, ours = run_both(tree.corpus(), tmp_path / "run2", tmp_path / "state")
    assert ours.totals.tokens == case_spec.ledger_tokens
    assert math.isclose(ours.totals.cost, case_spec.ledger_cost, rel_tol=1e-9, abs_tol=1e-12)
    assert differences(reference, ours.totals), f"{name}: ccusage no longer differs"


# ------------------------------------------- regressions: differences found and fixed


@pytest.mark.parametrize("name", list(corpus.REGRESSION_CORPORA))
def test_regression_matches_ccusage(name: str, tmp_path: Path) -> None:
    """Differences from ccusage that were found and fixed (see each corpus's docstring)."""
    case = corpus.REGRESSION_CORPORA[name](tmp_path / "corpus")
    reference, ours = run_both(case, tmp_path / "run", tmp_path / "state")
    assert_conforms(expected(case, reference, tmp_path / "state"), ours.totals, name)


def test_regression_label_values_survive_restart(tmp_path: Path) -> None:
    """The ledger stores label values joined by U+001F; a model or cwd containing that
    character is split into other labels when the counters are read back after a restart."""
    case = corpus.label_separator(tmp_path / "corpus")
    state = tmp_path / "state"
    first = run_ledger(case, tmp_path / "run1", state)
    reference = expected(case, run_ccusage(case, tmp_path / "ccusage"), state)
    assert_conforms(reference, first.totals, "first run")
    second = run_ledger(case, tmp_path / "run2", state)
    assert_conforms(reference, second.totals, "after a restart")


def _staged_and_keyed(database: Path) -> tuple[int, int]:
    """Rows in responses_staged and in responses, as committed (0, 0 before the schema)."""
    if not database.exists():
        return 0, 0
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        return tuple(  # type: ignore[return-value]
            db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("responses_staged", "responses")
        )
    except sqlite3.OperationalError:  # the schema not committed yet
        return 0, 0
    finally:
        db.close()


def _stop(process: subprocess.Popen[str]) -> None:
    """SIGSTOP, and wait until every thread of it is stopped."""
    process.send_signal(signal.SIGSTOP)
    watched = psutil.Process(process.pid)
    deadline = time.monotonic() + TIMEOUT
    while watched.status() != psutil.STATUS_STOPPED:
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.001)


def test_a_kill_with_staged_responses_then_restart_equals_ccusage(tmp_path: Path) -> None:
    """A cold backfill's responses wait in responses_staged until it ends (merged into the
    keyed table then). The sentinel (the daemon, one process, at low priority) is run in
    slices between SIGSTOPs, its database looked at while it is stopped, and killed once
    batches are staged and not merged; the restart merges them first, and its totals equal
    a clean run's and ccusage's (the mutant without that merge counts copies twice)."""
    case = corpus.random_corpus(tmp_path / "corpus", 303, 2500, big_lines=20)
    reference, clean = run_both(case, tmp_path / "clean", tmp_path / "clean-state")
    state, scratch = tmp_path / "state", tmp_path / "killed"
    scratch.mkdir()
    config = scratch / "one-process.yaml"  # every chunk decided in the process we stop
    config.write_text("sentinels:\n  token-ledger:\n    workers: 1\n")
    command = [
        sys.executable, "-m", "agentwatch.cli", "--log-level", "warning", "--config",
        str(config), "sentinel", "token-ledger", "--spool-dir", str(scratch / "spool"),
        "--state-dir", str(state),
    ]  # fmt: skip
    database = state / "token-ledger.sqlite"
    with (scratch / "stderr").open("w") as stderr:
        process = subprocess.Popen(
            command, env=_environment(case, scratch), cwd=scratch,
            stdout=subprocess.DEVNULL, stderr=stderr, text=True,
        )  # fmt: skip
        try:
            psutil.Process(process.pid).nice(19)  # our slices end when we say so
            _stop(process)
            deadline = time.monotonic() + TIMEOUT
            while (counts := _staged_and_keyed(database))[0] == 0:
                assert counts[1] == 0, "the backfill ended between two looks: slice it finer"
                assert time.monotonic() < deadline, "no batch was staged"
                process.send_signal(signal.SIGCONT)
                time.sleep(0.002)
                _stop(process)
        finally:
            process.kill()
            process.wait(timeout=TIMEOUT)
    staged, keyed = _staged_and_keyed(database)
    assert staged > 0 and keyed == 0
    restarted = run_ledger(case, tmp_path / "restart", state)
    assert _staged_and_keyed(database) == (0, len(_ledger_responses(tmp_path / "clean-state")))
    assert _token_and_cost_samples(restarted) == _token_and_cost_samples(clean)
    assert_conforms(expected(case, reference, state), restarted.totals, "restart")
