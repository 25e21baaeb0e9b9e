"""The idle-error classifier on the real Claude Code TUI.

Every scenario of tests/real_screens.py runs live: an interactive Claude Code 2.1.328 in tmux
on a private socket, driven by the scripted API into a situation (an API error of each kind,
a permission prompt, a finished turn, a retrying spinner, a prompt resubmitted after an error).
Each fresh screen must classify as labelled, through `agentwatch classify-pane` and through the
real sentinel watching the live panes; the screens kept in tests/fixtures/panes/real (made by
the same script) must too, so a classifier change is checked against real screens offline.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentwatch.demo.anthropic_api.server import StandIn
from tests.claude_cli import recorded_ids, served_totals
from tests.conftest import run_cli, samples, token_totals
from tests.real_screens import (
    FIXTURES,
    LABELS,
    SCENARIOS,
    Tmux,
    drive,
    normalized,
    sessions,
)

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

LABELLED = {scenario.name: scenario.state for scenario in SCENARIOS}


@dataclass
class Live:
    tmux: Tmux
    screens: dict[str, str]
    api: StandIn
    home: Path


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    scratch = tmp_path_factory.mktemp("tui")
    with sessions(SCENARIOS, scratch) as (tmux, api):
        screens = {
            name: normalized(screen, api, scratch)
            for name, screen in drive(tmux, SCENARIOS).items()
        }
        yield Live(tmux, screens, api, scratch / "home")


def classified(path: Path) -> str:
    done = run_cli("classify-pane", "--unchanged-for", "60", str(path))
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["state"])


@pytest.mark.parametrize("name", sorted(LABELLED))
def test_a_fresh_real_screen_classifies_as_labelled(live: Live, name: str, tmp_path: Path) -> None:
    capture = tmp_path / f"{name}.txt"
    capture.write_text(live.screens[name], encoding="utf-8")
    assert classified(capture) == LABELLED[name], live.screens[name]


def test_the_live_sentinel_gives_every_session_its_state(live: Live, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"agents: {{tmux_sockets: [{live.tmux.socket}]}}\n"
        "sentinels:\n  idle-error:\n    settle_time: 1\n"
    )
    spool, state = tmp_path / "spool", tmp_path / "state"
    args = ["--config", str(config), "sentinel", "idle-error", "--once"]
    args += ["--spool-dir", str(spool), "--state-dir", str(state)]
    for _ in range(2):  # the second look finds throttles unchanged for settle_time
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr
        time.sleep(1.5)
    exposition = (spool / "idle-error.prom").read_text(encoding="utf-8")
    found = {
        dict(labels)["tmux_session"]: dict(labels)["state"]
        for (name, labels), value in samples(exposition).items()
        if name == "agentwatch_pane_state" and value == 1
    }
    assert found == LABELLED


def test_kept_real_screens_classify_as_labelled() -> None:
    labels = json.loads((FIXTURES / LABELS).read_text())
    assert sorted(labels) == sorted(p.stem for p in FIXTURES.glob("*.txt"))
    assert set(labels) == set(LABELLED), "regenerate: python -m tests.real_screens"
    wrong = {
        name: got
        for name, want in labels.items()
        if (got := classified(FIXTURES / f"{name}.txt")) != want
    }
    assert not wrong


TRACKER = FIXTURES.parent / "tracker"


def test_screens_from_the_public_tracker_classify_as_labelled() -> None:
    """Wordings quoted in Claude Code's issue tracker (each fixture names its source): the
    classes the classifier once missed, from compaction failures to the newer spinner."""
    labels = json.loads((TRACKER / LABELS).read_text())
    assert sorted(labels) == sorted(p.stem for p in TRACKER.glob("*.txt"))
    assert all(label["source"] for label in labels.values())
    wrong = {
        name: got
        for name, label in labels.items()
        if (got := classified(TRACKER / f"{name}.txt")) != label["state"]
    }
    assert not wrong


def test_the_ledger_counts_what_the_interactive_sessions_were_served(
    live: Live, tmp_path: Path
) -> None:
    """Interactive sessions write their transcripts as headless ones do: the ledger's totals
    equal the usage served to every message they recorded."""
    config_dir = live.home / ".claude"
    truth = served_totals(live.api.served.records, recorded_ids(config_dir))
    assert truth["output"] > 0
    done = run_cli("sentinel", "token-ledger", "--once", "--spool-dir", str(tmp_path / "spool"),
                   "--state-dir", str(tmp_path / "state"),
                   env={"CLAUDE_CONFIG_DIR": str(config_dir)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    counted = token_totals((tmp_path / "spool" / "token-ledger.prom").read_text())
    assert {kind: int(counted[kind]) for kind in truth} == truth
