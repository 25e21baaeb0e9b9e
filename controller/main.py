"""`agentwatch controller`: read alerts, decide, apply, publish — every `interval` seconds.

One cycle: read every Alertmanager, run the pure policy, resolve the budget cap, push the
decision through the adapter (with backoff), run nudges, then write the state file, the spool
file `controller.prom` and the /throttle body. Nothing in a cycle may end the process: bad
input degrades to hold/fallback, and a failing step is logged through a gate and shows in the
metrics. `--once` runs one cycle and exits 0 (the memory in the state file carries over).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client.metrics_core import Metric

from agentwatch.controller import (
    adapters,
    continuation,
    metrics,
    orchestrators,
    policy,
    server,
    state,
)
from agentwatch.controller.alerts import AlertReader
from agentwatch.controller.budget import BudgetResolver
from agentwatch.controller.continuation import ContinuationReader
from agentwatch.controller.nudge import Nudger
from agentwatch.controller.spend import SpendReader
from agentwatch.controller.web import redact
from agentwatch.core import claude, paths, spool_readers
from agentwatch.core.config import Config
from agentwatch.core.http import ListenError
from agentwatch.core.log import FailureGate
from agentwatch.core.loop import Loop, Outcome
from agentwatch.core.team import controller_match

NAME = spool_readers.CONTROLLER  # its loop, its spool file (`controller.prom`: mcp reads it)
if TYPE_CHECKING:  # argparse itself only when the command line needs it (cli/main.py)
    import argparse

log = logging.getLogger("agentwatch.controller")


def settings_from(section: Mapping[str, Any]) -> policy.Settings:
    """The policy knobs from the config section; ValueError names the bad key."""
    return policy.Settings(
        max_agents=int(section["max_agents"]),
        min_agents=int(section["min_agents"]),
        shrink_cooldown=float(section["shrink_cooldown"]),
        grow_sustain=float(section["grow_sustain"]),
        breaker_cooldown=float(section["breaker_cooldown"]),
        probe_window=float(section["probe_window"]),
        hold_for=float(section["hold_for"]),
        fallback=str(section["fallback"]),
        escalate_after=float(section["burn"]["escalate_after"]),
        verify_after=float(section["burn"]["verify_after"]),
        verify_fraction=float(section["burn"]["verify_fraction"]),
    )


def describe(public: Mapping[str, Any]) -> str:
    """One log line's worth of decision, without secrets or free text."""
    deferred = ",".join(public["deferred_tiers"]) or "-"
    tasks = ",".join(public["fail_tasks"]) or "-"
    return (
        f"max_agents {public['max_agents']} (effective {public['effective_max_agents']}), "
        f"paused {'yes' if public['paused'] else 'no'}, "
        f"stop {'yes' if public['should_stop'] else 'no'}, breaker {public['breaker']}, "
        f"deferred tiers {deferred}, fail tasks {tasks}, mode {public['mode']}"
    )


class Controller:
    """The loop's state and one cycle; built by `run`, driven directly by tests."""

    def __init__(
        self,
        config: Config,
        settings: policy.Settings,
        urls: list[str],
        state_file: Path,
        adapter: adapters.Adapter | None,
        env: Mapping[str, str],
        spool_dir: Path | None = None,
        state_dir: Path | None = None,
    ):
        section = config["controller"]
        self.settings = settings
        self.state_file = state_file
        self.env = env
        self.reader = AlertReader(urls, float(section["timeout"]), match=controller_match(config))
        self.budget = BudgetResolver(
            section["run_config_file"],
            float(section["budget_usd"]),
            section["bernstein_config_file"],
        )
        self.spend = SpendReader(
            spool_dir if spool_dir is not None else config.spool_dir,
            state_dir if state_dir is not None else config.state_dir,
            str(section["budget_period"]),
        )
        self.memory = state.load(state_file, settings)
        self.continuation = ContinuationReader(
            continuation.events_file(self.budget.bernstein_config_file), self.memory
        )
        if self.memory.discarded is not None:
            self.memory.count("state_discarded", self.memory.discarded)
        self.driver = adapters.Driver(adapter, self.memory) if adapter else None
        roots = claude.projects_roots(configured=config.claude_config_dirs)
        self.nudger = Nudger(section["nudge"], roots, self.memory, spool_dir=spool_dir)
        self.board = server.Board()
        self.view = metrics.View(
            memory=self.memory,
            settings=settings,
            alertmanagers={redact(url): False for url in urls},
            adapter=adapter.name if adapter else None,
        )
        self.cycle_gate = FailureGate(log, "controller cycle")
        self.write_gate = FailureGate(log, f"state file {state_file}")
        self.started = False
        self.warned_unusable: set[str] = set()

    def cycle(self, now: float | None = None) -> None:
        """Read, decide, apply, publish. Never raises."""
        now = time.time() if now is None else now
        try:
            self._cycle(now)
        except Exception as err:  # a bug must not stop the throttle: log, count, go on
            log.debug("controller cycle failed", exc_info=True)
            self.cycle_gate.failed(f"{type(err).__name__}: {err}")
        else:
            self.cycle_gate.succeeded()

    def _cycle(self, now: float) -> None:
        snapshot = self.reader.read()
        if snapshot.malformed:
            self.memory.count("malformed_alerts", "", snapshot.malformed)
        for reason, peers in snapshot.errors.items():
            self.memory.count("alertmanager_errors", reason, peers)
        if snapshot.alerts is not None:
            self._warn_unusable(policy.collect(snapshot.alerts).unusable)
        previous = self.memory.policy
        decided = policy.decide(previous, snapshot.alerts, now, self.settings)
        self.memory.policy = decided
        for reason in decided.changes:
            self.memory.count("decisions", reason)
        for note in decided.notes:
            log.info("%s", note)
        for task in self.memory.deadline_exceeded(decided.fail_tasks, now):
            log.info("task %s failed for its deadline (counted once)", task)
        budget = self.budget.resolve(self.env)
        public = state.decision(decided, self.settings, budget)
        self._log_change(previous, decided, public)
        if self.driver is not None:
            self.driver.observe()
            self.driver.push(public, now)
        self.nudger.step(decided.nudges, snapshot.alerts is not None, now)
        self.continuation.read()
        self.view.alertmanagers = snapshot.up
        self.view.alerts = snapshot.alerts
        self.view.budget = budget
        if self.driver is not None:
            self.view.adapter_failing = self.driver.failing
            self.view.reading = self.driver.reading
        reading = self.view.reading
        self.view.spent = self.spend.read(
            reading.cost_usd if reading is not None and reading.up else None,
            guarding=budget[0] > 0,
        )
        try:
            state.write(self.state_file, state.document(public, self.memory))
        except OSError as err:
            self.write_gate.failed(err)
        else:
            self.write_gate.succeeded()
        self.board.publish(public)

    def _warn_unusable(self, names: tuple[str, ...]) -> None:
        for name in names:
            if name not in self.warned_unusable:
                log.warning(
                    "alert %s asks for an action the controller cannot use (unknown "
                    "agentwatch_action or missing/invalid task, tier, tmux_session or pane "
                    "label): ignored",
                    name,
                )
        self.warned_unusable = set(names)

    def _log_change(
        self, previous: policy.State, decided: policy.State, public: Mapping[str, Any]
    ) -> None:
        reasons = ", ".join(public["reasons"]) or "no actionable alerts"
        if not self.started:
            self.started = True
            log.info("decision: %s; because: %s", describe(public), reasons)
            return
        if decided.changes:
            log.info(
                "decision changed (%s): %s; because: %s",
                ", ".join(decided.changes),
                describe(public),
                reasons,
            )
        if previous.mode != decided.mode:
            if decided.mode == "holding":
                log.warning(
                    "no Alertmanager answered: holding the last decision for up to %.0fs",
                    self.settings.hold_for,
                )
            elif decided.mode == "fallback":
                log.warning(
                    "no Alertmanager answered for over %.0fs: fallback %r",
                    self.settings.hold_for,
                    self.settings.fallback,
                )
            else:
                log.info("an Alertmanager answers again: deciding from live alerts")

    def next_wake(self, now: float, interval: float) -> float:
        """Seconds to sleep: the interval, or sooner when an adapter retry is due."""
        wait = interval
        retry_at = self.driver.retry_at() if self.driver is not None else None
        if retry_at is not None:
            wait = min(wait, max(1.0, retry_at - now))
        return wait


def _urls(values: list[str]) -> list[str]:
    bad = [redact(url) for url in values if not url.startswith(("http://", "https://"))]
    if bad or not values:
        raise ValueError(f"Alertmanager URLs must start with http:// or https:// ({bad})")
    return list(dict.fromkeys(values))


def run(config: Config, args: argparse.Namespace) -> int:
    """The `agentwatch controller` command; 0 after --once or a clean stop, 2 on bad config."""
    section = config["controller"]
    try:
        settings = settings_from(section)
        urls = _urls(getattr(args, "alertmanager", None) or section["alertmanagers"])
        adapter = orchestrators.build(section["orchestrator"], os.environ)
    except ValueError as err:
        log.error("controller config: %s", err)
        return 2
    state_dir = getattr(args, "state_dir", None) or config.state_dir
    state_file = (
        getattr(args, "state_file", None) or section["state_file"] or state_dir / "controller.json"
    )
    spool_dir = getattr(args, "spool_dir", None) or config.spool_dir
    paths.ensure_dir(spool_dir, mode=0o755)
    paths.ensure_dir(state_file.parent)
    controller = Controller(
        config, settings, urls, state_file, adapter, os.environ, spool_dir, state_dir
    )
    interval = float(section["interval"])
    loop = Loop(NAME, interval, spool_dir)
    once = bool(getattr(args, "once", False))
    http = None
    if not once:
        listen = getattr(args, "listen", None) or section["listen"]
        try:
            http = server.start(controller.board, listen, section["web_config_file"])
        except ListenError as err:  # the one line says HOST:PORT and why
            log.error("%s", err)
            return 2
        except (OSError, ValueError) as err:
            log.error("cannot listen on %s: %s", listen, err)
            return 2
        log.info(
            "controller: %d Alertmanager(s), adapter %s, GET %s://%s/throttle, state %s",
            len(urls),
            adapter.name if adapter else "none",
            http.scheme,
            listen,
            state_file,
        )
        loop.stop_on_signals()
    try:
        return loop.run(_Work(controller, interval), once)
    finally:
        if http is not None:
            http.shutdown()
            http.server_close()


class _Work:
    """The controller as the loop's work: one read-decide-apply cycle, then its metrics."""

    def __init__(self, controller: Controller, interval: float):
        self.controller = controller
        self.interval = interval

    def cycle(self, due: bool) -> Outcome:
        self.controller.cycle()
        return Outcome(again_in=self.controller.next_wake(time.time(), self.interval))

    def families(self) -> Iterable[Metric]:
        return metrics.families(self.controller.view)

    def close(self) -> None:
        pass
