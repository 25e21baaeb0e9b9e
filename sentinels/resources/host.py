"""Host saturation (load per CPU, available memory): what adaptive concurrency rules compare.

Read straight from /proc, so a workstation needs no node_exporter for these alerts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

WINDOWS = ("1m", "5m", "15m")


@dataclass(frozen=True)
class Host:
    """The host's load, CPUs and memory at one reading."""

    load: tuple[float, float, float]
    cpus: int
    memory_total: int
    memory_available: int


def read(proc: Path = Path("/proc")) -> Host | None:
    """The current host figures, or None when /proc cannot be read (then nothing is exported)."""
    try:
        load_fields = (proc / "loadavg").read_text().split()
        meminfo = (proc / "meminfo").read_text()
    except OSError:
        return None
    memory: dict[str, int] = {}
    for line in meminfo.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            memory[name] = int(parts[0]) * 1024  # /proc/meminfo counts in KiB
    try:
        load = (float(load_fields[0]), float(load_fields[1]), float(load_fields[2]))
    except (IndexError, ValueError):
        return None
    if "MemTotal" not in memory or "MemAvailable" not in memory:
        return None
    cpus = len(os.sched_getaffinity(0)) if proc == Path("/proc") else os.cpu_count() or 1
    return Host(load, cpus, memory["MemTotal"], memory["MemAvailable"])


def families(host: Host | None) -> Iterator[Metric]:
    if host is None:
        return
    load = GaugeMetricFamily(
        "agentwatch_host_load_average", "Load average of the host.", labels=["window"]
    )
    for window, value in zip(WINDOWS, host.load, strict=True):
        load.add_metric([window], value)
    yield load
    yield GaugeMetricFamily(
        "agentwatch_host_cpus", "CPUs this host's processes may run on.", value=host.cpus
    )
    yield GaugeMetricFamily(
        "agentwatch_host_memory_total_bytes", "Memory of the host.", value=host.memory_total
    )
    yield GaugeMetricFamily(
        "agentwatch_host_memory_available_bytes",
        "Memory available for new work without swapping (MemAvailable).",
        value=host.memory_available,
    )
