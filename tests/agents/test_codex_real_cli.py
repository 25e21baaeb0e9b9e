"""The real Codex CLI (from npm), run offline against the scripted Responses API stand-in in
a temp HOME: what it writes is read by the reader and by ccusage, and both must agree with
each other and with the usage the stand-in served."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentwatch.sentinels.agent_ledger import codex
from tests.agents.codex_api import Reply, StandIn
from tests.agents.codex_tools import (
    ccusage_daily,
    differences,
    home_files,
    our_daily,
    prepare_home,
    run_exec,
)

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

SCRIPT = [
    Reply(
        "Scripted reply one.",
        9000,
        35,
        cached_tokens=2000,
        cache_write_tokens=700,
        reasoning_tokens=9,
    ),
    Reply("Scripted reply two.", 9800, 50, cached_tokens=8900, reasoning_tokens=20),
]


def test_codex_exec_and_resume_read_as_ccusage_reads_them(tmp_path: Path) -> None:
    home, codex_home, project = tmp_path / "home", tmp_path / "codex-home", tmp_path / "project"
    with StandIn(SCRIPT) as api:
        prepare_home(codex_home, api.url)
        first = run_exec(home, codex_home, project, "Scripted prompt one.")
        assert first.returncode == 0, first.stderr[-2000:]
        second = run_exec(home, codex_home, project, "Scripted prompt two.", "resume", "--last")
        assert second.returncode == 0, second.stderr[-2000:]
        served = list(api.served.replies)
    assert [request["path"] for request in api.served.requests] == ["/v1/responses"] * 2
    assert "Scripted reply two." in second.stdout

    rollouts = home_files(str(codex_home))
    assert len(rollouts) == 1  # the resumed turn went into the same rollout
    entries = codex.read_files(rollouts).entries
    assert [(e.input, e.cache_read, e.cache_creation, e.output) for e in entries] == [
        (
            reply.input_tokens - reply.cached_tokens - reply.cache_write_tokens,
            reply.cached_tokens,
            reply.cache_write_tokens,
            reply.output_tokens,
        )
        for reply in served
    ]
    assert {entry.session for entry in entries} == {entries[0].session} != {""}
    assert entries[0].project == "project"
    theirs = ccusage_daily(str(codex_home), tmp_path / "scratch", "UTC")
    assert differences(our_daily(str(codex_home), "UTC"), theirs) == []
