"""One cycle of `agentwatch sentinel resources`: sample the agent session trees.

With --once there is no earlier sample to measure CPU against, so the cycle samples twice,
PRIME_SECONDS apart, and the second sample is published.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from prometheus_client.metrics_core import Metric

from agentwatch.core.config import Config
from agentwatch.sentinels.contract import Context
from agentwatch.sentinels.resources import host
from agentwatch.sentinels.resources.metrics import families
from agentwatch.sentinels.resources.sampler import Sample, Sampler
from agentwatch.sentinels.shared.tmux import Tmux

PRIME_SECONDS = 1.0
log = logging.getLogger("agentwatch.resources")


def build(config: Config) -> Sampler:
    settings = config.sentinel("resources")
    return Sampler(
        agent_names=config["agents"]["names"],
        tmux=Tmux(config["agents"]["tmux_sockets"]),
        orchestrator_pidfile=settings["orchestrator_pidfile"],
        orchestrator_name=settings["orchestrator_name"],
        max_sessions=settings["max_sessions"],
    )


class Resources:
    """The resources sentinel's work: one sample of every session tree per cycle."""

    def __init__(self, context: Context):
        self.sampler = build(context.config)
        self.once = context.once
        self.latest: Sample | None = None
        log.info(
            "watching sessions of %s every %.0f s",
            ", ".join(self.sampler.agent_names),
            context.settings["interval"],
        )

    def cycle(self, due: bool = True) -> None:
        if self.once and self.latest is None:
            self.sampler.cycle()
            time.sleep(PRIME_SECONDS)
        self.latest = self.sampler.cycle()

    def families(self) -> Iterator[Metric]:
        yield from families(self.latest, self.sampler.agent_names, self.sampler.errors)
        yield from host.families(host.read())

    def close(self) -> None:
        pass
