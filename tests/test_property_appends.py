"""Property: however the same bytes arrive (any split into appends, restarts between them),
the ledger ends with the same counters as reading the finished file once."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentwatch.sentinels.token_ledger.ledger import Ledger
from agentwatch.sentinels.token_ledger.pricing import PriceBook
from agentwatch.sentinels.token_ledger.store import Store
from tests.transcripts import assistant, encode, user_line

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

PRICES = PriceBook.load()


def _content() -> bytes:
    no_id = assistant(input_tokens=4)
    del no_id["message"]["id"]
    return (
        encode(
            user_line("héllo wörld ✓ " * 20),
            assistant("msg_A", output_tokens=1),
            assistant("msg_A", output_tokens=30),
            assistant("msg_B", "req_b", input_tokens=7, cache_read=900),
            assistant("msg_B", "req_x", input_tokens=7, cache_read=900, sidechain=True),
            assistant("msg_C", None, input_tokens=3, model="claude-opus-4-6"),
            no_id,
            assistant("msg_D", "req_d", model="claude-haiku-4-5-20251001", cwd="/srv/другой"),
        )
        + b'{"broken": "usage":{\n'
        + encode(assistant("msg_E", input_tokens=250_000))
    )


CONTENT = _content()


def _persisted(ledger: Ledger) -> dict:
    return {key: round(value, 9) for key, value in ledger.counters.items()}


def _ledger(state: Path, root: Path) -> Ledger:
    return Ledger(Store(state / "l.sqlite"), PRICES, [root / "projects"])


def _read_whole() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root, state = Path(tmp) / "claude", Path(tmp) / "state"
        path = root / "projects" / "-p" / "s.jsonl"
        path.parent.mkdir(parents=True)
        path.write_bytes(CONTENT)
        ledger = _ledger(state, root)
        ledger.catch_up()
        counters = _persisted(ledger)
        ledger.store.close()
        return counters


EXPECTED = _read_whole()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cuts=st.lists(st.integers(min_value=1, max_value=len(CONTENT) - 1), max_size=12, unique=True),
    restarts=st.lists(st.booleans(), min_size=13, max_size=13),
)
def test_any_split_into_appends_gives_the_same_counters(
    cuts: list[int], restarts: list[bool]
) -> None:
    bounds = [0, *sorted(cuts), len(CONTENT)]
    with tempfile.TemporaryDirectory() as tmp:
        root, state = Path(tmp) / "claude", Path(tmp) / "state"
        path = root / "projects" / "-p" / "s.jsonl"
        path.parent.mkdir(parents=True)
        ledger = _ledger(state, root)
        for index, (start, end) in enumerate(itertools.pairwise(bounds)):
            with path.open("ab") as handle:
                handle.write(CONTENT[start:end])
            if restarts[index]:
                ledger.store.close()
                ledger = _ledger(state, root)
            ledger.catch_up()
        counters = _persisted(ledger)
        ledger.store.close()
    assert counters == EXPECTED
