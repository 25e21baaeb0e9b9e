"""The Codex reader's totals equal `ccusage codex daily --json --offline` (20.0.24): on
generated corpora holding every rule's edge cases and on rollouts the real Codex CLI wrote;
tokens exactly, cost within 1e-6 relative. Each rule is also knocked out in turn, and the
comparison must then fail (else the corpus would not be testing it). Then the reader-level
restart safety: the same keys after an append, a truncation, a whole rewrite, a crash.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentwatch.sentinels.agent_ledger import codex
from agentwatch.sentinels.agent_ledger.base import AgentUsage, daily_totals
from tests.agents import codex_corpus
from tests.agents.codex_tools import (
    ROOT,
    ccusage_daily,
    ccusage_run,
    differences,
    home_files,
    our_daily,
    report_days,
)

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

FIXTURES = ROOT / "tests" / "fixtures" / "agents" / "codex" / "codex-home"
REJECT_REASONS = {"bad_json", "not_an_object", "bad_field_type", "bad_timestamp", "unreadable_file"}
EVERY_RULE = {
    "normal",
    "repeated_snapshot",
    "cumulative_only",
    "counter_reset",
    "last_only",
    "clamps_and_aliases",
    "models",
    "auto_review",
    "timestamps",
    "broken",
    "archived_same_path",
    "copied_rollout",
    "archive_only",
    "fork_forked_from_id",
    "fork_thread_spawn",
    "orphan_fork_dense",
    "orphan_fork_sparse",
    "service_tiers",
    "headless",
}


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[int, codex_corpus.Corpus]:
    """Two seeded homes: one whose config.toml asks for the fast tier, one without."""
    base = tmp_path_factory.mktemp("codex-corpora")
    return {
        seed: codex_corpus.generate(base / f"seed-{seed}", seed, fast_config=seed == 1)
        for seed in (1, 2)
    }


@pytest.mark.parametrize("timezone", ["UTC", "Asia/Kolkata", "America/Los_Angeles"])
@pytest.mark.parametrize("seed", [1, 2])
def test_generated_corpus_equals_ccusage(
    corpora: dict[int, codex_corpus.Corpus], seed: int, timezone: str, tmp_path: Path
) -> None:
    home = str(corpora[seed].home)
    theirs = ccusage_daily(home, tmp_path, timezone)
    assert theirs, "ccusage found nothing: the corpus is not where CODEX_HOME points"
    assert differences(our_daily(home, timezone), theirs) == []


def test_corpus_exercises_every_rule(corpora: dict[int, codex_corpus.Corpus]) -> None:
    for corpus in corpora.values():
        assert set(corpus.rules) >= EVERY_RULE, EVERY_RULE - set(corpus.rules)


def test_corpus_rejects_are_bounded_reasons(corpora: dict[int, codex_corpus.Corpus]) -> None:
    result = codex.read_files(home_files(str(corpora[1].home)))
    assert result.rejects, "the corpus's broken lines were not seen"
    assert set(result.rejects) <= REJECT_REASONS


def test_real_cli_rollouts_equal_ccusage(tmp_path: Path) -> None:
    """Rollouts Codex CLI 0.171.0 wrote (tests/fixtures/agents/codex/README.md)."""
    home = str(FIXTURES)
    theirs = ccusage_daily(home, tmp_path, "UTC")
    assert sum(day["input"] for day in theirs.values()) > 0
    assert differences(our_daily(home, "UTC"), theirs) == []
    entries = codex.read_files(home_files(home)).entries
    # one per scripted turn the CLI recorded, plus the saved --json output of one of them
    assert len(entries) == 7
    assert {entry.model for entry in entries} == {"gpt-5", "gpt-5.4"}
    assert sum(1 for entry in entries if entry.session and entry.project == "project") == 6


def test_several_homes_in_codex_home(
    corpora: dict[int, codex_corpus.Corpus], tmp_path: Path
) -> None:
    """CODEX_HOME may list homes separated by commas; a rollout at the same relative path in
    two homes is two sessions (only duplicate responses are merged)."""
    second = tmp_path / "second-home"
    shutil.copytree(FIXTURES, second)
    home = f"{corpora[2].home}, {second}"
    assert differences(our_daily(home, "UTC"), ccusage_daily(home, tmp_path / "s", "UTC")) == []
    roots = codex.roots({"CODEX_HOME": home}, Path("/unused"))
    assert roots == [corpora[2].home, second]
    assert codex.roots({}, Path("/home/someone")) == [Path("/home/someone/.codex")]


def test_symlinked_rollouts_are_not_followed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURES, home)
    (home / "sessions" / "linked").symlink_to(home / "sessions" / "2026")
    one = next((home / "sessions").rglob("rollout-*.jsonl"))
    (home / "sessions" / "link.jsonl").symlink_to(one)
    assert all("link" not in path.relative_to(home).as_posix() for path in codex.files(home))
    assert differences(our_daily(str(home), "UTC"), ccusage_daily(str(home), tmp_path, "UTC")) == []


def test_unparseable_timestamp_fails_ccusage_and_is_rejected_here(tmp_path: Path) -> None:
    """ccusage stops with "Invalid Codex timestamp" on a timestamp its strict parser refuses
    (microseconds here); the reader counts the line as a reject and goes on."""
    home = tmp_path / "home"
    rollout = home / "sessions" / "2026" / "03" / "01" / "rollout-bad.jsonl"
    rollout.parent.mkdir(parents=True)
    usage = {"input_tokens": 10, "output_tokens": 1}
    good = codex_corpus.Writer.count("2026-03-01T10:00:00.000Z", {"last_token_usage": usage})
    bad = codex_corpus.Writer.count("2026-03-01T10:00:01.123456Z", {"last_token_usage": usage})
    rollout.write_text(good + "\n" + bad + "\n")
    done = ccusage_run(str(home), tmp_path / "scratch", "UTC")
    assert done.returncode != 0 and "Invalid Codex timestamp" in done.stderr
    result = codex.read_files(codex.files(home))
    assert result.rejects == {"bad_timestamp": 1}
    assert [entry.input for entry in result.entries] == [10]


# --- every rule must matter: knock one out, the comparison must fail -------------------------


def _no_deltas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codex.Usage, "minus", lambda self, earlier: self.normalised())


def _no_snapshot_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    def naive(previous: Any, last: Any, total: Any) -> Any:
        if last is not None:
            return last.normalised()
        return total.minus(previous) if total is not None else None

    monkeypatch.setattr(codex, "turn_usage", naive)


def _no_clamp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codex.Usage, "normalised", lambda self: self)


def _no_cache_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    original = codex.parse_usage

    def without(value: Any) -> Any:
        usage = original(value)
        if usage is None:
            return None
        return codex.Usage(usage.input, usage.cached, 0, usage.output, usage.reasoning, usage.total)

    monkeypatch.setattr(codex, "parse_usage", without)


def _no_replay_drop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codex, "drop_replay", lambda events, stamps, prefix: events)


def _no_dedup(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = iter(range(10**9))
    monkeypatch.setattr(codex, "_key", lambda event, millis: f"codex:{next(counter)}")


def _no_archive_dedup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codex, "_relative", lambda path, folder: path)


def _no_tiers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codex, "FAST_TIERS", frozenset())
    monkeypatch.setattr(codex, "_default_fast", lambda path, known=None: False)


def _no_long_context(monkeypatch: pytest.MonkeyPatch) -> None:
    table = codex.price_table()
    flat = {
        name: {k: v for k, v in rates.items() if k != "long_context"}
        for name, rates in table["models"].items()
    }
    monkeypatch.setattr(codex, "price_table", lambda: {**table, "models": flat})


def _no_auto_review(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codex, "AUTO_REVIEW_MODEL", "no-such-model")


def _no_byte_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    original = codex.line_kind
    monkeypatch.setattr(codex, "line_kind", lambda line: original(line.replace(b'": "', b'":"')))


def _no_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    original = codex.parse_timestamp_ms

    def utc_only(text: str) -> int | None:
        return original(text[:19] + "Z") if len(text) in (25, 29) else original(text)

    monkeypatch.setattr(codex, "parse_timestamp_ms", utc_only)


KNOCKOUTS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "cumulative counters to deltas": _no_deltas,
    "repeated snapshots": _no_snapshot_filter,
    "cached and cache-write clamps": _no_clamp,
    "cache writes": _no_cache_writes,
    "fork replay": _no_replay_drop,
    "cross-file dedup": _no_dedup,
    "archived copy of an active rollout": _no_archive_dedup,
    "service tier": _no_tiers,
    "long-context prices": _no_long_context,
    "codex-auto-review model": _no_auto_review,
    "byte pre-filter (spaced JSON skipped)": _no_byte_filter,
    "timestamp offsets": _no_offsets,
}


@pytest.fixture(scope="module")
def reference(
    corpora: dict[int, codex_corpus.Corpus], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    scratch = tmp_path_factory.mktemp("ccusage-scratch")
    return ccusage_daily(str(corpora[1].home), scratch, "UTC")


@pytest.mark.parametrize("rule", list(KNOCKOUTS))
def test_dropping_a_rule_breaks_conformance(
    rule: str,
    corpora: dict[int, codex_corpus.Corpus],
    reference: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert differences(our_daily(str(corpora[1].home), "UTC"), reference) == []
    KNOCKOUTS[rule](monkeypatch)
    assert differences(our_daily(str(corpora[1].home), "UTC"), reference) != [], rule


# --- restart safety: keys are stable, so a ledger keyed on them never counts twice ----------


def _keys(paths: list[Path]) -> dict[str, AgentUsage]:
    return {entry.key: entry for entry in codex.read_files(paths).entries}


def _rollout(corpus: codex_corpus.Corpus, rule: str = "normal") -> Path:
    """The corpus's first rollout written for `rule` with at least two responses."""
    for path in sorted(corpus.home.joinpath("sessions").rglob("*.jsonl")):
        if len(_keys([path])) >= 3:
            return path
    raise AssertionError("no rollout with three responses")


def test_same_keys_after_append(corpora: dict[int, codex_corpus.Corpus], tmp_path: Path) -> None:
    source = _rollout(corpora[1])
    lines = source.read_bytes().splitlines(keepends=True)
    target = tmp_path / "sessions" / "rollout-grow.jsonl"
    target.parent.mkdir(parents=True)
    seen: dict[str, AgentUsage] = {}
    for cut in range(1, len(lines) + 1):
        target.write_bytes(b"".join(lines[:cut]))
        now = _keys([target])
        for key, entry in seen.items():
            assert now[key] == entry  # an earlier response keeps its key and its numbers
        seen.update(now)
    assert seen.keys() == _keys([source]).keys()


def test_same_keys_after_truncation_and_half_lines(
    corpora: dict[int, codex_corpus.Corpus], tmp_path: Path
) -> None:
    source = _rollout(corpora[1])
    data = source.read_bytes()
    full = _keys([source])
    target = tmp_path / "sessions" / "rollout-cut.jsonl"
    target.parent.mkdir(parents=True)
    for size in range(0, len(data), max(1, len(data) // 97)):
        target.write_bytes(data[:size])  # cut anywhere, mid-line included
        assert _keys([target]).keys() <= full.keys()


def test_same_keys_after_whole_rewrite_and_copy(
    corpora: dict[int, codex_corpus.Corpus], tmp_path: Path
) -> None:
    source = _rollout(corpora[1])
    before = _keys([source])
    rewritten = tmp_path / "sessions" / "rollout-rewritten.jsonl"
    rewritten.parent.mkdir(parents=True)
    temporary = rewritten.with_suffix(".tmp")
    temporary.write_bytes(source.read_bytes())
    os.replace(temporary, rewritten)  # a new inode, the same text
    assert _keys([rewritten]).keys() == before.keys()
    assert _keys([source, rewritten]).keys() == before.keys()  # a copy: the same responses


def test_ledger_killed_mid_backfill_never_counts_twice(
    corpora: dict[int, codex_corpus.Corpus], tmp_path: Path
) -> None:
    """A ledger keyed on `key` stores part of a backfill, dies (SIGKILL: nothing else
    stored), then reads everything again: its totals are ccusage's, not more."""
    home = str(corpora[2].home)
    entries = codex.read_files(home_files(home)).entries
    stored: dict[str, AgentUsage] = {entry.key: entry for entry in entries[: len(entries) // 3]}
    for entry in codex.read_files(home_files(home)).entries:  # the restart's full re-read
        stored.setdefault(entry.key, entry)
    totals = daily_totals(stored.values(), "UTC", codex.price)
    assert differences(totals, ccusage_daily(home, tmp_path, "UTC")) == []


def test_no_text_from_the_files_in_records(tmp_path: Path) -> None:
    """Records carry ids, names and numbers; never the prompts or replies in the rollout."""
    result = codex.read_files(home_files(str(FIXTURES)))
    flat = repr(result.entries) + repr(result.rejects)
    for text in ("scripted prompt", "scripted stand-in", "scripted answer", "instructions"):
        assert text not in flat


@pytest.mark.parametrize("seed", range(3))
def test_mutated_rollouts_equal_ccusage(seed: int, tmp_path: Path) -> None:
    """Small homes whose lines have one field broken (wrong type, out of range, missing):
    whatever ccusage makes of them, the reader makes the same; where ccusage gives up on a
    timestamp, the reader has counted a reject."""
    rng = random.Random(seed)
    for trial in range(25):
        home = tmp_path / f"home-{trial}"
        codex_corpus.fuzz_home(home, rng)
        done = ccusage_run(str(home), tmp_path / "scratch", "UTC")
        if done.returncode != 0:
            assert "Invalid Codex timestamp" in done.stderr
            assert "bad_timestamp" in codex.read_files(home_files(str(home))).rejects
            continue
        theirs = report_days(done.stdout)
        assert differences(our_daily(str(home), "UTC"), theirs) == [], f"trial {trial}"


def test_headless_output_timed_by_mtime_keeps_its_keys(tmp_path: Path) -> None:
    """Saved `codex exec --json` output has no timestamps: ccusage times it by the file's
    mtime, which every append moves, so those records are keyed by place and content."""
    saved = FIXTURES / "sessions" / "saved-exec-json" / "exec-output.jsonl"
    target = tmp_path / "sessions" / "exec.jsonl"
    target.parent.mkdir(parents=True)
    target.write_bytes(saved.read_bytes())
    os.utime(target, (1_780_000_000, 1_780_000_000))
    before = _keys([target])
    assert len(before) == 1
    usage = {"input_tokens": 10, "output_tokens": 2}
    with target.open("a") as handle:
        handle.write(codex_corpus.compact({"type": "turn.completed", "usage": usage}) + "\n")
    os.utime(target, (1_780_090_000, 1_780_090_000))  # the next day
    after = _keys([target])
    assert before.keys() < after.keys()
    assert (
        differences(
            our_daily(str(tmp_path), "UTC"), ccusage_daily(str(tmp_path), tmp_path / "s", "UTC")
        )
        == []
    )


LEDGER_WRITER = """
import dataclasses, json, sys, time
from pathlib import Path
from agentwatch.sentinels.agent_ledger import codex
from tests.agents.codex_tools import home_files
ledger = Path(sys.argv[2])
stored = set()
if ledger.exists():
    for line in ledger.read_text().splitlines():
        try:
            stored.add(json.loads(line)["key"])
        except ValueError:
            pass  # the half line a kill left
with ledger.open("a") as out:
    if ledger.stat().st_size and not ledger.read_bytes().endswith(b"\\n"):
        out.write("\\n")  # end the half line, so the next record starts on its own
    for entry in codex.read_files(home_files(sys.argv[1])).entries:
        if entry.key not in stored:
            out.write(json.dumps(dataclasses.asdict(entry)) + "\\n")
            out.flush()
            time.sleep(float(sys.argv[3]))
"""


def test_ledger_sigkilled_mid_backfill_never_counts_twice(
    corpora: dict[int, codex_corpus.Corpus], tmp_path: Path
) -> None:
    """A real process storing records by key is SIGKILLed mid-backfill, restarted, and its
    ledger's totals are still exactly ccusage's."""
    home, ledger = str(corpora[1].home), tmp_path / "ledger.jsonl"
    command = [sys.executable, "-c", LEDGER_WRITER, home, str(ledger)]
    first = subprocess.Popen([*command, "0.002"], cwd=ROOT)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (not ledger.exists() or ledger.stat().st_size < 3000):
        time.sleep(0.01)
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    written = ledger.read_text().count("\n")
    subprocess.run([*command, "0"], cwd=ROOT, check=True, timeout=60)
    rows = []
    for line in ledger.read_text().splitlines():
        with contextlib.suppress(ValueError):
            rows.append(codex.CodexUsage(**json.loads(line)))
    assert 0 < written < len(rows)  # killed part-way, then completed
    assert len({row.key for row in rows}) == len(rows)
    totals = daily_totals(rows, "UTC", codex.price)
    assert differences(totals, ccusage_daily(home, tmp_path, "UTC")) == []


# --- the fast paths read what the slow ones read -------------------------------------------


@pytest.mark.parametrize("chunk", [1, 7, 500, 4096])
def test_lines_across_chunk_boundaries_read_the_same(
    corpora: dict[int, codex_corpus.Corpus], chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rollout is read in chunks of whole lines: lines cut by any chunk size (one byte
    included) give the same records, keys and rejects as one chunk holding the file."""
    paths = home_files(str(corpora[1].home))
    whole = codex.read_files(paths)
    monkeypatch.setattr(codex, "CHUNK", chunk)
    cut = codex.read_files(paths)
    assert cut.entries == whole.entries
    assert cut.rejects == whole.rejects


# Pieces of lines near the six strings the line finder looks for: whole, cut, unquoted.
FINDER_PIECES = [
    b'"turn_context"', b'"token_count"', b'"thread_settings_applied"', b'"usage":',
    b'"input_tokens":', b'"prompt_tokens":', b'"usage"', b'"input_tokens"', b'turn_context"',
    b'"token_count', b'"thread_settings_applied', b'"t', b'"', b"\n", b"x", b" ", b"\x00",
    b'"prompt_tokens" :', b'\\"usage\\":', b"\xff",
]  # fmt: skip


@pytest.mark.parametrize("avx2", [True, False])
def test_the_c_line_finder_finds_what_the_python_loop_finds(avx2: bool) -> None:
    """_codexscan.collect (C, SIMD: AVX2 where the CPU has it, else SSE2) hands back exactly
    the lines _candidates_py (a regex) does, at the same offsets, for random lines of pieces
    cut at any stop, a needle cut by the stop included. It is built with the package: its
    absence fails here."""
    from agentwatch.sentinels.agent_ledger import _codexscan
    from agentwatch.sentinels.agent_ledger._codexscan import collect

    assert codex._collect is collect
    default = _codexscan.avx2(True)
    try:
        assert _codexscan.avx2(avx2) == (avx2 and default)
        _finds_what_the_python_loop_finds(collect)
    finally:
        _codexscan.avx2(True)


def _finds_what_the_python_loop_finds(collect: Callable[[bytes, int, int], Any]) -> None:
    rng = random.Random(29)
    found = 0
    for _ in range(20_000):
        data = b"".join(rng.choice(FINDER_PIECES) for _ in range(rng.randint(0, 120)))
        for stop in {len(data), data.rfind(b"\n") + 1, rng.randint(0, len(data))}:
            expected = codex._candidates_py(data, stop, 7)
            assert collect(data, stop, 7) == expected, (data, stop)
            found += len(expected)
    assert found > 10_000  # the pieces do make lines that count
    with pytest.raises(ValueError):
        collect(b"abc", 4, 0)


_STAMP = b'"timestamp":"2026-03-01T10:00:00.000Z"'
_USAGE = (
    b'{"input_tokens":120,"cached_input_tokens":20,"output_tokens":9,'
    b'"reasoning_output_tokens":3,"total_tokens":129}'
)
_LAST = (
    b'{"input_tokens":60,"cached_input_tokens":10,"output_tokens":5,'
    b'"reasoning_output_tokens":1,"total_tokens":65}'
)
_PLAIN_COUNT = (
    b"{" + _STAMP + b',"type":"event_msg","payload":{"type":"token_count","info":'
    b'{"total_token_usage":' + _USAGE + b',"last_token_usage":' + _LAST + b","
    b'"model_context_window":258400},"rate_limits":null}}'
)
_PLAIN_TURN = (
    b"{" + _STAMP + b',"type":"turn_context","payload":{"cwd":"/work/p1",'
    b'"approval_policy":"never","model":"gpt-5.4"}}'
)
# Lines the C reader (_codexscan.plain) takes, declines, or must read exactly as the
# rules in Python do: repeated keys, escapes, odd numbers, names the rules read.
PLAIN_EDGES = [
    _PLAIN_COUNT,
    _PLAIN_TURN,
    _PLAIN_COUNT.replace(b'"cached_input_tokens":20', b'"cached_input_tokens":500'),
    _PLAIN_COUNT.replace(b'"total_tokens":129', b'"total_tokens":0'),
    _PLAIN_COUNT.replace(b'"input_tokens":120,', b'"input_tokens":120,"cache_write_input_tokens":7,'),  # noqa: E501
    _PLAIN_COUNT.replace(b'"input_tokens":120,', b'"input_tokens":120,"input_tokens":121,'),
    _PLAIN_COUNT.replace(b'"input_tokens":120', b'"input_tokens":18446744073709551615'),
    _PLAIN_COUNT.replace(b'"input_tokens":120', b'"input_tokens":9999999999999999999'),
    _PLAIN_COUNT.replace(b'"input_tokens":120', b'"input_tokens":1.0'),
    _PLAIN_COUNT.replace(b'"input_tokens":120', b'"input_tokens":1e2'),
    _PLAIN_COUNT.replace(b'"input_tokens":120', b'"input_tokens":-1'),
    _PLAIN_COUNT.replace(b'"input_tokens":120', b'"input_tokens":0120'),
    _PLAIN_COUNT.replace(b'"input_tokens":120', b'"input_tokens":"120"'),
    _PLAIN_COUNT.replace(b'"input_tokens":120', b'"prompt_tokens":120'),
    _PLAIN_COUNT.replace(b'"model_context_window"', b'"model":"gpt-5.2","x"'),
    _PLAIN_COUNT.replace(b'"rate_limits"', b'"model_name":"gpt-5.2","x"'),
    _PLAIN_COUNT.replace(b'"rate_limits"', b'"thread_settings":{},"x"'),
    _PLAIN_COUNT.replace(b'"rate_limits":null', b'"info":null'),
    _PLAIN_COUNT.replace(b'"rate_limits":null', b'"type":"turn_context"'),
    _PLAIN_COUNT.replace(b'"type":"event_msg"', b'"type":"event_msg","type":"x"'),
    _PLAIN_COUNT.replace(b'"rate_limits":null', b'"rate_limits":{"a":NaN}'),
    _PLAIN_COUNT.replace(b'"rate_limits":null', b'"rate_limits":{"a":1e400}'),
    _PLAIN_COUNT.replace(b'"rate_limits":null', b'"rate_limits":"\\u00e9\xc3\xa9"'),
    _PLAIN_COUNT.replace(b'"rate_limits":null', b'"rate_limits":"\\ud800"'),
    _PLAIN_COUNT.replace(b'"rate_limits":null', b'"rate_limits":' + b"[" * 70 + b"]" * 70),
    _PLAIN_COUNT.replace(b'"type":"token_count"', b'"typ\\u0065":"token_count"'),
    _PLAIN_COUNT.replace(b'"type":"token_count"', b'"type" : "token_count" '),
    _PLAIN_COUNT.replace(b"2026-03-01T10:00:00.000Z", b"   "),
    _PLAIN_COUNT.replace(b"2026-03-01T10:00:00.000Z", b" 2026-03-01T10:00:00.000Z "),
    _PLAIN_COUNT.replace(b"2026-03-01T10:00:00.000Z", b"2026-03-01T12:00:00.000+02:00"),
    _PLAIN_COUNT.replace(b'"2026-03-01T10:00:00.000Z"', b"1772359200"),
    _PLAIN_COUNT.replace(b'"2026-03-01T10:00:00.000Z"', b"null"),
    _PLAIN_COUNT + b" x",
    _PLAIN_COUNT[:-1],
    b"\xef\xbb\xbf" + _PLAIN_COUNT,
    _PLAIN_TURN.replace(b'"gpt-5.4"', b'"  "'),
    _PLAIN_TURN.replace(b'"gpt-5.4"', b'" gpt-5.2 "'),
    _PLAIN_TURN.replace(b'"gpt-5.4"', b"null"),
    _PLAIN_TURN.replace(b'"gpt-5.4"', b"7"),
    _PLAIN_TURN.replace(b'"/work/p1"', b"7"),
    _PLAIN_TURN.replace(b'"cwd":"/work/p1",', b""),
    _PLAIN_TURN.replace(b'"model":"gpt-5.4"', b'"model_name":"gpt-5.2"'),
    _PLAIN_TURN.replace(b'"model":"gpt-5.4"', b'"model":"a","model":"b"'),
    _PLAIN_TURN.replace(b'"model":"gpt-5.4"', b'"model":"a","metadata":{"model":"b"}'),
    _PLAIN_TURN.replace(b'"model":"gpt-5.4"', b'"model":"a","info":{"last_token_usage":[]}'),
    _PLAIN_TURN.replace(b'"model":"gpt-5.4"', b'"model":"a","type":7'),
    _PLAIN_TURN.replace(b'"/work/p1"', b'"/work/caf\\u00e9"'),
    _PLAIN_TURN.replace(b'"2026-03-01T10:00:00.000Z"', b"-1"),
    b'{"type":"turn_context"}',
    _PLAIN_TURN.replace(b'"type":"turn_context"', b'"type": "turn_context"'),
    _PLAIN_TURN.replace(b'"type":"turn_context"', b'"type" :"turn_context"'),
    _PLAIN_COUNT.replace(b'"type":"event_msg"', b'"type": "event_msg"'),
    # past 64 KiB, ccusage reads a spaced type only when no compact "type": is elsewhere
    _PLAIN_COUNT.replace(b'"type":"event_msg"', b'"type": "event_msg"').replace(
        b'"rate_limits":null', b'"rate_limits":"' + b"x" * 70_000 + b'"'
    ),
    b'{"type":"turn_context","payload":null}',
]  # fmt: skip
_MUTATIONS = [b'"', b",", b":", b"{", b"}", b"[", b"]", b" ", b"\\", b"0", b"9", b"-", b"e", b"\n"]


def _read_one(line: bytes, folder: Path) -> tuple[codex.FileState, list[str]]:
    """The file state and rejects of a rollout holding `line` between two plain lines; an
    event's millis (known when the C reader read its line) is checked and then dropped."""
    rollout = folder / "rollout-one.jsonl"
    first = _PLAIN_COUNT.replace(b":120", b":100").replace(b"10:00:00", b"09:59:00")
    rollout.write_bytes(first + b"\n" + line + b"\n" + _PLAIN_COUNT + b"\n")
    rejects: list[str] = []
    state = codex.parse_file(rollout, rejects.append)
    for event in state.events:
        assert event.millis in (None, codex.parse_timestamp_ms(event.timestamp))
    state.events = [event._replace(millis=None) for event in state.events]
    return state, rejects


def test_the_c_reader_of_plain_lines_reads_what_the_rules_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """_codexscan.plain reads a plain token_count or turn_context line in one pass; every
    edge line above and 3,000 random mutations of them (a byte inserted, dropped or
    replaced) leave the same file state (events, model, cwd, totals, stamps) and rejects as
    the rules in Python alone. It is built with the package: its absence fails here."""
    from agentwatch.sentinels.agent_ledger._codexscan import plain

    assert codex._plain_line is plain
    assert plain(PLAIN_EDGES[0]) is not None and plain(PLAIN_EDGES[1]) is not None
    assert plain(PLAIN_EDGES[4]) is not None  # with cache writes, as Codex writes them too
    rng = random.Random(29)
    lines = list(PLAIN_EDGES)
    for _ in range(3_000):
        line = bytearray(rng.choice(PLAIN_EDGES))
        at = rng.randrange(len(line))
        how = rng.randrange(3)
        if how == 0:
            line[at:at] = rng.choice(_MUTATIONS)
        elif how == 1:
            del line[at]
        else:
            line[at : at + 1] = rng.choice(_MUTATIONS)
        lines.append(bytes(line))
    taken = 0
    for line in lines:
        taken += plain(line) is not None
        fast = _read_one(line, tmp_path)
        with monkeypatch.context() as patch:
            patch.setattr(codex, "_plain_line", codex._no_plain_line)
            slow = _read_one(line, tmp_path)
        assert fast == slow, line
    assert taken > 150  # the C reader does take many of them


ZULU_EDGES = [
    "0000-01-01T00:00:00.000Z", "0001-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999Z",
    "1970-01-01T00:00:00.000Z", "2024-02-29T12:00:00.000Z", "2025-02-29T12:00:00.000Z",
    "2000-02-29T00:00:00.000Z", "1900-02-29T00:00:00.000Z", "2100-02-28T00:00:00.000Z",
    "9999-12-31T23:59:59.999Z", "2026-03-01T24:00:00.000Z", "2026-03-01T23:60:00.000Z",
    "2026-03-01T23:59:60.000Z", "2026-00-10T10:00:00.000Z", "2026-13-01T10:00:00.000Z",
    "2026-04-31T10:00:00.000Z", "2026-03-01T10:00:00.000z", "2026-03-01 10:00:00.000Z",
    "2026-03-01T10:00:00,000Z", "2026-03-01T10:00:0a.000Z", "2026-03-01T10:00:00.00Z",
    "+026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000+00:00", "2026-03-01T10:00:00Z",
]  # fmt: skip


def test_the_c_reader_times_codex_timestamps_as_parse_timestamp_ms() -> None:
    """The epoch milliseconds _codexscan.plain reads of a Codex-form timestamp equal
    parse_timestamp_ms's, for the edges above (leap days, bounds, other forms: None) and
    5,000 random moments of years 1 to 9999; _normalised_timestamp, which gives a
    Codex-form text from 1970 on back as it is, renders each as _format_ms does."""
    from agentwatch.sentinels.agent_ledger._codexscan import plain

    rng = random.Random(29)
    stamps = list(ZULU_EDGES)
    for _ in range(5_000):
        day = rng.randrange(1, 3_652_059)  # 0001-01-01 to 9999-12-31 as date ordinals
        stamps.append(
            datetime.date.fromordinal(day).isoformat()
            + f"T{rng.randrange(24):02}:{rng.randrange(60):02}:{rng.randrange(60):02}"
            + f".{rng.randrange(1000):03}Z"
        )
    timed = 0
    for stamp in stamps:
        found = plain(_PLAIN_COUNT.replace(b"2026-03-01T10:00:00.000Z", stamp.encode()))
        assert found is not None and len(found) == 4
        expected = codex.parse_timestamp_ms(stamp)
        assert found[3] in (None, expected), stamp
        timed += found[3] is not None
        assert (found[3] is None) == (expected is None or len(stamp) != 24), stamp
        # and _normalised_timestamp's short way for that form renders as _format_ms does
        rendered = None if expected is None else codex._format_ms(expected)
        assert codex._normalised_timestamp(f" {stamp} ") == rendered, stamp
    assert timed >= 5_000


@pytest.mark.parametrize("size", [10, 32_767, 32_768, 32_769, 100_000])
@pytest.mark.parametrize("newline", [True, False])
def test_the_first_line_is_read_whole(size: int, newline: bool, tmp_path: Path) -> None:
    """read_meta reads the first line in whole reads of META_READ bytes: a session_meta
    line shorter or longer than one read (or the whole file, without a newline) gives the
    Meta that readline's line gives."""
    rollout = tmp_path / "rollout-meta.jsonl"
    meta = {"timestamp": "2026-03-01T10:00:00.000Z", "type": "session_meta"}
    meta["payload"] = {"id": "s-1", "cwd": "/work/p1", "forked_from_id": "s-0"}
    head = json.dumps(meta, separators=(",", ":"))[:-1]
    line = (head + ',"pad":"' + "x" * max(size - len(head) - 10, 0) + '"}').encode()
    rollout.write_bytes(line + (b"\n" + _PLAIN_COUNT + b"\n" if newline else b""))
    with rollout.open("rb") as handle:
        expected = codex._meta_of(handle.readline())
    assert expected.session_id == "s-1" and expected.parent_id == "s-0"
    assert codex.read_meta(rollout) == expected


EDGE_LINES = [
    b'{"timestamp":NaN,"type":"turn_context","payload":{"model":"gpt-5"}}',
    b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"event_msg","payload":{"type":'
    b'"token_count","info":{"last_token_usage":{"input_tokens":99999999999999999999999}}}}',
    b'{"timestamp":1e400,"type":"turn_context","payload":{"model":"gpt-5"}}',
    b'{"type":"turn_context","payload":{"model":"\\ud800"}}',
    b'\xef\xbb\xbf{"type":"turn_context","payload":{"model":"gpt-5"}}',
    b'{"type":"turn_context","payload":{"model":"a","model":"b"}}',
    b'{"type":"turn_context","payload":' + b"[" * 990 + b"]" * 990 + b"}",
    b'{"type":"turn_context","payload":' + b"[" * 400 + b"]" * 400 + b"}",
    b'{"type":"turn_context","payload":{"model":"gpt-5"}',
    b'["type","turn_context"]',
]


@pytest.mark.parametrize("line", EDGE_LINES, ids=range(len(EDGE_LINES)))
def test_lines_read_as_the_stdlib_parser_reads_them(
    line: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines go through orjson where it reads them as json.loads does; NaN, lone
    surrogates, a BOM and nesting past the stdlib's recursion go to json, and a number past
    64 bits (an int to json, a float to orjson) is no u64 either way: the records and
    rejects are those of a reader parsing every line with the stdlib (_stdlib_loads)."""
    rollout = tmp_path / "sessions" / "2026" / "03" / "01" / "rollout-edge.jsonl"
    rollout.parent.mkdir(parents=True)
    usage = {"input_tokens": 10, "output_tokens": 1}
    count = codex_corpus.Writer.count("2026-03-01T10:00:00.000Z", {"last_token_usage": usage})
    rollout.write_bytes(count.encode() + b"\n" + line + b"\n" + count.encode() + b"\n")
    fast = codex.read_files([rollout])
    monkeypatch.setattr(codex, "_loads", codex._stdlib_loads)
    slow = codex.read_files([rollout])
    assert (fast.entries, fast.rejects) == (slow.entries, slow.rejects)


@pytest.mark.parametrize(
    "field",
    [
        ("turn_context", "model"),
        ("turn_context", "cwd"),
        ("session_meta", "id"),
        ("session_meta", "cwd"),
        ("event_msg", "model"),
    ],
)
def test_a_lone_surrogate_is_never_a_label(field: tuple[str, str], tmp_path: Path) -> None:
    """A string holding a lone surrogate (json's \\ud800: the stdlib lets it through,
    serde and orjson refuse it) never reaches a key, a label or the database, which cannot
    encode it: a typed field holding one fails its line (a reject), another is no text."""
    kind, name = field
    rollout = tmp_path / "sessions" / "2026" / "03" / "01" / "rollout-surrogate.jsonl"
    rollout.parent.mkdir(parents=True)
    usage = {"input_tokens": 10, "output_tokens": 1}
    info = {"last_token_usage": usage}
    lines = [
        {"timestamp": "2026-03-01T09:59:00.000Z", "type": "session_meta",
         "payload": {"id": "s1", "cwd": "/w/p"}},
        {"timestamp": "2026-03-01T09:59:30.000Z", "type": "turn_context",
         "payload": {"model": "gpt-5", "cwd": "/w/p"}},
        {"timestamp": "2026-03-01T10:00:00.000Z", "type": "event_msg",
         "payload": {"type": "token_count", "info": info}},
    ]  # fmt: skip
    target = next(line for line in lines if line["type"] == kind)
    target["payload"][name] = "SURROGATE"
    text = "\n".join(codex_corpus.compact(line) for line in lines) + "\n"
    rollout.write_text(text.replace("SURROGATE", "x\\ud800y"))
    result = codex.read_files([rollout])
    for entry in result.entries:
        for value in (entry.key, entry.session, entry.project, entry.model):
            value.encode("utf-8")
    assert sum(entry.input for entry in result.entries) + sum(result.rejects.values()) >= 1


@pytest.mark.parametrize("sha_ni", [True, False])
def test_the_c_key_is_the_python_key(sha_ni: bool) -> None:
    """_codexscan.sha256 (with the CPU's SHA extensions where it has them, and without) is
    hashlib's SHA-256 on random data of 0 to 300 bytes (every padding case) and longer;
    _codexscan.key (the _key in use) gives _key_py's key for random events: big and odd
    numbers, non-ASCII models, ints past 64 bits."""
    from agentwatch.sentinels.agent_ledger import _codexscan

    assert codex._key is _codexscan.key
    default = _codexscan.sha_ni(True)
    try:
        assert _codexscan.sha_ni(sha_ni) == (sha_ni and default)
        _hashes_as_hashlib(_codexscan.sha256)
    finally:
        _codexscan.sha_ni(True)


def _hashes_as_hashlib(sha256: Callable[[bytes], bytes]) -> None:
    """sha256 against hashlib on random data; codex._key against _key_py on random events."""
    import hashlib

    rng = random.Random(29)
    for size in [*range(300), *(rng.randrange(300, 20_000) for _ in range(100))]:
        data = rng.randbytes(size)
        assert sha256(data) == hashlib.sha256(data).digest(), size
    models = ["gpt-5", "gpt-5.1-codex", "", "mødel ✓", "a|b", "x" * 300, "codex-auto-review"]
    numbers = [0, 1, 9, 10, 2**31, 2**53, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**65 + 7]
    for _ in range(5_000):
        usage = codex.Usage(*(rng.choice([*numbers, rng.randrange(10**7)]) for _ in range(6)))
        event = codex.Event("t", rng.choice(models), usage, None, 0)
        millis = rng.choice([0, -1, -62_135_596_800_000, 253_402_300_799_999, rng.randrange(2**41)])
        assert codex._key(event, millis) == codex._key_py(event, millis), (event, millis)


def test_the_c_record_is_the_dataclass() -> None:
    """_codexscan.record makes the CodexUsage the dataclass's __init__ makes from the same
    values: equal, hashed alike, frozen, of the same class."""
    import dataclasses

    from agentwatch.sentinels.agent_ledger import _codexscan

    names = tuple(field.name for field in dataclasses.fields(codex.CodexUsage))
    assert _codexscan.record_class(codex.CodexUsage, names) is True  # into the slots
    values = ("codex", "codex:ab", 1.5, "s", "p", "gpt-5", 1, 2, 3, 4, None, True)
    made, expected = codex._record(*values), codex.CodexUsage(*values)
    assert type(made) is codex.CodexUsage and made == expected and hash(made) == hash(expected)
    assert dataclasses.astuple(made) == values
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.fast = False  # type: ignore[misc]
    assert dataclasses.replace(made, fast=False) == codex.CodexUsage(*values[:-1], False)
    with pytest.raises(TypeError):
        codex._record(*values[:-1])


_REVIEW_TURN = _PLAIN_TURN.replace(b'"gpt-5.4"', b'"codex-auto-review"')
_HUGE = b"18446744073709551615"
# Lines that move the state _codexscan.advance keeps (model, tier, previous total, stamps)
# or that it must hand back to the rules: an auto-review model, a tier, repeated and reset
# totals, a total past u64 (kept by the rules as the previous total), no usage at all.
LOOP_EDGES = [
    _REVIEW_TURN,
    _PLAIN_TURN.replace(b'"model":"gpt-5.4"', b'"model":"gpt-5.1-codex"'),
    b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"event_msg","payload":{"type":'
    b'"thread_settings_applied","thread_settings":{"service_tier":"priority"}}}',
    b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"event_msg","payload":{"type":'
    b'"thread_settings_applied","thread_settings":{"service_tier":"default"}}}',
    _PLAIN_COUNT.replace(_LAST, _USAGE),
    _PLAIN_COUNT.replace(_USAGE, _LAST),
    _PLAIN_COUNT.replace(b":120,", b":0,").replace(b":60,", b":0,").replace(b":9,", b":0,")
    .replace(b":5,", b":0,").replace(b":20,", b":0,").replace(b":10,", b":0,")
    .replace(b":3,", b":0,").replace(b":1,", b":0,"),
    _PLAIN_COUNT.replace(b'"input_tokens":120', b'"input_tokens":' + _HUGE)
    .replace(b'"output_tokens":9', b'"output_tokens":' + _HUGE)
    .replace(b'"total_tokens":129', b'"total_tokens":0'),
    _PLAIN_COUNT.replace(b'"input_tokens":120', b'"prompt_tokens":' + _HUGE)
    .replace(b'"output_tokens":9', b'"output_tokens":' + _HUGE)
    .replace(b'"total_tokens":129', b'"total_tokens":0'),
    _PLAIN_COUNT.replace(b"10:00:00.000Z", b"10:00:00.500Z"),
    _PLAIN_COUNT.replace(b"2026-03-01T10:00:00.000Z", b"1969-12-31T23:59:59.000Z"),
    b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"session_meta","payload":{"id":"s"}}',
    b'{"timestamp":"2026-03-01T10:00:01.000Z","usage":{"input_tokens":5,"output_tokens":2}}',
]  # fmt: skip


def _states(path: Path) -> dict[str, tuple[codex.FileState, list[str]]]:
    """parse_file's state and rejects of `path` three ways: with _codexscan.advance taking
    the plain lines (fast), with only _codexscan.plain (plain), with the rules alone
    (rules); an event's millis, known only where C read the line, is checked and dropped."""
    out = {}
    for way in ("fast", "plain", "rules"):
        with pytest.MonkeyPatch.context() as patch:
            if way == "plain":
                patch.setattr(codex, "_advance", None)
            elif way == "rules":
                patch.setattr(codex, "_plain_line", codex._no_plain_line)
            rejects: list[str] = []
            state = codex.parse_file(path, rejects.append)
        for event in state.events:
            assert event.millis in (None, codex.parse_timestamp_ms(event.timestamp))
        state.events = [event._replace(millis=None) for event in state.events]
        out[way] = (state, rejects)
    return out


def test_the_c_loop_takes_plain_lines_as_the_rules_take_them(tmp_path: Path) -> None:
    """_codexscan.advance keeps a rollout's state in C across its plain lines and hands the
    others back: 2,000 rollouts of 1 to 14 random lines (the edges above, a third of them
    mutated by a byte) read in chunks of a random size leave the same FileState (events,
    model, cwd, tier, previous total, stamps) and rejects as the rules alone, and as the
    reader before the loop (_codexscan.plain per line)."""
    from agentwatch.sentinels.agent_ledger._codexscan import advance

    assert codex._advance is advance and codex._fast_rules() is not None
    rng = random.Random(29)
    pool = PLAIN_EDGES + LOOP_EDGES
    rollout = tmp_path / "sessions" / "rollout-loop.jsonl"
    rollout.parent.mkdir()
    events = 0
    for _ in range(2_000):
        lines = []
        for _ in range(rng.randint(1, 14)):
            line = bytearray(rng.choice(pool))
            if rng.random() < 0.3:
                at = rng.randrange(len(line))
                line[at : at + rng.randrange(2)] = rng.choice(_MUTATIONS)
            lines.append(bytes(line))
        rollout.write_bytes(b"\n".join(lines) + rng.choice([b"\n", b""]))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(codex, "CHUNK", rng.choice([1, 50, 300, 1 << 20]))
            states = _states(rollout)
        assert states["fast"] == states["rules"] == states["plain"], lines
        events += len(states["fast"][0].events)
    assert events > 3_000  # the rollouts do count responses


def test_the_c_loop_reads_real_and_generated_rollouts_as_the_rules(
    corpora: dict[int, codex_corpus.Corpus],
) -> None:
    """Every rollout the real Codex CLI wrote (the fixtures) and every generated one: the
    same FileState and rejects with the C loop as with the rules alone."""
    paths = [*FIXTURES.rglob("*.jsonl")]
    for corpus in corpora.values():
        paths += corpus.home.rglob("*.jsonl")
    assert len(paths) > 50
    for path in paths:
        states = _states(path)
        assert states["fast"] == states["rules"] == states["plain"], path


@pytest.mark.parametrize("index", range(len(codex._OWN_RULES)))
def test_a_knocked_out_rule_turns_the_c_loop_off(
    index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The C loop repeats these rules: when a test replaces any one of them (a knock-out),
    parse_file runs the rules in Python, so the knock-out reaches every line."""
    assert codex._fast_rules() is not None
    names = [
        "_plain_line", "_plain_line_read", "_count", "_recorded", "turn_usage",
        "_resolve_model", "parse_timestamp_ms", "Usage.normalised", "Usage.minus",
        "Usage.empty", "_collect",
    ]  # fmt: skip
    assert len(names) == len(codex._OWN_RULES)
    owner, _, name = names[index].rpartition(".")
    target = codex.Usage if owner else codex
    original = getattr(target, name)
    assert original is codex._OWN_RULES[index]
    monkeypatch.setattr(target, name, lambda *args: original(*args))
    assert codex._fast_rules() is None


def _random_home(folder: Path, rng: random.Random) -> Path:
    """A Codex home of 300 rollouts of random plain, tier and edge lines (one day, so
    many responses are copies of one another across rollouts)."""
    pool = PLAIN_EDGES + LOOP_EDGES
    for number in range(300):
        rollout = folder / "sessions" / "2026" / "03" / "01" / f"rollout-{number}.jsonl"
        rollout.parent.mkdir(parents=True, exist_ok=True)
        lines = [rng.choice(pool) for _ in range(rng.randint(1, 12))]
        lines.insert(rng.randrange(len(lines)), rng.choice(LOOP_EDGES[2:4]))  # a tier
        stamp = f"2026-03-01T10:00:0{rng.randrange(3)}.000Z".encode()
        lines = [line.replace(b"2026-03-01T10:00:00.000Z", stamp) for line in lines]
        rollout.write_bytes(b"\n".join(lines) + b"\n")
    return folder


def test_the_c_assembly_makes_the_records_python_makes(
    corpora: dict[int, codex_corpus.Corpus], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """_codexscan.assemble (read_files's loop over a rollout's events, in C, leaving copies,
    mtime-timed and untimed events to Python) gives the same records in the same order and
    the same rejects as the loop in Python, on both generated homes (copies, forks, tiers,
    headless output), the real CLI's rollouts and a home of random lines with recorded
    tiers and many copies."""
    assert codex._assemble is not None
    homes = [corpus.home for corpus in corpora.values()] + [FIXTURES]
    homes.append(_random_home(tmp_path / "random", random.Random(29)))
    for home in homes:
        paths = codex.files(home)
        fast = codex.read_files(paths)
        with monkeypatch.context() as patch:
            patch.setattr(codex, "_assemble", None)
            slow = codex.read_files(paths)
        assert fast.entries == slow.entries and fast.rejects == slow.rejects, home
        assert [type(entry) for entry in fast.entries] == [type(e) for e in slow.entries]
        assert len(fast.entries) > 5


def _meta_line(payload: str, top: str = '"timestamp":"2026-03-01T10:00:00.000Z",') -> bytes:
    return ("{" + top + '"type":"session_meta","payload":{' + payload + "}}\n").encode()


_INSTRUCTIONS = '"base_instructions":{"text":"You are Codex.\\n\\"Quote\\" \\u00e9 é ✓ \\/ \\t"}'
# First lines _codexscan.meta reads, declines, or must read exactly as _meta_of_py does.
META_EDGES = [
    *(path.read_bytes().split(b"\n", 1)[0] + b"\n" for path in sorted(FIXTURES.rglob("*.jsonl"))),
    _meta_line('"id":"s-1","cwd":"/w/p1",' + _INSTRUCTIONS),
    _meta_line('"id":"s-2","cwd":"/w/p2","forked_from_id":"s-1",' + _INSTRUCTIONS),
    _meta_line('"id":"s-3","source":{"subagent":{"thread_spawn":{"parent_thread_id":"s-1"}}}'),
    _meta_line('"id":"s-3","forked_from_id":"s-0","source":{"subagent":{}}'),
    _meta_line('"id":"s-3","forked_from_id":7,"source":"cli"'),
    _meta_line('"id":"s-4","source":"exec","cwd":null'),
    _meta_line('"id":7,"cwd":["/w"],"forked_from_id":null'),
    _meta_line('"id":"s-\\u0035","cwd":"/w/caf\\u00e9"'),
    _meta_line('"id":"s-\\ud800","cwd":"/w"'),
    _meta_line('"id":"s-6","x":"\\ud83d\\ude00"'),
    _meta_line('"id":"s-7","id":"s-8"'),
    _meta_line('"i\\u0064":"s-9"'),
    _meta_line('"id":"s-10","n":1.5e3,"m":-0,"k":[true,false,null,{}],"big":123456789012345678901234'),
    _meta_line('"id":"s-11","n":NaN'),
    _meta_line('"id":"s-12","n":01'),
    _meta_line('"id":"s-13","deep":' + "[" * 70 + "]" * 70),
    _meta_line('"id":"s-14"', top='"timestamp":"1969-12-31T23:59:59.000Z",'),
    _meta_line('"id":"s-15"', top='"timestamp":"2026-03-01T12:00:00+02:00",'),
    _meta_line('"id":"s-16"', top='"timestamp":" 2026-03-01T10:00:00.000Z ",'),
    _meta_line('"id":"s-17"', top='"timestamp":1772359200,'),
    _meta_line('"id":"s-18"', top='"timestamp":null,'),
    _meta_line('"id":"s-19"', top=""),
    _meta_line('"id":"s-20"', top='"timestamp":"2026-02-30T10:00:00.000Z",'),
    _meta_line('"id":"s-21"', top='"timestamp":"2026-03-01T10:00:00.000Z","type":"x",'),
    _meta_line('"id":"s-22"').replace(b'"session_meta"', b'"turn_context"'),
    _meta_line('"id":"s-23"').replace(b'"payload":{', b'"payload":[{').replace(b"}}", b"}]}"),
    _meta_line('"id":"s-24"').replace(b"}}\n", b'},"payload":{"id":"s-25"}}\n'),
    _meta_line('"id":"s-26"').replace(b"\n", b" x\n"),
    b"\xef\xbb\xbf" + _meta_line('"id":"s-27"'),
    _meta_line('"id":"s-28","bad":"\xc3\x28"'),
    _meta_line('"id":"s-29","enc":"\xed\xa0\x80"'),
    _meta_line('"id":"s-30","ctl":"a\tb"'),
    _meta_line('"cwd":"/w/a@b","id":"s-32"').replace(b"@", b"\xed\xa0\x80"),  # a surrogate
    _meta_line('"cwd":"/w/a@b","id":"s-33"').replace(b"@", b"\xf4\x90\x80\x80"),  # > U+10FFFF
    _meta_line('"cwd":"/w/a@b","id":"s-34"').replace(b"@", b"\xe0\x80\xaf"),  # overlong
    _meta_line('"cwd":"/w/a@b","id":"s-35"').replace(b"@", b"\xf0\x9f\x98\x80"),  # valid
    b" \t" + _meta_line('"id":"s-31"').replace(b"\n", b" \r\n"),
    b"",
    b"[]\n",
]  # fmt: skip
_META_MUTATIONS = [*_MUTATIONS, b"\\u", b"\\ud800", b"\xc3", b"\xe9", b"\t", b"u", b"d"]
_META_MUTATIONS.append(b"\xed\xa0\x80")  # a surrogate in UTF-8 (json's surrogatepass takes it)


def test_the_c_reader_of_first_lines_reads_what_the_rules_read() -> None:
    """_codexscan.meta reads a session_meta first line without building it: every edge
    above (forks, sub-agents, escapes, bad UTF-8, surrogates, repeated keys, other times)
    and 5,000 random mutations of them give the Meta that _meta_of_py (json's object, the
    rules) gives."""
    assert codex._meta_line is not None
    rng = random.Random(29)
    lines = list(META_EDGES)
    for _ in range(5_000):
        line = bytearray(rng.choice(META_EDGES) or b"{}")
        at = rng.randrange(len(line))
        how = rng.randrange(3)
        if how == 0:
            line[at:at] = rng.choice(_META_MUTATIONS)
        elif how == 1:
            del line[at]
        else:
            line[at : at + 1] = rng.choice(_META_MUTATIONS)
        lines.append(bytes(line))
    taken = 0
    for line in lines:
        taken += codex._meta_line(line) is not None
        assert codex._meta_of(line) == codex._meta_of_py(line), line
    assert taken > 1_000  # the C reader does take many of them


def test_files_are_listed_in_path_component_order(tmp_path: Path) -> None:
    """files() walks a home with strings, not Paths: the same rollouts in the same order
    as sorting Paths by their components (a/ before a-b/, though "a-b" < "a/" as text), an
    archived copy of a session left out, odd and non-UTF-8 names kept, symlinks skipped."""
    home = tmp_path / "home"
    names = [
        "sessions/a/x.jsonl", "sessions/a-b/x.jsonl", "sessions/a/b/y.jsonl", "sessions/A/z.jsonl",
        "sessions/2026/03/01/rollout-1.jsonl", "sessions/2026/03/01/rollout-10.jsonl",
        "sessions/2026/03/01/rollout-2.jsonl", "sessions/2026/03/01/notes.txt",
        "archived_sessions/2026/03/01/rollout-1.jsonl", "archived_sessions/old.jsonl",
        "archived_sessions/a-b/x.jsonl", "sessions/sp ace/ü.jsonl",
    ]  # fmt: skip
    for name in names:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text("{}\n")
    odd = os.fsencode(home / "sessions" / "a") + b"/\xff.jsonl"
    Path(os.fsdecode(odd)).write_text("{}\n")
    (home / "sessions" / "link.jsonl").symlink_to(home / "sessions" / "a" / "x.jsonl")
    expected: list[Path] = []
    seen: set[Path] = set()
    for folder in (home / "sessions", home / "archived_sessions"):
        found = [p for p in folder.rglob("*.jsonl") if not p.is_symlink()]
        for path in sorted(found, key=lambda p: p.parts):
            if path.relative_to(folder) not in seen:
                seen.add(path.relative_to(folder))
                expected.append(path)
    assert codex.files(home) == expected
    assert len(expected) == len(names) - 1 - 2 + 1  # no notes.txt, two archived copies, \xff
