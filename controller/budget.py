"""Resolve the run's budget cap, exported so budget rules compare spend against it.

Precedence (first source that gives a usable value wins):
1. the environment variable AGENTWATCH_MAX_COST_USD — blank is ignored; a value that is not a
   finite number is logged as a warning and falls through (a typo must never silently disable
   the guard); zero or negative means "unlimited" (an explicit choice of whoever set it);
2. the orchestrator's run config, a JSON file with `per_run_max_cost_usd` (Bernstein writes
   `.sdd/runtime/run_config.json`) — a positive number wins; zero, negative, null or missing
   mean "not set here" and fall through, so an orchestrator that writes 0 for "no flag given"
   does not erase the user's cap; an unreadable file or a non-number warns and falls through;
3. Bernstein's `bernstein.yaml` `seed.budget_usd` (`controller.bernstein_config_file`, by
   default next to the run config's project root) — the same rules as the run config: a
   positive number wins, anything else falls through, an unreadable file warns once;
4. the config file's `controller.budget_usd` when positive;
5. 0 = unlimited (source `default`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentwatch.core.bounded import CONFIG_LIMIT, DATA_LIMIT, FileRefused, read_text
from agentwatch.core.log import FailureGate

ENV_VAR = "AGENTWATCH_MAX_COST_USD"
RUN_CONFIG_KEY = "per_run_max_cost_usd"
BERNSTEIN_KEY = "seed.budget_usd"
SOURCES = ("env", "run_config", "bernstein_config", "config", "default")


def default_bernstein_config(run_config_file: Path | None) -> Path | None:
    """`<root>/bernstein.yaml` when the run config is Bernstein's
    `<root>/.sdd/runtime/run_config.json`; else None (no guess about other layouts)."""
    if run_config_file is None:
        return None
    parts = run_config_file.parts
    if len(parts) < 4 or parts[-3:] != (".sdd", "runtime", "run_config.json"):
        return None
    return run_config_file.parents[2] / "bernstein.yaml"


def _positive(value: Any, gate: FailureGate, key: str) -> float | None:
    """A positive number wins; missing, zero or negative fall through; anything else warns."""
    if value is None:
        gate.succeeded()
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        gate.failed(f"{key} is not a number; ignored")
        return None
    gate.succeeded()
    return float(value) if value > 0 else None


log = logging.getLogger("agentwatch.controller")


class BudgetResolver:
    """Resolves the cap each cycle; warnings go through gates, not one line per cycle."""

    def __init__(
        self,
        run_config_file: Path | None,
        config_budget: float,
        bernstein_config_file: Path | None = None,
    ):
        self.run_config_file = run_config_file
        self.config_budget = config_budget
        self.bernstein_config_file = bernstein_config_file or default_bernstein_config(
            run_config_file
        )
        self.env_gate = FailureGate(log, f"budget from ${ENV_VAR}")
        self.file_gate = FailureGate(log, f"budget from run config {run_config_file}")
        self.yaml_gate = FailureGate(
            log, f"budget from Bernstein config {self.bernstein_config_file}"
        )

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
        return _positive(value, self.file_gate, RUN_CONFIG_KEY)

    def _from_bernstein_config(self) -> float | None:
        import yaml

        from agentwatch.core import yamlsafe

        path = self.bernstein_config_file
        if path is None:
            return None
        try:
            raw: Any = yamlsafe.load(read_text(path, CONFIG_LIMIT))
        except FileNotFoundError:
            self.yaml_gate.succeeded()
            return None
        except FileRefused as err:
            self.yaml_gate.failed(f"refused ({err.reason}); ignored")
            return None
        except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError) as err:
            self.yaml_gate.failed(f"unreadable or not YAML ({type(err).__name__}); ignored")
            return None
        seed = raw.get("seed") if isinstance(raw, dict) else None
        value = seed.get("budget_usd") if isinstance(seed, dict) else None
        return _positive(value, self.yaml_gate, BERNSTEIN_KEY)

    def resolve(self, env: Mapping[str, str]) -> tuple[float, str]:
        """(cap in USD, source); 0 means unlimited."""
        from_env = self._from_env(env)
        if from_env is not None:
            return from_env, "env"
        from_file = self._from_run_config()
        if from_file is not None:
            return from_file, "run_config"
        from_yaml = self._from_bernstein_config()
        if from_yaml is not None:
            return from_yaml, "bernstein_config"
        if self.config_budget > 0:
            return self.config_budget, "config"
        return 0.0, "default"
