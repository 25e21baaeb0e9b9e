"""Every sentinel, found by looking: each package under `sentinels/` that declares `SENTINEL`.

The CLI, the config schema, `install`, `up`, `status` and the metrics-doc check all ask here,
so a new sentinel package is picked up everywhere without a list to edit. Packages without
`SENTINEL` (such as `shared`, the host-inspection helpers) are not sentinels.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import agentwatch.sentinels
from agentwatch.core import config as core_config
from agentwatch.core import paths, secretfiles
from agentwatch.sentinels.contract import Context, Sentinel, SentinelError

log = logging.getLogger("agentwatch.sentinels")


def _packages() -> list[str]:
    """The subpackages of `agentwatch.sentinels` (folders with an `__init__.py`). Not
    pkgutil.iter_modules: it imports inspect (with ast and dis, 0.8 MiB in every process)
    for one file-name helper."""
    names = set()
    for folder in agentwatch.sentinels.__path__:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.isidentifier() and os.path.isfile(
                    os.path.join(entry.path, "__init__.py")
                ):
                    names.add(entry.name)
    return sorted(names)


@cache
def sentinels() -> dict[str, Sentinel]:
    """Name -> declaration, in name order."""
    found: dict[str, Sentinel] = {}
    for name in _packages():
        package = importlib.import_module(f"{agentwatch.sentinels.__name__}.{name}")
        declared = getattr(package, "SENTINEL", None)
        if declared is None:
            continue
        if not isinstance(declared, Sentinel) or declared.module != name:
            raise TypeError(
                f"{package.__name__}.SENTINEL must be a Sentinel named like its package "
                f"({name.replace('_', '-')})"
            )
        found[declared.name] = declared
    return dict(sorted(found.items()))


def get(name: str) -> Sentinel:
    return sentinels()[name]


def config_sections() -> dict[str, core_config.Schema]:
    """The `sentinels.<name>` sections of the config schema."""
    return {
        name: core_config.sentinel_section(item.interval, item.keys)
        for name, item in sentinels().items()
    }


def load_config(path: Path | None = None) -> core_config.Config:
    """The config file with every sentinel's section (ConfigError names each problem)."""
    return core_config.load(path, config_sections())


def config_from_mapping(raw: Any, source: Path | None = None) -> core_config.Config:
    return core_config.from_mapping(raw, source, config_sections())


def defaults_as_yaml() -> str:
    return core_config.defaults_as_yaml(config_sections())


def enabled(cfg: core_config.Config) -> list[str]:
    """The sentinels this config runs (and the exporter expects a file from)."""
    return [name for name in sentinels() if cfg.sentinel(name)["enabled"]]


def secret_files(cfg: core_config.Config) -> Iterable[secretfiles.SecretFile]:
    """Every file the config names that holds or may hold a secret, sentinels' included."""
    yield from secretfiles.secret_files(cfg)
    for name, item in sentinels().items():
        if item.secret_files is not None:
            yield from item.secret_files(cfg.sentinel(name))


def run(name: str, cfg: core_config.Config, spool_dir: Path, state_dir: Path, once: bool) -> int:
    """`agentwatch sentinel NAME`: build the sentinel and run its loop (2: cannot start)."""
    from agentwatch.core.loop import Loop

    item = get(name)
    paths.ensure_dir(state_dir)
    paths.ensure_dir(spool_dir, mode=0o755)
    loop = Loop(name, cfg.sentinel(name)["interval"], spool_dir)
    context = Context(cfg, spool_dir, state_dir, once, loop.wake, lambda: loop.stopping, name)
    try:
        work = item.build(context)
    except SentinelError as err:
        log.error("%s: %s", name, err)
        return 2
    loop.stop_on_signals()
    return loop.run(work, once)
