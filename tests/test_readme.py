"""The README's figures are the real ones: the number of alerts in rules/, the sentinels it
lists, the number of tests. (What `agentwatch up` prints is compared with the README by the
stack test, which runs it.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentwatch.sentinels import registry

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def _number(text: str) -> int:
    return NUMBERS[text] if text in NUMBERS else int(text.replace(",", ""))


def alert_rules() -> list[str]:
    names = []
    for path in sorted((ROOT / "rules").glob("*.rules.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            names += [rule["alert"] for rule in group["rules"] if "alert" in rule]
    return names


def test_the_alert_count_is_the_number_of_alert_rules() -> None:
    said = re.findall(r"\*\*Alerts\*\*: ([\d,]+) alerts in `rules/\*\.rules\.yml`", README)
    assert said and [_number(n) for n in said] == [len(alert_rules())]


def test_the_sentinel_count_and_table_are_the_registry() -> None:
    names = list(registry.sentinels())
    counts = re.findall(r"\bthe (\w+) sentinels\b", README)
    assert counts and {_number(word) for word in counts} == {len(names)}, counts
    section = README.split("## The sentinels", 1)[1].split("\n## ", 1)[0]
    assert sorted(re.findall(r"^\| `([a-z-]+)` \| ", section, re.M)) == sorted(names)


@pytest.mark.slow
def test_the_test_count_is_what_pytest_collects() -> None:
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    found = re.search(r"^(\d+) tests collected", collected.stdout, re.M)
    assert found, collected.stdout[-2000:]
    said = re.findall(r"— ([\d,]+) tests in about", README)
    assert said and [_number(n) for n in said] == [int(found.group(1))]
