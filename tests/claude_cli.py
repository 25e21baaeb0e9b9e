"""The real Claude Code CLI, run offline against the scripted API stand-in.

Tests that need it fail (never skip) when it is missing: `scripts/setup --test` installs the
pinned version into .tools/claude-code, and AGENTWATCH_CLAUDE points elsewhere if wanted.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

CLAUDE_VERSION = "2.1.328"
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CLAUDE = ROOT / ".tools" / "claude-code" / "node_modules" / ".bin" / "claude"
API_KEY = "sk-ant-api03-standin-0123456789abcdefghij"
INSTALL_HINT = (
    f"npm install --prefix .tools/claude-code @anthropic-ai/claude-code@{CLAUDE_VERSION}"
    " (or scripts/setup --test)"
)


@functools.cache
def claude_command() -> str:
    """Path of the pinned Claude Code binary; the test fails when it is missing."""
    path = os.environ.get("AGENTWATCH_CLAUDE") or str(DEFAULT_CLAUDE)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"Claude Code not found at {path}; install it with:\n    {INSTALL_HINT}")
    found = subprocess.run(
        [path, "--version"], capture_output=True, text=True, timeout=60, check=False
    ).stdout
    if CLAUDE_VERSION not in found:
        pytest.fail(f"{path} is {found.strip()!r}, not {CLAUDE_VERSION}: {INSTALL_HINT}")
    return path


def prepare_home(home: Path, projects: list[Path]) -> None:
    """A HOME where interactive Claude Code starts straight at its prompt: onboarding done,
    the API key approved and each project's folder trusted."""
    home.mkdir(parents=True, exist_ok=True)
    state = {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "projects": {
            str(project): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
            for project in projects
        },
    }
    (home / ".claude.json").write_text(json.dumps(state))


def environment(home: Path, api_url: str) -> dict[str, str]:
    """What keeps Claude Code local and quick: no telemetry, no updates, no retries."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": API_KEY,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


def run_print(
    home: Path, api_url: str, cwd: Path, prompt: str, *extra: str, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """One headless `claude -p` run; returns the finished process."""
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [claude_command(), "-p", prompt, *extra],
        cwd=cwd,
        env=environment(home, api_url),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def recorded_ids(config_dir: Path) -> set[str]:
    """The ids of the assistant messages Claude Code wrote into its transcripts."""
    ids = set()
    for path in config_dir.rglob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if entry.get("type") == "assistant":
                ids.add(entry["message"]["id"])
    return ids


def served_totals(records: list[dict[str, Any]], ids: set[str]) -> dict[str, int]:
    totals = dict.fromkeys(("input", "output", "cache_read", "cache_creation"), 0)
    for record in records:
        if record.get("id") in ids:
            served = record["usage"]
            totals["input"] += served["input_tokens"]
            totals["output"] += served["output_tokens"]
            totals["cache_read"] += served["cache_read_input_tokens"]
            totals["cache_creation"] += served["cache_creation_input_tokens"]
    return totals
