"""What the docs say about privacy and prices agrees with what the code writes: the hook
stores a tool input's hash salted per install (docs/install.md), and most price entries' pages
show no date (docs/counting.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentwatch.core import claude_events

ROOT = Path(__file__).resolve().parents[1]
COUNTING = " ".join((ROOT / "docs/counting.md").read_text(encoding="utf-8").split())
INSTALL = " ".join((ROOT / "docs/install.md").read_text(encoding="utf-8").split())


def _page_dates() -> list[str]:
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if "page_date" in value:
                found.append(str(value["page_date"]))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads((ROOT / "sentinels/token_ledger/pricing.json").read_text(encoding="utf-8")))
    return found


def test_the_docs_do_not_claim_a_date_the_pages_do_not_show() -> None:
    dates = _page_dates()
    undated = [value for value in dates if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value)]
    assert dates and undated, "every entry has its page's date now: the docs may say so"
    assert "that page's date" not in COUNTING
    assert "most stored pages show none" in COUNTING


def test_the_install_page_says_the_hook_keeps_a_salted_input_hash() -> None:
    never = INSTALL.split("Never recorded:", 1)[1][:600]
    assert claude_events.INPUT_HASH in never and "salted with a secret of this install" in never
    assert f"claude-events/{claude_events.SALT}" in never
