"""The agentwatch (self) dashboard: exporter and sentinel health, ledger lag and size, scan
health and the controller."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row

from agentwatch.grafana.panels import (
    ANY_IS_BAD,
    DOWN_UP,
    NO_YES_BAD,
    OK_FAILING,
    dashboard,
    hourly_bars,
    mapping,
    stat,
    state_timeline,
    table,
    timeseries,
)
from agentwatch.grafana.queries import (
    HOST,
    age,
    gauges_by,
    hourly,
    increase,
    level,
    rate,
    sel,
    target,
)

LOADED_MISSING = mapping({0: ("missing", "orange"), 1: ("loaded", "green")})


def agentwatch_self() -> Dashboard:
    sentinel = gauges_by(by="sentinel")
    since_write = age("agentwatch_sentinel_last_write_timestamp_seconds", by="sentinel")
    exporter = [
        stat(
            "Exporter scrape",
            "Whether Prometheus can scrape the exporter.",
            target(f"min by ({HOST}) ({sel('up')})"),
            "none",
            w=6,
            mappings=OK_FAILING,
        ),
        stat(
            "Version",
            "The running exporter's version.",
            level("agentwatch_exporter_build_info", by="version"),
            "none",
            w=6,
            text_mode="name",
        ),
        stat(
            "Sentinels up",
            "Sentinels whose spool file is present, fresh and parses.",
            [
                level("agentwatch_sentinel_up", how="sum", legend="up"),
                target(f"count by ({HOST}) ({sel('agentwatch_sentinel_up')})", "expected"),
            ],
            w=6,
            text_mode="value_and_name",
        ),
        stat(
            "Spool merge time",
            "Time the exporter spent reading and merging the spool for the latest scrape.",
            level("agentwatch_exporter_merge_duration_seconds"),
            "s",
            w=6,
        ),
        state_timeline(
            "Sentinel health",
            "Up = the sentinel's file is present, fresh and parsed.",
            level("agentwatch_sentinel_up", by="sentinel"),
            DOWN_UP,
        ),
        table(
            "Sentinels",
            "Per sentinel: stale = file missing or older than exporter.stale_after_intervals × its "
            "interval; file error = it failed to parse and is left out of the scrape.",
            [
                (sentinel("agentwatch_sentinel_up"), "up", "none"),
                (sentinel("agentwatch_sentinel_stale"), "stale", "none"),
                (sentinel("agentwatch_sentinel_file_error"), "file error", "none"),
                (since_write, "since last write", "s"),
                (sentinel("agentwatch_sentinel_interval_seconds"), "interval", "s"),
            ],
            "none",
            mappings={"up": DOWN_UP, "stale": NO_YES_BAD, "file error": NO_YES_BAD},
        ),
        timeseries(
            "Time since each sentinel's last write",
            "Seconds since each sentinel rewrote its spool file; it should stay below its "
            "interval.",
            target(since_write, "{{sentinel}}"),
            "s",
            w=24,
        ),
    ]
    ledger = [
        timeseries(
            "Ledger lag",
            "Bytes written to transcripts but not read yet; above thresholds.ledger_lag_bytes the "
            "ledger is falling behind.",
            level("agentwatch_ledger_unread_bytes", legend="unread"),
            "bytes",
            limit=("ledger_lag_bytes", "behind above"),
        ),
        timeseries(
            "Ledger reading",
            "Transcript bytes the ledger consumes per second.",
            target(rate("agentwatch_ledger_bytes_read_total"), "bytes read"),
            "Bps",
        ),
        timeseries(
            "Transcript lines read",
            "Complete transcript lines read per second.",
            target(rate("agentwatch_ledger_lines_read_total"), "lines"),
            "cps",
        ),
        timeseries(
            "Ledger database size",
            "SQLite database, WAL and shared memory; above thresholds.ledger_database_bytes it "
            "grows without bound.",
            level("agentwatch_ledger_database_bytes", legend="database"),
            "bytes",
            limit=("ledger_database_bytes", "too big above"),
        ),
        stat(
            "Transcript files",
            "Transcript files the ledger follows.",
            level("agentwatch_ledger_files_tracked"),
            w=5,
        ),
        stat(
            "Transcript roots",
            "Transcript roots (…/projects) that exist; 0 means the ledger has nothing to read.",
            level("agentwatch_ledger_roots"),
            w=5,
            steps=[(None, "red"), (1, "green")],
        ),
        stat(
            "Read errors over the range",
            "Transcripts that vanished or were unreadable.",
            target(increase("agentwatch_ledger_read_errors_total", by="reason"), "{{reason}}"),
            w=5,
            text_mode="value_and_name",
        ),
        stat(
            "File resets over the range",
            "Transcripts re-read from the start because they were truncated or replaced.",
            target(increase("agentwatch_ledger_file_resets_total")),
            w=5,
            no_value="0",
        ),
        stat(
            "C scanner",
            "Whether the ledger's C scanner (_fastline) is loaded; missing: it reads with the "
            "Python references, the same counts at about twice the CPU "
            "(AgentwatchLedgerFastScannerMissing).",
            level("agentwatch_ledger_fast_scanner_available"),
            "none",
            w=4,
            mappings=LOADED_MISSING,
        ),
        hourly_bars(
            "Rejected lines per hour by reason",
            "Lines with usage that the reference reader skips too.",
            "agentwatch_ledger_lines_rejected_total",
            "reason",
        ),
        hourly_bars(
            "Duplicate copies per hour",
            "Lines repeating a response already counted (streamed copies, sidechain replays).",
            "agentwatch_ledger_duplicate_copies_total",
            "kind",
        ),
        hourly_bars(
            "Unpriced tokens per hour by model",
            "Tokens of models with no price (counted at 0 cost): add the model to the price table.",
            "agentwatch_ledger_unpriced_tokens_total",
            "model",
        ),
    ]
    scans = [
        timeseries(
            "Scan durations",
            "Wall time of the latest process-table scans.",
            [
                level("agentwatch_resources_scan_duration_seconds", legend="resources"),
                level("agentwatch_footprint_scan_duration_seconds", legend="footprint"),
            ],
            "s",
        ),
        timeseries(
            "Scan problems per hour",
            "Processes the resources scan skipped, by reason, and failed footprint scans.",
            [
                hourly(
                    "agentwatch_resources_scan_errors_total",
                    by="reason",
                    legend="resources {{reason}}",
                ),
                hourly("agentwatch_footprint_scan_errors_total", legend="footprint failed scans"),
                hourly(
                    "agentwatch_footprint_processes_vanished_total", legend="footprint vanished"
                ),
            ],
        ),
        stat(
            "Processes scanned",
            "Processes read in the latest resources scan.",
            level("agentwatch_resources_processes_scanned"),
            w=6,
        ),
        stat(
            "Since last good footprint scan",
            "Age of the footprint values on display.",
            target(age("agentwatch_footprint_last_success_timestamp_seconds")),
            "s",
            w=6,
        ),
        stat(
            "tmux panes found",
            "tmux panes the resources sentinel found in its last query.",
            level("agentwatch_resources_tmux_panes"),
            w=6,
        ),
        stat(
            "tmux servers failing",
            "tmux servers whose last query failed, as seen by the resources and idle-error "
            "sentinels.",
            [
                level("agentwatch_resources_tmux_failing", legend="resources"),
                level("agentwatch_idle_error_tmux_failing", legend="idle-error"),
            ],
            w=6,
            text_mode="value_and_name",
            steps=ANY_IS_BAD,
        ),
        hourly_bars(
            "Pane classifications per hour",
            "Changes of an agent pane into a non-working state, by state.",
            "agentwatch_pane_classifications_total",
            "state",
        ),
        hourly_bars(
            "Suppressed pane matches per hour",
            "Pattern matches the idle-error sentinel ignored on purpose, by reason.",
            "agentwatch_pane_suppressed_total",
            "reason",
        ),
        hourly_bars(
            "Pane capture errors per hour",
            "tmux captures that failed, by reason.",
            "agentwatch_idle_error_capture_errors_total",
            "reason",
        ),
    ]
    controller = [
        stat(
            "Alertmanager reachable",
            "Whether the controller can read alerts back from each Alertmanager.",
            level("agentwatch_controller_alertmanager_up", by="alertmanager"),
            "none",
            w=8,
            text_mode="value_and_name",
            mappings=OK_FAILING,
        ),
        stat(
            "Since the controller's last good cycle",
            "Age of the controller's decision: the last cycle in which an Alertmanager answered.",
            target(age("agentwatch_controller_last_success_timestamp_seconds")),
            "s",
            w=8,
        ),
        stat(
            "Orchestrator reachable",
            "Whether the controller reaches the orchestrator's API.",
            level("agentwatch_orchestrator_up", how="min"),
            "none",
            w=8,
            mappings=OK_FAILING,
        ),
        hourly_bars(
            "Controller decisions per hour",
            "Changes of the throttle decision, by the action that caused them.",
            "agentwatch_controller_decisions_total",
            "reason",
        ),
        hourly_bars(
            "Nudges per hour",
            "Stalled panes the controller nudged, by result.",
            "agentwatch_controller_nudges_total",
            "result",
        ),
        hourly_bars(
            "Adapter errors per hour",
            "Failures applying a decision to the orchestrator, by adapter.",
            "agentwatch_controller_adapter_errors_total",
            "adapter",
        ),
    ]
    return dashboard(
        "agentwatch-self",
        "agentwatch / agentwatch itself",
        "Is agentwatch healthy: exporter, sentinels, ledger lag, scans and the controller.",
        [],
        [
            Row("Exporter and sentinels"),
            *exporter,
            Row("Token ledger"),
            *ledger,
            Row("Host sentinels"),
            *scans,
            Row("Controller"),
            *controller,
        ],
    )
