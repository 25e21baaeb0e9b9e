"""The one loop every sentinel runs: fixed pacing, wake-ups, the publish gate, failures that
are counted and logged once, and a spool that cannot be written is survived."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from agentwatch.core.loop import Loop, Outcome
from tests.conftest import samples


class Probe:
    """Work that records its cycles and can be told to be slow, changed, or failing."""

    def __init__(self, loop: Loop, stop_after: int, busy: float = 0.0):
        self.loop = loop
        self.stop_after = stop_after
        self.busy = busy
        self.starts: list[tuple[float, bool]] = []
        self.rendered = 0
        self.closed = False
        self.fail: set[int] = set()  # cycle numbers that raise
        self.again_in: float | None = None

    def cycle(self, due: bool) -> Outcome:
        self.starts.append((time.monotonic(), due))
        if len(self.starts) >= self.stop_after:
            self.loop.stop()
        if len(self.starts) in self.fail:
            raise RuntimeError("the input is broken")
        time.sleep(self.busy)
        return Outcome(again_in=self.again_in)

    def families(self) -> Iterator[Metric]:
        self.rendered += 1
        yield GaugeMetricFamily("agentwatch_probe_cycles", "Cycles so far.", value=len(self.starts))

    def close(self) -> None:
        self.closed = True


def test_cycles_keep_a_fixed_schedule_however_long_they_take(tmp_path: Path) -> None:
    loop = Loop("probe", 0.4, tmp_path)
    work = Probe(loop, stop_after=5, busy=0.25)
    assert loop.run(work) == 0
    starts = [at for at, _ in work.starts]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(0.3 < gap < 0.55 for gap in gaps), gaps  # drifting would be 0.65 each
    assert all(due for _, due in work.starts) and work.closed


def test_a_wake_up_runs_a_cycle_early_and_not_as_due(tmp_path: Path) -> None:
    loop = Loop("probe", 30.0, tmp_path)
    work = Probe(loop, stop_after=2)
    threading.Timer(0.3, loop.wake).start()
    started = time.monotonic()
    loop.run(work)
    assert time.monotonic() - started < 5
    assert [due for _, due in work.starts] == [True, False]


def test_the_publish_gate_bounds_spool_writes_in_a_burst(tmp_path: Path) -> None:
    loop = Loop("probe", 60.0, tmp_path, publish_gap=0.1)
    work = Probe(loop, stop_after=400, busy=0.002)
    work.again_in = 0.0  # every cycle changed something and asks for the next at once
    started = time.monotonic()
    loop.run(work)
    elapsed = time.monotonic() - started
    assert len(work.starts) == 400
    assert work.rendered <= elapsed / 0.1 + 2, (work.rendered, elapsed)
    assert work.rendered >= 2  # the first cycle, the last one, and the gate's in between
    text = (tmp_path / "probe.prom").read_text()
    assert samples(text)[("agentwatch_probe_cycles", ())] == 400  # the last state is written


def test_a_failing_cycle_is_counted_logged_once_and_the_loop_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loop = Loop("probe", 0.05, tmp_path)
    work = Probe(loop, stop_after=8)
    work.fail = {2, 3, 4, 5}
    with caplog.at_level(logging.INFO, logger="agentwatch.loop"):
        assert loop.run(work) == 0
    assert len(work.starts) == 8 and loop.cycle_failures == 4
    text = (tmp_path / "probe.prom").read_text()
    assert (
        samples(text)[("agentwatch_sentinel_cycle_failures_total", (("sentinel", "probe"),))] == 4
    )
    lines = [record.getMessage() for record in caplog.records]
    assert lines.count("probe: cycle failing: RuntimeError: the input is broken") == 1
    assert "probe: cycle recovered after 4 failed attempts" in lines


def test_a_spool_that_cannot_be_written_is_survived(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the spool folder should be")
    loop = Loop("probe", 0.05, blocked)
    work = Probe(loop, stop_after=5)
    with caplog.at_level(logging.WARNING, logger="agentwatch.loop"):
        assert loop.run(work) == 0
    assert len(work.starts) == 5
    failing = [r for r in caplog.records if "spool file in" in r.getMessage()]
    assert len(failing) == 1, [r.getMessage() for r in caplog.records]


def test_once_runs_one_cycle_publishes_and_closes(tmp_path: Path) -> None:
    loop = Loop("probe", 60.0, tmp_path)
    work = Probe(loop, stop_after=100)
    assert loop.run(work, once=True) == 0
    assert len(work.starts) == 1 and work.closed
    assert "agentwatch_probe_cycles 1.0" in (tmp_path / "probe.prom").read_text()
