"""The OpenCode reader's reader of a common message row (sentinels/agent_ledger/_opencodescan.c)."""

from typing import Any

# (input, output, reasoning, read, write, total, modelID, providerID, created, cost, cwd)
_Row = tuple[int, int, int, int, int, int, str, str, int, Any, str | None]

def common(data: bytes, /) -> _Row | None: ...
