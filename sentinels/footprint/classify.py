"""Signatures and the classifier: which kind of agent-related process a process is.

The list is data (the shipped `signatures.json`, or a user file that replaces it) so a new
agent or MCP launcher needs no code change. Order matters: the first matching signature wins,
and the kind `ignore` stops the search without counting, which is how tools that merely
mention a name (grep, less, vim …) are kept out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentwatch.core import bounded
from agentwatch.core.sanitize import preview

# Beside this module in the installed package (not importlib.resources: 1 MiB of private
# memory in the resident sentinel for reading one file).
SHIPPED = Path(__file__).with_name("signatures.json")

IGNORE = "ignore"
_KIND = re.compile(r"^[a-z][a-z0-9_]*$")
_REGEX_FIELDS = ("comm", "exe", "argv0", "cmdline", "not_cmdline")
_KNOWN_FIELDS = {"id", "kind", "why", "all_of", "any_of", *_REGEX_FIELDS}


class SignatureError(ValueError):
    """The signature file is unusable; the message names the signature and field."""


@dataclass(frozen=True)
class Process:
    """What the classifier sees of a process: all read fresh from /proc at scan time."""

    comm: str
    exe: str
    cmdline: str  # the arguments joined by single spaces

    @property
    def argv0(self) -> str:
        return self.cmdline.split(" ", 1)[0]


@dataclass(frozen=True)
class Signature:
    """One rule; every field that is set must match (an AND), unset fields match anything."""

    id: str
    kind: str
    comm: re.Pattern[str] | None = None
    exe: re.Pattern[str] | None = None
    argv0: re.Pattern[str] | None = None
    cmdline: re.Pattern[str] | None = None
    not_cmdline: re.Pattern[str] | None = None
    all_of: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()  # a cheap pre-filter that spares a costly cmdline regex

    def matches(self, process: Process) -> bool:
        if self.comm is not None and self.comm.fullmatch(process.comm) is None:
            return False
        if self.exe is not None and self.exe.search(process.exe) is None:
            return False
        if self.argv0 is not None and self.argv0.search(process.argv0) is None:
            return False
        if self.all_of or self.any_of:
            lowered = process.cmdline.lower()
            if not all(part in lowered for part in self.all_of):
                return False
            if self.any_of and not any(part in lowered for part in self.any_of):
                return False
        if self.cmdline is not None and self.cmdline.search(process.cmdline) is None:
            return False
        return self.not_cmdline is None or self.not_cmdline.search(process.cmdline) is None

    @classmethod
    def parse(cls, raw: Any, index: int) -> Signature:
        if not isinstance(raw, dict):
            raise SignatureError(f"signature #{index}: expected an object")
        name = str(raw.get("id") or f"#{index}")
        shown = preview(name)  # messages quote an id short and escaped: the file is anyone's
        unknown = set(raw) - _KNOWN_FIELDS
        if unknown:
            fields = preview(", ".join(sorted(map(str, unknown))))
            raise SignatureError(f"signature {shown}: unknown field(s) {fields}")
        kind = raw.get("kind")
        if not isinstance(kind, str) or not _KIND.match(kind):
            raise SignatureError(f"signature {shown}: kind must match {_KIND.pattern}")
        compiled: dict[str, re.Pattern[str]] = {}
        for field in _REGEX_FIELDS:
            if field in raw:
                if not isinstance(raw[field], str):
                    raise SignatureError(f"signature {shown}: {field} must be a string")
                try:
                    compiled[field] = re.compile(raw[field])
                except re.error as err:
                    raise SignatureError(f"signature {shown}: {field}: {err}") from err
        substrings: dict[str, tuple[str, ...]] = {}
        for field in ("all_of", "any_of"):
            value = raw.get(field, [])
            if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
                raise SignatureError(
                    f"signature {shown}: {field} must be a list of non-empty strings"
                )
            substrings[field] = tuple(x.lower() for x in value)
        if not compiled.keys() - {"not_cmdline"} and not any(substrings.values()):
            raise SignatureError(f"signature {shown}: needs at least one positive matcher")
        matchers: dict[str, Any] = {**substrings, **compiled}
        return cls(id=name, kind=kind, **matchers)


class Classifier:
    """First-match classification over an ordered signature list."""

    def __init__(self, signatures: Sequence[Signature], kinds: Sequence[str] = ()):
        self.signatures = tuple(signatures)
        # Every kind named by a signature (or listed in `kinds`, which sets the order) is
        # exported, 0 when absent: a fixed label set, whatever comes and goes.
        named = [*kinds, *(signature.kind for signature in self.signatures)]
        self.kinds: tuple[str, ...] = tuple(k for k in dict.fromkeys(named) if k != IGNORE)

    def signature_for(self, process: Process) -> Signature | None:
        for signature in self.signatures:
            if signature.matches(process):
                return signature
        return None

    def classify(self, process: Process) -> str | None:
        """The kind, or None when no signature matches or the match is `ignore`."""
        signature = self.signature_for(process)
        if signature is None or signature.kind == IGNORE:
            return None
        return signature.kind


def parse_kinds(data: Any) -> list[str]:
    """The optional `kinds` list of a signature file: export order, and kinds always exported."""
    kinds = data.get("kinds", []) if isinstance(data, dict) else []
    if not isinstance(kinds, list) or not all(isinstance(k, str) and _KIND.match(k) for k in kinds):
        raise SignatureError(f"kinds must be a list of names matching {_KIND.pattern}")
    return kinds


def parse_signatures(data: Any) -> list[Signature]:
    """A list of signatures, or an object whose `signatures` key holds that list."""
    if isinstance(data, dict):
        data = data.get("signatures")
    if not isinstance(data, list) or not data:
        raise SignatureError("expected a non-empty list of signatures")
    signatures = [Signature.parse(raw, index) for index, raw in enumerate(data)]
    ids = [s.id for s in signatures]
    duplicates = sorted({x for x in ids if ids.count(x) > 1})
    if duplicates:
        raise SignatureError(f"duplicate signature id(s): {preview(', '.join(duplicates))}")
    return signatures


def load(path: Path | None = None) -> Classifier:
    """The classifier from a user file (replacing the shipped list) or the shipped list."""
    if path is not None:
        try:  # a user's file: regular, at most DATA_LIMIT, never quoted in the error
            text = bounded.read_text(path, bounded.DATA_LIMIT)
        except bounded.FileRefused as err:
            raise SignatureError(str(err)) from None
        except OSError as err:
            raise SignatureError(f"{path}: {err.strerror or err}") from None
        except UnicodeDecodeError:
            raise SignatureError(f"{path}: not UTF-8") from None
    else:
        text = SHIPPED.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:  # its message gives a position, never the text
        raise SignatureError(f"{path or 'signatures.json'}: {err}") from None
    except RecursionError:
        raise SignatureError(f"{path or 'signatures.json'}: nested too deep") from None
    return Classifier(parse_signatures(data), parse_kinds(data))
