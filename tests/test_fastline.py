"""The C fast path agrees with the rules in Python: `_fastline.scan` answers only for lines
`records.parse_by_rules` accepts, with exactly its fields, and declines everything else;
`_fastline.collect` finds the same candidate lines as `tailer.collect_in_python`.

Run over every edge corpus of the conformance suite (each line ccusage was checked on), a
generated history, and lines mutated at random by hypothesis."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentwatch.demo import corpus as demo_corpus
from agentwatch.sentinels.token_ledger import records, tailer
from agentwatch.sentinels.token_ledger._fastline import collect, scan
from tests.conformance import corpus as edge
from tests.transcripts import assistant, encode

FIELDS = (
    "msg_id", "req_id", "model", "timestamp", "sidechain", "cost_usd", "cwd", "input", "output",
    "cache_read", "cache_5m", "cache_1h", "has_speed", "fast",
)  # fmt: skip


def _disagreement(line: bytes) -> str | None:
    """Why the fast path and the rules disagree on a line (None: they agree)."""
    fast = scan(line)
    try:
        entries = records.parse_by_rules(line)
    except records.Rejected as rejected:
        return None if fast is None else f"accepted a line the rules reject ({rejected.reason})"
    if fast is None:
        return None  # declined: the rules decide, which is always right
    if len(entries) != 1:
        return "answered for a line with advisors"
    want = tuple(getattr(entries[0], name) for name in FIELDS)
    for name, got, expected in zip(FIELDS, fast, want, strict=True):
        if got != expected or type(got) is not type(expected):
            return f"{name}: {got!r} instead of {expected!r}"
    return None


def _lines(root: Path) -> list[bytes]:
    found = []
    for path in sorted(root.rglob("*.jsonl")):
        found += [line for line in path.read_bytes().split(b"\n") if tailer.MARKER in line]
    return found


@pytest.fixture(scope="module")
def edge_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    lines: list[bytes] = []
    for name, build in {**edge.EDGE_CORPORA, **edge.REGRESSION_CORPORA}.items():
        root = tmp_path_factory.mktemp(name)
        build(root)
        lines += _lines(root)
    return lines


def test_the_fast_path_is_built() -> None:
    """Without it the ledger is correct but slow; CI must never run without it."""
    assert records._scan is scan
    assert tailer.collect is collect


def test_every_edge_corpus_line_agrees(edge_lines: list[bytes]) -> None:
    assert len(edge_lines) > 300
    problems = {line[:120]: why for line in edge_lines if (why := _disagreement(line))}
    assert not problems
    answered = sum(scan(line) is not None for line in edge_lines)
    assert answered > 50, "the fast path answered for almost nothing"


def test_a_generated_history_agrees_and_is_mostly_fast(tmp_path: Path) -> None:
    demo_corpus.generate(tmp_path, 4 << 20, files=20, seed=7)
    lines = _lines(tmp_path)
    assert not [line[:120] for line in lines if _disagreement(line)]
    declined = [json.loads(line) for line in lines if scan(line) is None and _counts(line)]
    # only what it leaves on purpose: progress wrappers and API errors
    assert all(
        row.get("isApiErrorMessage") is True or "usage" not in row.get("message", {})
        for row in declined
    )
    assert len(declined) < 0.2 * len(lines)


def _counts(line: bytes) -> bool:
    try:
        records.parse_by_rules(line)
    except records.Rejected:
        return False
    return True


def _plain() -> dict:
    line = assistant("msg_1", "req_1", input_tokens=12, output_tokens=34, cache_read=56)
    line["message"]["usage"]["cache_creation"] = {
        "ephemeral_5m_input_tokens": 7,
        "ephemeral_1h_input_tokens": 8,
    }
    return line


_HERE = "@@here@@"


def _with(path: tuple[str, ...], key: str, raw: bytes) -> bytes:
    """The plain line with `"key":...` at `path` written as `raw` (any bytes at all)."""
    obj = _plain()
    spot = obj
    for name in path:
        spot = spot[name]
    spot[key] = _HERE
    text = json.dumps(obj, separators=(",", ":")).encode()
    return text.replace(json.dumps(key).encode() + b':"' + _HERE.encode() + b'"', raw)


TOP, MESSAGE, USAGE = (), ("message",), ("message", "usage")


@pytest.mark.parametrize(
    ("path", "key", "raw"),
    [
        # each would be counted wrongly if the fast path answered for it
        (MESSAGE, "id", b'"id":"msg_1","id":"msg_2"'),  # a repeated key
        (TOP, "zz", b'"\\u0069d":null'),  # an escaped key that is a forbidden null
        (TOP, "requestId", b'"requestId":null'),
        (TOP, "isApiErrorMessage", b'"isApiErrorMessage":true'),
        (USAGE, "cache_read_input_tokens", b'"cache_read_input_tokens":1.0'),
        (USAGE, "cache_read_input_tokens", b'"cache_read_input_tokens":true'),
        (USAGE, "input_tokens", b'"input_tokens":-1'),
        (USAGE, "input_tokens", b'"input_tokens":9007199254740993'),
        (USAGE, "speed", b'"speed":"turbo"'),
        (TOP, "timestamp", b'"timestamp":"2026-02-30T10:00:00.000Z"'),
        (TOP, "version", b'"version":"x.1.2"'),
        (MESSAGE, "model", b'"model":""'),
        (MESSAGE, "model", b'"model":true'),
        (TOP, "isSidechain", b'"isSidechain":"yes"'),
        (TOP, "costUSD", b'"costUSD":"1"'),
        (USAGE, "iterations", b'"iterations":[{"type":"advisor_message"}]'),
    ],
)
def test_unusual_lines_are_left_to_the_rules(path: tuple[str, ...], key: str, raw: bytes) -> None:
    line = _with(path, key, raw)
    assert raw in line
    assert scan(line) is None
    assert _disagreement(line) is None


def test_the_plain_line_is_answered() -> None:
    """The reference for the test above: unmutated, the fast path does answer."""
    line = encode(_plain()).rstrip(b"\n")
    assert scan(line) is not None
    assert _disagreement(line) is None


_PIECES = st.sampled_from([
    b" ", b"\t", b"null", b"true", b"1", b"-0", b"1e5", b"0.5", b'"', b"\\", b"\\u00e9",
    b"\\ud800", b"{", b"}", b"[", b"]", b",", b":", b'"id"', b'"usage":{', b"\xc3\xa9", b"\xff",
    b"\xed\xa0\x80", b'"model":null', b'"speed":"fast"', b'"input_tokens":3', b'"requestId":"r"',
    b"\x00",
])  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_random_mutations_agree(data: st.DataObject) -> None:
    line = bytearray(encode(_plain()).rstrip(b"\n"))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(line)))
        cut = data.draw(st.integers(0, 3))
        line[at : at + cut] = data.draw(_PIECES)
    assert _disagreement(bytes(line)) is None


def test_collect_finds_what_the_python_reference_finds() -> None:
    rng = random.Random(3)
    words = [b"x" * 40, b'"usage":{', b'"usage": {', b"\n", b'"usag', b'e":{', b"\xc3\xa9", b"{"]
    for _ in range(300):
        block = b"".join(rng.choice(words) for _ in range(rng.randint(0, 60))) + b"\n"
        begin = block.find(b"\n", 0, rng.randint(0, len(block))) + 1
        stop = block.rfind(b"\n") + 1
        if begin > stop:
            begin = 0
        base = rng.randint(0, 1 << 40)
        fast: list[tuple[int, bytes]] = []
        slow: list[tuple[int, bytes]] = []
        lines = collect(block, begin, stop, base, fast)
        assert lines == tailer.collect_in_python(block, begin, stop, base, slow)
        assert fast == slow, block
    with pytest.raises(ValueError):
        collect(b"abc\n", 0, 9, 0, [])
