"""The real Gemini CLI and the reference reader, run offline for the Gemini ledger tests.

Both fail (never skip) when missing: the tests would prove nothing without them. The CLI is
pinned; install it with the line in INSTALL_HINT, or point AGENTWATCH_GEMINI elsewhere.
ccusage comes from .tools/ccusage (AGENTWATCH_CCUSAGE overrides).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

GEMINI_VERSION = "0.61.0"
CCUSAGE_VERSION = "20.0.24"
ROOT = Path(__file__).resolve().parents[2]
DEFAULT_GEMINI = ROOT / ".tools" / "gemini-cli" / "node_modules" / ".bin" / "gemini"
DEFAULT_CCUSAGE = ROOT / ".tools" / "ccusage" / "node_modules" / ".bin" / "ccusage"
INSTALL_HINT = (
    "npm install --no-audit --no-fund --prefix .tools/gemini-cli "
    f"@google/gemini-cli@{GEMINI_VERSION}"
)
CCUSAGE_HINT = f"npm install --prefix .tools/ccusage ccusage@{CCUSAGE_VERSION}"
API_KEY = "standin-gemini-key-0123456789"
MODEL = "gemini-2.5-flash"
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "telemetry": {"enabled": False},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}


def _checked(path: str, version: str, hint: str, what: str) -> str:
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"{what} not found at {path}; install it with:\n    {hint}", pytrace=False)
    found = subprocess.run(
        [path, "--version"], capture_output=True, text=True, timeout=60, check=False
    ).stdout.strip()
    if version not in found:
        pytest.fail(f"{path} is {found!r}, not {version}: {hint}", pytrace=False)
    return path


@functools.cache
def gemini_command() -> str:
    """Path of the pinned Gemini CLI (AGENTWATCH_GEMINI overrides)."""
    path = os.environ.get("AGENTWATCH_GEMINI") or str(DEFAULT_GEMINI)
    return _checked(path, GEMINI_VERSION, INSTALL_HINT, "Gemini CLI")


@functools.cache
def ccusage_command() -> str:
    """Path of the pinned ccusage, whose rules the Gemini reader follows."""
    path = os.environ.get("AGENTWATCH_CCUSAGE") or str(DEFAULT_CCUSAGE)
    return _checked(path, CCUSAGE_VERSION, CCUSAGE_HINT, "ccusage")


def prepare_home(home: Path) -> None:
    """A HOME where headless Gemini CLI uses an API key and phones nobody."""
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))


def environment(home: Path, api_url: str) -> dict[str, str]:
    """What keeps Gemini CLI local: the stand-in's base URL, a dummy key, no telemetry."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "GEMINI_API_KEY": API_KEY,
        "GOOGLE_GEMINI_BASE_URL": api_url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_TELEMETRY_ENABLED": "false",
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }


def run_prompt(
    home: Path, api_url: str, cwd: Path, prompt: str, *extra: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """One headless `gemini -p` run with a fixed model (so no routing requests). Its stdin
    is empty: Gemini CLI prepends whatever a non-TTY stdin holds to the prompt."""
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [gemini_command(), "-m", MODEL, "-p", prompt, *extra],
        cwd=cwd,
        env=environment(home, api_url),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def ccusage_daily(data_dirs: list[Path], home: Path, timezone: str = "UTC") -> dict[str, Any]:
    """`ccusage gemini daily --json --offline` over these roots."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TZ": timezone,
        "GEMINI_DATA_DIR": ",".join(str(path) for path in data_dirs),
    }
    done = subprocess.run(
        [ccusage_command(), "gemini", "daily", "--json", "--offline", "--timezone", timezone],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not done.stdout.strip():
        pytest.fail(f"ccusage failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report
