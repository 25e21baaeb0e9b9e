"""One pass over /proc: count and sum the resident memory of agent-related processes by kind.

Reads /proc directly (two small reads per process: `cmdline` and `stat`) because the scan must
cost less than process-exporter's scrape at thousands of processes. Classification is cached
by (pid, start time, comm, command line): all four are re-read every scan, so a shim that
exec()s into the real program, or a node process that retitles itself, is re-classified by
what it became, and a recycled pid never inherits a kind. Processes that vanish or are
unreadable mid-scan are skipped and counted, never an error of the scan.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentwatch.sentinels.footprint.classify import Classifier, Process

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_CHUNK = 8192  # small reads: a huge buffer costs an mmap/munmap per read
_READ_MAX = 1 << 17  # longer command lines are truncated; signatures look at the start
_PF_KTHREAD = 0x00200000


@dataclass
class Scan:
    """The result of one successful pass: per-kind counts and RSS, fixed label set."""

    counts: dict[str, int]
    resident_bytes: dict[str, int]
    processes_seen: int = 0  # live, non-kernel processes on the host
    vanished: int = 0  # listed but gone or unreadable before we could read them
    duration_seconds: float = 0.0
    finished_at: float = 0.0  # wall-clock time, for the last-success timestamp

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def total_resident_bytes(self) -> int:
        return sum(self.resident_bytes.values())


@dataclass
class Scanner:
    """Scans a /proc tree; keeps only the classification cache between scans."""

    classifier: Classifier
    proc: Path = Path("/proc")
    _cache: dict[tuple[int, bytes, bytes, bytes], str | None] = field(default_factory=dict)
    last_pids: dict[str, list[int]] = field(default_factory=dict)
    keep_pids: bool = False  # tests and debugging: remember which pids made each kind

    def _read(self, path: str) -> bytes:
        fd = os.open(path, os.O_RDONLY)
        try:
            data = os.read(fd, _CHUNK)
            if len(data) == _CHUNK:  # rare: long command lines (browsers, java)
                parts = [data]
                size = len(data)
                while size < _READ_MAX and (more := os.read(fd, _CHUNK)):
                    parts.append(more)
                    size += len(more)
                data = b"".join(parts)
            return data
        finally:
            os.close(fd)

    def scan(self) -> Scan:
        """One pass. Raises OSError only when /proc itself cannot be listed (a failed scan)."""
        started = time.perf_counter()
        kinds = self.classifier.kinds
        counts = dict.fromkeys(kinds, 0)
        resident = dict.fromkeys(kinds, 0)
        pids: dict[str, list[int]] = {kind: [] for kind in kinds} if self.keep_pids else {}
        root = str(self.proc)
        names = os.listdir(root)
        cache = self._cache
        fresh: dict[tuple[int, bytes, bytes, bytes], str | None] = {}
        read = self._read
        seen = vanished = 0
        for name in names:
            if not name.isdigit():
                continue
            base = f"{root}/{name}/"
            try:
                argv = read(base + "cmdline")
                stat = read(base + "stat")
            except OSError:  # ENOENT/ESRCH: exited since the listing; EACCES: hidden from us
                vanished += 1
                continue
            # stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
            close = stat.rfind(b")")
            fields = stat[close + 2 :].split(b" ", 22)
            if len(fields) < 22 or fields[0] in (b"Z", b"X") or not argv:
                continue  # zombie, dead, or kernel thread / exiting process (no command line)
            if int(fields[6]) & _PF_KTHREAD:
                continue
            seen += 1
            comm = stat[stat.find(b"(") + 1 : close]
            key = (int(name), fields[19], comm, argv)
            kind = cache[key] if key in cache else self._classify(base, comm, argv)
            fresh[key] = kind
            if kind is not None:
                counts[kind] += 1
                resident[kind] += int(fields[21]) * PAGE_SIZE
                if self.keep_pids:
                    pids[kind].append(int(name))
        self._cache = fresh  # only live processes stay cached: bounded by the process count
        self.last_pids = pids
        return Scan(
            counts=counts,
            resident_bytes=resident,
            processes_seen=seen,
            vanished=vanished,
            duration_seconds=time.perf_counter() - started,
            finished_at=time.time(),
        )

    def _classify(self, base: str, comm: bytes, argv: bytes) -> str | None:
        try:
            exe = os.readlink(base + "exe")
        except OSError:  # another user's process, or exiting: classify without it
            exe = ""
        exe = exe.removesuffix(" (deleted)")
        cmdline = argv.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
        process = Process(comm=comm.decode("utf-8", "replace"), exe=exe, cmdline=cmdline)
        return self.classifier.classify(process)
