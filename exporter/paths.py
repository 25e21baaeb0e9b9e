"""XDG locations of config, state and spool, each overridable."""

from __future__ import annotations

import os
from pathlib import Path

APP = "agentwatch"


def _xdg(variable: str, fallback: str) -> Path:
    value = os.environ.get(variable, "")
    # The XDG spec says relative values are invalid and must be ignored.
    return Path(value) if value and os.path.isabs(value) else Path.home() / fallback


def default_config_file() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config") / APP / "config.yaml"


def default_state_dir() -> Path:
    return _xdg("XDG_STATE_HOME", ".local/state") / APP


def default_spool_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        return Path(runtime) / APP
    return default_state_dir() / "spool"


def ensure_dir(path: Path, mode: int = 0o700) -> Path:
    """Create a private directory (state may name projects; keep it to the user)."""
    path.mkdir(parents=True, exist_ok=True, mode=mode)
    return path
