"""Two whole commands, interleaved in pairs: the harness the peer benchmarks share.

A benchmark that runs our command, then the peer's, then reads one ratio, tells the machine's
mood as much as the code's: on a shared 2-core machine the speed drifts by a third within
minutes. So each pair runs both sides back to back (the order alternating pair by pair, so
neither always gets the warmer cache or the quieter second), the ratio is taken per pair, and
the spread of those ratios (min/median/max) is printed with the load average before and after,
so a reader can see whether a verdict is the code or the weather. The verdict is on the median
ratio; `verdict()` turns the checks into the exit status: 0 every target met, 1 one missed.
A setup problem (a peer not installed, a corpus that cannot be made) is `SetupError`, exit 2,
so that "could not measure" is never read as "measured and passed".

Each run is a whole process: wall time around it, CPU (user + system) of its process tree,
which is what wait4 reports for the child and the children it waited for, or the per-process
CPU times sampled from /proc when those are more (workers that were not waited for), and the
peak of the tree's summed resident memory, sampled every 10 ms (ru_maxrss cannot be used: a
child's high-water mark starts at this benchmark's own size when it is forked).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
METRICS = ("wall_s", "cpu_s", "rss_mib")


class SetupError(Exception):
    """The benchmark could not measure (exit 2), e.g. a peer that is not installed."""


@dataclass
class Sample:
    """One measured run of one side."""

    wall_s: float
    cpu_s: float
    rss_mib: float
    out: bytes = b""
    extra: dict[str, float] = field(default_factory=dict)

    def value(self, metric: str) -> float:
        return self.extra[metric] if metric in self.extra else float(getattr(self, metric))


Side = Callable[[], Sample]


def _pids() -> set[int]:
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of a process, None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS


def _rss(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * PAGE
    except OSError:
        return None


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) of a running process and its waited-for children."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / TICKS


def rss_mib(pid: int) -> float:
    found = _rss(pid)
    return 0.0 if found is None else found / (1 << 20)


class TreeSampler(threading.Thread):
    """The peak summed RSS and per-process CPU of one run's process tree, every 10 ms.
    Processes that existed before the run are never its descendants; a new pid is classified
    once, by its parent, so a sample does not read the whole process table's stat files."""

    def __init__(self, pid: int, before: set[int], every: float = 0.01):
        super().__init__(daemon=True)
        self.every = every
        self.tree = {pid}
        self.seen = before | {pid}
        self.peak_rss = 0
        self.cpu: dict[int, float] = {}
        self.done = threading.Event()

    def _adopt(self) -> None:
        parents = {}
        for pid in _pids() - self.seen:
            found = _stat(pid)
            if found is not None:
                parents[pid] = found[0]
        added = True
        while added:
            added = False
            for pid, parent in list(parents.items()):
                if parent in self.tree:
                    self.tree.add(pid)
                    del parents[pid]
                    added = True
        self.seen |= self.tree | parents.keys()

    def run(self) -> None:
        while not self.done.is_set():
            self._adopt()
            total = 0
            for pid in list(self.tree):
                rss, found = _rss(pid), _stat(pid)
                if rss is None or found is None:
                    self.tree.discard(pid)
                    continue
                total += rss
                self.cpu[pid] = found[1]
            if not self.tree:
                return
            self.peak_rss = max(self.peak_rss, total)
            self.done.wait(self.every)


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A loopback port free now and not handed out before in this run: once a bound socket is
    closed the kernel may give the same port to the next bind, and two listeners of one
    bench would then collide."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def run_command(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin: bytes = b"",
    timeout: float = 3600.0,
) -> Sample:
    """Run argv to completion as its own process group and measure it (see the module doc).
    A non-zero exit or the timeout raises RuntimeError with the tail of its stderr."""
    before = _pids()
    started = time.perf_counter()
    proc = subprocess.Popen(
        list(argv),
        env=dict(env) if env is not None else None,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    sampler = TreeSampler(proc.pid, before)
    sampler.start()
    chunks: dict[str, bytes] = {}

    def drain(name: str, stream: object) -> None:
        chunks[name] = stream.read()  # type: ignore[attr-defined]

    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout), daemon=True),
        threading.Thread(target=drain, args=("err", proc.stderr), daemon=True),
    ]
    for reader in readers:
        reader.start()
    assert proc.stdin is not None
    try:
        proc.stdin.write(stdin)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    timer = threading.Timer(timeout, kill_group, args=(proc.pid,))
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        kill_group(proc.pid)
        proc.wait(10)
        raise
    finally:
        timer.cancel()
        sampler.done.set()
        sampler.join(5)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join(10)
    if proc.returncode != 0:
        tail = chunks.get("err", b"").decode(errors="replace")[-2000:]
        late = " (timeout)" if wall >= timeout else ""
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}{late}:\n{tail}")
    waited = usage.ru_utime + usage.ru_stime
    cpu = max(waited, sum(sampler.cpu.values()))
    return Sample(wall, cpu, sampler.peak_rss / (1 << 20), chunks.get("out", b""))


def command(argv: Sequence[str], **options: object) -> Side:
    """A side that runs argv as a whole process (options as run_command's)."""
    return lambda: run_command(argv, **options)  # type: ignore[arg-type]


@dataclass
class Pairs:
    """The samples of both sides, pair by pair, and the load around them."""

    names: tuple[str, str]
    a: list[Sample]
    b: list[Sample]
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]

    def ratios(self, metric: str) -> list[float]:
        return [
            x.value(metric) / y.value(metric) if y.value(metric) else float("inf")
            for x, y in zip(self.a, self.b, strict=True)
        ]

    def spread(self, metric: str) -> tuple[float, float, float]:
        return spread(self.ratios(metric))

    def as_dict(self) -> dict[str, object]:
        def runs(samples: list[Sample]) -> list[dict[str, float]]:
            return [
                {"wall_s": s.wall_s, "cpu_s": s.cpu_s, "rss_mib": s.rss_mib, **s.extra}
                for s in samples
            ]

        return {
            "names": list(self.names),
            "a": runs(self.a),
            "b": runs(self.b),
            "load_before": list(self.load_before),
            "load_after": list(self.load_after),
        }


def spread(values: Iterable[float]) -> tuple[float, float, float]:
    """(min, median, max)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    return ordered[0], statistics.median(ordered), ordered[-1]


def load() -> tuple[float, float, float]:
    return os.getloadavg()


def run_pairs(
    a: tuple[str, Side],
    b: tuple[str, Side],
    pairs: int,
    *,
    warmup: int = 0,
    between: Callable[[], None] | None = None,
    progress: bool = True,
) -> Pairs:
    """`pairs` pairs of one run of each side, a first in even pairs and b first in odd ones,
    after `warmup` unmeasured runs of each. `between` runs before every measured run (e.g. to
    drop a state folder so each run is cold)."""
    if pairs < 1:
        raise SetupError("at least one pair is needed")
    for _ in range(warmup):
        a[1]()
        b[1]()
    result = Pairs((a[0], b[0]), [], [], load(), (0.0, 0.0, 0.0))
    for index in range(pairs):
        order = [(a, result.a), (b, result.b)]
        if index % 2:
            order.reverse()
        for (_name, side), into in order:
            if between is not None:
                between()
            into.append(side())
        if progress:
            ratio = result.a[-1].cpu_s / result.b[-1].cpu_s if result.b[-1].cpu_s else 0.0
            print(
                f"  pair {index + 1}/{pairs}: {a[0]} {result.a[-1].wall_s:.4g} s wall "
                f"{result.a[-1].cpu_s:.4g} s CPU, {b[0]} {result.b[-1].wall_s:.4g} s wall "
                f"{result.b[-1].cpu_s:.4g} s CPU (CPU ratio {ratio:.3g})",
                flush=True,
            )
    result.load_after = load()
    return result


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def table(result: Pairs, metrics: Sequence[str] = METRICS) -> str:
    """Per side median (min-max) of each metric, and the per-pair ratio a/b min/median/max."""
    a_name, b_name = result.names
    lines = [
        f"{len(result.a)} pairs, alternating order; load average "
        f"{' '.join(f'{x:.2f}' for x in result.load_before)} before, "
        f"{' '.join(f'{x:.2f}' for x in result.load_after)} after, {os.cpu_count()} CPUs",
        f"{'metric':<14} {a_name + ' median (min-max)':>34} {b_name + ' median (min-max)':>34}"
        f"  {'ratio min / median / max':>26}",
    ]
    for metric in metrics:
        cells = []
        for samples in (result.a, result.b):
            low, mid, high = spread(s.value(metric) for s in samples)
            cells.append(f"{_fmt(mid)} ({_fmt(low)}-{_fmt(high)})")
        low, mid, high = result.spread(metric)
        lines.append(
            f"{metric:<14} {cells[0]:>34} {cells[1]:>34}  "
            f"{_fmt(low):>8} / {_fmt(mid):>6} / {_fmt(high):>6}"
        )
    return "\n".join(lines)


@dataclass
class Check:
    """One target: `value` must be at most `limit` (or below it when `strict`; at least it
    when `at_least`, for a floor such as hours kept)."""

    name: str
    value: float
    limit: float
    strict: bool = False
    at_least: bool = False

    @property
    def ok(self) -> bool:
        if self.at_least:
            return self.value >= self.limit
        return self.value < self.limit if self.strict else self.value <= self.limit

    def line(self) -> str:
        op = "≥" if self.at_least else "<" if self.strict else "≤"
        mark = "PASS" if self.ok else "FAIL"
        return f"{mark}  {self.name}: {self.value:.4g} (target {op} {self.limit:g})"


def ratio_check(result: Pairs, metric: str, limit: float, *, strict: bool = False) -> Check:
    """The median per-pair ratio a/b of `metric` against `limit`."""
    a_name, b_name = result.names
    return Check(
        f"{metric} {a_name} / {b_name}, median of pairs", result.spread(metric)[1], limit, strict
    )


def verdict(checks: Sequence[Check], out: Path | None = None, extra: object = None) -> int:
    """Print each check and return the exit status: 0 all met, 1 one missed."""
    for check in checks:
        print(check.line())
    missed = [check.name for check in checks if not check.ok]
    print(f"verdict: {'FAIL, missed ' + '; '.join(missed) if missed else 'PASS'}")
    if out is not None:
        doc = {
            "checks": [
                {"name": c.name, "value": c.value, "limit": c.limit, "ok": c.ok} for c in checks
            ],
            "data": extra,
        }
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=1, default=str))
    return 1 if missed else 0


def load_line(before: Sequence[float], after: Sequence[float] | None = None) -> str:
    """The load average around a measurement, with the number of CPUs (for the reader)."""
    text = f"load average {' '.join(f'{x:.2f}' for x in before)} before"
    if after is not None:
        text += f", {' '.join(f'{x:.2f}' for x in after)} after"
    return f"{text}, {os.cpu_count()} CPUs"


def spread_line(name: str, values: Sequence[float], unit: str = "", scale: float = 1.0) -> str:
    """`name: median M (min L - max H), N runs` for a bench without a peer (values times scale)."""
    low, mid, high = spread(values)
    u = f" {unit}" if unit else ""
    return (
        f"{name}: median {_fmt(mid * scale)}{u} "
        f"(min {_fmt(low * scale)}, max {_fmt(high * scale)}), {len(values)} runs"
    )


def median_check(
    name: str, values: Sequence[float], limit: float, *, strict: bool = False
) -> Check:
    """An absolute target (no peer on this machine) judged on the median of the runs."""
    return Check(f"{name}, median of {len(values)}", spread(values)[1], limit, strict)


def main_guard(body: Callable[[], int]) -> int:
    """Run a benchmark's body: SetupError → its message and exit 2."""
    try:
        return body()
    except SetupError as err:
        print(f"setup error: {err}", flush=True)
        return 2


def need_executable(path: str | None, what: str, hint: str) -> str:
    """The path of an executable, or SetupError naming what is missing and how to get it."""
    if path and os.access(path, os.X_OK):
        return path
    raise SetupError(f"{what} not found ({path or 'no path'}); {hint}")


def main() -> int:
    """`python bench/pairs.py --a CMD --b CMD`: any two commands, paired (a check of the
    harness itself, and a quick way to compare two builds)."""
    import argparse
    import shlex
    import shutil

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--a", required=True, help="our command (one string, split like a shell)")
    parser.add_argument("--b", required=True, help="the peer's command")
    parser.add_argument("--pairs", type=int, default=5, help="interleaved pairs (default 5)")
    parser.add_argument("--metric", choices=METRICS, default="cpu_s", help="judged metric")
    parser.add_argument("--target", type=float, default=1.0, help="max median ratio a/b")
    parser.add_argument("--out", type=Path, help="write the samples and verdict as JSON")
    args = parser.parse_args()

    def body() -> int:
        sides = []
        for name in ("a", "b"):
            argv = shlex.split(getattr(args, name))
            found = shutil.which(argv[0]) if argv else None
            need_executable(found, f"command {name} ({argv[0] if argv else ''})", "check --" + name)
            sides.append((name, command(argv)))
        result = run_pairs(sides[0], sides[1], args.pairs)
        print(table(result))
        check = ratio_check(result, args.metric, args.target)
        return verdict([check], args.out, result.as_dict())

    return main_guard(body)


if __name__ == "__main__":
    raise SystemExit(main())
