"""The resources sentinel: CPU, memory and process count of each agent session's whole tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentwatch.core.config import (
    Key,
    missing_path,
    optional_path,
    optional_string,
    positive_int,
)
from agentwatch.sentinels.contract import Context, Sentinel

if TYPE_CHECKING:
    from agentwatch.core.loop import Work


def _build(context: Context) -> Work:
    from agentwatch.sentinels.resources.main import Resources

    return Resources(context)


SENTINEL = Sentinel(
    name="resources",
    summary="CPU, memory and processes of each agent session's whole process tree",
    interval=15.0,
    keys={
        "orchestrator_pidfile": Key(
            None, optional_path, "pid file of the orchestrator", missing_path
        ),
        "orchestrator_name": Key(None, optional_string, "process name of the orchestrator"),
        "max_sessions": Key(
            500, positive_int, "live sessions exported one by one; the newest past it fold"
        ),
    },
    metrics=(
        "agentwatch_agent_session_cpu_seconds_total",
        "agentwatch_agent_session_cpu_cores",
        "agentwatch_agent_session_resident_memory_bytes",
        "agentwatch_agent_session_processes",
        "agentwatch_agent_session_start_timestamp_seconds",
        "agentwatch_agent_sessions",
        "agentwatch_resources_sessions_folded",
        "agentwatch_resources_cpu_seconds_total",
        "agentwatch_resources_cpu_cores",
        "agentwatch_resources_resident_memory_bytes",
        "agentwatch_resources_processes",
        "agentwatch_resources_orchestrator_running",
        "agentwatch_resources_orchestrator_pidfile_failing",
        "agentwatch_resources_processes_scanned",
        "agentwatch_resources_scan_duration_seconds",
        "agentwatch_resources_scan_errors_total",
        "agentwatch_resources_tmux_panes",
        "agentwatch_resources_tmux_failing",
        "agentwatch_host_load_average",
        "agentwatch_host_cpus",
        "agentwatch_host_memory_total_bytes",
        "agentwatch_host_memory_available_bytes",
    ),
    build=_build,
)
