"""A fake agent reader for the agent-ledger tests, and the real CLI with it plugged in.

The reader keeps base.py's contract on a trivial format: `*.jsonl` under $FAKE_AGENT_DIR, one
JSON object a line with the AgentUsage fields (`key` names the response; a line that is not
an object with them is rejected as `bad_line`). It dedups across files (a key's last line
wins), so the ledger must pass it all changed files at once. Model `free-*` has no price; a
line may state its own `cost_usd`.

Run as a module it is `agentwatch` with the fake plugged in beside the real readers:
    python -m tests.agents.agent_ledger_fake --config C sentinel agent-ledger --once ...
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from agentwatch.sentinels.agent_ledger.base import AgentUsage, ReadResult

AGENT = "fake"
DIR_ENV = "FAKE_AGENT_DIR"
PLUG_MODULE = "tests.agents.agent_ledger_fake"
FIELDS = ("key", "timestamp", "session", "project", "model", "input", "output", "cache_read",
          "cache_creation")  # fmt: skip


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    folder = Path(env[DIR_ENV]) if DIR_ENV in env else home / ".fake-agent"
    return [folder] if folder.is_dir() else []


def files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.jsonl"))


def read_files(paths: Iterable[Path]) -> ReadResult:
    result = ReadResult()
    by_key: dict[str, AgentUsage] = {}
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            result.reject("unreadable")
            continue
        for line in lines:
            try:
                record = json.loads(line)
                entry = AgentUsage(agent=AGENT, **{name: record[name] for name in FIELDS},
                                   cost_usd=record.get("cost_usd"))  # fmt: skip
            except (ValueError, TypeError, KeyError):
                result.reject("bad_line")
                continue
            by_key[entry.key] = entry
    result.entries = list(by_key.values())
    return result


def price(entry: AgentUsage) -> float | None:
    """$1 per million tokens of any type, except the free-* models (no price)."""
    if entry.model.startswith("free-"):
        return None
    return entry.total / 1_000_000


def line(key: str, timestamp: float, session: str, project: str, model: str,
         tokens: tuple[int, int, int, int], cost_usd: float | None = None) -> str:  # fmt: skip
    """One record of the fake format."""
    record = dict(zip(FIELDS, (key, timestamp, session, project, model, *tokens), strict=True))
    if cost_usd is not None:
        record["cost_usd"] = cost_usd
    return json.dumps(record) + "\n"


def main(argv: list[str]) -> int:
    from agentwatch.cli.main import main as cli
    from agentwatch.sentinels.agent_ledger import readers

    across = os.environ.get("FAKE_AGENT_PER_FILE") != "1"
    readers.READERS = (*readers.READERS, readers.Plug(PLUG_MODULE, across, name=AGENT))
    return cli(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
