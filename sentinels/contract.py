"""The contract between a sentinel and the rest of agentwatch.

A sentinel is one package under `sentinels/` whose `__init__.py` defines `SENTINEL`, a
`Sentinel`: its name, what it watches, its default interval, its own config keys, the metric
families it writes, and `build`, which turns a `Context` into the work one loop runs
(`agentwatch.core.loop.Work`: one `cycle()`, its `families()`, `close()`). Everything else —
the CLI, the config schema, `install`, `up`, `status`, the metrics-doc check — finds it through
the registry, so adding a sentinel needs no edit anywhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the registry imports every sentinel for `--help`: keep that light
    from agentwatch.core.config import Config, Key
    from agentwatch.core.loop import Work
    from agentwatch.core.secretfiles import SecretFile


class SentinelError(Exception):
    """The sentinel cannot start as configured; the message says why (exit status 2)."""


@dataclass(frozen=True)
class Context:
    """What a sentinel is built from."""

    config: Config
    spool_dir: Path
    state_dir: Path
    once: bool  # one cycle, then exit (`--once`, what a systemd timer runs)
    wake: Callable[[], None]  # call from another thread to run the next cycle at once
    stopping: Callable[[], bool]  # a long cycle checks it to end early on SIGTERM
    name: str  # which sentinel: its section of the config is `settings`

    @property
    def settings(self) -> dict[str, Any]:
        """This sentinel's own config section (defaults filled in)."""
        return self.config.sentinel(self.name)


@dataclass(frozen=True)
class Sentinel:
    """What a sentinel package declares as `SENTINEL`."""

    name: str  # as in `agentwatch sentinel NAME`, the spool file and the `sentinel` label
    summary: str  # one line: what it watches (help texts, docs)
    interval: float  # default seconds between cycles
    metrics: tuple[str, ...]  # the families it writes, as served (counters with `_total`)
    build: Callable[[Context], Work]  # raises SentinelError when it cannot start
    keys: Mapping[str, Key] = field(default_factory=dict)  # besides `enabled` and `interval`
    # "loop": a long-running unit (agentwatch-sentinel@NAME.service); "timer": a oneshot
    # `--once` from agentwatch-NAME.timer (slow, like a git fetch every hour).
    schedule: str = "loop"
    secret_files: Callable[[Mapping[str, Any]], Iterable[SecretFile]] | None = None

    @property
    def module(self) -> str:
        """The package name (`token-ledger` -> `token_ledger`)."""
        return self.name.replace("-", "_")
