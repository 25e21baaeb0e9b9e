"""The Codex reader's fast paths in C (sentinels/agent_ledger/_codexscan.c)."""

from typing import Any

def collect(data: bytes, stop: int, base: int, /) -> list[tuple[int, bytes]]: ...

_Numbers = tuple[int, int, int, int, int, int]

_Count = tuple[str, _Numbers, _Numbers, int | None]
_Turn = tuple[str | None, str | None]

def plain(line: bytes, /) -> _Count | _Turn | None: ...
def sha256(data: bytes, /) -> bytes: ...
def key(event: tuple[object, ...], millis: int, /) -> str: ...
def record_class(cls: type, names: tuple[str, ...], /) -> bool: ...
def record(*values: object) -> Any: ...
def advance(
    data: bytes,
    stop: int,
    base: int,
    pos: int,
    state: Any,
    usage_type: type,
    event_type: type,
    fallback: str,
    auto_review: str,
    /,
) -> tuple[int, int, bytes] | None: ...
def assemble(
    events: list[Any],
    start: int,
    kept: dict[str, list[Any]],
    agent: str,
    session: str,
    project: str,
    default_fast: bool,
    /,
) -> int | None: ...
def meta(line: bytes, /) -> tuple[str, str, int | None, str] | None: ...
def avx2(use: bool, /) -> bool: ...
def sha_ni(use: bool, /) -> bool: ...
