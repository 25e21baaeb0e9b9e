"""The budget guard without an orchestrator: the cap's precedence with bernstein.yaml (real
files), the ledger's spend from its real spool file (good, bad, missing), the period, the
metrics the budget rules compare, and the config keys that steer it."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agentwatch.controller import state
from agentwatch.controller.budget import (
    BERNSTEIN_ENV_VAR,
    ENV_VAR,
    BudgetResolver,
    default_bernstein_config,
    default_run_config,
)
from agentwatch.controller.metrics import View, families
from agentwatch.controller.policy import Settings, State
from agentwatch.controller.spend import Spend, SpendReader, resolve_period
from agentwatch.core import config, run_budget
from agentwatch.core.spool import render
from tests.bernstein_support import project
from tests.conftest import CLI, free_port, samples

PROMTOOL = shutil.which("promtool")
LEDGER = """# HELP agentwatch_spend_usd Cost since the start of the period.
# TYPE agentwatch_spend_usd gauge
agentwatch_spend_usd{period="day"} 9.5
agentwatch_spend_usd{period="week"} 31.25
agentwatch_spend_usd{period="month"} 80
"""


def bernstein_root(tmp_path: Path, yaml_text: str | None, run_config: str | None) -> Path:
    """A Bernstein project: bernstein.yaml and .sdd/runtime/run_config.json."""
    runtime = tmp_path / ".sdd" / "runtime"
    runtime.mkdir(parents=True)
    if yaml_text is not None:
        (tmp_path / "bernstein.yaml").write_text(yaml_text)
    if run_config is not None:
        (runtime / "run_config.json").write_text(run_config)
    return runtime / "run_config.json"


@pytest.mark.parametrize(
    ("env", "run_config", "yaml_text", "configured", "expect"),
    [
        ("25", '{"per_run_max_cost_usd": 40}', "seed: {budget_usd: 30}", 50, (25.0, "env")),
        (None, '{"per_run_max_cost_usd": 40}', "seed: {budget_usd: 30}", 50, (40.0, "run_config")),
        (None, '{"per_run_max_cost_usd": 0}', "seed: {budget_usd: 30}", 50,
         (30.0, "bernstein_config")),
        (None, None, "seed:\n  budget_usd: 12.5\n", 0, (12.5, "bernstein_config")),
        (None, None, "seed: {budget_usd: 0}", 50, (50.0, "config")),  # non-positive: skipped
        (None, None, "seed: {budget_usd: -4}", 50, (50.0, "config")),
        (None, None, "seed: {budget_usd: lots}", 50, (50.0, "config")),  # warns
        (None, None, "seed: [1, 2]", 50, (50.0, "config")),
        (None, None, "{{{ not yaml", 50, (50.0, "config")),  # unreadable: warns
        (None, None, None, 0, (0.0, "default")),
        # Bernstein 3.23.0's own forms: the run config's budget_usd, bernstein.yaml's budget
        (None, '{"budget_usd": 15, "per_run_max_cost_usd": 40}', 'budget: "$10"', 0,
         (15.0, "run_config")),
        (None, '{"budget_usd": 0, "per_run_max_cost_usd": 40}', None, 0, (40.0, "run_config")),
        (None, None, 'budget: "$10"\nseed: {budget_usd: 30}', 0, (10.0, "bernstein_config")),
        (None, None, 'budget: "$2.5"', 0, (2.5, "bernstein_config")),
        (None, None, "budget: 20", 0, (20.0, "bernstein_config")),
        (None, None, 'budget: " 20 "', 0, (20.0, "bernstein_config")),
        (None, None, 'budget: "$0"\nseed: {budget_usd: 30}', 0, (30.0, "bernstein_config")),
        (None, None, 'budget: "ten dollars"\nseed: {budget_usd: 30}', 0,
         (30.0, "bernstein_config")),  # warns
        (None, None, 'budget: "$1e9"', 50, (50.0, "config")),  # not Bernstein's "$N": warns
        (None, None, "budget: .nan", 50, (50.0, "config")),
    ],
)  # fmt: skip
def test_budget_precedence_with_bernstein_yaml(
    tmp_path: Path,
    env: str | None,
    run_config: str | None,
    yaml_text: str | None,
    configured: float,
    expect: tuple[float, str],
) -> None:
    path = bernstein_root(tmp_path, yaml_text, run_config)
    resolver = BudgetResolver(path, configured, None)
    assert resolver.bernstein_config_file == tmp_path / "bernstein.yaml"
    assert resolver.resolve({ENV_VAR: env} if env is not None else {}) == expect


def test_bernstein_yaml_default_and_explicit_path(tmp_path: Path) -> None:
    assert default_bernstein_config(None) is None
    assert default_bernstein_config(tmp_path / "run_config.json") is None, "no guessing"
    explicit = tmp_path / "elsewhere.yaml"
    explicit.write_text("seed:\n  budget_usd: 7\n")
    assert BudgetResolver(None, 0, explicit).resolve({}) == (7.0, "bernstein_config")
    runtime = tmp_path / ".sdd" / "runtime"
    assert default_run_config(explicit) == runtime / "run_config.json"
    runtime.mkdir(parents=True)
    (runtime / "run_config.json").write_text('{"budget_usd": 9}')
    assert BudgetResolver(None, 0, explicit).resolve({}) == (9.0, "run_config"), "one key"


@pytest.mark.parametrize(
    ("env", "expect"),
    [
        ({BERNSTEIN_ENV_VAR: "7.5"}, (7.5, "bernstein_env")),
        ({BERNSTEIN_ENV_VAR: "0"}, (0.0, "bernstein_env")),  # explicit unlimited
        ({BERNSTEIN_ENV_VAR: "-2"}, (0.0, "bernstein_env")),  # non-positive: 0
        ({BERNSTEIN_ENV_VAR: " "}, (40.0, "run_config")),  # blank: ignored
        ({BERNSTEIN_ENV_VAR: "7,5"}, (40.0, "run_config")),  # invalid: warns, falls through
        ({BERNSTEIN_ENV_VAR: "inf"}, (40.0, "run_config")),
        ({BERNSTEIN_ENV_VAR: "7.5", ENV_VAR: "3"}, (3.0, "env")),  # agentwatch's override
        ({BERNSTEIN_ENV_VAR: "7.5", ENV_VAR: "x"}, (7.5, "bernstein_env")),
    ],
)
def test_bernstein_env_comes_before_the_files(
    tmp_path: Path, env: dict[str, str], expect: tuple[float, str]
) -> None:
    path = bernstein_root(tmp_path, 'budget: "$10"', '{"budget_usd": 40}')
    assert BudgetResolver(path, 50, None).resolve(env) == expect


def test_an_invalid_value_warns_once_per_source(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = bernstein_root(tmp_path, 'budget: "lots"\nseed: {budget_usd: 8}', '{"budget_usd": "x"}')
    resolver = BudgetResolver(path, 0, None)
    with caplog.at_level(logging.WARNING, "agentwatch.controller"):
        for _ in range(4):
            assert resolver.resolve({BERNSTEIN_ENV_VAR: "abc"}) == (8.0, "bernstein_config")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert any(BERNSTEIN_ENV_VAR in m for m in lines)
    assert any("budget_usd is not a number" in m for m in lines)
    assert any("budget is not a number" in m for m in lines)


def test_a_broken_bernstein_yaml_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = bernstein_root(tmp_path, "seed: [unclosed", None)
    resolver = BudgetResolver(path, 3, None)
    with caplog.at_level(logging.WARNING, "agentwatch.controller"):
        for _ in range(3):
            assert resolver.resolve({}) == (3.0, "config")
    assert len(caplog.records) == 1 and "bernstein.yaml" in caplog.records[0].message


def test_config_keys_are_validated_with_the_key_named() -> None:
    values = config.from_mapping({})["controller"]
    assert values["budget_period"] == "auto" and values["grow_sustain"] == 120
    assert values["burn"] == {"escalate_after": 900, "verify_after": 300, "verify_fraction": 0.5}
    for bad, key in (
        ({"burn": {"verify_fraction": 0}}, "controller.burn.verify_fraction"),
        ({"burn": {"verify_fraction": 1.5}}, "controller.burn.verify_fraction"),
        ({"burn": {"escalate_after": "soon"}}, "controller.burn.escalate_after"),
        ({"budget_period": "year"}, "controller.budget_period"),
    ):
        with pytest.raises(config.ConfigError, match=key):
            config.from_mapping({"controller": bad})
    assert config.from_mapping({"controller": {"burn": {"verify_fraction": 1}}})


def test_auto_period_follows_the_started_run(tmp_path: Path) -> None:
    assert resolve_period("auto", run_budget.read(tmp_path)) == "day"
    run_budget.start(tmp_path, 1000.0)
    assert resolve_period("auto", run_budget.read(tmp_path)) == "run"
    assert resolve_period("week", run_budget.read(tmp_path)) == "week"


def reader(tmp_path: Path, text: str | bytes | None, period: str = "auto") -> SpendReader:
    spool, states = tmp_path / "spool", tmp_path / "state"
    spool.mkdir(exist_ok=True)
    states.mkdir(exist_ok=True)
    if text is not None:
        data = text.encode() if isinstance(text, str) else text
        (spool / "token-ledger.prom").write_bytes(data)
    return SpendReader(spool, states, period)


def test_ledger_spend_of_the_period_and_the_larger_of_both_sources(tmp_path: Path) -> None:
    assert reader(tmp_path, LEDGER).read(None) == Spend(9.5, "day")
    assert reader(tmp_path, LEDGER, "month").read(None) == Spend(80.0, "month")
    assert reader(tmp_path, LEDGER, "week").read(40.0) == Spend(40.0, "week")
    assert reader(tmp_path, LEDGER).read(2.0) == Spend(9.5, "day")


@pytest.mark.parametrize(
    "text",
    [
        None,  # no ledger running
        "agentwatch_spend_usd{period= garbage\n",
        b'agentwatch_spend_usd{period="day"} 1\n\xff\xfe\n',  # not UTF-8
        "# TYPE other gauge\nother 1\n",  # a valid file without the spend
        'agentwatch_spend_usd{period="day"} 1 1700000000000\n',  # a timestamp: refused
    ],
)
def test_a_missing_or_bad_ledger_file_leaves_the_orchestrator_alone_and_logs_once(
    tmp_path: Path, text: str | bytes | None, caplog: pytest.LogCaptureFixture
) -> None:
    spend = reader(tmp_path, text)
    with caplog.at_level(logging.WARNING, "agentwatch.controller"):
        assert spend.read(4.0) == Spend(4.0, "orchestrator")
        assert spend.read(None) is None
        assert spend.read(5.0) == Spend(5.0, "orchestrator")
    assert len(caplog.records) == 1, [r.message for r in caplog.records]
    assert "token-ledger.prom" in caplog.records[0].message


AGENTS = """# HELP agentwatch_spend_usd Cost since the start of the period.
# TYPE agentwatch_spend_usd gauge
agentwatch_spend_usd{agent="codex",period="day"} 1.25
agentwatch_spend_usd{agent="gemini",period="day"} 0.25
agentwatch_spend_usd{agent="gemini",period="week"} 3
"""


def test_the_other_agents_spend_is_added_and_their_ledger_is_optional(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spend = reader(tmp_path, LEDGER)
    (tmp_path / "spool" / "agent-ledger.prom").write_text(AGENTS)
    assert spend.read(None) == Spend(9.5 + 1.25 + 0.25, "day")
    assert reader(tmp_path, LEDGER, "month").read(None) == Spend(80.0, "month")  # none there
    (tmp_path / "spool" / "token-ledger.prom").unlink()
    assert spend.read(None) == Spend(1.5, "day")  # Claude Code's ledger not running
    (tmp_path / "spool" / "agent-ledger.prom").write_text("agentwatch_spend_usd{period= bad\n")
    with caplog.at_level(logging.WARNING, "agentwatch.controller"):
        assert spend.read(2.0) == Spend(2.0, "orchestrator")
        assert spend.read(2.0) == Spend(2.0, "orchestrator")
    assert [r.message for r in caplog.records if "agent-ledger.prom" in r.message]


def test_the_run_period_reads_the_ledgers_run_spend(tmp_path: Path) -> None:
    spend = reader(tmp_path, LEDGER + 'agentwatch_spend_usd{period="run"} 2.5\n')
    run_budget.start(tmp_path / "state", 1000.0)
    assert spend.read(None) == Spend(2.5, "run")
    run_budget.stop(tmp_path / "state")
    assert spend.read(None) == Spend(9.5, "day")


@pytest.mark.parametrize(
    ("limit", "spent", "remaining"),
    [(20.0, Spend(19.0, "day"), 1.0), (0.0, Spend(19.0, "day"), None), (20.0, None, None)],
)
def test_budget_and_bernstein_metrics_pass_promtool(
    limit: float, spent: Spend | None, remaining: float | None
) -> None:
    s = Settings(max_agents=4, min_agents=1)
    memory = state.Memory(policy=State(level=3, paused=True))
    view = View(memory=memory, settings=s, budget=(limit, "config"), spent=spent)
    text = render(families(view))
    series = samples(text)
    assert series[("bernstein_parallelism_level", ())] == 0, "effective: paused"
    assert series.get(("agentwatch_budget_remaining_usd", ())) == remaining
    assert series.get(("bernstein_run_budget_remaining_usd", ())) == remaining
    if spent is not None:
        assert series[("agentwatch_budget_spent_usd", (("period", spent.period),))] == spent.usd
        assert series[("bernstein_run_cost_usd", ())] == spent.usd
    else:
        assert not any(name == "agentwatch_budget_spent_usd" for name, _ in series)
    if PROMTOOL:
        lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, text=True,
                              capture_output=True, timeout=30)  # fmt: skip
        assert lint.returncode == 0, lint.stdout + lint.stderr


def test_a_fifo_in_place_of_the_ledger_file_is_refused_unread(tmp_path: Path) -> None:
    spend = reader(tmp_path, None)
    os.mkfifo(tmp_path / "spool" / "token-ledger.prom")
    assert spend.read(1.0) == Spend(1.0, "orchestrator"), "never blocks on the FIFO"


# --- the real controller process, with real files ----------------------------------------


@pytest.fixture(scope="module")
def bernstein_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder set up by the real `bernstein init` (its bernstein.yaml says budget: "$10")."""
    return project(tmp_path_factory.mktemp("budget"))


def controller_limit(
    tmp_path: Path, env: dict[str, str], controller: dict[str, object] | None = None
) -> tuple[dict[str, float], str]:
    """Runs `agentwatch controller --once` with only `env` set of the budget variables;
    (agentwatch_budget_limit_usd by source, its log)."""
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"controller": controller or {}}))
    spool, states = tmp_path / "spool", tmp_path / "state"
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_MAX_COST_USD")}
    ran = subprocess.run(
        [*CLI, "--config", str(config), "controller", "--once", "--spool-dir", str(spool),
         "--state-dir", str(states), "--state-file", str(tmp_path / "controller.json"),
         "--alertmanager", f"http://127.0.0.1:{free_port()}"],
        env={**clean, **env}, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    series = samples((spool / "controller.prom").read_text())
    limits = {
        dict(labels)["source"]: value
        for (name, labels), value in series.items()
        if name == "agentwatch_budget_limit_usd"
    }
    return limits, ran.stderr


@pytest.mark.slow
def test_the_controller_takes_bernsteins_env_cap_with_nothing_configured(
    tmp_path: Path,
) -> None:
    assert controller_limit(tmp_path, {BERNSTEIN_ENV_VAR: "7.5"})[0] == {"bernstein_env": 7.5}
    over, _ = controller_limit(tmp_path, {BERNSTEIN_ENV_VAR: "7.5", ENV_VAR: "3"})
    assert over == {"env": 3.0}
    assert controller_limit(tmp_path, {})[0] == {"default": 0.0}


@pytest.mark.slow
def test_the_controller_walks_down_the_rungs_of_a_bernstein_project(
    tmp_path: Path, bernstein_project: Path
) -> None:
    """One key, the project's bernstein.yaml: its run config and its own budget follow."""
    yaml_file = bernstein_project / "bernstein.yaml"
    assert 'budget: "$10"' in yaml_file.read_text(), "what bernstein init writes"
    key = {"bernstein_config_file": str(yaml_file)}
    run_config = bernstein_project / ".sdd" / "runtime" / "run_config.json"
    run_config.write_text('{"budget_usd": 12.5}')
    try:
        limits, _ = controller_limit(tmp_path, {BERNSTEIN_ENV_VAR: "7.5"}, key)
        assert limits == {"bernstein_env": 7.5}
        assert controller_limit(tmp_path, {}, key)[0] == {"run_config": 12.5}
        run_config.write_text('{"per_run_max_cost_usd": 11}')
        assert controller_limit(tmp_path, {}, key)[0] == {"run_config": 11.0}
    finally:
        run_config.unlink()
    assert controller_limit(tmp_path, {}, key)[0] == {"bernstein_config": 10.0}
    limits, log = controller_limit(tmp_path, {BERNSTEIN_ENV_VAR: "ten"}, key)
    assert limits == {"bernstein_config": 10.0}, "an invalid cap never disables the guard"
    assert log.count(BERNSTEIN_ENV_VAR) == 1 and "WARNING" in log
