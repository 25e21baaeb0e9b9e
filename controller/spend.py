"""What the budget guard counts as spent: the ledger's spend, or the orchestrator's, the larger.

The token ledger prices every message it sees and publishes `agentwatch_spend_usd{period}` in
its spool file, the agent ledger the same for the other agent CLIs, and the otel sentinel for
Claude Code sessions that write no transcript: their sum is what the agents spent (each
session once), so the guard works without any orchestrator. The period is configured
(`controller.budget_period`); `auto` counts the run started with `agentwatch run-budget start`
while one is active, else the local day. When an orchestrator reports its run's spend, the
larger of the two counts (either may miss spend the other sees). A missing or unusable ledger
file leaves the orchestrator's spend alone, and says so once through a gate.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from agentwatch.core import run_budget, spool_readers
from agentwatch.core.bounded import FileRefused
from agentwatch.core.log import FailureGate
from agentwatch.core.spool import SpoolParseError

log = logging.getLogger("agentwatch.controller")

# The spool files that say what was spent, and the family: core/spool_readers.py declares them.
LEDGER, AGENT_LEDGER, OTEL = spool_readers.SPEND_FILES
SPEND_METRIC = spool_readers.SPEND
PERIODS = ("day", "week", "month", "run")
ORCHESTRATOR = "orchestrator"  # the period label when only the orchestrator knows the spend


@dataclass(frozen=True)
class Spend:
    """Spent USD and the period it covers (`orchestrator` when only that source knew)."""

    usd: float
    period: str


def resolve_period(configured: str, run: run_budget.Run) -> str:
    """`auto` is the started run while one is active, else the day."""
    if configured == "auto":
        return "run" if run.active else "day"
    return configured


class SpendReader:
    """Reads the ledger's spool file each cycle; its failures are logged once per episode."""

    def __init__(self, spool_dir: Path, state_dir: Path, period: str):
        self.spool_dir = spool_dir
        self.path = spool_readers.path(spool_dir, LEDGER)
        self.agents_path = spool_readers.path(spool_dir, AGENT_LEDGER)
        self.otel_path = spool_readers.path(spool_dir, OTEL)
        self.state_dir = state_dir
        self.period = period
        self.gate = FailureGate(log, f"ledger spend from {self.path}")
        self.agents_gate = FailureGate(log, f"agent ledger spend from {self.agents_path}")
        self.otel_gate = FailureGate(log, f"no-transcript spend from {self.otel_path}")
        self.run_gate = FailureGate(log, f"run-budget file in {state_dir}")

    def current_period(self) -> str:
        run = run_budget.read(self.state_dir)
        if run.problem is not None:
            self.run_gate.failed(f"{run.problem}; counting no run")
        else:
            self.run_gate.succeeded()
        return resolve_period(self.period, run)

    def _ledger(self, period: str, guarding: bool) -> float | None:
        """Claude Code's spend plus the other agents' (when the agent ledger runs) plus Claude
        Code sessions without a transcript (when the otel sentinel counted any: it writes only
        the sessions the ledger cannot see, so nothing counts twice)."""
        # Without a cap, no ledger file (disabled, not started yet) is no news; the agent
        # ledger's file is missing wherever no other agent CLI is installed.
        claude = self._spend_in(LEDGER, period, self.gate, required=True, guarding=guarding)
        others = self._spend_in(AGENT_LEDGER, period, self.agents_gate, required=False)
        headless = self._spend_in(OTEL, period, self.otel_gate, required=False)
        if claude is None and others is None and headless is None:
            return None
        return (claude or 0.0) + (others or 0.0) + (headless or 0.0)

    def _spend_in(
        self,
        sentinel: str,
        period: str,
        gate: FailureGate,
        *,
        required: bool,
        guarding: bool = False,
    ) -> float | None:
        """The spend one spool file states; `required`: its absence is worth a warning (the
        token ledger's, while a cap is set), not so the agent ledger's."""
        try:
            text = spool_readers.read_text(self.spool_dir, sentinel)
        except FileNotFoundError:
            if required and guarding:
                gate.failed("no such file (is the token ledger running?)")
            return None
        except FileRefused as err:
            gate.failed(f"refused ({err.reason})")
            return None
        except (OSError, UnicodeDecodeError) as err:
            gate.failed(f"unreadable ({type(err).__name__})")
            return None
        try:
            value = spool_readers.spend_usd(text, period)
        except SpoolParseError as err:
            gate.failed(f"not a valid exposition ({err})")
            return None
        if value is None:
            if required:
                gate.failed(f'has no {SPEND_METRIC}{{period="{period}"}}')
            return None
        gate.succeeded()
        return value

    def read(self, orchestrator_usd: float | None, guarding: bool = True) -> Spend | None:
        """The spend this cycle, or None when no source knows it. `guarding`: a cap is set,
        so a missing ledger file is worth a warning."""
        period = self.current_period()
        ledger = self._ledger(period, guarding)
        if ledger is None:
            return Spend(orchestrator_usd, ORCHESTRATOR) if orchestrator_usd is not None else None
        if orchestrator_usd is None:
            return Spend(ledger, period)
        return Spend(max(ledger, orchestrator_usd), period)
