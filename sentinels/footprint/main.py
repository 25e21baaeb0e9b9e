"""`agentwatch sentinel footprint`: scan /proc on a slow timer and write the spool file.

The sentinel only reports "how many, how much"; whether the count is climbing and when it is
too high are Prometheus rules over the exported total (deriv / predict_linear), not code here.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from agentwatch.exporter.config import Config
from agentwatch.exporter.log import FailureGate
from agentwatch.exporter.runtime import Runner
from agentwatch.sentinels.footprint import classify
from agentwatch.sentinels.footprint.metrics import State, families
from agentwatch.sentinels.footprint.scan import Scanner

NAME = "footprint"
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


def run(config: Config, spool_dir: Path, state_dir: Path, once: bool) -> int:
    settings = config.sentinel(NAME)
    try:
        classifier = classify.load(settings["signatures_file"])
    except classify.SignatureError as err:
        log.error("cannot load the signatures: %s", err)
        return 2
    source = settings["signatures_file"] or "the shipped signatures.json"
    log.info(
        "%d signatures from %s; kinds %s", len(classifier.signatures), source, classifier.kinds
    )
    scanner = Scanner(classifier)
    state = State(kinds=classifier.kinds)
    gate = FailureGate(log, "scan of /proc")
    runner = Runner(NAME, settings["interval"], spool_dir, lambda: families(state))
    runner.stop_on_signals()
    while True:
        step(scanner, state, gate)
        runner.publish()
        if once or runner.stopping:
            return 0
        runner.wait(runner.interval)
