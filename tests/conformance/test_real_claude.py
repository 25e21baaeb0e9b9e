"""Ground truth from the real Claude Code: what the scripted API served is what the ledger
counts, and what ccusage counts.

Real `claude -p` sessions (the pinned 2.1.328) run against the stand-in with scripts over
several models: 5-minute and 1-hour cache writes, cache reads, a multi-step Bash tool call, a
Task sub-agent, `--continue` and `--resume`. Claude Code writes its transcripts as it always
does; the ledger (the real sentinel, `--once`) must then equal the usage of every served
message that Claude Code recorded, token for token, and ccusage 20.0.24 on the same tree.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn
from tests.claude_cli import prepare_home, recorded_ids, run_print, served_totals
from tests.conftest import CLI, samples

from . import corpus, oracle
from .test_ccusage_conformance import TOKEN_TYPES, assert_conforms, run_both

pytestmark = [pytest.mark.ccusage, pytest.mark.slow]
OPUS_SESSION = "3f0c2a7e-5b1d-4c8e-9a6f-2d4b8e1c7a90"


def usage(input_tokens: int, output: int, read: int = 0, w5m: int = 0, w1h: int = 0) -> dict:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output,
        "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": w5m, "ephemeral_1h_input_tokens": w1h},
    }


SCRIPT: dict[str, Any] = {
    "default": [{"answer": {"text": "Done.", "usage": usage(900, 40, read=3000)}}],
    "sessions": [
        {
            "prompt_contains": "list the files",
            "steps": [
                {
                    "tool_use": {
                        "name": "Bash",
                        "input": {"command": "ls", "description": "List files"},
                        "text": "Let me look.",
                        "usage": usage(1500, 120, read=0, w5m=4000, w1h=2500),
                    }
                },
                {"answer": {"text": "Two files.", "usage": usage(300, 60, read=8000)}},
            ],
        },
        {
            "prompt_contains": "delegate",
            "steps": [
                {
                    "tool_use": {
                        "name": "Task",
                        "input": {
                            "description": "Count lines",
                            "prompt": "Count the lines of README",
                            "subagent_type": "general-purpose",
                        },
                        "usage": usage(2100, 90, w1h=1200),
                    }
                },
                {"answer": {"text": "It has 3 lines.", "usage": usage(700, 30, read=900)}},
                {"answer": {"text": "The helper says 3.", "usage": usage(400, 25, read=5000)}},
            ],
        },
        {
            "prompt_contains": "opus please",
            "steps": [
                {"answer": {"text": "Opus here.", "usage": usage(5000, 700, read=12000, w5m=800)}}
            ],
        },
    ],
}


def test_ledger_equals_what_the_api_served_and_ccusage(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "work" / "demo-project"
    project.mkdir(parents=True)
    (project / "README").write_text("one\ntwo\nthree\n")
    prepare_home(home, [project])
    served = ServedLog(tmp_path / "served.jsonl")
    with StandIn(parse(SCRIPT), served) as api:
        runs = [
            ("please list the files here", "claude-sonnet-4-5", ["--allowedTools", "Bash"]),
            ("delegate this to a helper", "claude-sonnet-4-5", ["--allowedTools", "Task"]),
            ("opus please", "claude-opus-4-1", ["--session-id", OPUS_SESSION]),
            ("a haiku question", "claude-haiku-4-5", []),
        ]
        for prompt, model, extra in runs:
            done = run_print(home, api.url, project, prompt, "--model", model, *extra)
            assert done.returncode == 0, done.stderr[-2000:]
        follow = run_print(home, api.url, project, "and one more", "--continue")
        assert follow.returncode == 0, follow.stderr[-2000:]
        resumed = run_print(home, api.url, project, "back again", "--resume", OPUS_SESSION)
        assert resumed.returncode == 0, resumed.stderr[-2000:]

    config_dir = home / ".claude"
    ids = recorded_ids(config_dir)
    answered = {r["id"] for r in served.records if r.get("id") and r["main_loop"]}
    assert answered <= ids, "a main-loop answer the API served is missing from the transcripts"
    assert len({r["model"] for r in served.records if r.get("id") in ids}) >= 3
    assert {r["session"] for r in served.records} >= {OPUS_SESSION}
    truth = served_totals(served.records, ids)
    assert truth["cache_creation"] > 0 and truth["cache_read"] > 0

    case = corpus.Corpus(config_dir=str(config_dir), home=home)
    reference, ours = run_both(case, tmp_path / "readers", tmp_path / "state")
    assert ours.totals.tokens == truth, "the ledger differs from what the API served"
    # Models ccusage leaves at $0 (Claude Code's default Opus 5.5): the page's price instead.
    for record in served.records:
        price = oracle.page_price(record.get("model", ""), record.get("usage", {}))
        if record.get("id") in ids and price is not None:
            assert reference.by_model.get(record["model"], [0, 0.0])[1] == 0
            reference.cost += price
    assert_conforms(reference, ours.totals, "real Claude Code sessions")


def spool_tokens(spool: Path) -> dict[str, int] | None:
    path = spool / "token-ledger.prom"
    if not path.exists():
        return None
    totals = dict.fromkeys(TOKEN_TYPES, 0)
    for (name, labels), value in samples(path.read_text(encoding="utf-8")).items():
        if name == "agentwatch_tokens_total":
            totals[dict(labels)["type"]] += int(value)
    return totals


def test_the_live_ledger_is_right_within_a_second_of_each_session(
    tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    home = tmp_path / "home"
    project = tmp_path / "work" / "live-project"
    project.mkdir(parents=True)
    prepare_home(home, [project])
    (home / ".claude" / "projects").mkdir(parents=True)
    spool = tmp_path / "spool"
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(home / ".claude"))
    processes.append(
        subprocess.Popen(
            [
                *CLI,
                "sentinel",
                "token-ledger",
                "--spool-dir",
                str(spool),
                "--state-dir",
                str(tmp_path / "state"),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
    )
    served = ServedLog(None)
    delays = []
    with StandIn(parse(SCRIPT), served) as api:
        for prompt, model in [("please list the files here", "claude-sonnet-4-5"),
                              ("opus please", "claude-opus-4-1"),
                              ("a haiku question", "claude-haiku-4-5")]:  # fmt: skip
            done = run_print(home, api.url, project, prompt, "--model", model,
                             "--allowedTools", "Bash")  # fmt: skip
            finished = time.monotonic()
            assert done.returncode == 0, done.stderr[-2000:]
            truth = served_totals(served.records, recorded_ids(home / ".claude"))
            while spool_tokens(spool) != truth and time.monotonic() - finished < 10:
                time.sleep(0.02)
            assert spool_tokens(spool) == truth, "the live ledger never matched the API"
            delays.append(time.monotonic() - finished)
    print(f"seconds from each session's end to exact totals: {delays}")
    assert max(delays) <= 1.0, delays
