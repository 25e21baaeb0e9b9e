"""The spool: one node_exporter-style textfile per sentinel, written atomically.

Writers use a private registry per write so nothing but the sentinel's own families (no
process_* or python_* metrics) lands in the file. Readers parse each file on its own, so a
broken file is reported and left out without touching the others.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry, write_to_textfile
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families

SUFFIX = ".prom"
INTERVAL_METRIC = "agentwatch_sentinel_interval_seconds"


class _Families:
    """A collector that yields families produced fresh at write time."""

    def __init__(self, produce: Callable[[], Iterable[Metric]]):
        self._produce = produce

    def collect(self) -> Iterable[Metric]:
        return self._produce()


def spool_path(spool_dir: Path, sentinel: str) -> Path:
    return spool_dir / f"{sentinel}{SUFFIX}"


def write(
    spool_dir: Path, sentinel: str, interval: float, families: Callable[[], Iterable[Metric]]
) -> Path:
    """Write `<spool>/<sentinel>.prom` atomically (temp file + rename)."""

    def produce() -> Iterable[Metric]:
        yield from families()
        declared = GaugeMetricFamily(
            INTERVAL_METRIC,
            "The interval a sentinel promises to rewrite its spool file within.",
            labels=["sentinel"],
        )
        declared.add_metric([sentinel], interval)
        yield declared

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(produce))  # type: ignore[arg-type]
    spool_dir.mkdir(parents=True, exist_ok=True)
    path = spool_path(spool_dir, sentinel)
    write_to_textfile(str(path), registry)
    os.chmod(path, 0o644)
    return path


class SpoolParseError(ValueError):
    pass


@dataclass
class SpoolFile:
    """The parsed content of one spool file, cached until the file changes."""

    sentinel: str
    signature: tuple[int, int, int]
    mtime: float
    families: list[Metric] = field(default_factory=list)
    error: str | None = None

    @property
    def declared_interval(self) -> float | None:
        for family in self.families:
            if family.name == INTERVAL_METRIC:
                for sample in family.samples:
                    return float(sample.value)
        return None


def parse_text(text: str) -> list[Metric]:
    """Parse exposition text as the textfile collector does: no timestamps, no duplicates."""
    families: list[Metric] = []
    seen_series: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.timestamp is not None:
                    raise SpoolParseError(f"sample {sample.name} carries a timestamp")
                series = (sample.name, tuple(sorted(sample.labels.items())))
                if series in seen_series:
                    raise SpoolParseError(f"duplicate series {sample.name}")
                seen_series.add(series)
            families.append(family)
    except SpoolParseError:
        raise
    except Exception as err:  # the parser raises ValueError, TypeError, IndexError...
        raise SpoolParseError(f"{type(err).__name__}: {str(err)[:200]}") from err
    return families


def _signature(stat: os.stat_result) -> tuple[int, int, int]:
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


class SpoolReader:
    """Reads every `*.prom` in the spool, re-parsing a file only when it changed."""

    def __init__(self, spool_dir: Path):
        self.spool_dir = spool_dir
        self._cache: dict[str, SpoolFile] = {}

    def read(self) -> list[SpoolFile]:
        try:
            entries = sorted(p for p in self.spool_dir.iterdir() if p.name.endswith(SUFFIX))
        except FileNotFoundError:
            entries = []
        current: dict[str, SpoolFile] = {}
        for path in entries:
            sentinel = path.name[: -len(SUFFIX)]
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue  # removed between listing and stat
            cached = self._cache.get(sentinel)
            if cached is not None and cached.signature == _signature(stat):
                current[sentinel] = cached
                continue
            current[sentinel] = self._load(path, sentinel, stat)
        self._cache = current
        return list(current.values())

    @staticmethod
    def _load(path: Path, sentinel: str, stat: os.stat_result) -> SpoolFile:
        loaded = SpoolFile(sentinel=sentinel, signature=_signature(stat), mtime=stat.st_mtime)
        try:
            loaded.families = parse_text(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SpoolParseError) as err:
            loaded.error = str(err)
        return loaded
