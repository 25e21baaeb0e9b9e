"""The agent readers the agent-ledger sentinel counts with, plugged in by one line each.

A reader is a module of this package keeping base.py's contract (`AGENT`, `roots`, `files`,
`read_files`, `price`). Its line says what the ledger must know about it that the contract
does not: whether its `read_files` deduplicates ACROSS files (its module docstring says so),
in which case every changed file of a cycle goes to one call; and which sibling files belong
to a file (a SQLite database's `-wal`), so that a change there counts as a change of the file.
Modules are imported when the sentinel starts, not when the registry lists the sentinels.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:  # the registry imports this for the agents key's default: keep it light
    from agentwatch.sentinels.agent_ledger.base import AgentUsage, ReadResult


class Reader(Protocol):
    """What a reader module provides (see base.py)."""

    AGENT: str

    def roots(self, env: Mapping[str, str], home: Path) -> list[Path]: ...

    def files(self, root: Path) -> list[Path]: ...

    def read_files(self, paths: Iterable[Path]) -> ReadResult: ...

    def price(self, entry: AgentUsage) -> float | None: ...


@dataclass(frozen=True)
class Plug:
    """One reader: its module (a bare name is a module of this package) and how to feed it."""

    module: str
    across_files: bool = False  # its rules look across files: when one changed, all together
    companions: tuple[str, ...] = ()  # suffixes of sibling files that are part of a file
    name: str = ""  # the agent label when it is not the module's name (the reader's AGENT)

    @property
    def agent(self) -> str:
        """The agent label: a reader of this package is named after its agent."""
        return self.name or self.module.rsplit(".", 1)[-1]

    def load(self) -> Reader:
        """The module; its AGENT must be the agent this plug is listed as."""
        name = self.module if "." in self.module else f"{__package__}.{self.module}"
        module: ModuleType = importlib.import_module(name)
        if getattr(module, "AGENT", None) != self.agent:
            raise ValueError(f"reader {name} does not declare AGENT = {self.agent!r}")
        return cast(Reader, module)


# Adding an agent is one line here.
READERS: tuple[Plug, ...] = (
    Plug("gemini"),  # nothing is deduplicated across files (gemini.py)
    Plug("opencode", across_files=True, companions=("-wal",)),  # a database and its WAL
    Plug("codex", across_files=True),  # forks replay their parent's rollout; dedup across
    Plug("pi"),  # a record copied into another file has the same key (pi.py)
    Plug("openclaw"),  # the same: keys are hashes of what ccusage dedups on
    Plug("amp"),  # a thread file is rewritten whole; keys are places in the thread
    Plug("qwen"),  # keys are hashes of what ccusage dedups on
    Plug("kimi"),  # the same (but the model, which config.json sets)
    Plug("droid", across_files=True),  # a session's latest snapshot among its files counts
    Plug("codebuff"),  # a message's key is its session and id; the ledger adds growth
    Plug("kilo", across_files=True, companions=("-wal",)),  # first database's copy of an id
    Plug("goose", companions=("-wal",)),  # a session row's running totals; key: db + session
    Plug("hermes", across_files=True, companions=("-wal",)),  # first database's session row
    Plug("copilot"),  # one file's records outrank each other; nothing across files
)


def plugged() -> dict[str, Plug]:
    """Agent -> its plug, as READERS holds them now (looked up late: tests add fakes)."""
    return {plug.agent: plug for plug in READERS}
