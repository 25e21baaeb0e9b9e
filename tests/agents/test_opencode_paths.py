"""The OpenCode reader's lean path for common rows reads exactly what its rule path reads.

`opencode._common` maps a `message` row that orjson writes back byte for byte; every other
row, and every value outside the common shape, goes to `_entry` (the rules, which
test_opencode_conformance checks against ccusage). Here the whole reader runs twice on the
same databases, once as it is and once with `_common` sending every row to `_entry`: the
entries (keys, counts, costs, times, labels) and the reject counts must be equal. The
databases are the conformance corpora, the captured real-CLI databases, and rows with an
odd value in each field, written compact (so they reach `_common`) and spaced (so they
do not). The price table's compiled pricers are checked against `_cost_of` the same way.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentwatch.sentinels.agent_ledger import opencode
from agentwatch.sentinels.agent_ledger.base import ReadResult
from bench.generators import opencode_corpus as corpus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "opencode"

BASE: dict[str, Any] = corpus.assistant(
    None, corpus.at(3), corpus.tokens(1200, 300, 5000, 700, reasoning=40), cost=0.0123
)
LAST_MS = 253_402_300_799_000  # 9999-12-31T23:59:59Z
# Odd values for each field, as a path into the message; None-path entries replace it whole.
ODD: dict[tuple[str, ...], list[Any]] = {
    ("tokens", "input"): [0, -1, 2**53 + 1, 2**63, 2**64 - 1, 2**64, 1.5, 1e20, "9", True, None],
    ("tokens", "output"): [0, -3, 2**64 - 1, 7.0, "7", False, [1]],
    ("tokens", "reasoning"): [0, -40, 2**62, 3.5, None],
    ("tokens", "total"): [0, 1, 10**6, 2**64 - 1, -1, 1.0, "x", None],
    ("tokens", "cache"): [None, 5, [], {}, {"read": 2**64 - 1}, {"write": -1, "read": "2"}],
    ("tokens", "cache", "read"): [0, -2, 2**64, 3.25],
    ("tokens",): [None, [], 5, {}, {"input": 0, "output": 0}],
    ("modelID",): ["", "  ", " claude-haiku-4-5 ", "claude-sonnet-4.5", 5, None, "\u00e9"],
    ("providerID",): ["", " ", " openai ", 0, None, "unknown"],
    ("time",): [None, 5, [], {}],
    ("time", "created"): [0, -1, 1, LAST_MS, LAST_MS + 1, 2**63, 2**64, 1.7e12, "17", None],
    ("cost",): [0, 0.0, -1.5, 1, 10**6, 1e308, 2**64, "0.5", True, None, []],
    ("path",): [None, "/x", {}, {"cwd": 5}, {"cwd": "/"}, {"cwd": "/a/b/"}, {"cwd": ""}],
    ("sessionID",): ["", "other", 5],
    ("id",): ["", "msg_other", 7],
}


def _with(message: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(message))
    target = copy
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(target.get(key), dict) else None
        if target is None:
            return copy
    target[path[-1]] = value
    return copy


def _odd_rows() -> Iterator[bytes]:
    """Every odd value in turn, and pairs of them, as compact and as spaced JSON; then byte
    edits that only a strict parser sees: repeated fields (top level and nested), escaped
    names, lone surrogates, whitespace, a BOM, invalid UTF-8."""
    messages = [BASE]
    for path, values in ODD.items():
        messages += [_with(BASE, path, value) for value in values]
    pairs = list(itertools.product(ODD[("tokens", "input")], ODD[("tokens", "total")]))
    messages += [_with(_with(BASE, ("tokens", "input"), a), ("tokens", "total"), b)
                 for a, b in pairs]  # fmt: skip
    for message in messages:
        yield json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
        yield json.dumps(message).encode()
    compact = orjson.dumps(BASE)
    edits = [
        compact.replace(b'"tokens":', b'"tokens":{"input":5},"tokens":', 1),
        compact.replace(b'"cost":', b'"cost":1,"cost":', 1),
        compact.replace(b'"modelID":', b'"modelID":"gpt-5","modelID":', 1),
        compact.replace(b'"time":', b'"time":{"created":5},"time":', 1),
        compact[:-1] + b',"sessionID":"again"}',
        compact[:-1] + b',"id":"x","id":"y"}',
        compact.replace(b'"input":', b'"input":9,"input":', 1),
        compact.replace(b'"tokens"', b'"\\u0074okens"', 1),
        compact.replace(b'"claude-sonnet-4-5"', b'"claude\\ud800"', 1),
        compact.replace(b'"build"', b'"\\ud800"', 1),
        compact.replace(b'"claude-sonnet-4-5"', b'"claude-\\u00e9"', 1),
        compact.replace(b":", b" : "),
        b"\xef\xbb\xbf" + compact,
        compact.replace(b'"build"', b'"\xff"', 1),
        compact.replace(b'"build"', b'"a\tb"', 1),
        compact[:-1],
        b"[" + compact + b"]",
        b"null",
        b"5",
        compact.replace(b"0.0123", b"NaN", 1),
        compact.replace(b"0.0123", b"1e400", 1),
        compact.replace(b"0.0123", b"-0", 1),
        compact.replace(b"0.0123", b"1.0e-2", 1),
        # what the C row reader must leave to orjson and the rules
        compact.replace(b'"build"', b'"a\\"b"', 1),
        compact.replace(b'"build"', b'"a\\/b\\n"', 1),
        compact.replace(b'"build"', b'"\xc3\xa9"', 1),
        *(
            compact.replace(b'"build"', b'"a' + raw + b'b"', 1)
            for raw in (
                "\u00e9".encode(),
                "\u20ac".encode(),
                "\U0001f600".encode(),
                "\U0010ffff".encode(),
                b"\xc0\x80",
                b"\xc1\xbf",
                b"\xe0\x80\x80",
                b"\xe0\x9f\xbf",
                b"\xed\xa0\x80",
                b"\xed\x9f\xbf",
                b"\xf0\x80\x80\x80",
                b"\xf4\x90\x80\x80",
                b"\xf5\x80\x80\x80",
                b"\x80",
                b"\xbf",
                b"\xc3",
                b"\xe2\x82",
                b"\xf0\x9f\x98",
                b"\xc3\x28",
                b"\xff",
            )
        ),
        compact.replace(b'"mode":', '"mod\u00e9":'.encode(), 1),
        compact.replace(b'"root":', '"r\u00e9":'.encode(), 1),
        compact.replace(b'"/work', '"/w\u00e9'.encode(), 1),
        compact[:-1] + b',"x":"\xc3\xa9"}',
        compact[:-1] + b',"x":"\xc3"}',
        compact.replace(b'"build"', b'"\x7f"', 1),
        compact.replace(b'"mode":', b'"mo\\"de":', 1),
        compact.replace(b'"claude-sonnet-4-5"', b'"claude\\/x"', 1),
        compact.replace(b"0.0123", b"0.01230", 1),
        compact.replace(b"0.0123", b"00.0123", 1),
        compact.replace(b"0.0123", b".0123", 1),
        compact.replace(b"0.0123", b"0.", 1),
        compact.replace(b"0.0123", b"-0.0123", 1),
        compact.replace(b"0.0123", b"123456789012345678901", 1),
        compact.replace(b"0.0123", b"12345678901234567890", 1),
        compact.replace(b"0.0123", b"0." + b"1" * 41, 1),
        compact.replace(b"0.0123", b"0." + b"1" * 40, 1),
        compact.replace(b"0.0123", b'{"x":1}', 1),
        compact.replace(b"0.0123", b"true", 1),
        compact.replace(b"0.0123", b"null", 1),
        compact.replace(b'"build"', b"[" * 70 + b"]" * 70, 1),
        compact.replace(b'"build"', b"[" * 60 + b"]" * 60, 1),
        compact.replace(b'"build"', b'[1,{"a":[true,false,null,-1.5]}]', 1),
        compact.replace(b'"build"', b'{"a":1,"a":2}', 1),
        compact.replace(b'"build"', b"tru", 1),
        compact.replace(b'"build"', b"[1,]", 1),
        compact.replace(b'"build"', b'{"a":1,}', 1),
        compact + b" ",
        compact + b"x",
        b" " + compact,
        compact.replace(b'"read":', b'"read":1,"read":', 1),
        compact.replace(b'"created":', b'"created":1,"created":', 1),
        compact.replace(b'"cwd":', b'"cwd":"/a","cwd":', 1),
        compact.replace(b'"cwd":', b'"root":"/b","cwd":', 1),
        compact.replace(b'"path":', b'"path":{"cwd":"/a"},"path":', 1),
        compact.replace(b'"cache":', b'"cache":{},"cache":', 1),
        compact.replace(b'"reasoning":', b'"x":{"reasoning":1},"reasoning":', 1),
        compact.replace(b'"input":', b'"in\\tput":3,"input":', 1),
        compact.replace(b'"time":{', b'"time":{"x":[1,2],', 1),
        compact.replace(b'"created":', b'"created":-', 1),
        compact.replace(b'"input":', b'"input":-', 1),
        compact.replace(b'"input":', b'"input":18446744073709551615,"x":', 1),
        compact.replace(b'"input":', b'"input":18446744073709551616,"x":', 1),
        compact.replace(b'"input":', b'"input":0,"x":', 1),
        compact.replace(b'"input":', b'"input":01,"x":', 1),
        compact.replace(b'"providerID":', b'"providerID":5,"x":', 1),
        compact.replace(b'"providerID":"', b'"providerID":"  ', 1),
        compact.replace(b'"modelID":"', b'"modelID":"","x":"', 1),
        compact.replace(b'"created":', b'"created":253402300799000,"x":', 1),
        compact.replace(b'"created":', b'"created":253402300799001,"x":', 1),
        compact.replace(b'"created":', b'"created":0,"x":', 1),
        compact.replace(b'"total":', b'"total":99999999,"x":', 1),
        compact.replace(b'"total":', b'"x":', 1),
        compact.replace(b'"cost":0.0123', b'"cost":7', 1),
        compact.replace(b'"cost":0.0123', b'"cost":0', 1),
        compact.replace(b'"cost":0.0123,', b"", 1),
        compact.replace(b'"path":{', b'"path":{"x":1}', 1),
        compact.replace(b'"path":{', b'"path":5,"y":{', 1),
        compact.replace(b"{", b"{}", 1),
        b"{}",
        b"",
        b"{",
    ]
    yield from edits


def _odd_database(root: Path) -> None:
    root.mkdir(parents=True)
    with sqlite3.connect(root / "opencode.db") as connection:
        connection.execute(corpus.MESSAGE_TABLE)
        rows: list[tuple[Any, Any, Any]] = [
            (f"msg_odd{index}", "ses_odd", data) for index, data in enumerate(_odd_rows())
        ]
        compact = orjson.dumps(BASE)
        rows += [
            ("", "ses_odd", compact),  # an empty id: the message's id, else the row's place
            ("msg_blob", "ses_odd", sqlite3.Binary(compact)),
            (17, "ses_odd", compact),
            ("msg_int_session", 5, compact),
            (b"msg_\xff", "ses_odd", compact),
            ("msg_bad_session", b"ses_\xff", compact),
            ("msg_text", "ses_odd", compact.decode()),
            ("msg_odd0", "ses_odd", compact),  # the same key again: kept once
        ]
        for ident, session, data in rows:
            connection.execute(
                "INSERT OR IGNORE INTO message VALUES (?, ?, 0, 0, ?)",
                (ident if not isinstance(ident, bytes) else sqlite3.Binary(ident), session, data),
            )
        for index in range(5):  # legacy files, some named after database rows
            path = root / "storage" / "message" / "ses_odd" / f"msg_odd{index * 7}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(orjson.dumps({**BASE, "id": f"file{index}"}))


def _read(root: Path) -> ReadResult:
    return opencode.read_files(opencode.files(root))


def _as_rules(root: Path, monkeypatch: pytest.MonkeyPatch) -> ReadResult:
    with monkeypatch.context() as patch:
        patch.setattr(opencode, "_common", lambda *args: opencode._UNUSUAL)
        patch.setattr(opencode, "_scan", opencode._scan_py)
        return _read(root)


def _without_c(root: Path, monkeypatch: pytest.MonkeyPatch) -> ReadResult:
    with monkeypatch.context() as patch:
        patch.setattr(opencode, "_scan", opencode._scan_py)
        return _read(root)


def _fields(result: ReadResult) -> list[tuple[Any, ...]]:
    return [dataclasses.astuple(entry) for entry in result.entries]


def _roots(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    for name, make in sorted(corpus.RULES.items()):
        case = make(tmp_path / name)
        for root in opencode.roots(case.env, case.home):
            yield name, root
    for seed in (1, 2, 3):
        case = corpus.random_corpus(tmp_path / f"random{seed}", seed)
        for root in opencode.roots(case.env, case.home):
            yield f"random {seed}", root
    for index, folder in enumerate(sorted(p.parent for p in FIXTURES.glob("*/opencode.db"))):
        copy = tmp_path / f"fixture{index}"
        shutil.copytree(folder, copy)
        yield f"fixture {folder.name}", copy
    _odd_database(tmp_path / "odd")
    yield "odd values", tmp_path / "odd"


def test_the_lean_path_reads_what_the_rules_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lean_rows = c_rows = 0
    real_common, real_scan = opencode._common, opencode._scan

    def counting(*args: Any) -> Any:
        nonlocal lean_rows
        found = real_common(*args)
        lean_rows += found is not opencode._UNUSUAL
        return found

    def scanning(data: bytes) -> Any:
        nonlocal c_rows
        found = real_scan(data)
        c_rows += found is not None
        return found

    for name, root in _roots(tmp_path):
        with monkeypatch.context() as patch:
            patch.setattr(opencode, "_scan", scanning)
            lean = _read(root)
        with monkeypatch.context() as patch:  # orjson and _common, as without a compiler
            patch.setattr(opencode, "_common", counting)
            python = _without_c(root, monkeypatch)
        rules = _as_rules(root, monkeypatch)
        assert _fields(lean) == _fields(rules), name
        assert lean.rejects == rules.rejects, name
        assert _fields(python) == _fields(rules), name
        assert python.rejects == rules.rejects, name
    # each path decided rows (not all sent on to the next)
    assert c_rows > 1000 and lean_rows > 1000


def test_the_c_row_reader_is_built() -> None:
    """setup builds it (setup.py, scripts/setup): without it the reader is 1.5x slower."""
    assert opencode._scan is not opencode._scan_py


@pytest.mark.parametrize(
    "data",
    [
        b'{"tokens":{"input":1,"output":2,"reasoning":0,"cache":{"read":0,"write":0}},'
        b'"modelID":"m","providerID":"p","time":{"created":1700000000000}}',
    ],
)
def test_the_c_row_reader_reads_a_plain_row(data: bytes) -> None:
    found = opencode._scan(data)
    assert found == (1, 2, 0, 0, 0, 0, "m", "p", 1700000000000, None, None)


def test_odd_rows_reach_the_lean_path_and_are_still_counted_or_rejected(
    tmp_path: Path,
) -> None:
    _odd_database(tmp_path / "odd")
    result = _read(tmp_path / "odd")
    assert result.entries and result.rejects
    assert set(result.rejects) <= {
        "not json", "not an object", "duplicate field", "bad string", "timestamp out of range",
        "number out of range",
    }  # fmt: skip


def test_the_fast_record_is_the_dataclass_record() -> None:
    names = tuple(field.name for field in dataclasses.fields(opencode.OpenCodeUsage))
    assert names == opencode._FIELDS
    values = ("k", 1.5, "s", "p", "m", 1, 2, 3, 4, None, "prov", 5)
    fast = opencode._usage(*values)
    made = opencode.OpenCodeUsage(opencode.AGENT, *values[:10], provider="prov", extra=5)
    assert type(fast) is opencode.OpenCodeUsage and fast == made and hash(fast) == hash(made)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.input = 7  # type: ignore[misc]


def test_compiled_pricers_give_the_rule_s_floats() -> None:
    counts = [0, 1, 999, 150_000, 199_999, 200_000, 200_001, 250_000, 1_000_000]
    tables = [*opencode._table_of_prices().values()]
    tables += [
        {"input": 1.0, "output": 2.0},
        {"input": 3.0, "above": {"mode": "request"}},
        {"input": 1.0, "cache_read": 0.1, "above": {"mode": "request", "input": 2.0}},
        {"output": 4.0, "cache_write": 1.25, "above": {"mode": "per_class", "output": 6.0}},
        {"input": 0.3, "output": 0.7, "above": {"mode": "per_class", "threshold": 999}},
        {"input": 0.0, "output": 1.0, "cache_read": 0.0, "cache_write": 0.0},
    ]
    for rates in tables:
        pricer = opencode._pricer(rates)
        for fresh, output, read, write in itertools.product(counts, repeat=4):
            named = {"input": fresh, "output": output, "cache_read": read, "cache_write": write}
            assert pricer(fresh, output, read, write) == opencode._cost_of(rates, named)
