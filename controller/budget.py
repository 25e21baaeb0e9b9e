"""Resolve the run's budget cap, exported so budget rules compare spend against it.

Bernstein's own precedence (3.23.0 `resolve_run_budget_usd` and its seed), with agentwatch's
explicit override on top; the first source that gives a usable value wins:
1. `AGENTWATCH_MAX_COST_USD` (source `env`), an explicit override of everything below;
2. `BERNSTEIN_MAX_COST_USD` (source `bernstein_env`), set by `bernstein run --max-cost-usd N`.
   For both variables: blank is ignored; a value that is not a finite number is logged at
   warning once and falls through (a typo must never silently disable the guard); zero or
   negative means "unlimited" (0), an explicit choice of whoever set it;
3. the run config `.sdd/runtime/run_config.json`: `budget_usd` (what Bernstein 3.23.0 reads),
   else `per_run_max_cost_usd` (the seed's name) — a positive number wins; zero, negative,
   null or missing fall through (Bernstein treats them as "not set" too); an unreadable file
   or a non-number warns once and falls through;
4. `bernstein.yaml`: the top-level `budget` that `bernstein init` writes (`"$10"`, `10`,
   `"10"`, parsed as Bernstein's seed parser does), else `seed.budget_usd` — the same rules;
5. the config file's `controller.budget_usd` when positive;
6. 0 = unlimited (source `default`).

The project folder is enough: `controller.bernstein_config_file` (its `bernstein.yaml`) gives
the run config beside it, and `controller.run_config_file` gives `bernstein.yaml` beside it.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentwatch.core.bounded import CONFIG_LIMIT, DATA_LIMIT, FileRefused, read_text
from agentwatch.core.log import FailureGate

ENV_VAR = "AGENTWATCH_MAX_COST_USD"
BERNSTEIN_ENV_VAR = "BERNSTEIN_MAX_COST_USD"
RUN_CONFIG_KEYS = ("budget_usd", "per_run_max_cost_usd")
SOURCES = ("env", "bernstein_env", "run_config", "bernstein_config", "config", "default")
DOLLARS = re.compile(r"^\$(\d+(?:\.\d+)?)$")  # Bernstein's seed parser: "$20", "$2.5"
RUN_CONFIG_PARTS = (".sdd", "runtime", "run_config.json")


def default_bernstein_config(run_config_file: Path | None) -> Path | None:
    """`<root>/bernstein.yaml` when the run config is Bernstein's
    `<root>/.sdd/runtime/run_config.json`; else None (no guess about other layouts)."""
    if run_config_file is None:
        return None
    parts = run_config_file.parts
    if len(parts) < 4 or parts[-3:] != RUN_CONFIG_PARTS:
        return None
    return run_config_file.parents[2] / "bernstein.yaml"


def default_run_config(bernstein_config_file: Path | None) -> Path | None:
    """`<root>/.sdd/runtime/run_config.json` beside Bernstein's `<root>/bernstein.yaml`."""
    if bernstein_config_file is None:
        return None
    return bernstein_config_file.parent.joinpath(*RUN_CONFIG_PARTS)


def dollars(value: Any) -> Any:
    """Bernstein's budget forms: a number, `"$N"` or a numeric string, as a float; anything
    else is returned unchanged (then refused as not a number)."""
    if isinstance(value, str):
        text = value.strip()
        match = DOLLARS.match(text)
        try:
            return float(match.group(1) if match else text)
        except ValueError:
            return value
    return value


def first_positive(found: list[tuple[str, Any]]) -> tuple[float | None, str | None]:
    """(the first positive number of (key, value) pairs, the first problem): missing, zero or
    negative fall through; a value that is not a finite number is a problem and falls through."""
    problem = None
    for key, value in found:
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            value = math.nan
        if not math.isfinite(value):
            problem = problem or f"{key} is not a number; ignored"
            continue
        if value > 0:
            return float(value), problem
    return None, problem


def _settle(gate: FailureGate, picked: tuple[float | None, str | None]) -> float | None:
    """One gate call per source and cycle, so a bad value warns once, not every cycle."""
    value, problem = picked
    if problem is None:
        gate.succeeded()
    else:
        gate.failed(problem)
    return value


log = logging.getLogger("agentwatch.controller")


class BudgetResolver:
    """Resolves the cap each cycle; warnings go through gates, not one line per cycle."""

    def __init__(
        self,
        run_config_file: Path | None,
        config_budget: float,
        bernstein_config_file: Path | None = None,
    ):
        self.run_config_file = run_config_file or default_run_config(bernstein_config_file)
        self.config_budget = config_budget
        self.bernstein_config_file = bernstein_config_file or default_bernstein_config(
            run_config_file
        )
        self.env_gates = {
            name: FailureGate(log, f"budget from ${name}") for name in (ENV_VAR, BERNSTEIN_ENV_VAR)
        }
        self.file_gate = FailureGate(log, f"budget from run config {self.run_config_file}")
        self.yaml_gate = FailureGate(
            log, f"budget from Bernstein config {self.bernstein_config_file}"
        )

    def _from_env(self, env: Mapping[str, str], name: str) -> float | None:
        gate = self.env_gates[name]
        text = env.get(name, "").strip()
        if not text:
            gate.succeeded()
            return None
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            gate.failed(f"{text[:40]!r} is not a number; ignored")
            return None
        gate.succeeded()
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
        if not isinstance(raw, dict):
            raw = {}
        return _settle(self.file_gate, first_positive([(k, raw.get(k)) for k in RUN_CONFIG_KEYS]))

    def _from_bernstein_config(self) -> float | None:
        path = self.bernstein_config_file
        if path is None:
            return None
        try:
            text = read_text(path, CONFIG_LIMIT)
        except FileNotFoundError:
            self.yaml_gate.succeeded()
            return None
        except FileRefused as err:
            self.yaml_gate.failed(f"refused ({err.reason}); ignored")
            return None
        except (OSError, UnicodeDecodeError, ValueError) as err:
            self.yaml_gate.failed(f"unreadable or not YAML ({type(err).__name__}); ignored")
            return None
        import yaml  # only with a file to parse: the parser is 1.4 MiB of a resident process

        from agentwatch.core import yamlsafe

        try:
            raw: Any = yamlsafe.load(text)
        except (yaml.YAMLError, ValueError) as err:
            self.yaml_gate.failed(f"unreadable or not YAML ({type(err).__name__}); ignored")
            return None
        if not isinstance(raw, dict):
            raw = {}
        seed = raw.get("seed")
        found = [
            ("budget", dollars(raw.get("budget"))),
            ("seed.budget_usd", seed.get("budget_usd") if isinstance(seed, dict) else None),
        ]
        return _settle(self.yaml_gate, first_positive(found))

    def resolve(self, env: Mapping[str, str]) -> tuple[float, str]:
        """(cap in USD, source); 0 means unlimited."""
        for name, source in ((ENV_VAR, "env"), (BERNSTEIN_ENV_VAR, "bernstein_env")):
            from_env = self._from_env(env, name)
            if from_env is not None:
                return from_env, source
        from_file = self._from_run_config()
        if from_file is not None:
            return from_file, "run_config"
        from_yaml = self._from_bernstein_config()
        if from_yaml is not None:
            return from_yaml, "bernstein_config"
        if self.config_budget > 0:
            return self.config_budget, "config"
        return 0.0, "default"
