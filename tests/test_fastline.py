"""The C fast path agrees with the rules in Python: `_fastline.scan` answers only for lines
`records.parse_by_rules` accepts, with exactly its fields, and declines everything else;
`collect` and `find` find what `tailer`'s Python finds, `settle`, `absorb` and `key_hash` give what
`reader`'s Python references give, and the C message filter sets the same bits.

Run over every edge corpus of the conformance suite (each line ccusage was checked on), a
generated history, and lines mutated at random by hypothesis."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentwatch.sentinels.token_ledger import reader, records, store, tailer
from agentwatch.sentinels.token_ledger._fastline import (
    absorb,
    collect,
    find,
    key_hash,
    scan,
    settle,
)
from agentwatch.sentinels.token_ledger.pricing import PriceBook
from bench.generators import corpus as demo_corpus
from tests.conformance import corpus as edge
from tests.transcripts import assistant, encode

FIELDS = records.FIELDS


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
    assert tailer.collect is collect and tailer.find is find
    assert reader.settle is settle and reader.fast_absorb is absorb


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


@pytest.mark.parametrize(
    "text",
    ["", "msg_01AAA", "r\0req_011CVx", "t\x001764567890123", "x" * 127, "x" * 128, "x" * 129,
     "y" * 256, "é" * 64, "\ud800 lone surrogate", "\U0001f600" * 40],
)  # fmt: skip
def test_key_hash_in_c_equals_the_python_reference(text: str) -> None:
    """Block edges (128 bytes), non-ASCII and a lone surrogate (surrogatepass) included."""
    assert key_hash(text) == reader.key_hash_in_python(text)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_key_hash_agrees_on_any_text(text: str) -> None:
    assert key_hash(text) == reader.key_hash_in_python(text)


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


def test_find_finds_what_bytes_find_finds() -> None:
    rng = random.Random(5)
    words = [b"x" * 17, b'"usage":{', b'"usage":', b"{", b'"', b"\xf0\x9f\x98\x80", b"\n"]
    for _ in range(400):
        block = b"".join(rng.choice(words) for _ in range(rng.randint(0, 40)))
        begin = rng.randint(0, len(block))
        stop = rng.randint(begin, len(block))
        assert find(block, begin, stop) == tailer.find_in_python(block, begin, stop), block
    with pytest.raises(ValueError):
        find(b"abc", 2, 1)


def test_a_long_line_is_skimmed_for_the_marker_across_reads(tmp_path: Path) -> None:
    """The marker split by a read's end (tailer.CHUNK) in a line longer than LONG_LINE."""
    for cut in range(len(tailer.MARKER) + 1):
        pad = tailer.LONG_LINE + tailer.CHUNK - cut
        line = b'{"x":"' + b"a" * pad + tailer.MARKER + b'"y":1}}'
        path = tmp_path / f"long-{cut}.jsonl"
        path.write_bytes(line + b"\n" + b'{"short":1}\n')
        fd = os.open(path, os.O_RDONLY)
        try:
            result = tailer.read_lines(fd, 0, 1 << 40)
        finally:
            os.close(fd)
        assert result.lines == 2
        assert [offset for offset, _ in result.candidates] == [0], cut


def test_the_c_message_filter_sets_and_finds_the_python_bits() -> None:
    rng = random.Random(11)
    msgs = [rng.getrandbits(64) - (1 << 63) for _ in range(5000)] + [0, -1, (1 << 63) - 1]
    fast, slow = store.new_filter(), store.MessageFilter()
    assert isinstance(fast, store.FastMessageFilter)
    fast.add_all(msgs[:2500])
    slow.add_all(msgs[:2500])
    assert fast._bits == slow._bits
    assert fast.held(msgs) == slow.held(msgs)
    assert set(msgs[:2500]) <= set(fast.held(msgs))  # never a false negative


def _chunk_entries(root: Path) -> list[reader.Chunk]:
    chunk_reader = reader.ChunkReader(PriceBook.load())
    return [chunk_reader.read(str(path), "slug", None, 1 << 30) for path in root.rglob("*.jsonl")]


def _absorbed(absorb, chunks: list, unpriced_every: int = 0) -> tuple[dict, dict, dict]:
    """Every chunk absorbed into one batch in two halves, as the ledger absorbs two slices of
    a file (one half's sums and buckets merge into the other's); label sets numbered per
    (project, model) across chunks, so other files' chunks merge too."""
    by_labels: dict = {}
    buckets: dict = {}
    fresh: dict = {}
    numbers: dict = {}
    for chunk in chunks:
        entries = chunk.entries
        if unpriced_every:
            entries = [(*e[:13], i % unpriced_every == 1, *e[14:]) for i, e in enumerate(entries)]
        labels = [numbers.setdefault(group, len(numbers) + 1) for group in chunk.groups]
        half = len(entries) // 2
        for part in (entries[half:], entries[:half]):  # the earlier half last: first_ms moves
            assert absorb(part, labels, by_labels, buckets, fresh) is True
    return by_labels, buckets, fresh


def test_absorb_in_c_equals_the_python_reference(tmp_path: Path) -> None:
    """The batch's sums, bucket rows and responses rows after every chunk of a generated
    history (and again with every other entry unpriced), each value of the same type."""
    demo_corpus.generate(tmp_path, 2 << 20, files=12, seed=3)
    chunks = [chunk for chunk in _chunk_entries(tmp_path) if chunk.entries]
    assert len(chunks) > 5
    for unpriced_every in (0, 2):
        fast = _absorbed(absorb, chunks, unpriced_every)
        slow = _absorbed(reader.absorb_in_python, chunks, unpriced_every)
        assert fast == slow
        for part_fast, part_slow in zip(fast, slow, strict=True):
            assert [[type(v) for v in row] for row in part_fast.values()] == [
                [type(v) for v in row] for row in part_slow.values()
            ]
        assert any(row[5] for row in fast[0].values()) == bool(unpriced_every)
        assert sum(row[8] for row in fast[1].values()) == len(fast[2])
        assert any(row[8] > 1 for row in fast[1].values())  # buckets merged
    # sums past 64 bits are left to the Python, which keeps them exact
    big = (*chunks[0].entries[0][:6], 2**62, 0, 0, 0, *chunks[0].entries[0][10:])
    by_labels: dict = {}
    assert absorb([big, big], [7], by_labels, {}, {}) is False and by_labels == {}
    reader.absorb([big, big], [7], by_labels, {}, {})
    assert by_labels[7][0] == 2**63


def test_settle_in_c_equals_the_python_reference(tmp_path: Path, edge_lines: list[bytes]) -> None:
    """Every edge-corpus line, and a generated history, settled in chunks both ways: the
    same survivors in the same order, the same rejects and copies."""
    demo_corpus.generate(tmp_path, 2 << 20, files=8, seed=9)
    pricer = reader.ChunkReader(PriceBook.load())
    rng = random.Random(2)
    lines = edge_lines + _lines(tmp_path)
    rng.shuffle(lines)
    for start in range(0, len(lines), 97):
        candidates = [(start + i, line) for i, line in enumerate(lines[start : start + 97])]
        candidates += candidates[: rng.randint(0, 5)]  # copies of lines already seen
        got: tuple = ({}, {})
        want: tuple = ({}, {})
        rules = lambda line: reader.by_rules(line, "f")  # noqa: E731
        fast = settle(candidates, rules, pricer._better, *got)
        slow = reader.settle_in_python(candidates, rules, pricer._better, *want)
        assert fast == slow
        assert got == want
