"""The rules the later readers share (sentinels/agent_ledger/ccusage_rules.py), held to ccusage.

The total-tokens fallback against the cases of ccusage's own unit tests (rust/crates/ccusage/
src/utils.rs, ryoppippi/ccusage 5816e640e882); the timestamp form and the integer rule against
the real `ccusage pi daily --json --offline` 20.0.24: copies of a record of ccusage's pi
fixture (tests/fixtures/agents/ccusage/pi) whose `timestamp` or a count takes an edge value,
read by both. No new record shape: only those two values change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentwatch.sentinels.agent_ledger import ccusage_rules as rules
from agentwatch.sentinels.agent_ledger import pi
from tests.agents.ccusage_agents import FIXTURES, SPECS, ccusage_rows, reader_rows

PI = next(spec for spec in SPECS if spec.agent == "pi")
RECORD = json.loads(
    (FIXTURES / "pi" / "sets_missing_pricing_model_when_model_not_in_pricing" / "sessions"
     / "project-a" / "agent_session-a.jsonl").read_text()
)  # fmt: skip
TIMESTAMPS = [
    "2026-01-02T00:00:00.000Z", "2026-01-03T05:00:00Z", "2026-01-04T23:30:00+05:30",
    "2026-01-05T01:00:00.123-08:00", "2026-01-06T00:00:00.000z", "2026-01-07 00:00:00Z",
    "2026-02-30T00:00:00Z", "2026-01-08T24:00:00Z", "2026-01-09T00:00:60Z",
    "2026-01-10T00:00:00", "2026-01-11T00:00:00.1Z", "2026-01-12T00:00:00.000000Z",
    "  2026-01-13T00:00:00Z\\t", "2024-02-29T12:00:00Z", "2025-02-29T12:00:00Z",
    "1970-01-01T00:00:00Z", "2999-12-31T23:59:59Z", "2026-01-14T00:00:00+23:59",
    "2026-01-15T00:00:00+0530", "2026-01-16T00:00:00.00ZZ", "2026-01-17T00:00:00-00:00",
    "2026-13-01T00:00:00Z", "2026-01-18T00:00:00.abcZ", "2026-01-19T10:00:00+05:3x",
    "", "2026-01-20T00:00:00.000+00:00", "2026-1-21T00:00:00.000Z",
]  # fmt: skip
COUNTS: list[Any] = [100, 100.0, -5, "100", 1e3, True, None, 0, 2**53, [1], {"n": 1}, 7.5]


def test_total_fallback_as_ccusage_unit_tests() -> None:
    # applies_total_token_fallback_to_missing_output_tokens
    assert rules.total_fallback(100, 0, 0, 25, 175) == (50, 0)
    # keeps_total_fallback_as_extra_when_output_is_known
    assert rules.total_fallback(100, 50, 0, 25, 200) == (50, 25)
    assert rules.total_fallback(100, 50, 0, 25, 10) == (50, 0)  # a total below the parts
    assert rules.total_fallback(1, 2, 3, 4, 20, extra=5) == (2, 10)


def _session(tmp_path: Path, records: list[dict[str, Any]]) -> dict[str, str]:
    path = tmp_path / "data" / "sessions" / "project-a" / "agent_session-a.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(json.dumps(record) for record in records) + "\n")
    return {pi.DATA_DIR_ENV: str(tmp_path / "data")}


def _copy(timestamp: str, usage: dict[str, Any]) -> dict[str, Any]:
    record = json.loads(json.dumps(RECORD))
    record["timestamp"] = json.loads(f'"{timestamp}"')
    record["message"]["usage"] = usage
    return record


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_timestamp_forms_equal_ccusage(tmp_path: Path, zone: str) -> None:
    records = [
        _copy(stamp, {"input": 100 + n, "output": 200}) for n, stamp in enumerate(TIMESTAMPS)
    ]
    env = _session(tmp_path, records)
    theirs = ccusage_rows("pi", env, tmp_path, zone)
    assert len(theirs) >= 10, "most forms must count for the test to pin anything"
    assert reader_rows(PI, env, zone) == theirs  # an unpriced model: cost 0 in both


def test_count_values_equal_ccusage(tmp_path: Path) -> None:
    records = [_copy(f"2026-01-{n + 1:02d}T12:00:00.000Z", {"input": count, "output": 7 + n})
               for n, count in enumerate(COUNTS)]  # fmt: skip
    env = _session(tmp_path, records)
    theirs = ccusage_rows("pi", env, tmp_path)
    assert reader_rows(PI, env) == theirs
    assert {row["input"] for row in theirs.values()} >= {0, 100, 2**53}
