"""One cycle of `agentwatch sentinel idle-error`: classify every agent pane's tail.

The sentinel reports each pane's state and since when; whether a stall has lasted too long is
a rule over `agentwatch_pane_state_since_timestamp_seconds` (threshold `stall_seconds`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator

from prometheus_client.metrics_core import Metric

from agentwatch.core.config import Config
from agentwatch.core.log import FailureGate
from agentwatch.sentinels.contract import Context
from agentwatch.sentinels.idle_error.classify import Observation, Settings, classify
from agentwatch.sentinels.idle_error.memory import Memory, Store
from agentwatch.sentinels.idle_error.metrics import Cycle, families
from agentwatch.sentinels.idle_error.panes import Capturer, PaneFinder
from agentwatch.sentinels.idle_error.patterns import Patterns, shipped

NAME = "idle-error"
log = logging.getLogger("agentwatch.idle_error")


def settings_of(config: Config) -> Settings:
    section = config.sentinel(NAME)
    return Settings(
        capture_rows=section["capture_rows"],
        window_lines=section["window_lines"],
        settle_time=section["settle_time"],
    )


class Sentinel:
    """One cycle: find agent panes, capture and classify each, update memory and counters."""

    def __init__(
        self,
        settings: Settings,
        finder: PaneFinder,
        capturer: Capturer,
        memory: Memory,
        patterns: Patterns,
        clock: Callable[[], float] = time.time,
    ):
        self.settings = settings
        self.finder = finder
        self.capturer = capturer
        self.memory = memory
        self.patterns = patterns
        self.clock = clock
        self.latest = Cycle()
        self.scan_gate = FailureGate(log, "finding agent panes")

    def cycle(self) -> Cycle:
        memory = self.memory
        try:
            panes, duplicates = self.finder.find()
            self.scan_gate.succeeded()
        except Exception as error:  # /proc unreadable, or a bug: visible, and the loop goes on
            self.scan_gate.failed(error)
            memory.capture_errors["proc_scan"] += 1
            self.latest = Cycle(tmux_failing=self.finder.tmux.failing)
            return self.latest
        if duplicates:
            memory.capture_errors["duplicate_pane"] += duplicates
        cycle = Cycle(tmux_failing=self.finder.tmux.failing)
        kept: dict[str, Observation] = {}
        for pane in panes:
            text = self.capturer.capture(pane)
            previous = memory.panes.get(pane.key)
            if text is None:
                if previous is not None:  # keep its history across a failed capture
                    kept[pane.key] = previous
                continue
            result = classify(text, previous, self.clock(), self.settings, self.patterns)
            kept[pane.key] = result.observation
            cycle.panes.append((pane, result))
            if result.fired:
                memory.fired[result.state] += 1
                log.info(
                    "pane %s (tmux session %r, %s) is %s (%s)",
                    pane.pane,
                    pane.session,
                    pane.agent,
                    result.state,
                    result.pattern,
                )
            if result.tail_changed:
                memory.suppressed.update(item.reason for item in result.suppressed)
        memory.capture_errors.update(self.capturer.errors)
        self.capturer.errors.clear()
        memory.panes = kept  # panes that closed are forgotten
        self.latest = cycle
        return cycle


class IdleError:
    """The idle-error sentinel's work: one classification of every agent pane per cycle,
    its memory saved so a restart keeps each pane's state and since-when."""

    def __init__(self, context: Context):
        config = context.config
        settings = settings_of(config)
        agents = config["agents"]
        self.store = Store(context.state_dir)
        self.sentinel = Sentinel(
            settings,
            PaneFinder(agents["tmux_sockets"], agents["names"]),
            Capturer(settings.capture_rows),
            self.store.load(),
            shipped(),
        )
        self.save_gate = FailureGate(log, f"saving {self.store.path}")
        log.info(
            "classifying panes of %s every %.0f s (last %d non-empty lines of %d rows)",
            ", ".join(agents["names"]),
            context.settings["interval"],
            settings.window_lines,
            settings.capture_rows,
        )

    def cycle(self, due: bool = True) -> None:
        self.sentinel.cycle()
        try:
            self.store.save(self.sentinel.memory)
            self.save_gate.succeeded()
        except OSError as error:
            self.save_gate.failed(error)

    def families(self) -> Iterator[Metric]:
        return families(self.sentinel.latest, self.sentinel.memory)

    def close(self) -> None:
        pass
