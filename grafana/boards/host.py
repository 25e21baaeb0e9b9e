"""The Host dashboard: the agent process footprint against its cap, host load and memory,
and what each session costs the machine."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row

from agentwatch.grafana.panels import (
    OK_FAILING,
    bargauge,
    counts_now_and_over_time,
    dashboard,
    label_variable,
    stat,
    table,
    timeseries,
)
from agentwatch.grafana.queries import (
    HOST,
    PER_HOUR,
    PROJECT,
    gauge_by,
    gauges_by,
    level,
    millis,
    rate,
    sel,
    target,
)


def host() -> Dashboard:
    session_labels = "project, agent, pid, tmux_session, tmux_pane"
    session_legend = "{{project}} {{agent}} pid {{pid}} {{tmux_session}}{{tmux_pane}}"
    session = gauges_by(PROJECT, by=session_labels)
    processes = sel("agentwatch_footprint_agent_processes")
    footprint = [
        *counts_now_and_over_time(
            level("agentwatch_footprint_processes", by="kind"),
            now=(
                "Agent-related processes by kind",
                "Processes on the host by kind (first matching signature of the footprint "
                "sentinel).",
            ),
            over_time=(
                "Footprint by kind",
                "Agent-related processes by kind over time: a kind that only climbs (MCP servers, "
                "headless browsers) is leaking.",
            ),
        ),
        timeseries(
            "Footprint against the cap",
            "All agent-related processes, where the 1-hour trend puts them in 4 hours, and "
            "thresholds.footprint_processes above which concurrency shrinks.",
            [
                level("agentwatch_footprint_agent_processes", legend="processes"),
                target(
                    f"max by ({HOST}) (predict_linear({processes}[1h], 4 * 3600))",
                    "in 4 h at the 1 h trend",
                ),
            ],
            limit=("footprint_processes", "cap"),
        ),
        timeseries(
            "Footprint memory by kind",
            "Resident memory of agent-related processes by kind (shared pages counted per process, "
            "as ps does).",
            level("agentwatch_footprint_resident_memory_bytes", by="kind"),
            "bytes",
            stack=True,
        ),
        stat(
            "Footprint growth",
            "Change of agent-related processes per hour over the last hour (deriv); positive for "
            "long means something piles up.",
            target(f"max by ({HOST}) (deriv({processes}[1h]))" + PER_HOUR),
            w=6,
            decimals=1,
            steps=[(None, "green"), (1, "orange"), (10, "red")],
        ),
        stat(
            "Agent-related memory",
            "Resident memory of all agent-related processes.",
            level("agentwatch_footprint_agent_resident_memory_bytes"),
            "bytes",
            w=6,
        ),
        stat(
            "Host processes",
            "User-space processes the footprint scan saw, for context.",
            level("agentwatch_footprint_host_processes"),
            w=6,
        ),
        stat(
            "Footprint scan",
            "Whether the latest /proc scan succeeded (while it fails the per-kind series are left "
            "out, not zeroed).",
            level("agentwatch_footprint_scan_success", how="min"),
            "none",
            w=6,
            mappings=OK_FAILING,
        ),
    ]
    machine = [
        timeseries(
            "Load per CPU",
            "Load averages divided by the CPU count; above thresholds.host_load_per_cpu (5-minute "
            "window) spawning pauses.",
            target(
                f"{gauge_by('agentwatch_host_load_average', by='window')} "
                f"/ on ({HOST}) group_left () {gauge_by('agentwatch_host_cpus')}",
                "{{window}}",
            ),
            limit=("host_load_per_cpu", "pause above"),
        ),
        timeseries(
            "Available memory",
            "Available memory as a share of the total; below "
            "thresholds.host_memory_available_ratio concurrency shrinks.",
            target(
                f"{gauge_by('agentwatch_host_memory_available_bytes')} / "
                f"{gauge_by('agentwatch_host_memory_total_bytes')}",
                "available",
            ),
            "percentunit",
            limit=("host_memory_available_ratio", "shrink below"),
        ),
        timeseries(
            "CPU by group (cores)",
            "CPU seconds per second of all agent sessions, agentwatch itself and the orchestrator "
            "(without its agents); 1 = one busy core.",
            target(rate("agentwatch_resources_cpu_seconds_total", by="group"), "{{group}}"),
        ),
        timeseries(
            "Memory by group",
            "Resident memory of all agent sessions, agentwatch itself and the orchestrator.",
            level("agentwatch_resources_resident_memory_bytes", by="group"),
            "bytes",
        ),
    ]
    per_session = [
        timeseries(
            "CPU per session (cores)",
            "CPU seconds per second of each session's whole process tree; a tree sustained above "
            "thresholds.session_cpu_cores is runaway.",
            target(
                rate("agentwatch_agent_session_cpu_seconds_total", PROJECT, by=session_labels),
                session_legend,
            ),
            limit=("session_cpu_cores", "runaway above"),
        ),
        timeseries(
            "Memory per session",
            "Resident memory summed over each session's process tree; above "
            "thresholds.session_memory_bytes it is runaway.",
            target(session("agentwatch_agent_session_resident_memory_bytes"), session_legend),
            "bytes",
            limit=("session_memory_bytes", "runaway above"),
        ),
        timeseries(
            "Processes per session",
            "Processes in each session's tree (zombies not counted).",
            target(session("agentwatch_agent_session_processes"), session_legend),
            decimals=0,
        ),
        bargauge(
            "Live sessions by agent",
            "Live sessions per configured agent CLI.",
            level("agentwatch_agent_sessions", by="agent"),
            w=12,
        ),
        table(
            "Live sessions",
            "Each live session's process tree now.",
            [
                (
                    millis(session("agentwatch_agent_session_start_timestamp_seconds")),
                    "started",
                    "dateTimeFromNow",
                ),
                (session("agentwatch_agent_session_cpu_cores"), "CPU cores", "short"),
                (session("agentwatch_agent_session_resident_memory_bytes"), "memory", "bytes"),
                (session("agentwatch_agent_session_processes"), "processes", "short"),
            ],
            sort_by="memory",
        ),
    ]
    return dashboard(
        "agentwatch-host",
        "agentwatch / Host",
        "What the agents leave running on the workstation, and what each session's process tree "
        "uses.",
        [label_variable("project", "Project", "agentwatch_agent_session_processes")],
        [Row("Footprint"), *footprint, Row("Host"), *machine, Row("Sessions"), *per_session],
    )
