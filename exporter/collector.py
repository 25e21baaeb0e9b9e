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

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

from agentwatch.core import __version__
from agentwatch.core.http import ConnectionStats
from agentwatch.core.spool import (
    REASONS,
    SUFFIX,
    Listing,
    SpoolFile,
    SpoolReader,
    exposed_names,
    render,
)
from agentwatch.exporter.filesystems import FilesystemGauges

log = logging.getLogger("agentwatch.exporter")

SELF_PREFIXES = (
    "agentwatch_sentinel_last_",
    "agentwatch_sentinel_file_",
    "agentwatch_exporter_",
    "agentwatch_alert_threshold",
    "agentwatch_filesystem_",
)
SELF_NAMES = {"agentwatch_sentinel_up", "agentwatch_sentinel_stale"}


@dataclass
class SentinelHealth:
    """What the front page, /healthz, `agentwatch status` and the self-metrics show."""

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


MERGE_REASONS = ("reserved", "clash")
REJECT_REASONS = (*REASONS, *MERGE_REASONS)
NO_HELP = "(the spool file gives no help text)"
BODY_BUCKET = 1.0  # seconds a rendered /metrics body is served while the spool is unchanged
FORMATS = ("openmetrics", "text")


class SpoolCollector:
    """Merges the spool into one exposition; a custom collector so every scrape is fresh.

    `body()` is what /metrics serves: the rendered exposition, cached while the spool's
    listing (names and signatures) is unchanged, for at most BODY_BUCKET seconds so the
    staleness and self-metrics move on; 200 scrapers at once cost one render per format
    (text, OpenMetrics), not 200."""

    def __init__(
        self,
        spool_dir: Path,
        expected: Iterable[str] = (),
        stale_after_intervals: float = 3.0,
        default_interval: float = 60.0,
        thresholds: Mapping[str, float] | None = None,
        connections: ConnectionStats | None = None,
        filesystems: Mapping[str, Path] | None = None,
    ):
        self.reader = SpoolReader(spool_dir, expected=expected)
        self.thresholds = dict(thresholds or {})
        self.expected = list(expected)
        self.stale_after_intervals = stale_after_intervals
        self.default_interval = default_interval
        self.connections = connections if connections is not None else ConnectionStats()
        self.filesystems = FilesystemGauges(filesystems or {})
        self._lock = threading.Lock()
        self._logged_errors: dict[str, str] = {}
        self._merge_rejected: set[tuple[str, tuple[int, int, int]]] = set()
        self._logged_skipped = 0
        self._merge_seconds = 0.0
        self._bodies: dict[str, tuple[tuple[object, ...], bytes]] = {}  # by format
        self._rendered: tuple[tuple[object, ...], list[Metric]] | None = None
        self._flights: dict[str, _Flight] = {}
        self._renders = dict.fromkeys(FORMATS, 0)
        self._flights_lock = threading.Lock()

    def snapshot(self, now: float | None = None) -> tuple[list[Metric], list[SentinelHealth]]:
        """Merged families and per-sentinel health, as of now."""
        with self._lock:
            families, health, _ = self._snapshot(now)
        return families, health

    def _snapshot(
        self, now: float | None, listing: Listing | None = None
    ) -> tuple[list[Metric], list[SentinelHealth], Listing]:
        started = time.perf_counter()
        now = time.time() if now is None else now
        listing = self.reader.read() if listing is None else listing
        merged: dict[str, Metric] = {}
        claimed: dict[str, tuple[str, str]] = {}
        series: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
        health: dict[str, SentinelHealth] = {}
        for spool_file in listing.files:
            error, reason = spool_file.error, spool_file.reason
            if error is None:
                problem = self._merge(spool_file, merged, claimed, series)
                if problem is not None:
                    reason, error = problem
                    self._count_merge_rejection(spool_file, reason)
            interval = spool_file.declared_interval or self.default_interval
            health[spool_file.sentinel] = SentinelHealth(
                sentinel=spool_file.sentinel,
                present=True,
                last_write=spool_file.mtime,
                interval=interval,
                stale=now - spool_file.mtime > self.stale_after_intervals * interval,
                error=error,
            )
            self._log_error_change(spool_file.sentinel, reason, error)
        for name in self.expected:
            if name not in health:
                health[name] = SentinelHealth(name, False, None, self.default_interval, True, None)
        for gone in set(self._logged_errors) - set(health):
            del self._logged_errors[gone]
        self._log_skipped(listing.skipped)
        self._merge_seconds = time.perf_counter() - started
        return list(merged.values()), sorted(health.values(), key=lambda h: h.sentinel), listing

    @staticmethod
    def _merge(
        spool_file: SpoolFile,
        merged: dict[str, Metric],
        claimed: dict[str, tuple[str, str]],
        series: set[tuple[str, tuple[tuple[str, str], ...]]],
    ) -> tuple[str, str] | None:
        """Add a file's families to `merged` unless they clash; return (reason, message)
        of the clash, if any. The message names no metric: a rejected file's content is
        not shown anywhere."""
        new_series = set()
        new_claims: dict[str, tuple[str, str]] = {}
        for family in spool_file.families:
            if _is_self_metric(family.name):
                return "reserved", "writes a family reserved for the exporter"
            key = (family.name, family.type)
            other = merged.get(family.name)
            if other is not None and other.type != family.type:
                return "clash", "writes a family another spool file writes with another type"
            for name in exposed_names(family)[1]:
                if claimed.get(name, key) != key:
                    return "clash", "writes a family another spool file writes with another type"
                new_claims[name] = key
            for sample in family.samples:
                entry = (sample.name, tuple(sorted(sample.labels.items())))
                if entry in series:
                    return "clash", "writes a series another spool file also writes"
                new_series.add(entry)
        series.update(new_series)
        claimed.update(new_claims)
        for family in spool_file.families:
            other = merged.get(family.name)
            if other is None:
                documentation = family.documentation or NO_HELP  # promtool lints a bare HELP
                copy = Metric(family.name, documentation, family.type, family.unit)
                copy.samples = list(family.samples)
                merged[family.name] = copy
            else:
                other.samples.extend(family.samples)
        return None

    def _count_merge_rejection(self, spool_file: SpoolFile, reason: str) -> None:
        version = (spool_file.sentinel, spool_file.signature)
        if version not in self._merge_rejected:
            self._merge_rejected.add(version)
            self.reader.rejections[reason] += 1
            if len(self._merge_rejected) > 4 * self.reader.max_files:  # bounded memory
                self._merge_rejected = {version}

    def _log_error_change(self, sentinel: str, reason: str | None, error: str | None) -> None:
        """One line when a file starts failing (or fails for another reason), one when it is
        readable again; nothing while it keeps failing the same way."""
        previous = self._logged_errors.get(sentinel)
        if reason and reason != previous:
            log.warning("spool file %s%s left out of the scrape: %s", sentinel, SUFFIX, error)
        elif previous and not reason:
            log.info("spool file %s%s is readable again", sentinel, SUFFIX)
        if reason:
            self._logged_errors[sentinel] = reason
        else:
            self._logged_errors.pop(sentinel, None)

    def _log_skipped(self, skipped: int) -> None:
        if skipped and not self._logged_skipped:
            log.warning(
                "%d spool files left unread: over the limit of %d files or %d bytes per scrape "
                "(agentwatch_exporter_spool_files_skipped)",
                skipped,
                self.reader.max_files,
                self.reader.total_bytes,
            )
        elif self._logged_skipped and not skipped:
            log.info("every spool file is read again")
        self._logged_skipped = skipped

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            families, health, listing = self._snapshot(None)
        return self._families(families, health, listing)

    def _families(
        self, families: list[Metric], health: list[SentinelHealth], listing: Listing
    ) -> list[Metric]:
        return [
            *families,
            *self_metrics(health),
            *self._reader_metrics(listing),
            *connection_metrics(self.connections),
            threshold_metrics(self.thresholds),
            *self.filesystems.families(),
            self._render_metric(),
            GaugeMetricFamily(
                "agentwatch_exporter_merge_duration_seconds",
                "Time the exporter took to read and merge the spool for the body it serves.",
                value=self._merge_seconds,
            ),
        ]

    def body(self, openmetrics: bool = False, now: float | None = None) -> bytes:
        """The /metrics body, rendered again only when the spool changed or BODY_BUCKET
        seconds passed (the spool is still listed and stat'ed on every call: cheap).

        Single flight per format: a scrape that arrives while another is checking or
        rendering the same format waits for that one and serves its bytes, so N concurrent
        scrapes cost one render, not N queued behind the handler threads."""
        kind = "openmetrics" if openmetrics else "text"
        with self._flights_lock:
            flight = self._flights.get(kind)
            leader = flight is None
            if flight is None:
                flight = self._flights[kind] = _Flight()
        if not leader:
            return flight.wait()
        try:
            body = self._fresh_body(kind, openmetrics, now)
        except BaseException as err:
            flight.fail(err)
            raise
        finally:
            with self._flights_lock:
                del self._flights[kind]
        flight.done(body)
        return body

    def _fresh_body(self, kind: str, openmetrics: bool, now: float | None) -> bytes:
        now = time.time() if now is None else now
        with self._lock:
            listing = self.reader.read()
            key = (listing.key, int(now // BODY_BUCKET))
            cached = self._bodies.get(kind)
            if cached is not None and cached[0] == key:
                return cached[1]
            self._renders[kind] += 1
            if self._rendered is not None and self._rendered[0] == key:
                rendered = self._rendered[1]  # the other format's families, this bucket
            else:
                families, health, _ = self._snapshot(now, listing)
                rendered = self._families(families, health, listing)
                self._rendered = (key, rendered)
            body = _encode(rendered, openmetrics)
            self._bodies[kind] = (key, body)
            return body

    def _render_metric(self) -> Metric:
        renders = CounterMetricFamily(
            "agentwatch_exporter_renders",
            "/metrics bodies rendered, by format (text, openmetrics); scrapes within a second "
            "of an unchanged spool, or while one renders, share its body.",
            labels=["format"],
        )
        for kind, count in sorted(self._renders.items()):
            renders.add_metric([kind], count)
        return renders

    def _reader_metrics(self, listing: Listing) -> list[Metric]:
        rejected = CounterMetricFamily(
            "agentwatch_exporter_spool_rejections",
            "Spool file versions left out of the scrape, by reason (each version counted once).",
            labels=["reason"],
        )
        for reason in REJECT_REASONS:
            rejected.add_metric([reason], self.reader.rejections[reason])
        skipped = GaugeMetricFamily(
            "agentwatch_exporter_spool_files_skipped",
            "Spool files not read this scrape: over the file count or byte budget per scrape.",
            value=listing.skipped,
        )
        return [rejected, skipped]


class _Flight:
    """One render in progress, and the scrapes that wait for its bytes."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._body = b""
        self._error: BaseException | None = None

    def done(self, body: bytes) -> None:
        self._body = body
        self._event.set()

    def fail(self, error: BaseException) -> None:
        self._error = error
        self._event.set()

    def wait(self) -> bytes:
        self._event.wait()
        if self._error is not None:
            raise RuntimeError("the shared render of /metrics failed") from self._error
        return self._body


class _Fixed:
    def __init__(self, families: list[Metric]):
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families


def _encode(families: list[Metric], openmetrics: bool) -> bytes:
    """The body in either format; the text one from core/spool.py's renderer (byte for byte
    the library's), so the exporter never loads the library's HTTP parts."""
    if openmetrics:
        return openmetrics_latest(_Fixed(families))
    return render(families, exact=True).encode()


def connection_metrics(stats: ConnectionStats) -> list[Metric]:
    disconnects = CounterMetricFamily(
        "agentwatch_exporter_client_disconnects",
        "Clients that went away before their answer was sent (not an exporter fault).",
        value=stats.disconnects,
    )
    dropped = CounterMetricFamily(
        "agentwatch_exporter_connections_dropped",
        "Connections closed without an answer, by reason (slow, oversized or too many).",
        labels=["reason"],
    )
    for reason, count in sorted(stats.dropped.items()):
        dropped.add_metric([reason], count)
    auth = CounterMetricFamily(
        "agentwatch_exporter_auth_failures",
        "Requests refused by basic auth, by reason: missing (no credentials), wrong (a full "
        "bcrypt paid), rate_limited (the client failed too often lately; no hash computed).",
        labels=["reason"],
    )
    for reason, count in sorted(stats.auth_failures.items()):
        auth.add_metric([reason], count)
    return [disconnects, dropped, auth]


def self_metrics(health: list[SentinelHealth]) -> Iterable[Metric]:
    last = GaugeMetricFamily(
        "agentwatch_sentinel_last_write_timestamp_seconds",
        "When the sentinel last rewrote its spool file (file mtime).",
        labels=["sentinel"],
    )
    error = GaugeMetricFamily(
        "agentwatch_sentinel_file_error",
        "1 when the sentinel's spool file was refused, failed to parse or clashed with another "
        "file (agentwatch_exporter_spool_rejections_total says why).",
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
