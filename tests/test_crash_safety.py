"""SIGKILL at random moments during a backfill, restart, repeat: totals equal a clean run."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from agentwatch.demo.transcripts import iso_ms
from tests.conftest import CLI, run_ledger_once, samples
from tests.transcripts import assistant, encode, transcript, user_line

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`


def _corpus(root: Path, files: int = 40, responses: int = 400) -> None:
    rng = random.Random(1234)
    filler = user_line("x" * 4000)
    start_ms = 1_795_000_000_000
    for number in range(files):
        records = []
        for index in range(responses):
            msg = f"msg_{number}_{index}"
            final = rng.randint(10, 2000)
            # spread over days, so that the minute buckets of the runs can differ
            stamp = iso_ms(start_ms + number * 3_700_000 + index * rng.randint(1_000, 90_000))
            records.append(
                assistant(
                    msg,
                    output_tokens=max(1, final // 3),
                    input_tokens=rng.randint(1, 9000),
                    timestamp=stamp,
                )
            )
            records[-1]["message"]["usage"]["output_tokens"] = max(1, final // 3)
            copy = assistant(msg, output_tokens=final, timestamp=stamp)
            copy["message"]["usage"]["input_tokens"] = records[-1]["message"]["usage"][
                "input_tokens"
            ]
            records.append(copy)  # the streamed final copy, larger
            records.append(filler)
        transcript(root, slug=f"-home-p{number % 5}", session=f"s{number}").write_bytes(
            encode(*records)
        )


def _counters(spool: Path) -> dict:
    """Every persisted counter: tokens and cost, but also lines and bytes read, which only
    match a clean run when each step's position and counts are committed together."""
    text = (spool / "token-ledger.prom").read_text()
    return {
        key: value
        for key, value in samples(text).items()
        if key[0].endswith("_total") and "read_errors" not in key[0]
    }


def _buckets(state: Path) -> dict:
    """The minute buckets by their label values (labelset ids differ between runs)."""
    db = sqlite3.connect(state / "token-ledger.sqlite")
    try:
        rows = db.execute(
            "SELECT minute, project, model, session, first_ms, t_in, t_out, t_cr, t_cc, cost, "
            "responses FROM buckets JOIN labelsets ON labels = labelsets.id"
        ).fetchall()
    finally:
        db.close()
    # cost sums depend on the order of additions (batch boundaries): equal to 12 digits
    return {row[:4]: (*row[4:9], float(f"{row[9]:.12g}"), row[10]) for row in rows}


def test_sigkill_during_backfill_never_double_counts(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    _corpus(claude)
    clean = {"claude": claude, "spool": tmp_path / "clean-spool", "state": tmp_path / "clean-state"}
    started = time.monotonic()
    run_ledger_once(clean)
    clean_seconds = time.monotonic() - started
    expected = _counters(clean["spool"])
    assert expected

    crash = {"claude": claude, "spool": tmp_path / "spool", "state": tmp_path / "state"}
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude))
    argv = [
        *CLI,
        "--log-level",
        "warning",
        "sentinel",
        "token-ledger",
        "--once",
        "--spool-dir",
        str(crash["spool"]),
        "--state-dir",
        str(crash["state"]),
    ]
    rng = random.Random(99)
    kills = 0
    for _ in range(60):  # until a run is allowed to finish the backfill by itself
        process = subprocess.Popen(argv, env=env)
        # Short runs: each killed run commits some progress, so the backfill must take many.
        time.sleep(rng.uniform(0.1, 0.1 + clean_seconds / 8))
        if process.poll() is not None:
            break
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        kills += 1
    assert kills >= 8, "the backfill finished too fast to be interrupted: enlarge the corpus"
    # Parse workers die with a killed sentinel instead of lingering on its state.
    survivors = [p for p in psutil.process_iter(["cmdline"])
                 if str(crash["state"]) in " ".join(p.info["cmdline"] or [])]  # fmt: skip
    assert psutil.wait_procs(survivors, timeout=10)[1] == []
    run_ledger_once(crash)
    assert _counters(crash["spool"]) == expected
    clean_buckets = _buckets(clean["state"])
    assert len(clean_buckets) > 1000
    assert _buckets(crash["state"]) == clean_buckets


def test_large_backfill_shows_progress_and_partial_totals(tmp_path: Path) -> None:
    """A person sees progress lines; Prometheus sees totals before the backfill is done."""
    claude = tmp_path / "claude"
    _corpus(claude)
    config = tmp_path / "config.yaml"
    config.write_text("sentinels:\n  token-ledger: {progress_interval: 0.2}\n")
    spool = tmp_path / "spool"
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude))
    process = subprocess.Popen(
        [
            *CLI,
            "--config",
            str(config),
            "sentinel",
            "token-ledger",
            "--spool-dir",
            str(spool),
            "--state-dir",
            str(tmp_path / "state"),
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    partial_seen = False
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            path = spool / "token-ledger.prom"
            if path.exists():
                found = samples(path.read_text())
                unread = found.get(("agentwatch_ledger_unread_bytes", ()), 0)
                if unread > 0 and any(k[0] == "agentwatch_tokens_total" for k in found):
                    partial_seen = True
                if unread == 0:
                    break
            time.sleep(0.01)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert partial_seen, "no partial totals were published during the backfill"
    assert "backfill:" in stderr and "MB/s" in stderr and "files" in stderr
    assert "left" in stderr or "done" in stderr
