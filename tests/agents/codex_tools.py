"""The real programs the Codex reader is checked against: ccusage 20.0.24 (the reference
reader) and Codex CLI (the writer of the files), both installed from npm into .tools.

Both are required, never skipped: a conformance test that passes without its reference
proves nothing. AGENTWATCH_CCUSAGE / AGENTWATCH_CODEX point elsewhere when wanted.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentwatch.sentinels.agent_ledger import codex
from agentwatch.sentinels.agent_ledger.base import TOKEN_TYPES, daily_totals

ROOT = Path(__file__).resolve().parents[2]
CCUSAGE_VERSION = "20.0.24"
CODEX_VERSION = "0.171.0"
DEFAULT_CCUSAGE = ROOT / ".tools" / "ccusage" / "node_modules" / ".bin" / "ccusage"
DEFAULT_CODEX = ROOT / ".tools" / "codex" / "node_modules" / ".bin" / "codex"
CCUSAGE_HINT = f"npm install --prefix .tools/ccusage ccusage@{CCUSAGE_VERSION}"
CODEX_HINT = f"npm install --no-audit --no-fund --prefix .tools/codex @openai/codex@{CODEX_VERSION}"
API_KEY = "sk-standin-codex-0123456789abcdef"  # a dummy: the stand-in checks nothing


def _tool(env_name: str, default: Path, version: str, hint: str) -> str:
    """Path of a pinned tool; the test fails, naming the install command, when it is missing."""
    path = os.environ.get(env_name) or str(default)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"{path} not found ({env_name}); install it with:\n    {hint}", pytrace=False)
    found = subprocess.run(
        [path, "--version"], capture_output=True, text=True, timeout=60, check=False
    ).stdout.strip()
    if version not in found:
        pytest.fail(f"{path} is {found!r}, not {version}: {hint}", pytrace=False)
    return path


@functools.cache
def ccusage_command() -> str:
    return _tool("AGENTWATCH_CCUSAGE", DEFAULT_CCUSAGE, CCUSAGE_VERSION, CCUSAGE_HINT)


@functools.cache
def codex_command() -> str:
    return _tool("AGENTWATCH_CODEX", DEFAULT_CODEX, CODEX_VERSION, CODEX_HINT)


def ccusage_env(codex_home: str, scratch: Path) -> dict[str, str]:
    """Only what points ccusage at the corpus: CODEX_HOME, and a HOME with nothing in it."""
    scratch.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(scratch),
        "CODEX_HOME": codex_home,
    }


def ccusage_run(codex_home: str, scratch: Path, timezone: str) -> subprocess.CompletedProcess[str]:
    command = [ccusage_command(), "codex", "daily", "--json", "--offline", "-z", timezone]
    return subprocess.run(
        command,
        env=ccusage_env(codex_home, scratch),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def ccusage_daily(codex_home: str, scratch: Path, timezone: str) -> dict[str, dict[str, float]]:
    """`ccusage codex daily --json --offline` per day, in the ledger's four types and cost."""
    done = ccusage_run(codex_home, scratch, timezone)
    assert done.returncode == 0, done.stderr[-2000:]
    return report_days(done.stdout)


def report_days(stdout: str) -> dict[str, dict[str, float]]:
    """The `daily` rows of a ccusage JSON report, keyed by day."""
    report: dict[str, Any] = json.loads(stdout or "{}")
    days = {}
    for row in report.get("daily", []):
        days[row["date"]] = {
            "input": row["inputTokens"],
            "output": row["outputTokens"],
            "cache_read": row["cacheReadTokens"],
            "cache_creation": row["cacheCreationTokens"],
            "cost_usd": row["costUSD"],
        }
    return days


def home_files(codex_home: str) -> list[Path]:
    """Every rollout ccusage would read under CODEX_HOME, in its order."""
    homes = codex.roots({"CODEX_HOME": codex_home}, Path("/nonexistent"))
    return [path for root in homes for path in codex.files(root)]


def our_daily(codex_home: str, timezone: str) -> dict[str, dict[str, float]]:
    result = codex.read_files(home_files(codex_home))
    return daily_totals(result.entries, timezone, codex.price)


def differences(
    ours: dict[str, dict[str, float]], theirs: dict[str, dict[str, float]]
) -> list[str]:
    """Where two per-day reports disagree: tokens exactly, cost within 1e-6 relative."""
    problems = []
    for day in sorted(set(ours) | set(theirs)):
        mine, ref = ours.get(day), theirs.get(day)
        if mine is None or ref is None:
            problems.append(f"{day}: only in {'ccusage' if mine is None else 'ours'}")
            continue
        for kind in TOKEN_TYPES:
            if mine[kind] != ref[kind]:
                problems.append(f"{day} {kind}: ours {mine[kind]} ccusage {ref[kind]}")
        cost, ref_cost = mine["cost_usd"], ref["cost_usd"]
        if abs(cost - ref_cost) > 1e-6 * max(abs(ref_cost), 1e-9):
            problems.append(f"{day} cost: ours {cost!r} ccusage {ref_cost!r}")
    return problems


# --- the real Codex CLI, offline ------------------------------------------------------------


def prepare_home(codex_home: Path, api_url: str, model: str = "gpt-5") -> None:
    """A CODEX_HOME whose config.toml sends every request to the stand-in: a custom model
    provider with its base_url, no retries, no update check, no analytics."""
    codex_home.mkdir(parents=True, exist_ok=True)
    config = f"""model = "{model}"
model_provider = "standin"
check_for_update_on_startup = false

[model_providers.standin]
name = "standin"
base_url = "{api_url}"
env_key = "STANDIN_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
"""
    (codex_home / "config.toml").write_text(config, encoding="utf-8")


def environment(home: Path, codex_home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "STANDIN_API_KEY": API_KEY,
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
    }


def run_exec(
    home: Path, codex_home: Path, cwd: Path, prompt: str, *extra: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """One headless `codex exec` (or `codex exec resume --last` with extra=("resume", "--last"))."""
    cwd.mkdir(parents=True, exist_ok=True)
    command = [codex_command(), "exec", *extra, "--skip-git-repo-check", prompt]
    return subprocess.run(
        command,
        cwd=cwd,
        env=environment(home, codex_home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
