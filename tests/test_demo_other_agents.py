"""The demo's Codex CLI, Gemini CLI and OpenCode sessions are what the real programs write,
as far as both readers can tell: the agent ledger's readers and the real ccusage count every
response the demo wrote, with the tokens it wrote."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agentwatch.demo.other_agents import OtherAgents, env_for
from agentwatch.sentinels.agent_ledger import codex, gemini, opencode
from tests.conformance.test_ccusage_conformance import ccusage_command

READERS = (codex, gemini, opencode)
STEPS = 4
START = 1_796_148_700.0  # 2026-12-01T18:11:40Z


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agents")
    agents = OtherAgents(root, seed=3, now=START)
    for step in range(STEPS):
        agents.step(START + 60 * step)
    return root


def _paths(reader, env: dict[str, str]) -> list[Path]:
    """The session files the reader finds in the demo's folder (no home to fall back on)."""
    return [path for root in reader.roots(env, Path("/nonexistent")) for path in reader.files(root)]


@pytest.mark.parametrize("reader", READERS, ids=lambda reader: reader.AGENT)
def test_the_readers_count_every_response_with_a_price(written: Path, reader) -> None:
    env = env_for(written)
    paths = [
        path for root in reader.roots(env, Path("/nonexistent")) for path in reader.files(root)
    ]
    result = reader.read_files(paths)
    assert not result.rejects
    assert len(result.entries) == STEPS
    assert all(entry.cost_usd is not None or reader.price(entry) for entry in result.entries)
    assert {entry.project for entry in result.entries} == {"demo-shop"}


@pytest.mark.parametrize("reader", READERS, ids=lambda reader: reader.AGENT)
def test_ccusage_reads_the_same_tokens(written: Path, reader) -> None:
    env = {**os.environ, **env_for(written), "TZ": "UTC"}
    report = subprocess.run(
        [ccusage_command(), reader.AGENT, "daily", "--json", "--offline"],
        env=env, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    days = json.loads(report.stdout)["daily"]
    entries = reader.read_files(_paths(reader, env)).entries
    assert len(days) == 1
    assert days[0]["inputTokens"] == sum(entry.input for entry in entries) > 0
    assert days[0]["cacheReadTokens"] == sum(entry.cache_read for entry in entries) > 0
