"""Regular expressions compiled when first used, not when their module is imported.

A module-level `re.compile` runs in every process that imports the module, used or not: the
label sanitizer's four patterns alone are 1.5 ms, and a short command (`sentinel NAME --once`,
measured against ccusage's whole run, issue 29) imports many modules for one path through
them. `Pattern` compiles on the first call of one of its methods and then holds the compiled
pattern's own bound methods, so a call costs what it did."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

_METHODS = ("match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer")


class Pattern:
    """`re.compile(pattern, flags)`, done on first use."""

    match: Callable[..., re.Match[str] | None]
    fullmatch: Callable[..., re.Match[str] | None]
    search: Callable[..., re.Match[str] | None]
    sub: Callable[..., str]
    subn: Callable[..., tuple[str, int]]
    split: Callable[..., list[Any]]
    findall: Callable[..., list[Any]]
    finditer: Callable[..., Iterator[re.Match[str]]]

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags

    def __getattr__(self, name: str) -> Any:
        if name not in _METHODS:
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self.flags)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)
