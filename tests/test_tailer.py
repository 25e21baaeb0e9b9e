"""Reading growing files by bytes: partial lines wait, UTF-8 is never split, huge lines pass."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from agentwatch.sentinels.token_ledger import records, tailer


def _read(path: Path, start: int = 0, **kwargs: object) -> tailer.ReadResult:
    fd = os.open(path, os.O_RDONLY)
    try:
        return tailer.read_lines(fd, start, 1 << 40, **kwargs)  # type: ignore[arg-type]
    finally:
        os.close(fd)


def test_partial_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"usage":{"a":1}}\n{"usage":{"b"')
    first = _read(path)
    assert [line for _, line in first.candidates] == [b'{"usage":{"a":1}}']
    assert first.end == 18 and first.lines == 1
    with path.open("ab") as handle:
        handle.write(b":2}}\n")
    second = _read(path, first.end)
    assert [line for _, line in second.candidates] == [b'{"usage":{"b":2}}']
    assert second.candidates[0][0] == 18  # offsets are file offsets


def test_unterminated_but_whole_last_line_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"usage":{"a":1}}\n{"usage":{"b":2}}')
    result = _read(path, tail_is_complete=records.is_whole_object)
    assert len(result.candidates) == 2 and result.end == path.stat().st_size


def test_utf8_split_across_reads_is_kept_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tailer, "CHUNK", 7)  # force reads to cut multi-byte characters
    line = '{"usage":{"x":"žluťoučký kůň 🐎"}}'.encode()
    path = tmp_path / "t.jsonl"
    path.write_bytes(line + b"\n" + line + b"\n")
    result = _read(path)
    assert [got for _, got in result.candidates] == [line, line]
    assert all(got.decode("utf-8") for _, got in result.candidates)


def test_marker_split_across_reads_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tailer, "CHUNK", 5)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"k":1,"usage":{"a":1}}\n{"other":2}\n')
    result = _read(path)
    assert [line for _, line in result.candidates] == [b'{"k":1,"usage":{"a":1}}']
    assert result.lines == 2


def test_long_candidate_found_while_skimming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tailer, "CHUNK", 64)
    monkeypatch.setattr(tailer, "LONG_LINE", 100)
    line = b'{"content":"' + b"x" * 1000 + b'","usage":{"a":1}}'  # marker far past LONG_LINE
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"short\n" + line + b"\n" + b'{"usage":{"b":2}}\n')
    result = _read(path)
    assert result.candidates == [(6, line), (6 + len(line) + 1, b'{"usage":{"b":2}}')]
    assert result.lines == 3 and result.end == path.stat().st_size


def test_fifty_megabyte_line_is_read(tmp_path: Path) -> None:
    big = b'{"message":{"content":"' + b"x" * (50 * 1024 * 1024) + b'","usage":{"a":1}}}'
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"usage":{"s":0}}\n' + big + b"\n" + b'{"usage":{"e":2}}\n')
    result = _read(path)
    assert [len(line) for _, line in result.candidates] == [17, len(big), 17]


def test_oversize_line_is_skipped_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tailer, "CHUNK", 256)  # the lines span many reads
    monkeypatch.setattr(tailer, "LONG_LINE", 300)
    path = tmp_path / "t.jsonl"
    long_candidate = b'{"usage":{' + b"y" * 5000 + b"}\n"
    long_other = b'{"x":"' + b"z" * 5000 + b'"}\n'  # long, but no usage: just skipped
    path.write_bytes(b'{"usage":{"a":1}}\n' + long_candidate + long_other + b'{"usage":{"b":2}}\n')
    result = _read(path, max_line=1000)
    assert result.oversize == 1 and result.lines == 4
    assert [line for _, line in result.candidates] == [b'{"usage":{"a":1}}', b'{"usage":{"b":2}}']


def test_limit_stops_at_a_line_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tailer, "CHUNK", 64)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"usage":{"a":1}}\n' * 1000)
    fd = os.open(path, os.O_RDONLY)
    try:
        first = tailer.read_lines(fd, 0, 100)
    finally:
        os.close(fd)
    assert first.end % 18 == 0 and 0 < first.end < path.stat().st_size


def test_same_file_detects_truncation_and_replacement(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a" * 2000)
    fd = os.open(path, os.O_RDONLY)
    stat = os.fstat(fd)
    position = tailer.Position(dev=stat.st_dev, ino=stat.st_ino, offset=2000)
    tailer.refresh_head(fd, stat, position)
    assert tailer.same_file(fd, stat, position)
    os.close(fd)
    path.write_bytes(b"b" * 2500)  # same inode, rewritten: head differs
    fd = os.open(path, os.O_RDONLY)
    assert not tailer.same_file(fd, os.fstat(fd), position)
    os.close(fd)
    path.write_bytes(b"a" * 10)  # truncated
    fd = os.open(path, os.O_RDONLY)
    assert not tailer.same_file(fd, os.fstat(fd), position)
    os.close(fd)


FAULTS_PROBE = """
import os, random, resource, sys
from agentwatch.core.process import reuse_freed_blocks
from agentwatch.sentinels.token_ledger import records, tailer
if sys.argv[2] == "reuse":
    reuse_freed_blocks(16 << 20)
fd = os.open(sys.argv[1], os.O_RDONLY)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    position, skim = 0, None
    while True:
        read = tailer.read_lines(fd, position, 4 << 20, tail_is_complete=records.is_whole_object,
                                 resume=skim, resumable=True)
        position, skim = read.end, read.skim
        if not read.progress:
            break
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_a_reader_that_reuses_freed_blocks_faults_far_fewer_pages(tmp_path: Path) -> None:
    """The parse workers' malloc setting (core.process.reuse_freed_blocks): reading a file
    of lines from a hundred bytes to over a megabyte, the blocks freed after each read are
    used again instead of being faulted in anew."""
    rng = random.Random(7)
    path = tmp_path / "mixed.jsonl"
    with path.open("wb") as out:
        while out.tell() < 48 << 20:
            size = rng.choice([200, 3000, 40_000, 300_000, 1_500_000])
            out.write(b'{"usage":{"input_tokens":1},"pad":"' + b"x" * size + b'"}\n')
    faults = {
        mode: int(
            subprocess.run(
                [sys.executable, "-c", FAULTS_PROBE, str(path), mode],
                check=True, capture_output=True, text=True,
            ).stdout
        )
        for mode in ("default", "reuse")
    }  # fmt: skip
    assert faults["reuse"] * 3 < faults["default"], faults
