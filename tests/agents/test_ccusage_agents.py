"""Every reader held to ccusage's own fixtures, one parametrised test per property.

For each agent of tests/agents/ccusage_agents.py SPECS (pi, Amp, OpenClaw, ...):
- conformance: the reader's per-day totals over all of ccusage's test files for that agent
  equal `ccusage <agent> daily --json --offline` 20.0.24 (tokens exactly, cost within 1e-6
  relative, or the day's documented difference), in UTC and in another zone;
- keys: stable across re-reads, no text in them, a file read twice counts once;
- bad input (random bytes, files that are not the agent's JSON) is counted, never raised;
- crash: a real `agentwatch sentinel agent-ledger` SIGKILLed mid-cycle and restarted ends
  with exactly the spool of one clean run;
- poison: a copy of a fixture record with a count of 2^62 is rejected, counted and logged
  once, and everything else is counted as in the clean run (tests/hostile's check).
"""

from __future__ import annotations

import math
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from agentwatch.sentinels.agent_ledger import readers
from agentwatch.sentinels.agent_ledger.base import TOKEN_TYPES
from agentwatch.sentinels.agent_ledger.store import DATABASE_FILE
from tests.agents.agent_ledger_run import Setup
from tests.agents.ccusage_agents import SPECS, Rows, Spec, ccusage_rows, reader_rows
from tests.agents.test_agent_ledger_crash import committed
from tests.conftest import run_cli
from tests.hostile.test_agent_ledger_poison import check

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

COST_RTOL = 1e-6
BY_AGENT = pytest.mark.parametrize("spec", SPECS, ids=[spec.agent for spec in SPECS])


def differences(ours: Rows, theirs: Rows, spec: Spec) -> list[str]:
    found = []
    for day in sorted(set(ours) | set(theirs)):
        mine, ref = ours.get(day, {}), theirs.get(day, {})
        for kind in TOKEN_TYPES:
            if mine.get(kind, 0) != ref.get(kind, 0):
                found.append(f"{day} {kind}: ours {mine.get(kind, 0)} ccusage {ref.get(kind, 0)}")
        cost, ref_cost = mine.get("cost_usd", 0.0), ref.get("cost_usd", 0.0)
        if day not in spec.cost_differs and not math.isclose(
            cost, ref_cost, rel_tol=COST_RTOL, abs_tol=1e-12
        ):
            found.append(f"{day} cost: ours {cost!r} ccusage {ref_cost!r}")
    return found


def test_config_show_lists_every_agent() -> None:
    """`agentwatch config show` (the issue's acceptance): the agent-ledger's agents are every
    plugged reader, at least 12 besides Claude Code."""
    shown = run_cli("config", "show")
    assert shown.returncode == 0, shown.stderr
    (line,) = [line for line in shown.stdout.splitlines() if line.strip().startswith("# agents: [")]
    listed = yaml.safe_load(line.strip().removeprefix("# ").split("    #")[0])["agents"]
    assert listed == list(readers.plugged()) and len(listed) >= 12
    assert {spec.agent for spec in SPECS} <= set(listed)


def test_every_spec_is_plugged_in() -> None:
    plugged = readers.plugged()
    assert {spec.agent for spec in SPECS} <= set(plugged)
    assert len(plugged) >= 12 and len(plugged) >= 3 + len(SPECS)  # codex, gemini, opencode, these


@BY_AGENT
@pytest.mark.parametrize("zone", ["UTC", "Pacific/Kiritimati"])
def test_reader_equals_ccusage_on_its_fixtures(tmp_path: Path, spec: Spec, zone: str) -> None:
    env = spec.environment(spec.copy(tmp_path / "data"))
    home = tmp_path / "home"
    home.mkdir()
    theirs = ccusage_rows(spec.agent, env, home, zone)
    assert theirs, "ccusage saw nothing: the fixtures are not where it looks"
    ours = reader_rows(spec, env, zone)
    problems = differences(ours, theirs, spec)
    assert not problems, "\n".join(problems)
    for day, reason in spec.cost_differs.items():  # a documented difference is still there
        assert ours[day]["cost_usd"] != pytest.approx(theirs[day]["cost_usd"]), reason


@BY_AGENT
def test_keys_are_stable_unique_and_carry_no_text(tmp_path: Path, spec: Spec) -> None:
    env = spec.environment(spec.copy(tmp_path / "data"))
    first = spec.entries(env)
    assert first and [e.key for e in spec.entries(env)] == [e.key for e in first]
    assert len({entry.key for entry in first}) == len(first)
    assert all(entry.key.startswith(f"{spec.agent}:") and len(entry.key) == len(spec.agent) + 33
               for entry in first)  # fmt: skip
    paths = spec.paths(env)
    twice = spec.module.read_files(paths + paths).entries
    assert {entry.key for entry in twice} == {entry.key for entry in first}


@BY_AGENT
def test_bad_input_is_counted_never_raised(tmp_path: Path, spec: Spec) -> None:
    env = spec.environment(spec.copy(tmp_path / "data"))
    paths = spec.paths(env)
    rng = random.Random(7)
    junk = []
    for n, path in enumerate(paths * 3):
        target = path.with_name(f"junk{n}-{path.name}")
        data = bytearray(path.read_bytes())
        for _ in range(rng.randint(1, 8)):  # flip, cut and insert bytes of a real file
            if data:
                data[rng.randrange(len(data))] = rng.getrandbits(8)
        target.write_bytes(bytes(data[: rng.randint(0, len(data))]) + b'\n{"usage"\xff\n')
        junk.append(target)
    result = spec.module.read_files([*paths, *junk, tmp_path / "missing", tmp_path])
    assert sum(result.rejects.values()) >= 1
    assert all(type(count) is int for count in result.rejects.values())


def _kill_mid_cycle(
    setup: Setup, env: dict[str, str], files: int, after: int, jitter: float
) -> int:
    """Start the sentinel loop; SIGKILL it `jitter` s after its database holds more than
    `after` files but not all (at once when it holds all); how many it held then."""
    process = subprocess.Popen(
        [*setup.command(), "--spool-dir", str(setup.spool), "--state-dir", str(setup.state)],
        env=setup.env(None, env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    seen = 0
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = committed(setup.state / DATABASE_FILE)
            if state is not None and (state[0] > after or state[0] >= files):
                seen = state[0]
                time.sleep(jitter if seen < files else 0)
                break
            time.sleep(0.001)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    return seen


def _comparable(found: dict) -> dict:
    return {key: value for key, value in found.items()
            if not key[0].startswith(("agentwatch_sentinel_", "agentwatch_spend_usd"))}  # fmt: skip


@BY_AGENT
def test_sigkill_mid_cycle_then_restart_is_exact(tmp_path: Path, spec: Spec) -> None:
    """Each fixture folder copied 40 times, so that a cycle commits in several batches; the
    sentinel is killed right after a batch and again while it reads or commits the next."""
    env = spec.environment(spec.copy(tmp_path / "data", copies=40))
    files = len(spec.paths(env))
    clean = Setup(tmp_path / "clean")
    clean.config(agents=[spec.agent])
    expected = _comparable(clean.once(None, env=env))
    assert any(key[0] == "agentwatch_tokens_total" for key in expected)
    killed = Setup(tmp_path / "killed")
    killed.config(agents=[spec.agent])
    seen = 0
    for jitter in (0.0, 0.002, 0.01):
        seen = _kill_mid_cycle(killed, env, files, seen, jitter)
    assert _comparable(killed.once(None, env=env)) == pytest.approx(expected)


@BY_AGENT
def test_a_poisoned_record_is_rejected_and_the_rest_counted(tmp_path: Path, spec: Spec) -> None:
    def files(base: Path) -> tuple[dict[str, str], Path]:
        dirs = spec.copy(base / "data")
        return spec.environment(dirs), spec.poison_file(base / "data")

    good = spec.entries(files(tmp_path / "good")[0])
    check(tmp_path, spec.agent, files, spec.poison, "bad_token_count", good, spec.module.price)
