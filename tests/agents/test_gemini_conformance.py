"""The Gemini reader's per-day totals equal `ccusage gemini daily --json --offline` 20.0.24.

Tokens exactly and cost within 1e-6 relative, on the generated corpora (every rule's edge
cases, a seeded mix in two time zones) and on the files the real Gemini CLI wrote
(tests/fixtures/agents/gemini). ccusage reports thoughts in totalTokens but not in
outputTokens; the ledger's output holds them (as ccusage prices them), so the comparison
takes ccusage's output as totalTokens minus its other three classes. Then the reader alone:
keys stay the same across re-reads, appends, truncations and whole rewrites, bad input is
counted and never raises, and dropping any rule makes the edge corpus disagree.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import os
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentwatch.sentinels.agent_ledger import gemini
from agentwatch.sentinels.agent_ledger.base import TOKEN_TYPES, AgentUsage, daily_totals
from bench.generators import gemini_corpus

from .gemini_cli import ccusage_daily

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "gemini"
COST_RTOL = 1e-6
Rows = dict[str, dict[str, float]]


def ccusage_rows(data_dir: Path, home: Path, timezone: str = "UTC") -> Rows:
    """ccusage's daily rows in the ledger's four classes (output with the thoughts)."""
    rows: Rows = {}
    for row in ccusage_daily([data_dir], home, timezone)["daily"]:
        known = row["inputTokens"] + row["cacheReadTokens"] + row["cacheCreationTokens"]
        rows[row["date"]] = {
            "input": row["inputTokens"], "output": row["totalTokens"] - known,
            "cache_read": row["cacheReadTokens"], "cache_creation": row["cacheCreationTokens"],
            "cost_usd": row["totalCost"],
        }  # fmt: skip
    return rows


def reader_rows(data_dir: Path, timezone: str = "UTC") -> Rows:
    roots = gemini.roots({gemini.DATA_DIR_ENV: str(data_dir)}, Path("/nonexistent"))
    paths = [path for root in roots for path in gemini.files(root)]
    return daily_totals(gemini.read_files(paths).entries, timezone, gemini.price)


def differences(ours: Rows, theirs: Rows) -> list[str]:
    """Every (day, class) where the two disagree, for the failure message."""
    found = []
    for day in sorted(set(ours) | set(theirs)):
        mine, ref = ours.get(day, {}), theirs.get(day, {})
        for kind in TOKEN_TYPES:
            if mine.get(kind, 0) != ref.get(kind, 0):
                found.append(f"{day} {kind}: ours {mine.get(kind, 0)} ccusage {ref.get(kind, 0)}")
        cost, ref_cost = mine.get("cost_usd", 0.0), ref.get("cost_usd", 0.0)
        if not math.isclose(cost, ref_cost, rel_tol=COST_RTOL, abs_tol=1e-12):
            found.append(f"{day} cost: ours {cost!r} ccusage {ref_cost!r}")
    return found


def assert_conforms(data_dir: Path, home: Path, timezone: str = "UTC") -> Rows:
    theirs = ccusage_rows(data_dir, home, timezone)
    assert theirs, "ccusage saw nothing: the corpus is not where it looks"
    problems = differences(reader_rows(data_dir, timezone), theirs)
    assert not problems, "\n".join(problems)
    return theirs


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Rows]]:
    """The edge corpus and ccusage's rows for it (UTC), built once for the module."""
    root = tmp_path_factory.mktemp("gemini-edge")
    corpus = gemini_corpus.edge_cases(root)
    home = root / "home"
    home.mkdir()
    yield corpus.data_dir, home, ccusage_rows(corpus.data_dir, home)


# ----------------------------------------------------------------------------- vs ccusage


def test_edge_cases_equal_ccusage(edge: tuple[Path, Path, Rows]) -> None:
    data_dir, _, theirs = edge
    problems = differences(reader_rows(data_dir), theirs)
    assert not problems, "\n".join(problems)


def test_edge_cases_equal_ccusage_in_another_zone(edge: tuple[Path, Path, Rows]) -> None:
    data_dir, home, _ = edge
    assert_conforms(data_dir, home, "Asia/Kolkata")


@pytest.mark.parametrize(("seed", "zone"), [(1, "UTC"), (2, "America/New_York")])
def test_seeded_mix_equals_ccusage(tmp_path: Path, seed: int, zone: str) -> None:
    corpus = gemini_corpus.mixed(tmp_path, seed)
    rows = assert_conforms(corpus.data_dir, tmp_path, zone)
    assert len(rows) >= 5


def test_files_the_real_cli_wrote_equal_ccusage(tmp_path: Path) -> None:
    sessions = sorted(FIXTURES.rglob("*.jsonl"))
    assert sessions, f"no captured sessions under {FIXTURES}"
    data_dir = tmp_path / "tmp"
    shutil.copytree(FIXTURES / "tmp", data_dir)
    rows = assert_conforms(data_dir, tmp_path)
    assert sum(row["cache_read"] for row in rows.values()) > 0  # the cached rule was exercised


def test_known_differences_are_only_those_documented(tmp_path: Path) -> None:
    """A total below its parts: the ledger counts the thoughts it prices; models only
    LiteLLM prices: unpriced here. Everything else about these files agrees."""
    corpus = gemini_corpus.known_differences(tmp_path)
    theirs = ccusage_rows(corpus.data_dir, tmp_path)
    ours = reader_rows(corpus.data_dir)
    short, unpriced = theirs["2026-03-20"], theirs["2026-03-21"]
    assert ours["2026-03-20"]["output"] == short["output"] + 5  # the 5 thoughts
    assert math.isclose(ours["2026-03-20"]["cost_usd"], short["cost_usd"], rel_tol=COST_RTOL)
    assert unpriced["cost_usd"] > 0 and ours["2026-03-21"]["cost_usd"] == 0
    assert {k: ours["2026-03-21"][k] for k in TOKEN_TYPES} == {k: unpriced[k] for k in TOKEN_TYPES}


# ----------------------------------------------------------------------------- every rule


def _identity_cached(tokens: gemini.Tokens) -> tuple[int, int]:
    return tokens.input, tokens.cached


def _no_tool(tokens: gemini.Tokens, session_rule: bool) -> gemini.Counted | None:
    return ORIGINAL_COUNT(gemini.Tokens(**{**_fields(tokens), "tool": 0}), session_rule)


def _no_thoughts(tokens: gemini.Tokens, session_rule: bool) -> gemini.Counted | None:
    return ORIGINAL_COUNT(gemini.Tokens(**{**_fields(tokens), "thoughts": 0}), session_rule)


def _no_total(tokens: gemini.Tokens, session_rule: bool) -> gemini.Counted | None:
    return ORIGINAL_COUNT(gemini.Tokens(**{**_fields(tokens), "total": None}), session_rule)


def _append(events: list[Any], by_id: dict[str, int], name: str | None, event: Any) -> None:
    events.append(event)


def _lenient_time(value: Any) -> int | None:
    try:
        return int(dt.datetime.fromisoformat(value).timestamp() * 1000)
    except (TypeError, ValueError):
        return None


def _fields(tokens: gemini.Tokens) -> dict[str, Any]:
    return {name: getattr(tokens, name) for name in gemini.Tokens.__slots__}


ORIGINAL_COUNT = gemini.count
RULES: dict[str, tuple[str, Callable[..., Any]]] = {
    "cached input taken out when the total says it is inside": ("_session_input", _identity_cached),
    "stats: cached always inside input": ("_subtract_cached", _identity_cached),
    "tool tokens are input": ("count", _no_tool),
    "thoughts are output": ("count", _no_thoughts),
    "a total beyond the parts is output": ("count", _no_total),
    "only ccusage's timestamp form": ("parse_timestamp", _lenient_time),
    "a record field named twice drops the line": ("_may_repeat", lambda raw: False),
    "orjson's value only when it dropped no key": ("kept_keys", lambda *args: True),
    "first spelling of a count wins": ("_first", lambda record, keys: 0),
    "the 200k tier": ("TIER_THRESHOLD", 10**12),  # type: ignore[dict-item]
    "a message written again replaces the earlier copy": ("keep", _append),
}  # fmt: skip


@pytest.mark.parametrize("rule", sorted(RULES))
def test_dropping_a_rule_breaks_conformance(
    rule: str, edge: tuple[Path, Path, Rows], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rules as spelled out (Tokens, count, _first...): the reader's shortcuts (the
    plain token shape, the C readers of plain lines and whole files) are switched off here
    and held equal to them below."""
    data_dir, _, theirs = edge
    name, replacement = RULES[rule]
    monkeypatch.setattr(gemini, "message_counts", gemini.generic_counts)
    monkeypatch.setattr(gemini, "_scan", gemini._scan_py)  # the C readers of plain lines
    monkeypatch.setattr(gemini, "_plain_file", gemini._no_plain_file)  # and whole files
    monkeypatch.setattr(gemini, name, replacement)
    assert differences(reader_rows(data_dir), theirs), f"the corpus does not pin: {rule}"


def _token_values(rng: random.Random) -> dict[str, Any]:
    """A tokens object: mostly the plain shape in every relation of total to the parts,
    sometimes a field of another type, out of range, missing or spelled otherwise."""
    names = ("input", "output", "cached", "thoughts", "tool")
    parts: dict[str, Any] = {
        name: rng.choice((0, 0, 1, 5, rng.randint(0, 10**6))) for name in names
    }
    inclusive = parts["input"] + parts["output"] + parts["thoughts"] + parts["tool"]
    parts["total"] = rng.choice((inclusive, inclusive + parts["cached"], inclusive + 7,
                                 max(inclusive - 3, 0), 0, rng.randint(0, 10**6)))  # fmt: skip
    for _ in range(rng.choice((0, 0, 0, 1, 2))):
        field = rng.choice(sorted(parts))
        odd: tuple[Any, ...] = (None, True, False, -1, -(2**60), 2.5, "12", 2**53 - 1, 2**53,
                                2**53 + 1, 2**64, float("inf"), [], {})  # fmt: skip
        parts[field] = rng.choice(odd)
    if rng.random() < 0.1:
        del parts[rng.choice(sorted(parts))]
    if rng.random() < 0.1:
        parts[rng.choice(("prompt", "candidates", "total_tokens", "cached_tokens"))] = 9
    return parts


def test_the_plain_shape_shortcut_counts_as_the_rules_do() -> None:
    rng = random.Random(29)
    for _ in range(20_000):
        tokens = _token_values(rng)
        assert gemini.message_counts(tokens) == gemini.generic_counts(tokens), tokens


def test_lines_read_together_read_as_one_by_one() -> None:
    """The loader over a whole file (orjson at once, one check for dropped keys) gives
    what load_record gives each line: repeats at the top, nested or inside strings, escapes,
    NaN, big numbers and broken lines mixed into the file."""
    base = [b'{"type": "gemini", "id": "a", "model": "m", "tokens": {"input": 1}}',
            b'{"type": "gemini", "id": "b", "toolCalls": [{"id": "c", "type": "x"}], "model": "m"}',
            b'{"type": "gemini", "model": "m", "content": "say \\"id\\" \\"model\\""}']  # fmt: skip
    odd = [b'{"type": "gemini", "model": "m", "model": "n"}',
           b'{"type": "gemini", "id": "a", "x": {"id": 1, "id": 2}, "model": "m"}',
           b'{"model": "m", "tokens": {"input": NaN}}', b'{"model": 18446744073709551616}',
           b'{"model": "m", "tokens": {"input": 1e400}}', b'{"model": "m"', b'["model"]',
           b'{"model": "m", "mod\\u0065l": "n"}', b'{"model": "\\u006d"}', b'"model"',
           b'{"type": "gemini", "id": "a", "id": "a", "model": "m"}']  # fmt: skip
    rng = random.Random(7)
    for _ in range(300):
        lines = [rng.choice(base + odd) for _ in range(rng.randint(1, 8))]
        values = gemini._records(b"\n".join(lines))
        expected = []
        for line in lines:
            try:
                expected.append(gemini.load_record(None, line))
            except ValueError:
                expected.append(gemini._BAD)
        assert len(values) == len(expected)
        for got, want in zip(values, expected, strict=True):
            assert got is want if want is gemini._BAD else got == want, lines


# ----------------------------------------------------------------------------- restart safety


def _keys(paths: list[Path]) -> dict[str, AgentUsage]:
    entries = gemini.read_files(paths).entries
    keys = {entry.key: entry for entry in entries}
    assert len(keys) == len(entries), "a key names two responses"
    return keys


def _session(tmp_path: Path, turns: int, seed: int = 3) -> tuple[Path, list[str]]:
    lines = gemini_corpus.session_lines(random.Random(seed), "restart", 5, turns)
    path = tmp_path / "tmp" / "p" / "chats" / "session-restart.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = [line if isinstance(line, str) else json.dumps(line) for line in lines]
    path.write_text("\n".join(text) + "\n")
    return path, text


def test_same_keys_when_read_again_and_after_appends(tmp_path: Path) -> None:
    path, lines = _session(tmp_path, 40)
    cut = len(lines) // 2
    path.write_text("\n".join(lines[:cut]) + "\n")
    first = _keys([path])
    assert _keys([path]) == first
    with path.open("a") as handle:  # the rest arrives, including copies of earlier ids
        handle.write("\n".join(lines[cut:]) + "\n")
    later = _keys([path])
    assert set(first) <= set(later) and len(later) > len(first)
    for key, entry in first.items():  # a copy written later carries the same tokens
        assert (later[key].input, later[key].output) == (entry.input, entry.output)


def test_truncation_and_a_torn_last_line_only_lose_keys(tmp_path: Path) -> None:
    path, _ = _session(tmp_path, 30)
    whole = _keys([path])
    data = path.read_bytes()
    for size in (len(data) // 3, len(data) // 2 + 7, len(data) - 5):
        path.write_bytes(data[:size])
        assert set(_keys([path])) <= set(whole)
    path.write_bytes(data)
    assert _keys([path]) == whole


def test_a_whole_rewrite_keeps_the_keys(tmp_path: Path) -> None:
    """Gemini CLI rewrites a session file whole (the old .json format every turn; the .jsonl
    through a temp file and rename when it repairs one): same responses, same keys."""
    path, lines = _session(tmp_path, 20)
    before = _keys([path])
    temp = path.with_name(path.name + ".tmp-99")  # not a file ccusage or we read
    temp.write_text("\n".join(lines) + "\n" + lines[-1] + "\n")
    os.replace(temp, path)
    assert _keys([path]) == before
    legacy = tmp_path / "tmp" / "p" / "chats" / "session-old.json"
    records = [json.loads(line) for line in lines if '"type": "gemini"' in line]
    legacy.write_text(json.dumps({"sessionId": "old", "messages": records[:5]}))
    short = _keys([legacy])
    legacy.write_text(json.dumps({"sessionId": "old", "messages": records}))
    assert set(short) <= set(_keys([legacy]))


def test_overlapping_roots_read_a_file_once(tmp_path: Path) -> None:
    path, _ = _session(tmp_path, 5)
    data_dir = tmp_path / "tmp"
    env = {gemini.DATA_DIR_ENV: f" {data_dir} ,{data_dir / 'p'},{data_dir},{tmp_path / 'no'}"}
    roots = gemini.roots(env, tmp_path)
    assert roots == [data_dir, data_dir / "p"]
    paths = [file for root in roots for file in gemini.files(root)]
    assert len(gemini.read_files(paths).entries) == len(gemini.read_files([path]).entries)
    assert gemini.roots({gemini.DATA_DIR_ENV: ""}, tmp_path) == []
    (tmp_path / ".gemini" / "tmp").mkdir(parents=True)
    assert gemini.roots({}, tmp_path) == [tmp_path / ".gemini" / "tmp"]


# ----------------------------------------------------------------------------- bad input


def test_bad_input_is_counted_never_raised_never_echoed(tmp_path: Path) -> None:
    rng = random.Random(5)
    secret = "SECRET-PROMPT-TEXT"
    paths = [tmp_path / "missing.jsonl", tmp_path]
    for n in range(30):
        path = tmp_path / f"junk-{n}.json{'l' if n % 2 else ''}"
        blob = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300)))
        path.write_bytes(blob if n % 3 else blob + secret.encode())
        paths.append(path)
    text = tmp_path / "text.jsonl"
    text.write_text(f'{{"type": "gemini", "model": "{secret}", "tokens": "{secret}"}}\n{secret}\n')
    paths.append(text)
    result = gemini.read_files(paths)
    assert sum(result.rejects.values()) >= 3
    assert set(result.rejects) <= {"unreadable", "bad_json", "bad_line", "not_object",
                                   "bad_tokens", "no_model"}  # fmt: skip
    assert all(secret not in entry.key and secret not in entry.session for entry in result.entries)


def test_keys_carry_no_text(edge: tuple[Path, Path, Rows]) -> None:
    data_dir, _, _ = edge
    entries = gemini.read_files(gemini.files(data_dir)).entries
    assert entries and all(entry.key.startswith("gemini:") and len(entry.key) == 39
                           for entry in entries)  # fmt: skip


def test_entries_are_what_the_class_makes(edge: tuple[Path, Path, Rows]) -> None:
    """The reader makes its entries without AgentUsage's __init__ (base.usage): the same
    class, the same fields, still frozen."""
    entries = gemini.read_files(gemini.files(edge[0])).entries
    made = gemini.usage("gemini", "k", 1.5, "s", "p", "m", 1, 2, 3, 0)
    assert made == AgentUsage("gemini", "k", 1.5, "s", "p", "m", 1, 2, 3, 0)
    for entry in [made, *entries]:
        assert type(entry) is AgentUsage and entry == dataclasses.replace(entry)
        assert entry.cost_usd is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.input = 5  # type: ignore[misc]


# Pieces of session lines for the line picker: every needle, cut needles, near misses,
# quotes, backslashes (escaped or not), carriage returns and newlines.
PICKER_PIECES = (
    b'"gemini"', b'"stats"', b'"result"', b'"model"', b'"sessionId"', b'"session_id"',
    b'"gemin', b'i"', b'"Gemini"', b'"models"', b'"session', b'_id"', b'Id"', b'"res',
    b'ult"', b'"', b'""', b"\\", b"\\u", b"u", b"\\\\u", b"\\\"model\\\"", b"\n", b"\n",
    b"\r", b" ", b"{", b"}", b":", b",", b'{"type": "user"}', b"0123456789abcdef",
    b'"tokens": {"input": 1}', b"\xc3\xa9", b"\x00",
)  # fmt: skip


def test_the_c_line_picker_picks_what_the_regex_picks() -> None:
    """_geminiscan.pick (C, SIMD) hands back exactly the lines _pick_py (split, then the
    regex) does, with and without the \\u needle, for random lines of pieces: needles cut
    at a line's or the file's end, next to a quote or a backslash, past 16-byte blocks. It
    is built with the package: its absence fails here."""
    from agentwatch.sentinels.agent_ledger._geminiscan import pick

    assert gemini._pick is pick
    rng = random.Random(29)
    found = 0
    for _ in range(20_000):
        raw = b"".join(rng.choice(PICKER_PIECES) for _ in range(rng.randint(0, 60)))
        for escaped in (False, True):
            expected = gemini._pick_py(raw, escaped)
            assert pick(raw, escaped) == expected, (raw, escaped)
            assert expected[1] == sum(line.count(b'"') for line in expected[0])
            found += len(expected[0])
    assert found > 10_000  # the pieces do make lines that are picked
    assert pick(b"", False) == ([], 0) and pick(b'"model"', True) == ([b'"model"'], 2)


def test_a_file_not_utf8_is_unreadable_and_non_ascii_text_still_counts(tmp_path: Path) -> None:
    """read_file checks UTF-8 only for a file with non-ASCII bytes (an ASCII file is UTF-8):
    a session with one invalid byte, even on a line no rule reads, is still one `unreadable`
    reject with nothing counted, as the whole-file decode made it; the same session with a
    valid non-ASCII character there counts as the ASCII one does."""
    path, lines = _session(tmp_path, 10)
    whole = _keys([path])
    assert whole and path.read_bytes().isascii()
    for junk, unreadable in ((b"\xff", True), (b"\xc3(", True), ("é".encode(), False)):
        path.write_bytes(b"\n".join(line.encode() for line in lines) + b"\n" + junk + b"\n")
        result = gemini.read_files([path])
        assert (result.rejects.get("unreadable", 0) == 1) is unreadable
        assert not result.entries if unreadable else {e.key for e in result.entries} == set(whole)
        whole_json = tmp_path / "tmp" / "p" / "chats" / "session-old.json"
        whole_json.write_bytes(b'{"messages": [], "note": "' + junk + b'"}')
        result = gemini.read_files([whole_json])
        assert dict(result.rejects) == ({"unreadable": 1} if unreadable else {})


def _stamp_texts(rng: random.Random) -> Iterator[str]:
    """Timestamps in and near Gemini CLI's form: valid moments (leap days, year 0000 and
    9999, the epoch), days, months, hours, minutes and seconds past their range, other
    digits and characters in any place, other lengths and offsets."""
    yield from ("1970-01-01T00:00:00.000Z", "0000-01-01T00:00:00.000Z",
                "9999-12-31T23:59:59.999Z", "2024-02-29T12:00:00.000Z",
                "2023-02-29T12:00:00.000Z", "1900-02-29T00:00:00.000Z",
                "2000-02-29T00:00:00.000Z", "2026-13-01T00:00:00.000Z",
                "2026-00-10T00:00:00.000Z", "2026-04-31T00:00:00.000Z",
                "2026-04-00T00:00:00.000Z", "2026-04-30T24:00:00.000Z",
                "2026-04-30T23:60:00.000Z", "2026-04-30T23:59:60.000Z",
                "2026-03-02T08:00:11.229z", "2026-03-02T08:00:11.229+00:00",
                "2026-03-02T08:00:11Z", "2026-03-02T08:00:11.2290Z", "",
                "2026-03-02 08:00:11.229Z", "٢٠٢٦-03-02T08:00:11.229Z",
                "2026-03-02T08:00:11.22٩Z", "2026-03-02T08:00:11.229Z\n")  # fmt: skip
    for _ in range(20_000):
        text = list(
            f"{rng.randint(0, 9999):04}-{rng.randint(0, 13):02}-{rng.randint(0, 32):02}T"
            f"{rng.randint(0, 25):02}:{rng.randint(0, 61):02}:{rng.randint(0, 61):02}."
            f"{rng.randint(0, 999):03}Z"
        )
        if rng.random() < 0.2:
            text[rng.randrange(len(text))] = rng.choice("09-T:.Z+ xé٣\x00")
        if rng.random() < 0.05:
            del text[rng.randrange(len(text))]
        yield "".join(text)


def test_the_c_timestamp_reads_what_the_python_slices_read() -> None:
    """_geminiscan.utc_ms gives what _utc_ms_py gives (milliseconds, None for a date or
    time out of range, Ellipsis for another form) on edge and random timestamps, and
    parse_timestamp with either answers the same. Built with the package: its absence
    fails here."""
    from agentwatch.sentinels.agent_ledger._geminiscan import utc_ms

    assert gemini._utc_ms is utc_ms
    rng = random.Random(29)
    valid = 0
    for text in _stamp_texts(rng):
        expected = gemini._utc_ms_py(text)
        assert utc_ms(text) == expected, text
        valid += type(expected) is int
    assert valid > 5_000
    for odd in (None, 5, b"2026-03-02T08:00:11.229Z", ["x"]):
        assert utc_ms(odd) is ... and gemini._utc_ms_py(odd) is ...


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    """A value as orjson.loads makes one: str of every width with quotes and backslashes,
    ints at the edges of what orjson writes, floats, bools, None, nested dicts and lists."""
    kind = rng.randrange(8 if depth < 6 else 5)
    if kind == 0:
        return "".join(rng.choice(('"', "\\", "a", "é", "中", "\U0001d11e", "\x00", "\n", ""))
                       for _ in range(rng.randint(0, 6)))  # fmt: skip
    if kind == 1:
        return rng.choice((0, -1, 2**53, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1))
    if kind == 2:
        return rng.choice((0.5, -1e300, float("inf"), 1e-9))
    if kind in (3, 4):
        return rng.choice((True, False, None))
    if kind == 5:
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_json_value(rng, 6) if rng.random() < 0.3 else rng.choice(('"id"', "model", "x")):
            _json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}  # fmt: skip


def test_the_c_quote_count_is_orjsons_text() -> None:
    """_geminiscan.quotes counts the `"` orjson.dumps writes of a value (-1 where it cannot
    write it: an int past 64 bits), without writing it; it also counts nesting deeper
    than dumps writes (the line is then read alike either way). Built with the package."""
    from agentwatch.sentinels.agent_ledger._geminiscan import quotes

    assert gemini._quotes is quotes
    rng = random.Random(29)
    refused = 0
    for _ in range(20_000):
        value = [_json_value(rng) for _ in range(rng.randint(0, 3))]
        value = [v for v in value if not isinstance(v, dict) or all(type(k) is str for k in v)]
        expected = gemini._quotes_py(value)
        assert quotes(value) == expected, value
        refused += expected < 0
    assert 100 < refused < 10_000
    deep: Any = "x"
    for _ in range(300):
        deep = {'"': [deep]}
    assert gemini._quotes_py(deep) == -1 and quotes(deep) == 300 * 3 + 2
    for odd in (object(), {1: 2}, ("a",), b"x", 1 << 64):
        assert quotes(odd) == -1


# ----------------------------------------------------------------------------- the C reader


def _real_plain_lines() -> list[bytes]:
    """The `type: gemini` lines the real CLI wrote (compact JSON, thoughts and tool calls
    with escapes in their text) and the generator's (", " separators)."""
    lines = [
        line
        for path in sorted(FIXTURES.rglob("*.jsonl"))
        for line in path.read_bytes().splitlines()
        if line.startswith(b'{"id"') and b'"type":"gemini"' in line
    ]
    generated = gemini_corpus.session_lines(random.Random(3), "plain", 5, 12)
    lines += [json.dumps(line).encode() for line in generated if '"gemini"' in json.dumps(line)]
    return lines


_STAMP = b'"2026-03-05T10:00:00.000Z"'
_PLAIN = (
    b'{"type": "gemini", "content": "say \\"hi\\"\\n\\t\\\\ \\/ \\b\\f\\r", "id": "p1", '
    b'"timestamp": ' + _STAMP + b', "model": "gemini-2.5-pro", "tokens": {"input": 1000, '
    b'"output": 10, "cached": 300, "thoughts": 5, "tool": 2, "total": 1017}, '
    b'"toolCalls": [{"id": "t", "args": {"n": [1, -2, 0.5, -0, true, false, null, {}, []]}}]}'
)
_WIDTHS = (15, 16, 17, 40)  # odd bytes before, at and past the C loop's 16-byte blocks
# (a piece of _PLAIN, what replaces it): the plain shape's edges, one at a time
_PLAIN_VARIANTS = [
    (b'"tokens": {"input": 1000, "output": 10, "cached": 300, "thoughts": 5, "tool": 2, '
     b'"total": 1017}', replacement)
    for replacement in (
        b'"tokens": null', b'"tokens": {}', b'"tokens": []', b'"tokens": 5', b'"tokens": "x"',
        b'"tokens": {"input": 0, "output": 0, "cached": 0, "thoughts": 0, "tool": 0, "total": 0}',
        b'"tokens": {"input": 1, "output": 0, "cached": 0, "thoughts": 0, "tool": 0, "total": 9}',
        b'"tokens": {"input": 5, "output": 1, "cached": 9, "thoughts": 0, "tool": 3, "total": 9}',
        b'"tokens": {"input": 1, "output": 2, "cached": 3, "thoughts": 4, "tool": 5}',
        b'"tokens": {"input": 1, "output": 2, "cached": 3, "thoughts": 4, "tool": 5, "total": 6,'
        b' "prompt": 7}',
        b'"tokens": {"input": 1, "input": 2, "output": 2, "cached": 3, "thoughts": 4, "tool": 5,'
        b' "total": 6}',
        b'"tokens": {"total": 6, "tool": 5, "thoughts": 4, "cached": 3, "output": 2, "input": 1}',
        b'"tokens":{"input":1,"output":2,"cached":3,"thoughts":4,"tool":5,"total":15}',
        b'"tokens" : { "input" : 1 , "output":2,"cached":3,"thoughts":4,"tool":5,"total":15 }',
        b'"tokens": {"input": -1, "output": 2, "cached": 3, "thoughts": 4, "tool": 5, "total": 6}',
        b'"tokens": {"input": 1.0, "output": 2, "cached": 3, "thoughts": 4, "tool": 5, "total": 6}',
        b'"tokens": {"input": 1e3, "output": 2, "cached": 3, "thoughts": 4, "tool": 5, "total": 6}',
        b'"tokens": {"input": 01, "output": 2, "cached": 3, "thoughts": 4, "tool": 5, "total": 6}',
        b'"tokens": {"input": 999999999999999, "output": 2, "cached": 3, "thoughts": 4, '
        b'"tool": 5, "total": 6}',
        b'"tokens": {"input": 9007199254740993, "output": 2, "cached": 3, "thoughts": 4, '
        b'"tool": 5, "total": 6}',
        b'"tokens": {"input": 1, "output": 2, "cached": 3, "thoughts": 4, "tool": 5, "total": "6"}',
        b'"tokens": {"input": 1, "output": 2, "cached": 3, "thoughts": 4, "tool": 5, '
        b'"total": null}',
        b'"tokens": {"input": 1, "output": 2, "cached": 3, "thoughts": 4, "tool": 5, '
        b'"tot\\u0061l": 6}',
        b'"tokens": {"input": 1, "output": 2, "cached": 3, "thoughts": 4, "tool": 5, "total": 6}, '
        b'"tokens": null',
    )
] + [(b'"id": "p1"', replacement) for replacement in (
    b'"id": ""', b'"id": "  "', b'"id": " p1 "', b'"id": 1', b'"id": null', b'"id": "p\\"1"',
    b'"id": "p\\u0031"', b'"id": "\xc3\xa9"', b'"id": "p1\x7f"', b'"id": "p1", "id": "p2"',
    b'"x": 1', b'"id": "p1", "sessionId": "s"', b'"id": "p1", "session_id": "s"',
    b'"id": "p1", "stats": {"input": 5}', b'"id": "p1", "result": {"stats": {}}',
    b'"id": "p1", "messages": [], "messages": []', b'"id": "p1", "created_at": 1, "created_at": 2',
    b'"id": "p1", "startTime": 1, "startTime": 1', b'"id": "p1", "lastUpdated": 1, '
    b'"lastUpdated": 1', b'"id": "p1", "content": 1', b'"i\\u0064": "p1"', b'"\\/id": "p1"',
    b'"id":"p1"', b'"id"\t:\t"p1"',
)] + [(b'"model": "gemini-2.5-pro"', replacement) for replacement in (
    b'"model": ""', b'"model": " "', b'"model": " gemini-2.5-pro "', b'"model": null',
    b'"model": 5', b'"x": 0', b'"model": "gemini-2.5-pro\\u3000"', b'"model": "\xe3\x80\x80m"',
    b'"model": "gemini-2.5-pro", "model": "gemini-2.5-pro"', b'"model": "Gemini\\n"',
)] + [(b'"type": "gemini"', replacement) for replacement in (
    b'"type": "Gemini"', b'"type": "gemin\\u0069"', b'"kind": "gemini"', b'"type": null',
    b'"type": "gemini", "type": "gemini"', b'"type":"gemini"', b'"type": "gemini "',
)] + [(_STAMP, replacement) for replacement in (
    b'"2026-02-29T10:00:00.000Z"', b'"2026-03-05T24:00:00.000Z"', b'"2026-03-05T10:00:00Z"',
    b'"2026-03-05T10:00:00.000+00:00"', b'"2026-03-05T10:00:00.000Z", "created_at": '
    + _STAMP, b'"x", "created_at": ' + _STAMP, b"null", b"5", _STAMP + b', "timestamp": '
    + _STAMP, b'"2024-02-29T23:59:59.999Z"', b'"0000-01-01T00:00:00.000Z"',
)] + [(b'"say', replacement) for replacement in (
    b'"\xc3\xa9 \xe4\xb8\xad \xf0\x9d\x84\x9e', b'"\\u00e9', b'"\\x', b'"\x01', b'"\x7f',
    b'"', b'["nest", ' * 70 + b"1" + b"]" * 70 + b', "say', b'"\\uzzzz', b'"\\u12"',
    b'"\\ud800', b'"\\u', b'{"\\u0069d": 1, "\\uqq": 2}, "say',
    *(b'"' + b"x" * width + odd for width in _WIDTHS
      for odd in (b"\x1f", b"\x01", b"\\x", b"\\u0041", b"\x7f", b"\xc3\xa9", b"\\\"")),
)] + [(b'"id": "p1"', b'"id": "' + b"p" * width + odd + b'"') for width in _WIDTHS
      for odd in (b"\x1f", b"\x7f", b"\xc3\xa9", b"\\n", b" ", b"~")
] + [(b"0.5", replacement) for replacement in (
    b"1e5", b"1.5E-3", b"-", b"1.", b".5", b"+1", b"01", b"NaN", b"Infinity", b"1" * 25,
    b"1" * 4400, b"18446744073709551616", b"tru", b"nul",
)] + [(b'{"type"', b' \t{"type"'), (b"]}]}", b"]}]} "), (b"]}]}", b"]}]},"),
      (b"]}]}", b"]}]}}"), (b"]}]}", b"]}]}{}"), (b'{"type"', b'\xef\xbb\xbf{"type"'),
      (b'"toolCalls"', b'"toolCalls": [{"id": 1, "id": 2}], "tc"'),
      (b'"toolCalls"', b'"toolCalls": [{"model": 1, "model": 2}], "tc"'),
      (b'"toolCalls"', b'"x": {"timestamp": 1, "timestamp": 2}, "tc"')]  # fmt: skip
_PLAIN_EDGES = [_PLAIN] + [_PLAIN.replace(old, new, 1) for old, new in _PLAIN_VARIANTS]
# Bytes a mutation inserts or puts in place of one: JSON's own, escapes, UTF-8, controls.
_MUTATIONS = (
    b'"', b"\\", b"{", b"}", b"[", b"]", b":", b",", b" ", b"\t", b"\r", b"0", b"1", b"9",
    b"-", b".", b"e", b"u", b"\\u0061", b"\\n", b"\xc3\xa9", b"\x00", b"\x1f", b"\x7f", b"x",
    b'"id": "z", ', b'"model": "m2", ', b'"tokens": null, ', b"null", b"true",
)  # fmt: skip
_CONTEXT = (  # lines around them: the session's header, a user turn, a model named alone
    b'{"sessionId": "s-plain", "startTime": "2026-03-05T09:00:00.000Z"}',
    b'{"id": "u", "timestamp": "2026-03-05T09:59:00.000Z", "type": "user", "content": "q"}',
    b'{"type": "info", "model": "gemini-2.5-flash"}', b'{"$set": {"lastUpdated": "x"}}',
)  # fmt: skip


def _mutated(rng: random.Random, line: bytes) -> bytes:
    """line with one to three bytes inserted, dropped, replaced or a piece repeated."""
    text = bytearray(line)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text))
        how = rng.randrange(4)
        if how == 0:
            text[at:at] = rng.choice(_MUTATIONS)
        elif how == 1:
            del text[at]
        elif how == 2:
            text[at : at + 1] = rng.choice(_MUTATIONS)
        else:
            text[at:at] = text[at : at + rng.randint(1, 40)]
    return bytes(text)


def test_the_c_reader_of_plain_lines_reads_what_the_rules_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """_geminiscan.scan reads a plain `type: gemini` line in one pass. Files of the lines
    the real CLI wrote, every edge of the plain shape above and 4,000 random mutations of
    them (bytes inserted, dropped, replaced, repeated), mixed with a header, user turns and
    a model named alone (what later lines inherit), read the same events and rejects as
    with every line read by orjson and the rules in Python. Built with the package: its
    absence fails here."""
    from agentwatch.sentinels.agent_ledger._geminiscan import scan

    assert gemini._scan is scan
    real = _real_plain_lines()
    assert len(real) >= 10
    for line in [*real, _PLAIN]:  # the lines Gemini CLI writes: all taken by the C reader
        assert scan(line, False)[1] == [], line
    rng = random.Random(29)
    path = tmp_path / "tmp" / "p" / "chats" / "session-plain.jsonl"
    path.parent.mkdir(parents=True)
    cases = [[line] for line in _PLAIN_EDGES + real]
    for _ in range(4_000):
        lines = [_mutated(rng, rng.choice(real + _PLAIN_EDGES))]
        for _ in range(rng.randint(0, 4)):
            lines.append(rng.choice((*_CONTEXT, *real, *_PLAIN_EDGES, lines[0])))
        rng.shuffle(lines)
        cases.append(lines)
    taken = refused = 0
    for lines in cases:
        raw = b"\n".join(lines) + rng.choice((b"\n", b""))
        path.write_bytes(raw)
        fast = gemini.read_files([path])
        with monkeypatch.context() as patch:
            patch.setattr(gemini, "_scan", gemini._scan_py)
            slow = gemini.read_files([path])
        assert (fast.entries, fast.rejects) == (slow.entries, slow.rejects), raw
        if _utf8(raw):  # what read_file would pass on, without \r
            chosen, places, _ = scan(raw, b"\\u" in raw)
            taken += len(chosen) - len(places)
            refused += len(places)
    assert taken > 3_000 and refused > 5_000  # both ways are well trodden


def _utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\r" not in raw


def test_the_c_keys_are_hashlibs() -> None:
    """_geminiscan.keys (BLAKE2b in C, one call per file) gives the keys _keys_py makes with
    hashlib: paths of every length from 0 to 300 bytes (across BLAKE2b's 128-byte blocks),
    key parts of any length with NULs, non-ASCII and lone surrogates (json.loads keeps a
    \\ud800 escape), an event with no part at all. Built with the package."""
    from agentwatch.sentinels.agent_ledger._geminiscan import keys

    assert gemini._keys is keys
    rng = random.Random(29)
    alphabet = ("a", "0", "\0", "é", "中", "\U0001d11e", "\ud800", "\udfff")
    for size in range(301):
        path = bytes(rng.getrandbits(8) for _ in range(size))
        events: list[gemini.Event] = [((), 0, "s", "m", 1, 2, 3)]
        for _ in range(rng.randint(0, 5)):
            parts = tuple(
                "".join(rng.choice(alphabet) for _ in range(rng.choice((0, 1, 36, 127, 300))))
                for _ in range(rng.randint(1, 4))
            )
            events.append((parts, 0, "s", "m", 1, 2, 3))
        assert keys("gemini:", path, events) == gemini._keys_py("gemini:", path, events)
    assert keys("gemini:", b"", []) == []


def _whole_files() -> list[bytes]:
    """Whole-file sessions as older Gemini CLI wrote them (the generator's form, written
    with blanks and compact) and the edge corpus's .json files."""
    found = []
    for seed in range(6):
        lines = gemini_corpus.session_lines(random.Random(seed), f"whole-{seed}", 5, 3)
        records = [line for line in lines[1:] if isinstance(line, dict) and "id" in line]
        value = {**gemini_corpus.header(f"whole-{seed}", gemini_corpus.at(5)), "messages": records}
        found.append(json.dumps(value).encode())
        found.append(json.dumps(value, separators=(",", ":")).encode())
    return found


# (a piece of a whole file, what replaces it): the plain shape's edges at the file's top
_WHOLE_VARIANTS = [
    (b'"sessionId": "whole-0"', b'"sessionId": " "'),
    (b'"sessionId": "whole-0"', b'"sessionId": " whole-0 "'),
    (b'"sessionId": "whole-0"', b'"x": 1'),
    (b'"sessionId": "whole-0"', b'"sessionId": "whole-0", "sessionId": "b"'),
    (b'"sessionId": "whole-0"', b'"sessionId": "whole-0", "session_id": "b"'),
    (b'"sessionId": "whole-0"', b'"session_id": "whole-0"'),
    (b'"sessionId": "whole-0"', b'"sessionId": 5'),
    (b'"sessionId": "whole-0"', b'"sessionId": "wh\\u006fle"'),
    (b'"sessionId": "whole-0"', b'"sessionId": "whole-0", "type": "gemini", "type": "x"'),
    (b'"sessionId": "whole-0"', b'"sessionId": "whole-0", "messages": []'),
    (b'"sessionId": "whole-0"', b'"sessionId": "whole-0", "stats": {"input": 5}'),
    (b'"sessionId": "whole-0"', b'"sessionId": "whole-0", "type": "gemini", "model": "x", '
     b'"id": "y", "timestamp": 1, "created_at": 2, "tokens": null, "result": {}'),
    (b'"messages": [', b'"messages": [5, "x", null, [], '),
    (b'"messages": [', b'"messages": [{"type": "gemini", "id": "n", "timestamp": "2026-03-05'
     b'T10:00:00.000Z", "tokens": {"input": 1, "output": 1, "cached": 0, "thoughts": 0, '
     b'"tool": 0, "total": 2}}, '),
    (b'"messages": [', b'"messages": [{"type": "gemini", "model": " ", "timestamp": "2026-03-05'
     b'T10:00:00.000Z", "tokens": {"input": 1, "output": 1, "cached": 0, "thoughts": 0, '
     b'"tool": 0, "total": 2}}, '),
    (b'"messages": [', b'"messages": [{"type": "gemini", "model": "m", "id": " ", "timestamp": '
     b'"2026-03-05T10:00:00.000Z", "tokens": null}, {"type": 5}, {"type": "gemini\\/"}, '),
    (b'"messages": [', b'"messages": [{"type": "user", "type": "gemini"}, '),
    (b'"messages": [', b'"messages": [{"sessionId": "x"}, '),
    (b'"messages": [', b'"messages": [{"type": "user", "content": [{"text": "\\u0041"}]}, '),
    (b'"messages": [', b'"messages": {"a": ['),
]  # fmt: skip


def test_the_c_reader_of_whole_files_reads_what_the_rules_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """_geminiscan.plain_file reads a plain whole-file session in one pass: the generator's
    sessions, the edge corpus's .json files, the top's edges above and 3,000 random
    mutations of them read the same events and rejects as with orjson and the rules in
    Python. Built with the package: its absence fails here."""
    from agentwatch.sentinels.agent_ledger._geminiscan import plain_file

    assert gemini._plain_file is plain_file
    whole = _whole_files()
    assert all(plain_file(text) is not None for text in whole)
    edge = [path.read_bytes() for path in gemini_corpus.edge_cases(tmp_path / "e").files]
    texts = [*whole, *(text for text in edge if text.lstrip().startswith(b"{"))]
    texts += [whole[0].replace(old, new, 1) for old, new in _WHOLE_VARIANTS]
    rng = random.Random(29)
    texts += [
        _mutated(rng, rng.choice(whole if rng.random() < 0.8 else texts)) for _ in range(3_000)
    ]
    path = tmp_path / "tmp" / "p" / "chats" / "session-whole.json"
    path.parent.mkdir(parents=True)
    taken = 0
    for text in texts:
        path.write_bytes(text)
        fast = gemini.read_files([path])
        with monkeypatch.context() as patch:
            patch.setattr(gemini, "_plain_file", gemini._no_plain_file)
            slow = gemini.read_files([path])
        assert (fast.entries, fast.rejects) == (slow.entries, slow.rejects), text
        taken += _utf8(text) and plain_file(text) is not None
    assert 300 < taken < len(texts) - 1_000  # both ways are well trodden
