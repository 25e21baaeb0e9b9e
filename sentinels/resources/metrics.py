"""The resources sentinel's metric families, built fresh from the latest sample at each write."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from agentwatch.core.sanitize import label_value
from agentwatch.sentinels.resources.sampler import GROUPS, SESSION_LABELS, Sample, Usage

P = "agentwatch_agent_session_"
G = "agentwatch_resources_"


def families(
    sample: Sample | None, agent_names: list[str], errors: Counter[str]
) -> Iterator[Metric]:
    if sample is None:
        return
    labels = list(SESSION_LABELS)
    cpu = CounterMetricFamily(
        P + "cpu_seconds",
        "CPU seconds used by the session's whole process tree since the sentinel saw it start.",
        labels=labels,
    )
    cores = GaugeMetricFamily(
        P + "cpu_cores",
        "CPU seconds per second used by the session's tree over the last interval (1 = a core).",
        labels=labels,
    )
    rss = GaugeMetricFamily(
        P + "resident_memory_bytes",
        "Resident memory summed over the session's tree (shared pages count in each process).",
        labels=labels,
    )
    count = GaugeMetricFamily(P + "processes", "Processes in the session's tree.", labels=labels)
    start = GaugeMetricFamily(
        P + "start_timestamp_seconds", "When the session's root process started.", labels=labels
    )
    for session in sorted(sample.sessions, key=lambda s: int(s.labels["pid"])):
        values = [session.labels[name] for name in SESSION_LABELS]
        usage = session.usage
        if usage.cpu_total is not None and usage.cores is not None:
            cpu.add_metric(values, usage.cpu_total)
            cores.add_metric(values, usage.cores)
        rss.add_metric(values, usage.rss)
        count.add_metric(values, usage.processes)
        start.add_metric(values, session.start)
    yield from (cpu, cores, rss, count, start)

    sessions = GaugeMetricFamily(
        "agentwatch_agent_sessions", "Live agent sessions by agent CLI.", labels=["agent"]
    )
    for name in sorted({label_value(name) for name in agent_names} | set(sample.agents)):
        sessions.add_metric([name], sample.agents.get(name, 0))
    yield sessions
    yield GaugeMetricFamily(
        G + "sessions_folded",
        "Live agent sessions past max_sessions: in the totals, without per-session series.",
        value=sample.folded,
    )

    yield from _groups(sample.groups)

    running = GaugeMetricFamily(
        G + "orchestrator_running",
        "1 when the configured orchestrator (pid file or name) has a live process.",
    )
    if sample.orchestrator_running is not None:
        running.add_metric([], float(sample.orchestrator_running))
    yield running
    pidfile = GaugeMetricFamily(
        G + "orchestrator_pidfile_failing",
        "1 when the configured pid file cannot be read as one: missing, not a regular file, "
        "too large, or not starting with a process id.",
    )
    if sample.pidfile_failing is not None:
        pidfile.add_metric([], float(sample.pidfile_failing))
    yield pidfile

    yield GaugeMetricFamily(
        G + "processes_scanned", "Processes read in the last scan.", value=sample.scanned
    )
    yield GaugeMetricFamily(
        G + "scan_duration_seconds",
        "Wall time of the last process-table scan.",
        value=sample.duration,
    )
    failed = CounterMetricFamily(
        G + "scan_errors",
        "Processes skipped while scanning: vanished (exited mid-scan), denied, malformed.",
        labels=["reason"],
    )
    for reason, value in sorted(errors.items()):
        failed.add_metric([reason], value)
    yield failed
    yield GaugeMetricFamily(
        G + "tmux_panes", "tmux panes found in the last query.", value=sample.tmux_panes
    )
    yield GaugeMetricFamily(
        G + "tmux_failing",
        "tmux servers whose last query failed (not: servers not running).",
        value=sample.tmux_failing,
    )


def _groups(groups: dict[str, Usage]) -> Iterator[Metric]:
    what = "all agent sessions together, agentwatch itself, or the orchestrator"
    cpu = CounterMetricFamily(G + "cpu_seconds", f"CPU seconds used by {what}.", labels=["group"])
    cores = GaugeMetricFamily(
        G + "cpu_cores", f"CPU seconds per second over the last interval: {what}.", labels=["group"]
    )
    rss = GaugeMetricFamily(
        G + "resident_memory_bytes", f"Resident memory of {what}.", labels=["group"]
    )
    count = GaugeMetricFamily(G + "processes", f"Processes of {what}.", labels=["group"])
    for name in GROUPS:
        usage = groups.get(name)
        if usage is None:
            continue
        if usage.cpu_total is not None and usage.cores is not None:
            cpu.add_metric([name], usage.cpu_total)
            cores.add_metric([name], usage.cores)
        rss.add_metric([name], usage.rss)
        count.add_metric([name], usage.processes)
    yield from (cpu, cores, rss, count)
