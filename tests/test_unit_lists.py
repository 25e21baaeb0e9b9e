"""Lists of sentinel units written by hand are kept whole against sentinels/registry.py: the
sentinel unit template's comment and docs/install.md's enable and disable commands (following an
incomplete one leaves units running, or never started)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentwatch.cli import assets
from agentwatch.cli.install import sentinel_unit
from agentwatch.sentinels import registry

INSTALL_PAGE = Path(__file__).resolve().parents[1] / "docs" / "install.md"


def test_the_sentinel_template_names_every_loop_sentinel() -> None:
    text = (assets.systemd_dir() / "agentwatch-sentinel@.service").read_text()
    comment = " ".join(line for line in text.splitlines() if line.startswith("#   "))
    named = set(re.findall(r"@([a-z-]+)", comment))
    loops = {name for name, item in registry.sentinels().items() if item.schedule == "loop"}
    assert named == loops


def _command(verb: str) -> str:
    """docs/install.md's `systemctl --user VERB --now agentwatch-exporter.service …` command."""
    text = INSTALL_PAGE.read_text(encoding="utf-8")
    found = re.search(rf"systemctl --user {verb} --now agentwatch-exporter\.service(.*?)\n(?!    )",
                      text, re.S)  # fmt: skip
    assert found, verb
    return found.group(1)


@pytest.mark.parametrize("verb", ["enable", "disable"])
def test_the_install_page_commands_name_every_sentinels_unit(verb: str) -> None:
    command = _command(verb)
    missing = [sentinel_unit(name) for name in registry.sentinels()
               if sentinel_unit(name) not in command]  # fmt: skip
    assert missing == []
