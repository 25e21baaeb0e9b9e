"""Hostile transcripts against the token ledger: poison numbers and hostile label text.

Every case runs the real command (`--once`, or the live sentinel) and pins the metric that
shows the problem and the single log line it produces.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from agentwatch.sentinels.token_ledger.records import MAX_TOKENS
from tests.conftest import run_ledger_once, token_totals
from tests.hostile.ledger_support import (
    SPOOL_FILE,
    live_log,
    log_lines,
    promtool_clean,
    rejected,
    spool_text,
    start_live,
    wait_for,
)
from tests.transcripts import append, assistant, encode, transcript

REJECT_LOG = "was rejected (bad_token_count)"

# input_tokens values past the bound (or no count at all), each in its own line.
POISON = [MAX_TOKENS + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**80, -1, "NaN", "Infinity", "1e3"]


def _poison_lines() -> bytes:
    return encode(*(assistant(input_tokens=value) for value in POISON))  # type: ignore[arg-type]


def _unrepresentable() -> bytes:
    """A line whose count is 1e400: no double holds it, so the whole line is not JSON we can
    read (the reference reader drops it too)."""
    line = encode(assistant(input_tokens=12345))
    assert line.count(b'"input_tokens":12345') == 1
    return line.replace(b'"input_tokens":12345', b'"input_tokens":1e400')


def test_poison_counts_are_rejected_once(workdirs: dict[str, Path]) -> None:
    path = transcript(workdirs["claude"])
    path.write_bytes(
        encode(assistant(input_tokens=MAX_TOKENS, output_tokens=0))
        + _poison_lines()
        + _unrepresentable()
        + encode(assistant(input_tokens=8, output_tokens=0))
    )
    result = run_ledger_once(workdirs)
    text = spool_text(workdirs)
    assert token_totals(text)["input"] == MAX_TOKENS + 8  # the bound itself still counts
    assert rejected(text, "bad_token_count") == len(POISON)
    assert rejected(text, "malformed_json") == 1  # 1e400
    assert len(log_lines(result.stderr, REJECT_LOG)) == 1
    assert "Traceback" not in result.stderr
    promtool_clean(workdirs["spool"] / SPOOL_FILE)

    # The restart reads nothing again and logs nothing again.
    again = run_ledger_once(workdirs)
    assert rejected(spool_text(workdirs), "bad_token_count") == len(POISON)
    assert log_lines(again.stderr, "was rejected") == []


def test_sums_past_int64_do_not_stop_the_ledger(workdirs: dict[str, Path]) -> None:
    """Each line is within the bound, but one session's sum passes SQLite's 2**63 - 1."""
    lines = 1100  # 1100 * 2**53 > 2**63
    path = transcript(workdirs["claude"])
    path.write_bytes(
        encode(*(assistant(input_tokens=MAX_TOKENS, output_tokens=0) for _ in range(lines)))
    )
    result = run_ledger_once(workdirs)
    assert "Traceback" not in result.stderr
    assert token_totals(spool_text(workdirs))["input"] == float(lines * MAX_TOKENS)
    append(path, encode(assistant(input_tokens=MAX_TOKENS, output_tokens=0)))
    run_ledger_once(workdirs)
    assert token_totals(spool_text(workdirs))["input"] == float((lines + 1) * MAX_TOKENS)


def test_poison_counts_in_the_live_loop(workdirs: dict[str, Path], processes: list) -> None:
    path = transcript(workdirs["claude"])
    path.write_bytes(encode(assistant(input_tokens=5)))
    sentinel = start_live(workdirs, processes)
    wait_for(workdirs, lambda text: token_totals(text)["input"] == 5)

    append(path, _poison_lines() + _unrepresentable() + encode(assistant(input_tokens=11)))
    text = wait_for(workdirs, lambda text: token_totals(text)["input"] == 16)
    assert rejected(text, "bad_token_count") == len(POISON)
    # More poison later: counted, not logged again.
    append(path, _poison_lines() + encode(assistant(input_tokens=1)))
    text = wait_for(workdirs, lambda text: token_totals(text)["input"] == 17)
    assert rejected(text, "bad_token_count") == 2 * len(POISON)
    assert sentinel.poll() is None
    sentinel.send_signal(signal.SIGTERM)
    assert sentinel.wait(timeout=20) == 0
    log = live_log(workdirs)
    assert len(log_lines(log, REJECT_LOG)) == 1
    assert "Traceback" not in log


@pytest.mark.parametrize("field", ["output_tokens", "cache_read_input_tokens"])
def test_every_count_field_is_bounded(field: str, workdirs: dict[str, Path]) -> None:
    line = assistant(input_tokens=1)
    line["message"]["usage"][field] = 2**63
    transcript(workdirs["claude"]).write_bytes(encode(line, assistant(input_tokens=2)))
    run_ledger_once(workdirs)
    text = spool_text(workdirs)
    assert rejected(text, "bad_token_count") == 1
    assert token_totals(text)["input"] == 2


# ---- label safety: every label source holds text anyone on the machine can write

HOSTILE_TEXT = [
    *(f"c{code:02x}{chr(code)}end" for code in range(0x20)),
    'quote"',
    "back\\slash",
    "brace}",
    'all"\\}{=,\n\r',
    "del\x7f",
    "sep\u2028",
    "x" * 100_000,
]


def test_hostile_cwd_and_model_are_safe_labels(workdirs: dict[str, Path]) -> None:
    lines = [assistant(input_tokens=1, cwd=f"/home/alice/{text}") for text in HOSTILE_TEXT]
    lines += [assistant(input_tokens=1, model=text) for text in HOSTILE_TEXT]
    transcript(workdirs["claude"]).write_bytes(encode(*lines))
    result = run_ledger_once(workdirs)
    assert "Traceback" not in result.stderr
    text = spool_text(workdirs)
    assert token_totals(text)["input"] == len(lines)
    promtool_clean(workdirs["spool"] / SPOOL_FILE)
    assert max(len(line) for line in text.splitlines()) < 1000  # 100,000 characters capped
    assert "\r" not in text and "\x00" not in text


def _session_names() -> list[bytes]:
    names = [f"s{code:02x}{chr(code)}x".encode() for code in range(1, 0x20)]
    names += [b'q"uote', b"back\\slash", b"brace}", b"bad\xff\xfeutf8", b"y" * 200]
    return names


def test_hostile_session_and_folder_names_are_safe_labels(workdirs: dict[str, Path]) -> None:
    projects = workdirs["claude"] / "projects"
    folder = projects / "-home-alice-proj"
    folder.mkdir(parents=True)
    names = _session_names()
    for name in names:  # file names are bytes: invalid UTF-8 reaches the session label
        path = bytes(folder) + b"/" + name + b".jsonl"
        with open(path, "wb") as handle:
            handle.write(encode(assistant(input_tokens=1)))
    odd_folder = bytes(projects) + b"/bad\xff\r\n}folder"  # no cwd: the folder names the project
    Path(odd_folder.decode(errors="surrogateescape")).mkdir()
    no_cwd = assistant(input_tokens=1)
    del no_cwd["cwd"]
    with open(odd_folder + b"/s\r.jsonl", "wb") as handle:
        handle.write(encode(no_cwd))
    result = run_ledger_once(workdirs)
    assert "Traceback" not in result.stderr
    text = spool_text(workdirs)
    assert token_totals(text)["input"] == len(names) + 1
    promtool_clean(workdirs["spool"] / SPOOL_FILE)
    # A restart reads the stored positions and labels back: nothing is counted twice.
    again = run_ledger_once(workdirs)
    assert "Traceback" not in again.stderr
    assert token_totals(spool_text(workdirs))["input"] == len(names) + 1
