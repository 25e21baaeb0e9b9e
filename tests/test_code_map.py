"""docs/ARCHITECTURE.md's code map names every module of the flat folders and every sentinel
package, so a newcomer (or a code-map tool) reading it finds each file's job; `core/listen.py`
was once left out without anyone noticing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
# Folders whose code-map row names each module (the sentinels' row names packages instead).
FLAT = ("core", "exporter", "controller", "cli")


def code_map(text: str) -> str:
    """The rows of the `## Code map` table."""
    section = text.split("## Code map", 1)[1]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


def unnamed(table: str, root: Path = ROOT) -> list[str]:
    """Modules and sentinel packages the table does not name (in backticks)."""
    named = set(re.findall(r"`([^`]+)`", table))
    missing = [
        f"{folder}/{path.name}"
        for folder in FLAT
        for path in sorted((root / folder).glob("*.py"))
        if path.name != "__init__.py" and path.name not in named
    ]
    missing += [
        f"sentinels/{path.name}/"
        for path in sorted((root / "sentinels").iterdir())
        if (path / "__init__.py").is_file() and f"{path.name}/" not in named
    ]
    return missing


def test_the_code_map_names_every_module() -> None:
    assert unnamed(code_map(ARCHITECTURE.read_text(encoding="utf-8"))) == []


def test_the_check_sees_a_module_left_out() -> None:
    table = code_map(ARCHITECTURE.read_text(encoding="utf-8"))
    assert unnamed(table.replace("`listen.py`", "listen")) == ["core/listen.py"]
    assert unnamed(table.replace("`otel/`", "otel")) == ["sentinels/otel/"]
