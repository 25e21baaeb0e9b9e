"""`agentwatch sentinel resources`: sample agent session trees on a timer, write the spool file.

With --once there is no earlier sample to measure CPU against, so the cycle is run twice,
PRIME_SECONDS apart, and the second one is published.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from agentwatch.exporter.config import Config
from agentwatch.exporter.runtime import Runner
from agentwatch.sentinels.resources import host
from agentwatch.sentinels.resources.metrics import families
from agentwatch.sentinels.resources.sampler import Sample, Sampler
from agentwatch.sentinels.resources.tmux import Tmux

NAME = "resources"
PRIME_SECONDS = 1.0
log = logging.getLogger("agentwatch.resources")


def build(config: Config) -> Sampler:
    settings = config.sentinel(NAME)
    return Sampler(
        agent_names=settings["agent_names"],
        tmux=Tmux(settings["tmux_sockets"]),
        orchestrator_pidfile=settings["orchestrator_pidfile"],
        orchestrator_name=settings["orchestrator_name"],
    )


def run(config: Config, spool_dir: Path, state_dir: Path, once: bool) -> int:
    settings = config.sentinel(NAME)
    sampler = build(config)
    latest: list[Sample] = []

    def current() -> list:
        sample = latest[-1] if latest else None
        return [*families(sample, sampler.agent_names, sampler.errors), *host.families(host.read())]

    runner = Runner(NAME, settings["interval"], spool_dir, current)
    runner.stop_on_signals()
    log.info(
        "watching sessions of %s every %.0f s", ", ".join(sampler.agent_names), runner.interval
    )
    if once:
        sampler.cycle()
        time.sleep(PRIME_SECONDS)
    while True:
        started = time.monotonic()
        latest[:] = [sampler.cycle()]
        runner.publish()
        if once or runner.stopping:
            return 0
        runner.wait(max(runner.interval - (time.monotonic() - started), 0.0))
