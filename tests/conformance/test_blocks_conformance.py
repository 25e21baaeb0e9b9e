"""The ledger's 5-hour blocks equal those of `ccusage blocks` 20.0.24 (docs/ledger-rules.md,
"Billing blocks").

Both readers run on one generated tree whose times are relative to now, so the last block is
active: several blocks, an entry exactly at a block's start + 5 h (it stays in the block), one
a millisecond later (the next block), an exactly-5-hour silence and a longer gap. The tree
grows in two stages, the second adding older lines that fall inside, between and after the
blocks the first run stored (the incremental update, including the recomputation of blocks
that a backfill reshuffles). After each stage: the active block's tokens, start and end, the
largest completed block (`--token-limit max`) and every block the ledger holds equal ccusage's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from agentwatch.demo.transcripts import iso_ms
from agentwatch.sentinels.token_ledger.blocks import BlockTracker
from agentwatch.sentinels.token_ledger.store import Store
from tests.conftest import samples

from . import corpus
from .test_ccusage_conformance import TIMEOUT, _environment, ccusage_command

pytestmark = pytest.mark.ccusage

H = 3_600_000
M = 60_000
OPUS = corpus.OPUS_46


def _line(tag: str, ms: int, scale: int, *, model: str = corpus.SONNET_45, cwd: str) -> dict:
    return corpus.assistant(
        f"msg_{tag}", f"req_{tag}", model=model, timestamp=iso_ms(ms), input_tokens=3 * scale,
        output_tokens=5 * scale, cache_creation=7 * scale, cache_read=11 * scale, cwd=cwd,
    )  # fmt: skip


def _stages(hour: int, now_ms: int) -> list[dict[str, list[dict]]]:
    """Files (relative path -> lines) of each stage; `hour` is 30 hours before now's hour."""
    a, b = "/home/alice/alpha", "/home/alice/beta"
    first = {
        "projects/-home-alice-alpha/s-one.jsonl": [
            _line("a1", hour + 17 * M + 123, 100, cwd=a),  # block A: starts at `hour`
            # a streamed copy, then the final one (larger): counted once, the larger
            corpus.edit(_line("a2", hour + 2 * H, 10, cwd=a), {"message.usage.output_tokens": 1}),
            _line("a2", hour + 2 * H + 200, 10, cwd=a),
            _line("a3", hour + 5 * H, 1000, cwd=a),  # exactly start + 5 h: still block A
            _line("b1", hour + 5 * H + 1, 7, cwd=a),  # 1 ms later: block B at hour + 5 h
            _line("b2", hour + 7 * H + 30 * M, 9, model=OPUS, cwd=a),
        ],
        "projects/-home-alice-beta/s-two.jsonl": [
            _line("c1", hour + 12 * H + 31 * M, 50, cwd=b),  # a gap of more than 5 h: block C
            _line("c2", hour + 12 * H + 40 * M, 60, cwd=b),
            _line("d1", hour + 17 * H + 40 * M, 5, cwd=b),  # exactly 5 h of silence: block D
        ],
        "projects/-home-alice-beta/s-three.jsonl": [
            _line("e1", hour + 28 * H + 5 * M, 400, cwd=b),  # the active block E
            _line("e2", now_ms - 90_000, 2000, model=OPUS, cwd=b),  # larger than every past one
        ],
    }
    second = {
        "projects/-home-alice-alpha/s-four.jsonl": [
            _line("a4", hour + 3 * H + 3 * M, 20, cwd=a),  # inside block A
            _line("f1", hour + 23 * H + 59 * M + 59_999, 30, cwd=a),  # between D and E
            _line("f2", hour + 25 * H, 40, cwd=a),
        ],
        "projects/-home-alice-beta/s-three.jsonl": [
            _line("e3", now_ms - 60_000, 3, cwd=b),  # appended to the active block's session
        ],
    }
    return [first, second]


def _write(base: Path, files: dict[str, list[dict]]) -> None:
    for rel, lines in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as handle:
            handle.write(b"".join(corpus.encode(line) + b"\n" for line in lines))


def _ccusage(case: corpus.Corpus, scratch: Path) -> list[dict]:
    scratch.mkdir(parents=True, exist_ok=True)
    command = [ccusage_command(), "blocks", "--json", "--offline", "--token-limit", "max"]
    ran = subprocess.run(
        command, env=_environment(case, scratch), cwd=scratch, capture_output=True, text=True,
        timeout=TIMEOUT, check=False,
    )  # fmt: skip
    if ran.returncode != 0:
        pytest.fail(f"ccusage blocks failed (exit {ran.returncode}):\n{ran.stderr[-3000:]}")
    return [block for block in json.loads(ran.stdout)["blocks"] if not block["isGap"]]


def _ledger(case: corpus.Corpus, scratch: Path, state: Path) -> dict:
    scratch.mkdir(parents=True, exist_ok=True)
    spool = scratch / "spool"
    # ccusage's --token-limit max: the largest completed block, not the default percentile
    config = scratch / "config.yaml"
    config.write_text("sentinels:\n  token-ledger:\n    block_limit_estimate: max\n")
    command = [sys.executable, "-m", "agentwatch.cli", "--log-level", "warning",
               "--config", str(config), "sentinel", "token-ledger", "--once",
               "--spool-dir", str(spool), "--state-dir", str(state)]  # fmt: skip
    ran = subprocess.run(
        command, env=_environment(case, scratch), cwd=scratch, capture_output=True, text=True,
        timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    return samples((spool / "token-ledger.prom").read_text(encoding="utf-8"))


def _ms(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def test_blocks_match_ccusage(tmp_path: Path) -> None:
    now_ms = int(time.time() * 1000)
    hour = (now_ms // H - 30) * H
    base = tmp_path / "claude"
    case = corpus.Corpus(str(base))
    state = tmp_path / "state"
    for number, files in enumerate(_stages(hour, now_ms)):
        _write(base, files)
        ours = _ledger(case, tmp_path / f"run{number}", state)
        blocks = _ccusage(case, tmp_path / f"ccusage{number}")
        active = [block for block in blocks if block["isActive"]]
        assert len(active) == 1, blocks
        want = active[0]
        assert ours[("agentwatch_block_tokens", ())] == want["totalTokens"]
        assert ours[("agentwatch_block_start_timestamp_seconds", ())] * 1000 == _ms(
            want["startTime"]
        )
        assert ours[("agentwatch_block_end_timestamp_seconds", ())] * 1000 == _ms(want["endTime"])
        largest = max(block["totalTokens"] for block in blocks if not block["isActive"])
        assert want["tokenLimitStatus"]["limit"] == largest  # --token-limit max: ended ones
        assert ours[("agentwatch_block_limit_tokens", (("source", "max_block"),))] == largest
        assert largest < want["totalTokens"]  # so taking the active block would show
        shares = sum(v for k, v in ours.items() if k[0] == "agentwatch_block_session_tokens")
        assert shares == want["totalTokens"]
        # Every block, as the ledger stores them, equals ccusage's list.
        store = Store(state / "token-ledger.sqlite")
        try:
            held = BlockTracker(store.minutes, store.tokens_by_labels).blocks
        finally:
            store.close()
        assert [(b.start_ms, b.tokens) for b in held] == sorted(
            (_ms(block["startTime"]), block["totalTokens"]) for block in blocks
        )
    assert len(blocks) == 6  # A, B, C, D, F (stage 2), E


def _ccusage_daily_tokens(case: corpus.Corpus, scratch: Path) -> int:
    scratch.mkdir(parents=True, exist_ok=True)
    command = [ccusage_command(), "claude", "daily", "--json", "--offline"]
    ran = subprocess.run(
        command, env=_environment(case, scratch), cwd=case.cwd or scratch, capture_output=True,
        text=True, timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    totals = json.loads(ran.stdout)["totals"]
    return sum(totals[k] for k in ("inputTokens", "outputTokens", "cacheReadTokens",
                                   "cacheCreationTokens"))  # fmt: skip


@pytest.mark.parametrize("name", ["s12_progress", "regression_no_request_id_key"])
def test_blocks_count_the_entries_daily_counts(name: str, tmp_path: Path) -> None:
    """ccusage 20.0.24 reads `blocks` with another loader than `daily`, which differs from it
    on progress wrappers and on copies without requestId (docs/ledger-rules.md): the ledger's
    blocks hold the entries its counters (and ccusage daily) count. The test notices when
    ccusage's two commands agree again."""
    makers = {**corpus.EDGE_CORPORA, **corpus.REGRESSION_CORPORA}
    case = makers[name](tmp_path / "corpus")
    state = tmp_path / "state"
    ours = _ledger(case, tmp_path / "run", state)
    daily = _ccusage_daily_tokens(case, tmp_path / "daily")
    theirs = sum(block["totalTokens"] for block in _ccusage(case, tmp_path / "blocks"))
    store = Store(state / "token-ledger.sqlite")
    try:
        held = sum(
            block.tokens for block in BlockTracker(store.minutes, store.tokens_by_labels).blocks
        )
    finally:
        store.close()
    counted = sum(v for k, v in ours.items() if k[0] == "agentwatch_tokens_total")
    assert held == counted == daily
    assert theirs != daily, f"{name}: ccusage blocks now counts what daily counts"
