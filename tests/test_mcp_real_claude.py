"""`agentwatch mcp` as the real Claude Code (2.1.328) uses it: `agentwatch install` registers
the server in ~/.claude.json, a headless `claude -p` run starts it, the scripted API asks for
the quota tool, and the tool's answer in the transcript's tool_result is the 5-hour block the
exporter serves — built from a first real run's transcript by the real token ledger."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn
from tests.claude_cli import prepare_home, run_print
from tests.conftest import CLI, free_port, samples

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

LIMIT = 200_000  # the token ledger's block_token_limit: the block's used share is known
SCRIPT = {
    "default": [{"answer": {"text": "Warmed up.", "usage": {"input_tokens": 3000,
                                                            "output_tokens": 400}}}],
    "sessions": [
        {
            "prompt_contains": "how much quota",
            "steps": [
                {"tool_use": {"name": "mcp__agentwatch__quota", "input": {}}},
                {"answer": {"text": "Quota checked."}},
            ],
        }
    ],
}  # fmt: skip


def tool_results(claude_dir: Path) -> list[dict[str, Any]]:
    """Every tool_result block of the user lines of every transcript."""
    found = []
    for path in claude_dir.rglob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            content = (entry.get("message") or {}).get("content")
            if entry.get("type") == "user" and isinstance(content, list):
                found += [part for part in content if part.get("type") == "tool_result"]
    return found


def result_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


def scrape(url: str, deadline: float = 60) -> str:
    """The exporter's /metrics, polled until it answers."""
    end = time.monotonic() + deadline
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                return str(reply.read().decode())
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


def test_real_claude_asks_the_installed_mcp_server_for_the_quota(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "work" / "quota-project"
    spool, state = tmp_path / "spool", tmp_path / "state"
    project.mkdir(parents=True)
    prepare_home(home, [project])
    port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "state_dir": str(state), "spool_dir": str(spool),
        "exporter": {"listen": f"127.0.0.1:{port}"},
        "sentinels": {"token-ledger": {"block_token_limit": LIMIT}},
    }))  # fmt: skip
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "CLAUDE_CONFIG_DIR": "",
    }
    installed = subprocess.run(
        [*CLI, "--config", str(config), "install"],
        env={**_base_env(), **env}, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["agentwatch"]
    assert entry["args"][-3:] == ["--config", str(config), "mcp"], entry
    assert entry["command"] == str(Path(sys.executable).parent / "agentwatch")

    with StandIn(parse(SCRIPT), ServedLog(tmp_path / "served.jsonl")) as api:
        warm = run_print(home, api.url, project, "warm up")
        assert warm.returncode == 0, warm.stderr[-2000:]
        ledger = subprocess.run(
            [*CLI, "--config", str(config), "sentinel", "token-ledger", "--once"],
            env={**_base_env(), **env, "CLAUDE_CONFIG_DIR": str(home / ".claude")},
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert ledger.returncode == 0, ledger.stderr
        done = run_print(
            home, api.url, project, "how much quota is left?",
            "--allowedTools", "mcp__agentwatch__quota", timeout=180,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Quota checked." in done.stdout

    results = tool_results(home / ".claude")
    assert len(results) == 1, results
    assert not results[0].get("is_error"), results[0]
    answer = json.loads(result_text(results[0]))
    block = next(w for w in answer["windows"] if w["window"] == "five_hour_block")

    exporter = subprocess.Popen(
        [*CLI, "--config", str(config), "exporter"],
        env={**_base_env(), **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        served = samples(scrape(f"http://127.0.0.1:{port}/metrics"))
    finally:
        exporter.terminate()
        exporter.wait(timeout=30)
    assert block["source"] == "estimated"
    assert block["tokens"] == served[("agentwatch_block_tokens", ())] == 3400
    limit = served[("agentwatch_block_limit_tokens", (("source", "config"),))]
    assert block["limit_tokens"] == limit == LIMIT and block["limit_source"] == "config"
    assert block["used_ratio"] == round(3400 / LIMIT, 6)
    assert block["resets_at"] == served[("agentwatch_block_end_timestamp_seconds", ())]


def _base_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "CLAUDE_CONFIG_DIR"}
