"""bench/pairs.py, the harness of the peer benchmarks: ratios per pair, their spread, the
alternating order, and the exit status (1 on a missed target, 2 when a side is missing), on
tiny real commands. No timing is asserted: only which side did more work."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "bench" / "pairs.py"
BUSY = f"{sys.executable} -c 'sum(i * i for i in range(3_000_000))'"
IDLE = f"{sys.executable} -S -c pass"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_pairs", PAIRS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_pairs"] = module
    spec.loader.exec_module(module)
    return module


def test_ratios_spread_and_order() -> None:
    pairs = load()
    calls: list[str] = []

    def side(name: str, cpus: list[float]) -> Callable[[], Any]:
        def run() -> Any:
            calls.append(name)
            return pairs.Sample(1.0, cpus[len([c for c in calls if c == name]) - 1], 10.0)

        return run

    result = pairs.run_pairs(
        ("a", side("a", [2.0, 3.0, 4.0, 9.0])),
        ("b", side("b", [1.0, 1.0, 2.0, 1.0])),
        4,
        progress=False,
    )
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert result.ratios("cpu_s") == [2.0, 3.0, 2.0, 9.0]
    assert result.spread("cpu_s") == (2.0, 2.5, 9.0)
    assert pairs.ratio_check(result, "cpu_s", 2.5).ok
    assert not pairs.ratio_check(result, "cpu_s", 2.4).ok
    assert pairs.verdict([pairs.ratio_check(result, "cpu_s", 2.4)]) == 1
    assert pairs.verdict([pairs.ratio_check(result, "wall_s", 1.0)]) == 0
    assert "2.5" in pairs.table(result)


def test_a_whole_process_is_measured() -> None:
    pairs = load()
    busy = pairs.run_command(
        [sys.executable, "-c", "print(sum(i * i for i in range(3_000_000)))"], timeout=120
    )
    idle = pairs.run_command([sys.executable, "-S", "-c", "pass"], timeout=120)
    assert busy.out.strip() == str(sum(i * i for i in range(3_000_000))).encode()
    assert busy.cpu_s > idle.cpu_s
    assert busy.wall_s > 0 and busy.rss_mib > 1


def test_a_failing_command_is_an_error_not_a_sample() -> None:
    pairs = load()
    try:
        pairs.run_command([sys.executable, "-c", "import sys; sys.exit('broken')"], timeout=60)
    except RuntimeError as err:
        assert "broken" in str(err)
    else:
        raise AssertionError("a failed run was measured")


def cli(a: str, b: str, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PAIRS), "--a", a, "--b", b, "--pairs", "2", *more],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_exit_status_follows_the_target() -> None:
    missed = cli(BUSY, IDLE)
    assert missed.returncode == 1, missed.stdout + missed.stderr
    assert "FAIL" in missed.stdout and "load average" in missed.stdout
    met = cli(IDLE, BUSY)
    assert met.returncode == 0, met.stdout + met.stderr
    assert "verdict: PASS" in met.stdout


def test_a_missing_peer_is_a_setup_error() -> None:
    done = cli(IDLE, "/nonexistent/peer --json")
    assert done.returncode == 2
    assert "setup error" in done.stdout
