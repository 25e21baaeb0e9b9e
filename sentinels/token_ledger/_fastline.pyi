"""The token ledger's per-line fast path (sentinels/token_ledger/_fastline.c)."""

from collections.abc import Callable, Iterable

Fields = tuple[
    str | None, str | None, str, float, bool, float | None, str | None,
    int, int, int, int, int, bool, bool, int, bool, str | None,
]  # fmt: skip

def scan(line: bytes, /) -> Fields | None: ...
def collect(
    block: bytes, begin: int, stop: int, base: int, out: list[tuple[int, bytes]], /
) -> int: ...
def bloom_add(bits: bytearray, msgs: Iterable[int], /) -> None: ...
def bloom_held(bits: bytearray, msgs: Iterable[int], /) -> list[int]: ...
def find(block: bytes, begin: int, stop: int, /) -> int: ...
def totals(entries: list, groups: int, /) -> tuple[list[list], list[list]] | None: ...
def settle(
    candidates: list[tuple[int, bytes]],
    rules: Callable[[bytes], list[Fields] | str],
    better: Callable[[Fields, Fields], bool],
    rejects: dict[str, int],
    copies: dict[str, int],
    /,
) -> tuple[list[tuple[Fields, int, int, bytes]], float | None, float | None]: ...
