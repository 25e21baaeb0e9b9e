"""The footprint sentinel: how many agent-related processes the host runs, by kind.

classify: signatures and the first-match classifier; scan: one pass over /proc;
metrics: the families written to the spool; main: one cycle of `agentwatch sentinel footprint`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentwatch.core.config import Key, missing_path, optional_path
from agentwatch.sentinels.contract import Context, Sentinel

if TYPE_CHECKING:
    from agentwatch.core.loop import Work


def _build(context: Context) -> Work:
    from agentwatch.sentinels.footprint.main import Footprint

    return Footprint(context)


SENTINEL = Sentinel(
    name="footprint",
    summary="host-wide count and memory of agent-related processes by kind",
    interval=60.0,
    keys={
        "signatures_file": Key(
            None, optional_path, "a JSON signature list replacing the shipped one", missing_path
        ),
    },
    metrics=(
        "agentwatch_footprint_processes",
        "agentwatch_footprint_resident_memory_bytes",
        "agentwatch_footprint_agent_processes",
        "agentwatch_footprint_agent_resident_memory_bytes",
        "agentwatch_footprint_host_processes",
        "agentwatch_footprint_scan_success",
        "agentwatch_footprint_scan_errors_total",
        "agentwatch_footprint_processes_vanished_total",
        "agentwatch_footprint_scan_duration_seconds",
        "agentwatch_footprint_last_success_timestamp_seconds",
    ),
    build=_build,
)
