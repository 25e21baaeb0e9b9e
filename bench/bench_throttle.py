"""Alert-to-throttle latency through the real stack, next to the sum of the configured intervals.

Starts `agentwatch up --demo` (exporter, sentinels, Prometheus, Alertmanager, controller, the
demo orchestrator) with the intervals given below, waits until it is steady, then makes the
demo orchestrator report a spend of 98 % of the budget. The path to a throttle is real:
controller reads /costs/current -> controller.prom -> exporter -> Prometheus scrape -> rule
AgentwatchBudgetCritical (action pause) -> Alertmanager -> controller reads /api/v2/alerts ->
POST /drain to the orchestrator. The clock stops when the orchestrator reports draining.

    .venv/bin/python bench/bench_throttle.py [--interval 2] [--repeat 3]

No peer: nothing else on this machine turns a Prometheus alert into a drain of an
orchestrator, so the target is absolute, from the design: the median latency at most the sum
of the configured intervals (controller + scrape + evaluation + the rule's `for:` +
controller), the worst case of the chain. Prints the runs' median (min, max) and the load
average; exit 1 on a miss or a run that never throttles (or is never cancelled), 2 when the
stack cannot start (Prometheus and Alertmanager come from `scripts/setup --test`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pairs  # bench/ is on sys.path when a bench runs as `python bench/NAME.py`
import requests
import yaml
from pairs import free_port

ROOT = Path(__file__).resolve().parents[1]
# Large beside what the demo's own sessions spend in a run (they crossed a $10 budget within
# minutes and held the pause); the bench reports 98 % of it.
BUDGET = 1000.0


def config(interval: float) -> dict[str, Any]:
    def listen() -> str:
        return f"127.0.0.1:{free_port()}"

    return {
        "exporter": {"listen": listen()},
        "controller": {"listen": listen(), "interval": interval, "budget_usd": BUDGET},
        "stack": {
            "prometheus_listen": listen(),
            "alertmanager_listen": listen(),
            "webhook_listen": listen(),
            "scrape_interval": interval,
            "evaluation_interval": interval,
        },
        "demo": {"orchestrator_listen": listen()},
        # the chain under test is the budget's: a shared machine's load (another pause) must
        # not hold the drain after the spend goes back to 0
        "thresholds": {"host_load_per_cpu": 1000},
    }


def rule_for_seconds(name: str) -> float:
    """The `for:` of the alert that throttles, read from the shipped rules."""
    rules = Path(__file__).resolve().parents[1] / "rules"
    for path in rules.glob("*.rules.yml"):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                if rule.get("alert") == name:
                    text = str(rule.get("for", "0s"))
                    units = {"s": 1, "m": 60, "h": 3600}
                    return float(text[:-1]) * units[text[-1]]
    raise pairs.SetupError(f"no rule {name} under {rules}")


def wait(predicate: Any, timeout: float, every: float = 0.05) -> float | None:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic()
        time.sleep(every)
    return None


def draining(orchestrator: str) -> bool:
    try:
        return bool(requests.get(f"{orchestrator}/drain", timeout=1).json().get("draining"))
    except (requests.RequestException, ValueError):
        return False


def has_drain(orchestrator: str) -> bool:
    try:
        return "draining" in requests.get(f"{orchestrator}/drain", timeout=5).json()
    except (requests.RequestException, ValueError, TypeError):
        return False


def controller_ready(throttle: str) -> bool:
    try:
        return requests.get(throttle, timeout=1).ok
    except requests.RequestException:
        return False


def orchestrator_spend_seen(exporter: str) -> bool:
    try:
        text = requests.get(f"{exporter}/metrics", timeout=2).text
    except requests.RequestException:
        return False
    return "agentwatch_orchestrator_cost_usd 0.0" in text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interval", type=float, default=2.0,
                        help="scrape, evaluation and controller interval in seconds")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "throttle.json")
    args = parser.parse_args(argv)
    return pairs.main_guard(lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="aw-throttle-"))
    values = config(args.interval)
    (work / "config.yaml").write_text(yaml.safe_dump(values))
    exporter = f"http://{values['exporter']['listen']}"
    orchestrator = f"http://{values['demo']['orchestrator_listen']}"
    throttle = f"http://{values['controller']['listen']}/throttle"
    env = dict(os.environ, HOME=str(work / "home"))
    env.pop("CLAUDE_CONFIG_DIR", None)
    # The stand-in orchestrator (its /usage and /drain are what this bench drives): with the
    # real Bernstein installed, `up --demo` would steer that instead (cli/up.py).
    env.pop("AGENTWATCH_BERNSTEIN", None)
    command = [sys.executable, "-m", "agentwatch.cli", "--config",
               str(work / "config.yaml"), "up", "--demo", "--state-dir", str(work / "state"),
               "--spool-dir", str(work / "spool")]  # fmt: skip
    hold = rule_for_seconds("AgentwatchBudgetCritical")
    before = pairs.load()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    latencies: list[float] = []
    missed: list[str] = []
    try:
        if wait(lambda: controller_ready(throttle) and orchestrator_spend_seen(exporter), 120,
                0.5) is None:  # fmt: skip
            raise pairs.SetupError(
                f"the stack did not come up (Prometheus and Alertmanager: scripts/setup --test); "
                f"see {work / 'state' / 'logs'}"
            )
        if not has_drain(orchestrator):
            raise pairs.SetupError(
                f"the demo's orchestrator at {orchestrator} has no /drain (not the stand-in)"
            )
        for run in range(args.repeat):
            requests.post(f"{orchestrator}/usage", json={"spent_usd": 0.98 * BUDGET}, timeout=5)
            started = time.monotonic()
            done = wait(lambda: draining(orchestrator), 300)
            if done is None:
                missed.append(f"run {run + 1}: no throttle within 300 s")
                break
            latencies.append(done - started)
            print(f"run {run + 1}: spend reported -> orchestrator draining in "
                  f"{latencies[-1]:.1f} s", flush=True)  # fmt: skip
            # Back under budget: the alert resolves and the controller cancels its drain.
            requests.post(f"{orchestrator}/usage", json={"spent_usd": 0.0}, timeout=5)
            if wait(lambda: not draining(orchestrator), 300, 0.5) is None:
                missed.append(f"run {run + 1}: the drain was not cancelled within 300 s")
                break
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)
    i = args.interval
    # Worst case: the controller polls the spend (i), the exporter serves it, Prometheus
    # scrapes (i) and evaluates (i), `for:` holds, the alert is evaluated and sent, and the
    # controller reads Alertmanager (i).
    budget = i + i + i + hold + i
    print(pairs.load_line(before, pairs.load()))
    for text in missed:
        print(text)
    checks = [pairs.Check("runs without a throttle or without its cancel", len(missed), 0)]
    if latencies:
        print(pairs.spread_line("alert-to-throttle", latencies, "s"))
        print(f"configured sum {budget:.0f} s (controller {i:g} + scrape {i:g} + evaluation "
              f"{i:g} + for {hold:g} + controller {i:g})")  # fmt: skip
        checks.append(pairs.median_check("alert-to-throttle s", latencies, budget))
    result = {"interval_s": i, "for_s": hold, "configured_sum_s": budget,
              "latencies_s": latencies, "missed": missed}  # fmt: skip
    return pairs.verdict(checks, args.out, result)


if __name__ == "__main__":
    sys.exit(main())
