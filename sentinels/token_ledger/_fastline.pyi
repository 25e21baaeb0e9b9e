"""The token ledger's per-line fast path (sentinels/token_ledger/_fastline.c)."""

Fields = tuple[
    str | None, str | None, str, float, bool, float | None, str | None,
    int, int, int, int, int, bool, bool,
]  # fmt: skip

def scan(line: bytes, /) -> Fields | None: ...
def collect(
    block: bytes, begin: int, stop: int, base: int, out: list[tuple[int, bytes]], /
) -> int: ...
