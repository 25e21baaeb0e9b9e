"""Running the real `agentwatch sentinel agent-ledger` on a tree of session files, and what a
never-double-counting ledger must show for the files it was shown (the tests' model)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from agentwatch.sentinels.agent_ledger import gemini
from agentwatch.sentinels.agent_ledger.base import TOKEN_TYPES, AgentUsage
from tests.conftest import samples

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Setup:
    """The folders one sentinel works with."""

    root: Path

    @property
    def spool(self) -> Path:
        return self.root / "spool"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def home(self) -> Path:
        return self.root / "home"

    def config(self, **settings: object) -> Path:
        path = self.root / "config.yml"
        self.root.mkdir(parents=True, exist_ok=True)
        section = {"session_ttl": 10 * 365 * 86400, **settings}
        path.write_text(yaml.safe_dump({"sentinels": {"agent-ledger": section}}))
        return path

    def command(self, fake: bool = False) -> list[str]:
        module = "tests.agents.agent_ledger_fake" if fake else "agentwatch.cli"
        return [sys.executable, "-m", module, "--config", str(self.root / "config.yml"),
                "sentinel", "agent-ledger"]  # fmt: skip

    def env(self, gemini_dir: Path | None, extra: Mapping[str, str] | None = None) -> dict:
        self.home.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HOME": str(self.home), "PYTHONPATH": str(REPO), **(extra or {})}
        env.pop("GEMINI_DATA_DIR", None)
        if gemini_dir is not None:
            env["GEMINI_DATA_DIR"] = str(gemini_dir)
        return env

    def once(
        self, gemini_dir: Path | None, fake: bool = False, env: Mapping[str, str] | None = None
    ) -> Samples:
        """One `--once` run; every sample of the spool file it wrote."""
        if not (self.root / "config.yml").exists():
            self.config()
        ran = subprocess.run(
            [*self.command(fake), "--once", "--spool-dir", str(self.spool),
             "--state-dir", str(self.state)],
            env=self.env(gemini_dir, env), capture_output=True, text=True, timeout=60,
            check=False, cwd=REPO,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        return samples((self.spool / "agent-ledger.prom").read_text())


def gemini_entries(data_dir: Path) -> list[AgentUsage]:
    paths = [path for root in [data_dir] for path in gemini.files(root)]
    return gemini.read_files(paths).entries


def total(found: Samples, name: str, **labels: str) -> float:
    """The sum of a family's series whose labels include these."""
    return sum(
        value
        for (sample, series), value in found.items()
        if sample == name and labels.items() <= dict(series).items()
    )


def series(found: Samples, name: str) -> list[dict[str, str]]:
    return [dict(labels) for sample, labels in found if sample == name]


class Model:
    """What a ledger that never counts twice holds after seeing these reads: per key, the
    most of each token type and of the cost any read showed (counters never go down)."""

    def __init__(self) -> None:
        self.best: dict[str, list[float]] = {}

    def saw(self, entries: Iterable[AgentUsage]) -> None:
        for entry in entries:
            cost = gemini.price(entry) if entry.cost_usd is None else entry.cost_usd
            amounts = [*(getattr(entry, kind) for kind in TOKEN_TYPES), cost or 0.0]
            old = self.best.get(entry.key, [0.0] * 5)
            self.best[entry.key] = [max(a, b) for a, b in zip(old, amounts, strict=True)]

    def read(self, data_dir: Path) -> None:
        """What the Gemini reader finds under data_dir now."""
        self.saw(gemini_entries(data_dir))

    def tokens(self, kind: str) -> float:
        return sum(best[TOKEN_TYPES.index(kind)] for best in self.best.values())

    @property
    def cost(self) -> float:
        return sum(best[4] for best in self.best.values())


def assert_matches(found: Samples, model: Model, agent: str = "gemini") -> None:
    """The spool's totals are the model's: tokens exactly, cost to 1e-9 relative."""
    for kind in TOKEN_TYPES:
        ours = total(found, "agentwatch_tokens_total", agent=agent, type=kind)
        assert ours == model.tokens(kind), kind
    cost = total(found, "agentwatch_cost_usd_total", agent=agent)
    assert abs(cost - model.cost) <= 1e-9 * max(model.cost, 1e-9), (cost, model.cost)
    assert total(found, "agentwatch_api_responses_total", agent=agent) == len(model.best)
