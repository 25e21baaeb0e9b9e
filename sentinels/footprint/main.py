"""One cycle of `agentwatch sentinel footprint`: scan /proc, keep the result for the spool.

The sentinel only reports "how many, how much"; whether the count is climbing and when it is
too high are Prometheus rules over the exported total (deriv / predict_linear), not code here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from prometheus_client.metrics_core import Metric

from agentwatch.core.log import FailureGate
from agentwatch.sentinels.contract import Context, SentinelError
from agentwatch.sentinels.footprint import classify
from agentwatch.sentinels.footprint.metrics import State, families
from agentwatch.sentinels.footprint.scan import Scanner

log = logging.getLogger("agentwatch.footprint")


def step(scanner: Scanner, state: State, gate: FailureGate) -> None:
    """One scan into the state; a failure is counted and logged through the gate, not raised."""
    started = time.perf_counter()
    try:
        result = scanner.scan()
    except Exception as err:  # /proc unlistable, or a bug: visible as a metric, loop goes on
        state.record_failure(time.perf_counter() - started)
        gate.failed(err)
        return
    state.record(result)
    gate.succeeded()


class Footprint:
    """The footprint sentinel's work: one /proc scan per cycle."""

    def __init__(self, context: Context):
        signatures_file = context.settings["signatures_file"]
        try:
            classifier = classify.load(signatures_file)
        except classify.SignatureError as err:
            raise SentinelError(f"cannot load the signatures: {err}") from err
        source = signatures_file or "the shipped signatures.json"
        log.info(
            "%d signatures from %s; kinds %s", len(classifier.signatures), source, classifier.kinds
        )
        self.scanner = Scanner(classifier)
        self.state = State(kinds=classifier.kinds)
        self.gate = FailureGate(log, "scan of /proc")

    def cycle(self, due: bool = True) -> None:
        step(self.scanner, self.state, self.gate)

    def families(self) -> Iterator[Metric]:
        return families(self.state)

    def close(self) -> None:
        pass
