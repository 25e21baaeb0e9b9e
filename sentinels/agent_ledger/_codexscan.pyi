"""The Codex reader's line finder (sentinels/agent_ledger/_codexscan.c)."""

def collect(data: bytes, stop: int, base: int, /) -> list[tuple[int, bytes]]: ...

_Numbers = tuple[int, int, int, int, int, int]

_Count = tuple[str, _Numbers, _Numbers, int | None]
_Turn = tuple[str | None, str | None]

def plain(line: bytes, /) -> _Count | _Turn | None: ...
