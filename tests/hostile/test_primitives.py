"""The two core primitives every hostile-input fix stands on: safe label values and the
bounded reader. Real files, FIFOs and devices; the exposition parsed back by prometheus_client."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from agentwatch.core import bounded
from agentwatch.core.sanitize import MAX_LABEL_LENGTH, label_value, mask_urls, preview
from agentwatch.core.spool import parse_text, sample_line

HOSTILE = [
    *(chr(code) for code in range(0x20)),
    "\x7f",
    "\x85",
    "\u2028",
    '"',
    "\\",
    "}",
    '"}',
    "\\n",
]


@pytest.mark.parametrize("bad", HOSTILE, ids=[f"{ord(c[0]):02x}-{len(c)}" for c in HOSTILE])
def test_a_hostile_character_round_trips_through_the_exposition(bad: str) -> None:
    value = label_value(f"before{bad}after")
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value)
    [family] = parse_text(sample_line("agentwatch_x", {"project": value}, 1.0))
    assert family.samples[0].labels == {"project": value}


def test_invalid_utf8_and_lone_surrogates_become_escapes() -> None:
    assert label_value(b"ok\xff\xfe") == "ok\\xff\\xfe"
    assert label_value(os.fsdecode(b"dir\xff")) == "dir\\udcff"
    assert label_value("\ud800") == "\\ud800"


def test_distinct_values_stay_distinct_when_cut() -> None:
    first, second = "p" * 5000 + "a", "p" * 5000 + "b"
    assert len(label_value(first)) == MAX_LABEL_LENGTH
    assert label_value(first) != label_value(second)
    assert label_value(first) == label_value(first)  # stable
    assert label_value("short") == "short"


def test_preview_quotes_a_short_prefix_only() -> None:
    shown = preview("x" * 10_000_000)
    assert len(shown) < 80 and "10000000 characters" in shown
    assert preview("a\rb") == "'a\\\\x0db'"


def test_mask_urls_hides_credentials_and_queries() -> None:
    line = (
        "fatal: unable to access 'https://me:ghp_secret@github.com/o/r.git/?access_token=t0k': 403"
    )
    masked = mask_urls(line)
    assert "ghp_secret" not in masked and "t0k" not in masked and "me:" not in masked
    assert "github.com/o/r.git/" in masked


def test_bounded_reader_refuses_devices_fifos_directories_and_big_files(tmp_path: Path) -> None:
    fifo = tmp_path / "a.prom"
    os.mkfifo(fifo)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2048)
    link = tmp_path / "zero"
    link.symlink_to("/dev/zero")
    results: dict[str, str] = {}

    def attempt() -> None:  # a FIFO with no writer must not block the open or the read
        for path in (fifo, link, tmp_path, big):
            try:
                bounded.read_bytes(path, 1024)
            except bounded.FileRefused as err:
                results[path.name] = err.reason

    reader = threading.Thread(target=attempt, daemon=True)
    reader.start()
    reader.join(5)
    assert results == {
        "a.prom": "not_regular",
        "zero": "not_regular",
        tmp_path.name: "not_regular",
        "big": "too_large",
    }
    assert bounded.read_bytes(big, 2048) == b"x" * 2048


def test_refusal_messages_never_quote_content(tmp_path: Path) -> None:
    secret = tmp_path / "id_ed25519"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n" + "A" * 4000)
    with pytest.raises(bounded.FileRefused) as caught:
        bounded.read_bytes(secret, 100)
    assert "BEGIN" not in str(caught.value) and str(secret) in str(caught.value)


def test_read_text_keeps_carriage_returns(tmp_path: Path) -> None:
    path = tmp_path / "a.prom"
    path.write_bytes(b'a{m="x\ry"} 1\n')
    assert bounded.read_text(path, 100) == 'a{m="x\ry"} 1\n'
