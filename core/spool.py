"""The spool: one node_exporter-style textfile per sentinel, written atomically.

Only the sentinel's own families land in a file (no process_* or python_* metrics), in the
text format prometheus_client writes. Readers parse each file on its own, so a
broken file is reported and left out without touching the others.
"""

from __future__ import annotations

import heapq
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.parser import _parse_sample, text_string_to_metric_families
from prometheus_client.utils import floatToGoString

from agentwatch.core import bounded
from agentwatch.core.files import write_atomic
from agentwatch.core.sanitize import CONTROL_ESCAPES, label_value

SUFFIX = ".prom"
INTERVAL_METRIC = "agentwatch_sentinel_interval_seconds"


# The exposition's own escapes, plus a safety net for a producer that forgot
# sanitize.label_value: any other control character goes out as a visible `\xNN`, so one
# stray `\r` cannot break a line-based reader.
_EXPOSITION_ESCAPES = {"\\": "\\\\", "\n": "\\n", '"': '\\"'}
_LABEL_ESCAPES = str.maketrans(
    {**{code: "\\" + escape for code, escape in CONTROL_ESCAPES.items()}, **_EXPOSITION_ESCAPES}
)
# The library's own: what the exporter serves, a value passed on exactly as a file held it.
_LIBRARY_ESCAPES = str.maketrans(_EXPOSITION_ESCAPES)
# Each family type this module renders itself: the suffix of its exposed name, and the TYPE
# the text format gives it (as prometheus_client's generate_latest does).
_RENDERED = {
    "counter": ("_total", "counter"),
    "gauge": ("", "gauge"),
    "info": ("_info", "gauge"),
    "histogram": ("", "histogram"),
    "summary": ("", "summary"),
    "unknown": ("", "untyped"),
}
# Samples generate_latest moves out of their family (OpenMetrics-only series), or writes with
# a timestamp: the library renders a family that has any.
_MOVED_SUFFIXES = ("_created", "_gsum", "_gcount")


class _Families:
    """A collector around families produced fresh at write time (for the fallback path)."""

    def __init__(self, families: list[Metric]):
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families


def _rendered_here(family: Metric) -> tuple[str, str] | None:
    kind = _RENDERED.get(family.type)
    if kind is None:
        return None
    for sample in family.samples:
        if sample.timestamp is not None or sample.name.endswith(_MOVED_SUFFIXES):
            return None
    return kind


def sample_line(
    name: str, labels: dict[str, str], value: float, escapes: dict[int, str] = _LABEL_ESCAPES
) -> str:
    """One sample as exposition text, exactly as prometheus_client writes it (but for the
    control characters a sentinel's file never holds raw, unless `escapes` says otherwise)."""
    if not labels:
        return f"{name} {floatToGoString(value)}\n"
    parts = [f'{key}="{labels[key].translate(escapes)}"' for key in sorted(labels)]
    return f"{name}{{{','.join(parts)}}} {floatToGoString(value)}\n"


def family_header(name: str, documentation: str, kind: str) -> str:
    """The HELP and TYPE lines of a family; `name` with its sample suffix (e.g. `_total`)."""
    escaped = documentation.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {escaped}\n# TYPE {name} {kind}\n"


def render(families: Iterable[Metric | str], exact: bool = False) -> str:
    """The text exposition of families, byte for byte what prometheus_client's
    generate_latest gives, but several times faster: a sentinel rewrites its file for every
    change, so this is on the hot path, and a sentinel that never needs generate_latest never
    loads the library's HTTP and WSGI parts (core/lazy_prometheus.py). A `str` item is
    exposition text rendered earlier (a sentinel's cache of unchanged series). A family with
    timestamps, OpenMetrics-only samples or another type goes through prometheus_client.
    A sentinel's file escapes control characters in label values besides the format's own
    escapes; `exact` keeps the library's escapes only (the exporter re-serving files)."""
    escapes = _LIBRARY_ESCAPES if exact else _LABEL_ESCAPES
    out: list[str] = []
    for family in families:
        if isinstance(family, str):
            out.append(family)
            continue
        kind = _rendered_here(family)
        if kind is None:
            from prometheus_client import CollectorRegistry, generate_latest

            registry = CollectorRegistry(auto_describe=False)
            registry.register(_Families([family]))
            out.append(generate_latest(registry).decode())
            continue
        suffix, type_name = kind
        out.append(family_header(family.name + suffix, family.documentation, type_name))
        out.extend(sample_line(s.name, s.labels, s.value, escapes) for s in family.samples)
    return "".join(out)


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
    """A spool file that is not what the exporter can serve. `reason` is a fixed word for
    the rejection metric; the message names the kind of problem (and a line number where
    one helps), never a byte of the file's content."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


# Sample names each family type may carry, by suffix; anything else would render as an
# exposition promtool rejects (a `# TYPE t counter` with a sample `t` of another family).
_SAMPLE_SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "unknown": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
}
_HEADER_SUFFIX = {"counter": "_total"}
# Why a file is left out (the `reason` label of the exporter's rejection counter).
REASONS = ("not_regular", "too_large", "unreadable", "bad_utf8", "malformed", "bad_family",
           "timestamp", "duplicate")  # fmt: skip
MAX_FILES = 256  # spool files read per scrape; the rest are counted, not read
# All spool files read together, per scrape: parsed, a file costs ~13 times its size in
# memory (a 15 MiB file: 190 MiB RSS), and the shipped unit has MemoryMax=256M. The real spool
# is well under 2 MiB in all; a single file over this is refused as too large.
TOTAL_BYTES = 8 * 1024 * 1024


@dataclass
class SpoolFile:
    """The parsed content of one spool file, cached until the file changes."""

    sentinel: str
    signature: tuple[int, int, int]
    mtime: float
    families: list[Metric] = field(default_factory=list)
    error: str | None = None
    reason: str | None = None
    # the bytes parsed (None when none were read): a rewrite with the same bytes, as a
    # sentinel's next cycle at rest writes, takes this parse without parsing again
    raw: bytes | None = field(default=None, repr=False)

    @property
    def declared_interval(self) -> float | None:
        for family in self.families:
            if family.name == INTERVAL_METRIC:
                for sample in family.samples:
                    return float(sample.value)
        return None


def exposed_names(family: Metric) -> tuple[str, set[str]]:
    """The name a family's HELP/TYPE lines will carry once rendered, and every name it
    claims in the exposition (that header plus its sample names)."""
    header = family.name + _HEADER_SUFFIX.get(family.type, "")
    return header, {header, *(sample.name for sample in family.samples)}


def _check_family(family: Metric) -> None:
    suffixes = _SAMPLE_SUFFIXES.get(family.type)
    if suffixes is None:
        raise SpoolParseError("bad_family", f"a family of type {family.type!r} (only counter, "
                              "gauge, histogram and untyped are served)")  # fmt: skip
    allowed = {family.name + suffix for suffix in suffixes}
    if any(sample.name not in allowed for sample in family.samples):
        raise SpoolParseError(
            "bad_family", "a sample whose name does not match its family's TYPE line"
        )


def _bad_line(text: str) -> int | None:
    """The number of the first sample line the parser cannot read (error path only)."""
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            _parse_sample(line)
        except Exception:  # the parser raises ValueError, TypeError, IndexError...
            return number
    return None


def _fold_counter_samples(parsed: list[Metric]) -> list[Metric]:
    """`# TYPE t counter` then `t_total 1` is valid text, but prometheus_client's parser
    yields an empty counter `t` and an untyped `t_total` (which renders as a second TYPE
    line for `t_total`); put such samples back into their counter."""
    folded: list[Metric] = []
    for family in parsed:
        previous = folded[-1] if folded else None
        if (
            previous is not None
            and previous.type == "counter"
            and family.type == "unknown"
            and family.name in (previous.name + "_total", previous.name + "_created")
        ):
            previous.samples.extend(family.samples)
            continue
        folded.append(family)
    return folded


def parse_text(text: str) -> list[Metric]:
    """Parse exposition text as the textfile collector does: no timestamps, no duplicates,
    and only families that render back into an exposition promtool accepts."""
    families: list[Metric] = []
    seen_series: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    claimed: dict[str, tuple[str, str]] = {}
    try:
        parsed = list(text_string_to_metric_families(text))
    except Exception as err:  # the parser raises ValueError, TypeError, IndexError...
        line = _bad_line(text)
        where = f"line {line}: " if line is not None else ""
        raise SpoolParseError("malformed", f"{where}not valid exposition text") from err
    for family in _fold_counter_samples(parsed):
        _check_family(family)
        key = (family.name, family.type)
        for name in {family.name, *exposed_names(family)[1]}:
            if claimed.setdefault(name, key) != key:
                raise SpoolParseError(
                    "bad_family", "two families of the file claim the same metric name"
                )
        for sample in family.samples:
            if sample.timestamp is not None:
                raise SpoolParseError("timestamp", "a sample carries a timestamp")
            series = (sample.name, tuple(sorted(sample.labels.items())))
            if series in seen_series:
                raise SpoolParseError("duplicate", "a series appears twice")
            seen_series.add(series)
        families.append(family)
    return families


def decode(data: bytes) -> str:
    """UTF-8 without newline translation: a `\\r` inside a label value stays a `\\r`."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise SpoolParseError("bad_utf8", f"line {line}: not valid UTF-8") from None


def _signature(stat: os.stat_result) -> tuple[int, int, int]:
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


@dataclass
class Listing:
    """What one read of the spool found: the files read (cached or fresh), and how many
    `*.prom` entries were left unread because of the file count or byte budget."""

    files: list[SpoolFile]
    skipped: int = 0

    @property
    def key(self) -> tuple[object, ...]:
        """Changes whenever anything a scrape shows from the spool could change."""
        return (self.skipped, *((f.sentinel, f.signature) for f in self.files))


class SpoolReader:
    """Reads every `*.prom` in the spool, re-parsing a file only when it changed.

    Every file goes through core.bounded (regular files only, non-blocking, capped), so a
    FIFO, a device, a directory or a huge file is that file's error, cached by its (inode,
    mtime, size) like any other result, and never read again until it changes. At most
    `max_files` files (the expected sentinels first, then by name) and `total_bytes` are
    read per scrape, so memory stays bounded whatever sits in the folder."""

    def __init__(
        self,
        spool_dir: Path,
        expected: Iterable[str] = (),
        max_files: int = MAX_FILES,
        total_bytes: int = TOTAL_BYTES,
    ):
        self.spool_dir = spool_dir
        self.expected = set(expected)
        self.max_files = max_files
        self.total_bytes = total_bytes
        self.limit = min(bounded.SPOOL_LIMIT, total_bytes)  # the most one file may hold
        self._cache: dict[str, SpoolFile] = {}
        self.rejections: Counter[str] = Counter()  # by reason, once per file version

    def _entries(self) -> tuple[list[str], int]:
        """The names to read (bounded memory however many entries there are), and how many
        `*.prom` names were left out."""
        matching = 0

        def names() -> Iterator[str]:
            nonlocal matching
            with os.scandir(self.spool_dir) as listing:
                for entry in listing:
                    if entry.name.endswith(SUFFIX):
                        matching += 1
                        yield entry.name

        def rank(name: str) -> tuple[bool, str]:
            return (name[: -len(SUFFIX)] not in self.expected, name)

        try:
            chosen = heapq.nsmallest(self.max_files, names(), key=rank)
        except (FileNotFoundError, NotADirectoryError):
            return [], 0
        return sorted(chosen), matching - len(chosen)

    def read(self) -> Listing:
        names, skipped = self._entries()
        current: dict[str, SpoolFile] = {}
        budget = self.total_bytes
        for name in names:
            sentinel = label_value(name[: -len(SUFFIX)])  # a file name can hold anything
            path = self.spool_dir / name
            try:
                stat = path.stat()  # follows a symlink, as the read does
            except OSError:
                continue  # removed between listing and stat, or a dangling symlink
            cached = self._cache.get(sentinel)
            if cached is not None and cached.signature == _signature(stat):
                loaded = cached
            elif budget < stat.st_size <= self.limit:  # fits alone, not with the others
                skipped += 1
                continue
            else:
                loaded = self._load(path, sentinel, stat, min(budget, self.limit), cached)
                if loaded.reason is not None:
                    self.rejections[loaded.reason] += 1
            if loaded.error is None:
                budget -= loaded.signature[2]
            current[sentinel] = loaded
        self._cache = current
        return Listing(list(current.values()), skipped)

    @staticmethod
    def _load(
        path: Path, sentinel: str, stat: os.stat_result, limit: int, before: SpoolFile | None
    ) -> SpoolFile:
        """The file parsed, or `before`'s parse when its bytes are the same (only the
        signature and mtime are new: staleness is told by the mtime)."""
        loaded = SpoolFile(sentinel=sentinel, signature=_signature(stat), mtime=stat.st_mtime)
        try:
            data = bounded.read_bytes(path, limit)
            if before is not None and before.raw == data:
                loaded.families, loaded.raw = before.families, before.raw
                loaded.error, loaded.reason = before.error, before.reason
                return loaded
            loaded.raw = data
            loaded.families = parse_text(decode(data))
        except bounded.FileRefused as err:
            loaded.error = _REFUSALS.get(err.reason, "refused").format(limit=limit)
            loaded.reason = err.reason
        except SpoolParseError as err:
            loaded.error, loaded.reason = str(err), err.reason
        except OSError as err:
            loaded.error, loaded.reason = f"cannot be read ({err.strerror})", "unreadable"
        return loaded


_REFUSALS = {
    "not_regular": "not a regular file (a FIFO, device, directory or socket)",
    "too_large": "larger than the cap of {limit} bytes",
}
