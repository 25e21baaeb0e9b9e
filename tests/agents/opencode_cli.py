"""The real OpenCode CLI, run offline against the scripted stand-in (opencode_api.py).

Tests that need it fail (never skip) when it is missing. Install the pinned version with
the command in INSTALL_HINT; AGENTWATCH_OPENCODE points elsewhere if wanted.

OpenCode is configured through an opencode.json in a temporary XDG_CONFIG_HOME: one custom
provider "standin" (`@ai-sdk/openai-compatible`, bundled in the binary) whose baseURL is the
stand-in, a dummy key, two models (one with prices in the config, so OpenCode states a
cost; one named like a real model, gpt-5, so readers price it from a table), autoupdate and
sharing off. Models, LSP downloads, default plugins and npm installs are disabled by env.
Its stdin is /dev/null: `opencode run` reads its stdin to the end before it starts (a piped
prompt), so one that inherits an open pipe (an agent harness's, a CI runner's) waits there
forever, its log ending at `init`, no session created, nothing asked of the API.

`python -m tests.agents.opencode_cli DIR` captures the fixture sessions into DIR.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.agents.opencode_api import Reply, StandIn

OPENCODE_VERSION = "1.18.33"
REPO = Path(__file__).resolve().parents[2]
DEFAULT_OPENCODE = REPO / ".tools" / "opencode" / "node_modules" / ".bin" / "opencode"
INSTALL_HINT = (
    f"npm install --no-audit --no-fund --prefix .tools/opencode opencode-ai@{OPENCODE_VERSION}"
)
API_KEY = "sk-standin-dummy-0000"
PRICED_MODEL = "standin-coder"  # prices in opencode.json: OpenCode writes a cost
TABLE_MODEL = "gpt-5"  # no prices in the config: cost 0, readers price it from a table
CONFIG_COST = {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}


@functools.cache
def opencode_command() -> str:
    """Path of the pinned OpenCode binary; the test fails when it is missing."""
    path = os.environ.get("AGENTWATCH_OPENCODE") or str(DEFAULT_OPENCODE)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"OpenCode not found at {path}; install it with:\n    {INSTALL_HINT}")
    found = subprocess.run(
        [path, "--version"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=60, check=False,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent"},
    ).stdout  # fmt: skip
    if OPENCODE_VERSION not in found:
        pytest.fail(f"{path} is {found.strip()!r}, not {OPENCODE_VERSION}: {INSTALL_HINT}")
    return path


def data_dir(home: Path) -> Path:
    """Where OpenCode writes its database in this HOME (XDG_DATA_HOME/opencode)."""
    return home / ".local" / "share" / "opencode"


def write_config(home: Path, api_url: str) -> None:
    """opencode.json with the stand-in as the only provider."""
    folder = home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "provider": {"standin": {
            "npm": "@ai-sdk/openai-compatible", "name": "Stand-in",
            "options": {"baseURL": api_url, "apiKey": API_KEY},
            "models": {PRICED_MODEL: {"name": "Stand-in Coder", "cost": CONFIG_COST},
                       TABLE_MODEL: {"name": "GPT-5 via the stand-in"}},
        }},
        "model": f"standin/{PRICED_MODEL}",
        "small_model": f"standin/{PRICED_MODEL}",
    }  # fmt: skip
    (folder / "opencode.json").write_text(json.dumps(config, indent=2))


def environment(home: Path) -> dict[str, str]:
    """What keeps OpenCode local and quick: its own XDG dirs, nothing fetched or installed."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "npm_config_offline": "true",  # the config dir's @opencode-ai/plugin install: no fetch
    }


def run(
    home: Path, cwd: Path, prompt: str, *extra: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """One `opencode run PROMPT` (non-interactive), stdin empty (see the module doc);
    returns the finished process."""
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [opencode_command(), "run", *extra, prompt],
        cwd=cwd, env=environment(home), stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=timeout, check=False,
    )  # fmt: skip


def script(project: Path) -> list[Reply]:
    """The agent turns both sessions get: a tool call (read a file), its answer, then one
    answer on the table-priced model; usage numbers chosen to show every mapping."""
    notes = project / "notes.txt"
    return [
        Reply(tool="read", arguments={"filePath": str(notes)}, prompt_tokens=2000,
              completion_tokens=40, cached_tokens=1500, reasoning_tokens=10),
        Reply("The note says: scripted note.", 2600, 25, 2000, 5),
        Reply("Hello from the stand-in.", 1200, 30, 200, 7),
    ]  # fmt: skip


def run_sessions(home: Path, project: Path, api: StandIn) -> list[subprocess.CompletedProcess[str]]:
    """The two scripted sessions: a tool-using one on the priced model, a plain one on gpt-5."""
    write_config(home, api.url)
    project.mkdir(parents=True, exist_ok=True)
    (project / "notes.txt").write_text("scripted note\n")
    return [
        run(home, project, "Read notes.txt and tell me what it says."),
        run(home, project, "Say hello.", "--model", f"standin/{TABLE_MODEL}"),
    ]


def snapshot(db: Path, destination: Path) -> None:
    """A self-contained copy of a live WAL database (the rows as OpenCode wrote them)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True) as source:
        target = sqlite3.connect(destination)
        source.backup(target)
        target.execute("PRAGMA journal_mode=DELETE")
        target.close()


def capture(destination: Path, scratch: Path) -> None:
    """Run the sessions in a scratch HOME and keep the database they wrote."""
    home, project = scratch / "home", scratch / "project"
    with StandIn(script(project)) as api:
        for done in run_sessions(home, project, api):
            if done.returncode != 0:
                raise SystemExit(f"opencode failed: {done.stderr[-2000:]}")
    snapshot(data_dir(home) / "opencode.db", destination / "opencode.db")


def main(argv: Sequence[str]) -> None:
    """`python -m tests.agents.opencode_cli DIR`: capture the fixture sessions into DIR."""
    import tempfile

    destination = Path(argv[0])
    with tempfile.TemporaryDirectory(prefix="opencode-capture-") as scratch:
        capture(destination, Path(scratch))
    shutil.rmtree(destination / "__pycache__", ignore_errors=True)
    print(f"captured {destination / 'opencode.db'}")


if __name__ == "__main__":
    main(sys.argv[1:])
