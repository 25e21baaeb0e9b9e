"""The spool: one node_exporter-style textfile per sentinel, written atomically.

Only the sentinel's own families land in a file (no process_* or python_* metrics), in the
text format prometheus_client writes. Readers parse each file on its own, so a
broken file is reported and left out without touching the others.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.utils import floatToGoString

from agentwatch.core.files import write_atomic
from agentwatch.core.sanitize import CONTROL_ESCAPES

SUFFIX = ".prom"
INTERVAL_METRIC = "agentwatch_sentinel_interval_seconds"


# The exposition's own escapes, plus a safety net for a producer that forgot
# sanitize.label_value: any other control character goes out as a visible `\xNN`, so one
# stray `\r` cannot break a line-based reader.
_LABEL_ESCAPES = str.maketrans(
    {
        **{code: "\\" + escape for code, escape in CONTROL_ESCAPES.items()},
        "\\": "\\\\",
        "\n": "\\n",
        '"': '\\"',
    }
)
_SIMPLE_TYPES = {"counter": "_total", "gauge": "", "info": "_info"}


class _Families:
    """A collector around families produced fresh at write time (for the fallback path)."""

    def __init__(self, families: list[Metric]):
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families


def sample_line(name: str, labels: dict[str, str], value: float) -> str:
    """One sample as exposition text, exactly as prometheus_client writes it."""
    if not labels:
        return f"{name} {floatToGoString(value)}\n"
    parts = [f'{key}="{labels[key].translate(_LABEL_ESCAPES)}"' for key in sorted(labels)]
    return f"{name}{{{','.join(parts)}}} {floatToGoString(value)}\n"


def family_header(name: str, documentation: str, kind: str) -> str:
    """The HELP and TYPE lines of a family; `name` with its sample suffix (e.g. `_total`)."""
    escaped = documentation.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {escaped}\n# TYPE {name} {kind}\n"


def render(families: Iterable[Metric | str]) -> str:
    """The text exposition of families, byte for byte what prometheus_client's
    generate_latest gives, but several times faster for plain counters and gauges: a
    sentinel rewrites its file for every change, so this is on the hot path. A `str` item is
    exposition text rendered earlier (a sentinel's cache of unchanged series). Any other
    family type goes through prometheus_client itself."""
    out: list[str] = []
    for family in families:
        if isinstance(family, str):
            out.append(family)
            continue
        suffix = _SIMPLE_TYPES.get(family.type)
        if suffix is None:
            registry = CollectorRegistry(auto_describe=False)
            registry.register(_Families([family]))
            out.append(generate_latest(registry).decode())
            continue
        name = family.name + suffix
        out.append(family_header(name, family.documentation, _TYPE_NAMES[family.type]))
        out.extend(sample_line(s.name, s.labels, s.value) for s in family.samples)
    return "".join(out)


_TYPE_NAMES = {"counter": "counter", "gauge": "gauge", "info": "gauge"}


def spool_path(spool_dir: Path, sentinel: str) -> Path:
    return spool_dir / f"{sentinel}{SUFFIX}"


def write(
    spool_dir: Path,
    sentinel: str,
    interval: float,
    families: Callable[[], Iterable[Metric | str]],
) -> Path:
    """Write `<spool>/<sentinel>.prom` atomically (a reader never sees half a file)."""
    declared = GaugeMetricFamily(
        INTERVAL_METRIC,
        "The interval a sentinel promises to rewrite its spool file within.",
        labels=["sentinel"],
    )
    declared.add_metric([sentinel], interval)
    text = render([*families(), declared])
    path = spool_path(spool_dir, sentinel)
    write_atomic(path, text)
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
