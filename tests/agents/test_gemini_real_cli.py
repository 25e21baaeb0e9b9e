"""The real Gemini CLI, offline against the scripted stand-in, then our reader on what it
wrote: the same totals as ccusage, the same tokens the stand-in served, stable keys.

Two headless prompts in a temp HOME: the first makes the model call a tool (two API
responses, the first written twice, with and without its tool calls), the second resumes
the session (`--resume latest`), so the same session file grows between reads.

Every run first starts a fresh chat recording under its session id (GeminiClient.initialize
-> startChat), in `chats/session-<the minute it starts>-<id8>.jsonl`, and a resumed one then
switches to the session's file (resumeChat). So when the resumed run starts in a later minute
than the first (more likely the slower the machine), a second file of the same session is
left with a header and the session context but no response; in the same minute those lines
land in the session's own file.

`python -m tests.agents.test_gemini_real_cli --capture DIR` runs the same script and copies
what the CLI wrote into DIR (how tests/fixtures/agents/gemini was made).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from agentwatch.sentinels.agent_ledger import gemini

from .gemini_api import GeminiStandIn, Reply
from .gemini_cli import ccusage_daily, prepare_home, run_prompt

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

SCRIPT = (
    Reply(text="", thought="Listing the folder first.",
          function_call={"name": "list_directory", "args": {"dir_path": "."}},
          usage={"promptTokenCount": 5120, "candidatesTokenCount": 31,
                 "cachedContentTokenCount": 4096, "thoughtsTokenCount": 17}),
    Reply(text="The folder holds notes.txt.",
          usage={"promptTokenCount": 5302, "candidatesTokenCount": 12,
                 "cachedContentTokenCount": 5120, "thoughtsTokenCount": 9}),
    Reply(text="Still just notes.txt.",
          usage={"promptTokenCount": 5411, "candidatesTokenCount": 8,
                 "toolUsePromptTokenCount": 3}),
)  # fmt: skip


def served_totals(served: list[dict[str, Any]]) -> dict[str, int]:
    """What the stand-in sent, in the ledger's classes (the API's cached is inside prompt)."""
    totals = dict.fromkeys(("input", "output", "cache_read"), 0)
    for entry in served:
        usage = entry["usage"]
        cached = usage.get("cachedContentTokenCount", 0)
        totals["input"] += usage.get("promptTokenCount", 0) - cached
        totals["input"] += usage.get("toolUsePromptTokenCount", 0)
        totals["output"] += usage.get("candidatesTokenCount", 0)
        totals["output"] += usage.get("thoughtsTokenCount", 0)
        totals["cache_read"] += cached
    return totals


def run_script(home: Path, project: Path) -> GeminiStandIn:
    """Both prompts against one stand-in; returns it (its served log) once done."""
    prepare_home(home)
    project.mkdir(parents=True, exist_ok=True)
    (project / "notes.txt").write_text("scripted\n")
    with GeminiStandIn(list(SCRIPT)) as api:
        first = run_prompt(home, api.url, project, "What is in this folder?")
        assert first.returncode == 0, first.stderr[-2000:]
        assert "notes.txt" in first.stdout
        api.first_run_served = len(api.chat_served())  # type: ignore[attr-defined]
        second = run_prompt(home, api.url, project, "And now?", "--resume", "latest")
        assert second.returncode == 0, second.stderr[-2000:]
    return api


def _header(path: Path) -> dict[str, Any]:
    header: dict[str, Any] = json.loads(path.read_text().splitlines()[0])
    return header


def _read(data_dir: Path) -> list[gemini.AgentUsage]:
    roots = gemini.roots({gemini.DATA_DIR_ENV: str(data_dir)}, Path("/nonexistent"))
    return gemini.read_files(path for root in roots for path in gemini.files(root)).entries


def test_real_cli_files_read_as_ccusage_reads_them(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "work" / "scripted-project"
    prepare_home(home)
    project.mkdir(parents=True)
    (project / "notes.txt").write_text("scripted\n")
    data_dir = home / ".gemini" / "tmp"
    with GeminiStandIn(list(SCRIPT)) as api:
        first = run_prompt(home, api.url, project, "What is in this folder?")
        assert first.returncode == 0, first.stderr[-2000:]
        early = {entry.key: entry for entry in _read(data_dir)}
        second = run_prompt(home, api.url, project, "And now?", "--resume", "latest")
        assert second.returncode == 0, second.stderr[-2000:]
    sessions = sorted(data_dir.rglob("session-*.jsonl"))
    answered = [path for path in sessions if '"type":"gemini"' in path.read_text()]
    assert len(answered) == 1, sessions  # the resume appended to the first run's file
    for started in set(sessions) - set(answered):  # the resumed run's fresh start (doc)
        assert started.name[-14:] == answered[0].name[-14:] and started.name > answered[0].name
        assert _header(started)["sessionId"] == _header(answered[0])["sessionId"]
    assert len(sessions) <= 2, sessions
    entries = _read(data_dir)
    chat = api.chat_served()
    assert len(chat) == len(SCRIPT) and len(entries) == len(chat)
    assert len(early) == 2 and set(early) <= {entry.key for entry in entries}
    ours = {kind: sum(getattr(entry, kind) for entry in entries) for kind in served_totals(chat)}
    assert ours == served_totals(chat)
    assert {entry.project for entry in entries} == {"scripted-project"}
    assert {entry.model for entry in entries} == {"gemini-2.5-flash"}

    report = ccusage_daily([data_dir], home)["totals"]
    known = report["inputTokens"] + report["cacheReadTokens"] + report["cacheCreationTokens"]
    assert (report["inputTokens"], report["totalTokens"] - known, report["cacheReadTokens"]) == (
        ours["input"], ours["output"], ours["cache_read"],
    )  # fmt: skip
    cost = sum(gemini.price(entry) or 0.0 for entry in entries)
    assert abs(cost - report["totalCost"]) <= 1e-6 * report["totalCost"]


def capture(destination: Path) -> None:
    """Run the script in a temp HOME and keep what the CLI wrote under ~/.gemini/tmp."""
    with tempfile.TemporaryDirectory(prefix="gemini-capture-") as scratch:
        home, project = Path(scratch) / "home", Path(scratch) / "scripted-project"
        run_script(home, project)
        if destination.exists():
            shutil.rmtree(destination)
        shutil.copytree(home / ".gemini" / "tmp", destination / "tmp")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--capture", type=Path, required=True)
    capture(parser.parse_args().capture)
    sys.exit(0)
