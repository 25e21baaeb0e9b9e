"""The footprint's metric families, built fresh from the sentinel's state at each write.

Only fixed `kind` labels (every kind of the signature list, 0 when absent) — never per-PID
series, so processes that come and go leave nothing behind. While the latest scan failed, the
per-kind and total series are left OUT (not zero, not the stale last value): a failed scan must
not read as "no agents", and rules see a gap plus `scan_success 0` instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from agentwatch.sentinels.footprint.scan import Scan

PREFIX = "agentwatch_footprint_"


@dataclass
class State:
    """What the loop knows: the latest good scan (if the latest attempt succeeded) and errors."""

    kinds: tuple[str, ...]
    latest: Scan | None = None  # None while the most recent attempt failed (or none yet)
    last_success: float | None = None  # wall time of the last good scan, kept across failures
    last_duration: float | None = None  # of the latest attempt, good or failed
    errors: int = 0
    vanished: int = 0
    succeeded: bool = False

    def record(self, scan: Scan) -> None:
        self.latest, self.succeeded = scan, True
        self.last_success = scan.finished_at
        self.last_duration = scan.duration_seconds
        self.vanished += scan.vanished

    def record_failure(self, duration: float) -> None:
        self.latest, self.succeeded = None, False
        self.last_duration = duration
        self.errors += 1


def _gauge(name: str, doc: str, value: float | None = None) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, value=value)


def families(state: State) -> Iterator[Metric]:
    scan = state.latest
    if scan is not None:
        processes = GaugeMetricFamily(
            PREFIX + "processes",
            "Agent-related processes on the host by kind (first matching signature).",
            labels=["kind"],
        )
        memory = GaugeMetricFamily(
            PREFIX + "resident_memory_bytes",
            "Resident memory (RSS, shared pages counted per process) of those processes by kind.",
            labels=["kind"],
        )
        for kind in state.kinds:
            processes.add_metric([kind], scan.counts.get(kind, 0))
            memory.add_metric([kind], scan.resident_bytes.get(kind, 0))
        yield processes
        yield memory
        yield _gauge(
            "agent_processes",
            "Agent-related processes of every kind (what trend rules deriv()/predict_linear()).",
            scan.total,
        )
        yield _gauge(
            "agent_resident_memory_bytes",
            "Resident memory of agent-related processes of every kind.",
            scan.total_resident_bytes,
        )
        yield _gauge(
            "host_processes", "Live user-space processes the scan saw.", scan.processes_seen
        )
    yield _gauge("scan_success", "1 when the latest scan of /proc succeeded.", int(state.succeeded))
    yield CounterMetricFamily(
        PREFIX + "scan_errors",
        "Scans of /proc that failed since the sentinel started.",
        state.errors,
    )
    yield CounterMetricFamily(
        PREFIX + "processes_vanished",
        "Processes that exited or became unreadable while being scanned (skipped, not errors).",
        state.vanished,
    )
    if state.last_duration is not None:
        yield _gauge(
            "scan_duration_seconds", "Wall time of the latest scan attempt.", state.last_duration
        )
    if state.last_success is not None:
        yield _gauge(
            "last_success_timestamp_seconds",
            "When the last good scan finished.",
            state.last_success,
        )
