"""Resolve the run's budget cap, exported so budget rules compare spend against it.

Precedence (first source that gives a usable value wins):
1. the environment variable AGENTWATCH_MAX_COST_USD — blank is ignored; a value that is not a
   finite number is logged as a warning and falls through (a typo must never silently disable
   the guard); zero or negative means "unlimited" (an explicit choice of whoever set it);
2. the orchestrator's run config, a JSON file with `per_run_max_cost_usd` (Bernstein writes
   `.sdd/runtime/run_config.json`) — a positive number wins; zero, negative, null or missing
   mean "not set here" and fall through, so an orchestrator that writes 0 for "no flag given"
   does not erase the user's cap; an unreadable file or a non-number warns and falls through;
3. the config file's `controller.budget_usd` when positive;
4. 0 = unlimited (source `default`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentwatch.core.bounded import DATA_LIMIT, FileRefused, read_text
from agentwatch.core.log import FailureGate

ENV_VAR = "AGENTWATCH_MAX_COST_USD"
RUN_CONFIG_KEY = "per_run_max_cost_usd"
SOURCES = ("env", "run_config", "config", "default")

log = logging.getLogger("agentwatch.controller")


class BudgetResolver:
    """Resolves the cap each cycle; warnings go through gates, not one line per cycle."""

    def __init__(self, run_config_file: Path | None, config_budget: float):
        self.run_config_file = run_config_file
        self.config_budget = config_budget
        self.env_gate = FailureGate(log, f"budget from ${ENV_VAR}")
        self.file_gate = FailureGate(log, f"budget from run config {run_config_file}")

    def _from_env(self, env: Mapping[str, str]) -> float | None:
        text = env.get(ENV_VAR, "").strip()
        if not text:
            self.env_gate.succeeded()
            return None
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            self.env_gate.failed(f"{text[:40]!r} is not a number; ignored")
            return None
        self.env_gate.succeeded()
        return max(value, 0.0)

    def _from_run_config(self) -> float | None:
        if self.run_config_file is None:
            return None
        try:
            raw: Any = json.loads(read_text(self.run_config_file, DATA_LIMIT))
        except FileNotFoundError:
            self.file_gate.succeeded()
            return None
        except FileRefused as err:  # a FIFO, a device or a huge file: never read
            self.file_gate.failed(f"refused ({err.reason}); ignored")
            return None
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
            self.file_gate.failed(f"unreadable or not JSON ({type(err).__name__}); ignored")
            return None
        value = raw.get(RUN_CONFIG_KEY) if isinstance(raw, dict) else None
        if value is None:
            self.file_gate.succeeded()
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            self.file_gate.failed(f"{RUN_CONFIG_KEY} is not a number; ignored")
            return None
        self.file_gate.succeeded()
        return float(value) if value > 0 else None

    def resolve(self, env: Mapping[str, str]) -> tuple[float, str]:
        """(cap in USD, source); 0 means unlimited."""
        from_env = self._from_env(env)
        if from_env is not None:
            return from_env, "env"
        from_file = self._from_run_config()
        if from_file is not None:
            return from_file, "run_config"
        if self.config_budget > 0:
            return self.config_budget, "config"
        return 0.0, "default"
