"""The OpenCode reader's daily totals equal `ccusage opencode daily --json --offline` 20.0.24.

Both readers run on the same trees: one per rule of opencode_corpus.RULES, seeded random
mixes, and the databases captured from the real CLI (tests/fixtures/agents/opencode). Tokens
must be equal per day, for each of the four types and for totalTokens (the four plus what
ccusage calls extra: reasoning and any `total` beyond the parts); cost within 1e-6 relative.
ccusage is required, never skipped.

Then the reader alone: keys are the same after rows are added, after a truncation and after
the database or a file is rewritten whole; and a mutation test shows that dropping any one
rule makes some corpus disagree with ccusage (so the corpora do test the rules).
"""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentwatch.sentinels.agent_ledger import opencode
from agentwatch.sentinels.agent_ledger.base import TOKEN_TYPES, ReadResult, daily_totals
from bench.generators import opencode_corpus as corpus

pytestmark = [pytest.mark.ccusage, pytest.mark.slow]

CCUSAGE_VERSION = "20.0.24"
REPO = Path(__file__).resolve().parents[2]
DEFAULT_CCUSAGE = REPO / ".tools" / "ccusage" / "node_modules" / ".bin" / "ccusage"
INSTALL_HINT = (
    f"npm install --prefix .tools/ccusage ccusage@{CCUSAGE_VERSION} (or scripts/setup --test)"
)
FIXTURES = REPO / "tests" / "fixtures" / "agents" / "opencode"
COST_RTOL = 1e-6
Day = dict[str, float]


@functools.cache
def ccusage_command() -> str:
    """The ccusage binary (AGENTWATCH_CCUSAGE, default .tools/ccusage), checked for its
    version; fails when missing: a conformance test without its reference proves nothing."""
    path = os.environ.get("AGENTWATCH_CCUSAGE") or str(DEFAULT_CCUSAGE)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"ccusage not found at {path}; install it with:\n    {INSTALL_HINT}")
    found = subprocess.run(
        [path, "--version"], capture_output=True, text=True, timeout=60, check=False
    ).stdout
    if CCUSAGE_VERSION not in found:
        pytest.fail(f"{path} is {found.strip()!r}, not {CCUSAGE_VERSION}: {INSTALL_HINT}")
    return path


def environment(case: corpus.Corpus, tz: str = "UTC") -> dict[str, str]:
    """What both readers run with: the corpus's variables, its HOME, nothing of the host's."""
    case.home.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(case.home), "TZ": tz}
    env.update(case.env)
    return env


def ccusage_days(case: corpus.Corpus, tz: str = "UTC") -> dict[str, Day]:
    """ccusage's report of the corpus, per day: the four types, totalTokens and cost."""
    done = subprocess.run(
        [ccusage_command(), "opencode", "daily", "--json", "--offline"],
        cwd=case.base, env=environment(case, tz), capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.fail(f"ccusage failed ({done.returncode}): {done.stderr[-2000:]}")
    days = {}
    for row in json.loads(done.stdout)["daily"]:
        days[row["date"]] = {
            "input": row["inputTokens"], "output": row["outputTokens"],
            "cache_read": row["cacheReadTokens"], "cache_creation": row["cacheCreationTokens"],
            "total": row["totalTokens"], "cost_usd": row["totalCost"],
        }  # fmt: skip
    return days


def read_corpus(case: corpus.Corpus, tz: str = "UTC") -> ReadResult:
    """Our reader over the corpus's roots, found from the same environment as ccusage's."""
    env = environment(case, tz)
    cwd = os.getcwd()
    os.chdir(case.base)  # relative paths in the environment mean the same for both
    try:
        paths = [
            path for root in opencode.roots(env, Path(env["HOME"])) for path in opencode.files(root)
        ]
        return opencode.read_files(paths)
    finally:
        os.chdir(cwd)


def our_days(result: ReadResult, tz: str = "UTC") -> dict[str, Day]:
    """daily_totals of our entries, with totalTokens (the four types plus `extra`)."""
    days = daily_totals(result.entries, tz, opencode.price)
    for row in days.values():
        row["total"] = sum(row[kind] for kind in TOKEN_TYPES)
    for entry in result.entries:
        day = _day(entry.timestamp, tz)
        days[day]["total"] += getattr(entry, "extra", 0)
    return days


def _day(timestamp: float, tz: str) -> str:
    import datetime as dt
    from zoneinfo import ZoneInfo

    return dt.datetime.fromtimestamp(timestamp, ZoneInfo(tz)).strftime("%Y-%m-%d")


def differences(ours: dict[str, Day], theirs: dict[str, Day]) -> list[str]:
    """Every day and figure where the two reports differ (tokens exact, cost 1e-6 rel)."""
    found = []
    for day in sorted(set(ours) | set(theirs)):
        mine, ref = ours.get(day), theirs.get(day)
        if mine is None or ref is None:
            found.append(f"{day}: ours={mine} ccusage={ref}")
            continue
        for kind in (*TOKEN_TYPES, "total"):
            if mine[kind] != ref[kind]:
                found.append(f"{day} {kind}: ours={mine[kind]} ccusage={ref[kind]}")
        if not math.isclose(mine["cost_usd"], ref["cost_usd"], rel_tol=COST_RTOL, abs_tol=1e-12):
            found.append(f"{day} cost: ours={mine['cost_usd']!r} ccusage={ref['cost_usd']!r}")
    return found


def assert_conforms(case: corpus.Corpus, tz: str = "UTC") -> ReadResult:
    result = read_corpus(case, tz)
    found = differences(our_days(result, tz), ccusage_days(case, tz))
    assert not found, "\n".join(found)
    return result


# ------------------------------------------------------------------------------- conformance


@pytest.mark.parametrize("rule", sorted(corpus.RULES))
def test_each_rule_matches_ccusage(rule: str, tmp_path: Path) -> None:
    case = corpus.RULES[rule](tmp_path)
    result = assert_conforms(case)
    assert result.entries or rule in {"xdg_without_opencode", "empty_data_dir"}


@pytest.mark.parametrize("tz", ["Asia/Kolkata", "America/St_Johns", "Pacific/Kiritimati"])
def test_days_are_cut_in_the_report_zone(tz: str, tmp_path: Path) -> None:
    assert_conforms(corpus.rule_day_boundaries(tmp_path), tz)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_corpora_match_ccusage(seed: int, tmp_path: Path) -> None:
    result = assert_conforms(corpus.random_corpus(tmp_path, seed))
    assert len(result.entries) > 500


def _fixture_dirs() -> list[Path]:
    return sorted(path.parent for path in FIXTURES.glob("*/opencode.db"))


def test_captured_real_cli_files_match_ccusage(tmp_path: Path) -> None:
    """The databases the real OpenCode CLI wrote (tests/fixtures/agents/opencode)."""
    dirs = _fixture_dirs()
    assert dirs, f"no captured fixtures under {FIXTURES}"
    for index, folder in enumerate(dirs):
        copy = tmp_path / f"data{index}"
        shutil.copytree(folder, copy)
        case = corpus.Corpus(tmp_path / f"case{index}", {"OPENCODE_DATA_DIR": str(copy)})
        case.base.mkdir()
        result = assert_conforms(case)
        assert result.entries and not result.rejects
    joined = corpus.Corpus(tmp_path / "all", {"OPENCODE_DATA_DIR": ",".join(
        str(tmp_path / f"data{index}") for index in range(len(dirs)))})  # fmt: skip
    joined.base.mkdir()
    assert_conforms(joined)


def test_rejects_are_counted_by_short_reasons_without_content(tmp_path: Path) -> None:
    result = read_corpus(corpus.rule_strict_json(tmp_path))
    assert result.rejects and set(result.rejects) <= {
        "not json", "not an object", "duplicate field", "bad string",
    }  # fmt: skip
    assert all(len(reason) < 40 for reason in result.rejects)


def test_dates_past_year_9999_are_rejected_not_raised(tmp_path: Path) -> None:
    """A deliberate difference: ccusage prints such days, Python's datetime cannot."""
    case, root = corpus.single(tmp_path)
    db = root.db()
    db.message("far", corpus.assistant(None, corpus.at(1) * 1000, corpus.tokens(5)))
    db.message("near", corpus.assistant(None, corpus.at(1), corpus.tokens(6)))
    db.close()
    result = read_corpus(case)
    assert [entry.input for entry in result.entries] == [6]
    assert result.rejects == {"timestamp out of range": 1}


def test_numbers_past_float64_fail_a_message_only_in_the_fields_ccusage_reads(
    tmp_path: Path,
) -> None:
    """serde_json fails a message on a number it converts that overflows float64 (1e400,
    an integer of 400 digits) and skips one in a field it ignores. Such numbers once
    raised OverflowError out of the reader (a stated cost of 400 digits)."""
    case, root = corpus.single(tmp_path)
    db = root.db()
    big = "1" + "0" * 400
    cases = [
        ("tokens", "input", big), ("cost", None, big), ("cost", None, "-" + big),
        ("cost", None, "1e400"), ("tokens", "input", "1e400"), ("tokens", "junk", "1e400"),
        ("time", "x", "-1e400"), ("sessionID", None, "1e400"), ("summary", None, "1e400"),
        ("path", "n", "-" + big), ("extra", None, "9" * 5000), ("cost", None, "1e30"),
        ("cost", None, "17976931348623157e292"), ("cost", None, "17976931348623159e292"),
    ]  # fmt: skip
    for day, (field, inner, number) in enumerate(cases, start=1):
        message = corpus.assistant(None, corpus.at(day), corpus.tokens(10 + day, 1))
        if inner is not None:
            message[field] = {**(message.get(field) or {}), inner: "@"}
        else:
            message[field] = "@"
        db.message(f"msg_h{day}", corpus.dumps(message).replace('"@"', number))
    db.close()
    result = assert_conforms(case)
    assert sorted(entry.input for entry in result.entries) == [19, 20, 21, 22, 23]
    assert result.rejects == {"number out of range": 9}


# ------------------------------------------------------------------------- restart safety


def _keys(result: ReadResult) -> dict[str, tuple[int, ...]]:
    return {e.key: (e.input, e.output, e.cache_read, e.cache_creation) for e in result.entries}


def _read_root(root: Path) -> ReadResult:
    return opencode.read_files(opencode.files(root))


def test_keys_survive_appends_truncation_and_rewrites(tmp_path: Path) -> None:
    case = corpus.random_corpus(tmp_path / "c", seed=11, messages=120, roots=1)
    root = Path(case.env["OPENCODE_DATA_DIR"])
    first = _keys(_read_root(root))
    db = root / "opencode.db"

    # more rows appended (OpenCode inserts a row per step): old keys unchanged
    connection = sqlite3.connect(db)
    message = corpus.assistant(None, corpus.at(25), corpus.tokens(42, 4))
    connection.execute("INSERT INTO message VALUES ('msg_new', 's', 0, 0, ?)",
                       (corpus.dumps(message),))  # fmt: skip
    connection.commit()
    grown = _keys(_read_root(root))
    assert {key: grown[key] for key in first} == first and len(grown) == len(first) + 1

    # truncation: rows deleted (a session removed); what is left keeps its keys and values
    # (a legacy file named after a deleted row's id is read now, as ccusage reads it)
    connection.execute("DELETE FROM message WHERE rowid % 3 = 0")
    connection.commit()
    connection.close()
    shrunk = _keys(_read_root(root))
    kept = shrunk.keys() & grown.keys()
    assert len(kept) > len(grown) // 2 and all(shrunk[key] == grown[key] for key in kept)

    # the database rewritten whole (VACUUM INTO a new file, renamed over): same keys
    copy = tmp_path / "rewritten.db"
    with sqlite3.connect(db) as source:
        source.execute("VACUUM INTO ?", (str(copy),))
    os.replace(copy, db)
    assert _keys(_read_root(root)) == shrunk

    # legacy files rewritten whole (and reformatted): same keys
    for path in (root / "storage" / "message").rglob("*.json"):
        data = path.read_text()
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(json.loads(data), indent=2) if data.startswith("{") else data)
        os.replace(tmp, path)
    assert _keys(_read_root(root)) == shrunk


def test_an_entry_without_id_keeps_its_key_when_its_file_is_rewritten(tmp_path: Path) -> None:
    case, root = corpus.single(tmp_path)
    path = root.file("ses/noid.json", corpus.assistant(None, corpus.at(1), corpus.tokens(9)))
    before = _keys(_read_root(root.path))
    path.write_text(json.dumps(json.loads(path.read_text()), indent=1))
    assert _keys(_read_root(root.path)) == before and len(before) == 1
    assert read_corpus(case).entries[0].key == next(iter(before))


def test_a_row_read_mid_step_is_counted_once_when_finished(tmp_path: Path) -> None:
    """OpenCode inserts the assistant row when a step starts (no tokens yet) and updates it
    when the step ends: the early read yields nothing, the later one the step, same key."""
    _, root = corpus.single(tmp_path)
    db = root.db()
    started = corpus.assistant(None, corpus.at(1), corpus.tokens())
    db.message("msg_step", started)
    db.close()
    assert _read_root(root.path).entries == []
    with sqlite3.connect(root.path / "opencode.db") as connection:
        finished = corpus.assistant(None, corpus.at(1), corpus.tokens(10, 2, 3))
        connection.execute("UPDATE message SET data = ? WHERE id = 'msg_step'",
                           (corpus.dumps(finished),))  # fmt: skip
    assert list(_keys(_read_root(root.path))) == ["opencode:msg_step"]


# -------------------------------------------------------------------- a dropped rule fails


Mutation = Callable[[pytest.MonkeyPatch], None]


def _mutations() -> Iterator[tuple[str, str, Mutation]]:
    """(name, corpus rule it must break, how to drop the rule)."""

    def lenient_strings(mp: pytest.MonkeyPatch) -> None:
        real = opencode._count
        mp.setattr(
            opencode, "_count", lambda v: int(v) if isinstance(v, str) and v.isdigit() else real(v)
        )

    def floats_count(mp: pytest.MonkeyPatch) -> None:
        real = opencode._count
        mp.setattr(
            opencode, "_count", lambda v: int(v) if isinstance(v, float) and v >= 0 else real(v)
        )

    def no_total_fallback(mp: pytest.MonkeyPatch) -> None:
        # the rule's one implementation, which _entry and the lean path (_common) call
        mp.setattr(opencode, "_beyond_parts", lambda output, extra, missing: (output, extra))

    def no_stem_skip(mp: pytest.MonkeyPatch) -> None:
        mp.setattr(opencode, "_message_root", lambda path, ids: set())

    def sorted_files(mp: pytest.MonkeyPatch) -> None:
        real = opencode._json_files

        def walk(directory: Path, out: list[Path]) -> None:
            real(directory, out)
            out.sort()

        mp.setattr(opencode, "_json_files", walk)

    def every_db(mp: pytest.MonkeyPatch) -> None:
        mp.setattr(opencode, "database", lambda root: next(iter(sorted(root.glob("*.db"))), None))

    def no_duplicate_check(mp: pytest.MonkeyPatch) -> None:
        mp.setattr(opencode, "_LEGACY_FIELDS", frozenset())

    def home_not_xdg(mp: pytest.MonkeyPatch) -> None:
        real = opencode.roots
        mp.setattr(opencode, "roots", lambda env, home: real(
            {k: v for k, v in env.items() if k != "XDG_DATA_HOME"}, home))  # fmt: skip

    def no_v2(mp: pytest.MonkeyPatch) -> None:
        real = opencode._table
        mp.setattr(opencode, "_table", lambda c, t: t != "session_message" and real(c, t))

    def no_tiers(mp: pytest.MonkeyPatch) -> None:
        table = {k: {**v, "above": None} for k, v in opencode._table_of_prices().items()}
        mp.setattr(opencode, "_table_of_prices", lambda: table)

    def no_normalize(mp: pytest.MonkeyPatch) -> None:
        mp.setattr(opencode, "_normalize", lambda model: model)

    def stated_zero_cost(mp: pytest.MonkeyPatch) -> None:
        mp.setattr(opencode, "_cost", lambda v: float(v) if isinstance(v, int | float) else None)

    def epoch_from_column(mp: pytest.MonkeyPatch) -> None:
        mp.setattr(opencode, "_millis", lambda v: v if isinstance(v, int | float) else None)

    yield "strings count", "lenient_numbers", lenient_strings
    yield "floats count", "lenient_numbers", floats_count
    yield "total ignored", "reasoning_and_total", no_total_fallback
    yield "no stem skip", "message_files", no_stem_skip
    yield "sorted file order", "message_files", sorted_files
    yield "first db by name", "database_choice", every_db
    yield "duplicates allowed", "strict_json", no_duplicate_check
    yield "XDG ignored", "xdg", home_not_xdg
    yield "no session_message", "session_message", no_v2
    yield "no long-context tiers", "prices", no_tiers
    yield "no name normalizing", "prices", no_normalize
    yield "zero stated cost used", "database_basics", stated_zero_cost
    yield "float times count", "fields", epoch_from_column


@pytest.mark.parametrize(
    ("name", "rule", "mutate"), list(_mutations()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_dropping_a_rule_breaks_conformance(
    name: str, rule: str, mutate: Mutation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = corpus.RULES[rule](tmp_path)
    reference = ccusage_days(case)
    assert not differences(our_days(read_corpus(case)), reference), "the intact reader must agree"
    mutate(monkeypatch)
    monkeypatch.setattr(opencode, "_RATES", {})  # price look-ups made before the mutation
    assert differences(our_days(read_corpus(case)), reference), f"dropping {name!r} went unnoticed"
