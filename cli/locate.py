"""Where things are: the one place that decides whether `agentwatch up` (or a ledger sentinel)
runs on a state folder, which config it runs with, and where its sentinels keep their state.

Why one place: `up` writes the config its children read to `<state>/up-config.json` (its
ports may be the user's, not the defaults) and runs its demo's sentinels on `<state>/demo`, so
a command that reads only the user's config and `<state>` talks to the wrong Alertmanager or
finds no ledger. `ack`, `prices`, `report` and `status` ask here instead.

Running is read from the kernel's locks, never from file ages: `up` holds `<state>/up.lock`,
each ledger holds `<database>.lock` (core/single.py, the ledgers' stores), and a lock goes
with its process however that ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from agentwatch.core import config
from agentwatch.sentinels import registry
from agentwatch.sentinels.agent_ledger.store import DATABASE_FILE as AGENT_DATABASE
from agentwatch.sentinels.token_ledger.store import DATABASE_FILE as TOKEN_DATABASE

UP_LOCK = "up.lock"  # cli/up.py holds it for as long as it runs
UP_CONFIG = "up-config.json"  # the derived config every child of `up` reads (JSON: no YAML parser)
DEMO = "demo"  # `up --demo` keeps its sentinels' state here, under the state folder
LEDGER_DATABASES = (TOKEN_DATABASE, AGENT_DATABASE)


def held(lock_file: Path) -> bool:
    """Whether a process holds an exclusive lock on `lock_file`. A shared lock is tried and
    let go at once: it fails only while an exclusive holder lives (a missing file, a FIFO or a
    symlink put in its place read as "not held", and nothing blocks)."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        descriptor = os.open(lock_file, flags)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.close(descriptor)  # closing lets a lock we took go
    return False


def up_running(state_dir: Path) -> bool:
    return held(state_dir / UP_LOCK)


def ledger_running(folder: Path) -> bool:
    """A token or agent ledger runs on this sentinel state folder."""
    return any(held(folder / f"{name}.lock") for name in LEDGER_DATABASES)


def _up_config(state_dir: Path) -> config.Config | None:
    """The config of the `up` that runs on this state folder, if it runs and its file loads."""
    path = state_dir / UP_CONFIG
    if not up_running(state_dir) or not path.is_file():
        return None
    try:
        return registry.load_config(path)
    except (config.ConfigError, OSError):
        return None


def _runs_demo(state_dir: Path, cfg: config.Config) -> bool:
    """Whether `up`'s derived config is the demo's (it points Claude at <state>/demo/claude)."""
    demo = state_dir / DEMO
    return any(Path(folder).parent == demo for folder in cfg.claude_config_dirs or [])


@dataclass(frozen=True)
class Place:
    """What runs on one state folder and where its pieces are."""

    state_dir: Path
    up: bool  # `agentwatch up` runs on it
    config: config.Config  # the running `up`'s config, else the one loaded by the command
    sentinel_state: Path  # where the sentinels keep their databases and run file

    @property
    def demo(self) -> bool:
        return self.sentinel_state == self.state_dir / DEMO

    @property
    def running(self) -> bool:
        """`up` runs, or a ledger does on the sentinels' state (e.g. under systemd)."""
        return self.up or ledger_running(self.sentinel_state)

    def alertmanagers(self) -> list[str]:
        """Where to reach Alertmanager: the running `up`'s own, else the configured ones and
        the stack's configured listener (its default port is not necessarily the stack's)."""
        urls = list(self.config["controller"]["alertmanagers"])
        if not self.up:
            urls.append(f"http://{self.config['stack']['alertmanager_listen']}")
        return list(dict.fromkeys(urls))


def _newest(folders: list[Path], names: tuple[str, ...]) -> Path | None:
    """Of the folders holding one of `names`, the one written last."""
    found = []
    for folder in folders:
        for name in names:
            with contextlib.suppress(OSError):
                found.append(((folder / name).stat().st_mtime, folder))
    return max(found)[1] if found else None


def find(cfg: config.Config, state_dir: Path) -> Place:
    """The place of `state_dir`: a running `up` decides (its config, its demo folder); else a
    running ledger's folder; else the folder whose ledger database was written last (the
    demo's when the last run was a demo); else `state_dir` itself."""
    running = _up_config(state_dir)
    if running is not None:
        sentinels = state_dir / DEMO if _runs_demo(state_dir, running) else state_dir
        return Place(state_dir, True, running, sentinels)
    folders = [state_dir, state_dir / DEMO]
    live = [folder for folder in folders if ledger_running(folder)]
    chosen = live[0] if live else _newest(folders, LEDGER_DATABASES) or state_dir
    return Place(state_dir, up_running(state_dir), cfg, chosen)
