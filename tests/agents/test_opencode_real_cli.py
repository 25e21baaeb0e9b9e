"""The real OpenCode CLI (1.18.33, from npm), offline against the scripted stand-in: what it
writes is read by our reader exactly as ccusage 20.0.24 reads it, and it maps the API's usage
the way the reader assumes (input without the cached tokens, output without reasoning, the
reasoning tokens in `extra`, a stated cost when the model has prices in opencode.json).

The test's own stdin is an open pipe nobody writes to or closes, as an agent harness or a CI
runner may leave it: `opencode run` reads its stdin to the end before it starts, so a run
that inherited it would wait until its timeout (which is how this test "timed out under
load"); opencode_cli gives every run an empty stdin instead."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentwatch.sentinels.agent_ledger import opencode
from bench.generators import opencode_corpus as corpus
from tests.agents import opencode_cli
from tests.agents.opencode_api import StandIn
from tests.agents.test_opencode_conformance import (
    ccusage_days,
    differences,
    our_days,
    read_corpus,
)

pytestmark = [pytest.mark.ccusage, pytest.mark.slow]


@pytest.fixture
def open_stdin() -> Iterator[None]:
    """fd 0 an open pipe with no writer to close it, for the test's duration."""
    read, write = os.pipe()
    saved = os.dup(0)
    os.dup2(read, 0)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        for fd in (read, write, saved):
            os.close(fd)


@pytest.mark.usefixtures("open_stdin")
def test_real_cli_sessions_read_like_ccusage(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    with StandIn(opencode_cli.script(project)) as api:
        runs = opencode_cli.run_sessions(home, project, api)
        turns = api.turns()
    for done in runs:
        assert done.returncode == 0, done.stderr[-2000:]
    assert len(turns) == 3, [served.kind for served in api.served]
    assert not list((home / ".npm").glob("**/index-v5/**/*")), "OpenCode fetched from npm"

    # found the way ccusage finds it: XDG_DATA_HOME (as the CLI ran), HOME alongside
    env = opencode_cli.environment(home)
    case = corpus.Corpus(tmp_path, {"XDG_DATA_HOME": env["XDG_DATA_HOME"]})
    assert opencode.roots(case.env, home) == [opencode_cli.data_dir(home)]
    (tmp_path / "home").mkdir(exist_ok=True)
    result = read_corpus(case)
    assert not result.rejects
    found = differences(our_days(result), ccusage_days(case))
    assert not found, "\n".join(found)

    # one entry per agent turn, mapped from the served usage
    entries = sorted(result.entries, key=lambda entry: entry.timestamp)
    assert len(entries) == len(turns)
    for entry, served in zip(entries, turns, strict=True):
        usage = served.usage
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        reasoning = usage["completion_tokens_details"]["reasoning_tokens"]
        assert entry.input == usage["prompt_tokens"] - cached
        assert entry.cache_read == cached and entry.cache_creation == 0
        assert entry.output == usage["completion_tokens"] - reasoning
        assert getattr(entry, "extra", None) == reasoning
        assert entry.project == "project" and entry.session.startswith("ses_")
    priced, table = entries[:2], entries[2]
    rates = opencode_cli.CONFIG_COST
    for entry in priced:
        assert entry.model == opencode_cli.PRICED_MODEL
        expected = (entry.input * rates["input"] + (entry.output + entry.extra) * rates["output"]
                    + entry.cache_read * rates["cache_read"]) / 1e6  # fmt: skip
        assert entry.cost_usd is not None and math.isclose(entry.cost_usd, expected)
    assert table.model == opencode_cli.TABLE_MODEL and table.cost_usd is None
    assert opencode.price(table) is not None
