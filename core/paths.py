"""Where agentwatch keeps things, by the XDG base directory rules; each place overridable."""

from __future__ import annotations

import os
from pathlib import Path

APP = "agentwatch"


def xdg(variable: str, fallback: str) -> Path:
    """An XDG base directory: `$variable` when it is an absolute path (the spec says relative
    values are invalid and must be ignored), else `~/<fallback>`."""
    value = os.environ.get(variable, "")
    return Path(value) if value and os.path.isabs(value) else Path.home() / fallback


def default_config_file() -> Path:
    return xdg("XDG_CONFIG_HOME", ".config") / APP / "config.yaml"


def default_state_dir() -> Path:
    return xdg("XDG_STATE_HOME", ".local/state") / APP


def default_spool_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        return Path(runtime) / APP
    return default_state_dir() / "spool"


def user_unit_dir() -> Path:
    """The folder `systemd --user` reads units from."""
    return xdg("XDG_CONFIG_HOME", ".config") / "systemd" / "user"


def default_unit_dir() -> Path:
    override = os.environ.get("AGENTWATCH_UNIT_DIR")
    return Path(override) if override else user_unit_dir()


def default_data_dir() -> Path:
    override = os.environ.get("AGENTWATCH_PREFIX")
    return Path(override) if override else xdg("XDG_DATA_HOME", ".local/share") / APP


def ensure_dir(path: Path, mode: int = 0o700) -> Path:
    """Create a private directory (state may name projects; keep it to the user)."""
    path.mkdir(parents=True, exist_ok=True, mode=mode)
    return path
