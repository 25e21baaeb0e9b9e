"""What the README says about privacy and prices agrees with what the code writes: the hook
stores a tool input's hash salted per install, and most price entries' pages show no date."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentwatch.core import claude_events

ROOT = Path(__file__).resolve().parents[1]
README = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())


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


def test_the_readme_does_not_claim_a_date_the_pages_do_not_show() -> None:
    dates = _page_dates()
    undated = [value for value in dates if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value)]
    assert dates and undated, "every entry has its page's date now: the README may say so"
    assert "that page's date" not in README
    assert "most stored pages show none" in README


def test_the_readme_says_the_hook_keeps_a_salted_input_hash() -> None:
    never = README.split("Never recorded:", 1)[1][:600]
    assert claude_events.INPUT_HASH in never and "salted with a secret of this install" in never
    assert f"claude-events/{claude_events.SALT}" in never
