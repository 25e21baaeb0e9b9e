"""Writes the hook-event spool and statusline snapshots exactly as core/claude_events.py says
the writers do (one O_APPEND write per line, rotation by rename, snapshots replaced
atomically), for the claude-sessions tests to read."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from agentwatch.core import claude_events
from agentwatch.core.files import write_atomic


def folder(state_dir: Path) -> Path:
    path = claude_events.events_dir(state_dir)
    path.mkdir(parents=True, exist_ok=True)
    return path


def event(session: str, name: str, when: float | None = None, **fields: Any) -> dict[str, Any]:
    line = {"v": 1, "t": time.time() if when is None else when, "s": session, "e": name}
    line.update(fields)
    return line


def append(state_dir: Path, *events: dict[str, Any]) -> None:
    """Each event as one line in one O_APPEND write, as `agentwatch hook` writes it."""
    path = folder(state_dir) / claude_events.EVENTS
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        for item in events:
            line = json.dumps(item, separators=(",", ":")).encode() + b"\n"
            assert len(line) <= claude_events.MAX_LINE
            os.write(descriptor, line)
    finally:
        os.close(descriptor)


def rotate(state_dir: Path) -> None:
    """What the writer does when events.jsonl passes ROTATE_BYTES (its own code, forced)."""
    claude_events.rotate(folder(state_dir), force=True)


def snapshot(state_dir: Path, session: str, **fields: Any) -> None:
    """A statusline snapshot of the contract's shape, replaced atomically."""
    data = {"v": 1, "t": time.time(), "s": session, **fields}
    write_atomic(folder(state_dir) / claude_events.STATUS / f"{session}.json", json.dumps(data))


def git(repo: Path, *args: str) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.strip()


def head(repo: Path) -> str:
    """The HEAD a writer records: empty when there is no repository or no commit yet."""
    done = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "-q", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else ""
