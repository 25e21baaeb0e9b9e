"""What the exporter serves: the spool files merged, plus per-sentinel health and thresholds.

Families are rebuilt on every scrape from the cached parse of each file, so a vanished file's
series vanish too. A file that fails to parse, or whose families clash with another file's,
is left out whole and flagged; the scrape itself never fails because of a file.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.metrics_core import GaugeMetricFamily, InfoMetricFamily, Metric

from agentwatch.core import __version__
from agentwatch.core.spool import SpoolFile, SpoolReader

log = logging.getLogger("agentwatch.exporter")

SELF_PREFIXES = (
    "agentwatch_sentinel_last_",
    "agentwatch_sentinel_file_",
    "agentwatch_exporter_",
    "agentwatch_alert_threshold",
)
SELF_NAMES = {"agentwatch_sentinel_up", "agentwatch_sentinel_stale"}


@dataclass
class SentinelHealth:
    """What the landing page, /healthz, `agentwatch status` and the self-metrics show."""

    sentinel: str
    present: bool
    last_write: float | None
    interval: float
    stale: bool
    error: str | None

    @property
    def up(self) -> bool:
        return self.present and not self.stale and self.error is None

    def as_dict(self, now: float) -> dict[str, object]:
        return {
            "sentinel": self.sentinel,
            "up": self.up,
            "present": self.present,
            "stale": self.stale,
            "error": self.error,
            "interval_seconds": self.interval,
            "age_seconds": None if self.last_write is None else round(now - self.last_write, 1),
        }


def _is_self_metric(name: str) -> bool:
    return name in SELF_NAMES or name.startswith(SELF_PREFIXES)


class SpoolCollector:
    """Merges the spool into one exposition; a custom collector so every scrape is fresh."""

    def __init__(
        self,
        spool_dir: Path,
        expected: Iterable[str] = (),
        stale_after_intervals: float = 3.0,
        default_interval: float = 60.0,
        thresholds: Mapping[str, float] | None = None,
    ):
        self.reader = SpoolReader(spool_dir)
        self.thresholds = dict(thresholds or {})
        self.expected = list(expected)
        self.stale_after_intervals = stale_after_intervals
        self.default_interval = default_interval
        self._lock = threading.Lock()
        self._logged_errors: dict[str, str] = {}

    def snapshot(self, now: float | None = None) -> tuple[list[Metric], list[SentinelHealth]]:
        """Merged families and per-sentinel health, as of now."""
        now = time.time() if now is None else now
        with self._lock:
            files = self.reader.read()
        merged: dict[str, Metric] = {}
        series: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
        health: dict[str, SentinelHealth] = {}
        for spool_file in files:
            error = spool_file.error or self._merge(spool_file, merged, series)
            interval = spool_file.declared_interval or self.default_interval
            health[spool_file.sentinel] = SentinelHealth(
                sentinel=spool_file.sentinel,
                present=True,
                last_write=spool_file.mtime,
                interval=interval,
                stale=now - spool_file.mtime > self.stale_after_intervals * interval,
                error=error,
            )
            self._log_error_change(spool_file.sentinel, error)
        for name in self.expected:
            if name not in health:
                health[name] = SentinelHealth(name, False, None, self.default_interval, True, None)
        return list(merged.values()), sorted(health.values(), key=lambda h: h.sentinel)

    @staticmethod
    def _merge(
        spool_file: SpoolFile,
        merged: dict[str, Metric],
        series: set[tuple[str, tuple[tuple[str, str], ...]]],
    ) -> str | None:
        """Add a file's families to `merged` unless they clash; return the clash, if any."""
        new_series = set()
        for family in spool_file.families:
            if _is_self_metric(family.name):
                return f"family {family.name} is reserved for the exporter"
            other = merged.get(family.name)
            if other is not None and other.type != family.type:
                return f"family {family.name} is a {family.type} here but a {other.type} elsewhere"
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                if key in series:
                    return f"series {sample.name} is also written by another file"
                new_series.add(key)
        series.update(new_series)
        for family in spool_file.families:
            other = merged.get(family.name)
            if other is None:
                copy = Metric(family.name, family.documentation, family.type, family.unit)
                copy.samples = list(family.samples)
                merged[family.name] = copy
            else:
                other.samples.extend(family.samples)
        return None

    def _log_error_change(self, sentinel: str, error: str | None) -> None:
        previous = self._logged_errors.get(sentinel)
        if error and error != previous:
            log.warning("spool file of %s left out of the scrape: %s", sentinel, error)
        elif previous and not error:
            log.info("spool file of %s is readable again", sentinel)
        if error:
            self._logged_errors[sentinel] = error
        else:
            self._logged_errors.pop(sentinel, None)

    def collect(self) -> Iterable[Metric]:
        started = time.perf_counter()
        families, health = self.snapshot()
        yield from families
        yield from self_metrics(health)
        yield threshold_metrics(self.thresholds)
        yield GaugeMetricFamily(
            "agentwatch_exporter_merge_duration_seconds",
            "Time the exporter took to read and merge the spool for this scrape.",
            value=time.perf_counter() - started,
        )


def self_metrics(health: list[SentinelHealth]) -> Iterable[Metric]:
    last = GaugeMetricFamily(
        "agentwatch_sentinel_last_write_timestamp_seconds",
        "When the sentinel last rewrote its spool file (file mtime).",
        labels=["sentinel"],
    )
    error = GaugeMetricFamily(
        "agentwatch_sentinel_file_error",
        "1 when the sentinel's spool file failed to parse or clashed with another file.",
        labels=["sentinel"],
    )
    stale = GaugeMetricFamily(
        "agentwatch_sentinel_stale",
        "1 when the spool file is missing or older than stale_after_intervals intervals.",
        labels=["sentinel"],
    )
    up = GaugeMetricFamily(
        "agentwatch_sentinel_up",
        "1 when the sentinel's file is present, fresh and parsed.",
        labels=["sentinel"],
    )
    for item in health:
        if item.last_write is not None:
            last.add_metric([item.sentinel], item.last_write)
        error.add_metric([item.sentinel], 1.0 if item.error else 0.0)
        stale.add_metric([item.sentinel], 1.0 if item.stale else 0.0)
        up.add_metric([item.sentinel], 1.0 if item.up else 0.0)
    info = InfoMetricFamily("agentwatch_exporter_build", "Version of the running exporter.")
    info.add_metric([], {"version": __version__})
    yield from (last, error, stale, up, info)


def threshold_metrics(thresholds: Mapping[str, float]) -> Metric:
    """The configured alert thresholds as a series the rules compare against."""
    family = GaugeMetricFamily(
        "agentwatch_alert_threshold",
        "A configured alert threshold (config `thresholds.<name>`), read by the alerting rules.",
        labels=["name"],
    )
    for name, value in sorted(thresholds.items()):
        family.add_metric([name], value)
    return family
