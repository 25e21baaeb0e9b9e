"""One cheap pass over /proc per cycle: every process with its parent, CPU, RSS and identity.

Each process costs one read of /proc/PID/stat, which carries the parent, the name (comm), the
CPU times (own and reaped children's), the resident size and the start time. The start time
read in the same read makes (pid, start) an exact identity, so pid reuse between two cycles is
never mistaken for the same process. The command line is read only for processes not seen
before (or whose name changed: an exec), and only the few facts matching needs are kept.

psutil costs about six times more per process for the same fields (its Process objects read
stat and statm separately and wrap every call), which matters on hosts with thousands of
processes at a 15 s interval; `PsutilTable` is the portable fallback where /proc is missing.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
INTERPRETERS = ("node", "nodejs", "bun", "deno", "python", "pypy")
SCRIPT_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".py")

Identity = tuple[int, float]  # (pid, start time); a reused pid gets a new start time


@dataclass(slots=True)
class Args:
    """What matching needs from a command line; the command line itself is not kept."""

    argv0: str = ""  # basename of argv[0]
    script: str = ""  # for interpreters: the script or -m module run, without suffix
    agentwatch: bool = False  # runs agentwatch (console script or python -m agentwatch...)


@dataclass(slots=True)
class Proc:
    """One process of /proc, the fields the sentinels use."""

    pid: int
    ppid: int
    comm: str
    start: float  # seconds after boot (clock ticks resolution)
    cpu: float  # seconds: user + system, plus those of reaped children
    rss: int  # bytes; from stat this is the kernel's cheap approximation, see precise_rss()
    zombie: bool
    args: Args

    @property
    def identity(self) -> Identity:
        return (self.pid, self.start)


@dataclass
class Scan:
    """The process table at one moment, plus what went wrong reading it."""

    procs: dict[int, Proc]
    errors: Counter[str] = field(default_factory=Counter)
    monotonic: float = 0.0  # when the scan started
    duration: float = 0.0


def parse_args(argv: list[str]) -> Args:
    """The facts about a command line that decide whether it is an agent or agentwatch."""
    if not argv:
        return Args()
    argv0 = os.path.basename(argv[0])
    script = ""
    if argv0.startswith(INTERPRETERS):
        rest = argv[1:8]
        for index, arg in enumerate(rest):
            if arg == "-m" and index + 1 < len(rest):
                script = rest[index + 1].split(".", 1)[0]
                break
            if arg in ("-c", "-e", "--eval", "-"):
                break
            if not arg.startswith("-"):
                script = os.path.basename(arg)
                for suffix in SCRIPT_SUFFIXES:
                    script = script.removesuffix(suffix)
                break
    agentwatch = argv0 == "agentwatch" or script == "agentwatch"
    return Args(argv0=argv0, script=script, agentwatch=agentwatch)


def _classify(error: OSError) -> str:
    return "denied" if isinstance(error, PermissionError) else "vanished"


class ProcTable:
    """Scans /proc; keeps only the parsed command-line facts of live processes between scans."""

    def __init__(self, root: str = "/proc"):
        self.root = root
        self._args: dict[tuple[int, float, str], Args] = {}

    def pids(self) -> list[int]:
        return [int(name) for name in os.listdir(self.root) if name.isdigit()]

    def read_stat(self, pid: int) -> bytes:
        # os.open/os.read: a third of the cost of open() for a one-read file, on the hot path.
        fd = os.open(f"{self.root}/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            return os.read(fd, 4096)
        finally:
            os.close(fd)

    def read_cmdline(self, pid: int) -> list[str]:
        with open(f"{self.root}/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
        return [part.decode(errors="replace") for part in raw.split(b"\0") if part]

    def cwd(self, pid: int) -> str:
        """The working directory; raises OSError (PermissionError for other users' processes)."""
        return os.readlink(f"{self.root}/{pid}/cwd").removesuffix(" (deleted)")

    def precise_rss(self, proc: Proc) -> int:
        """RSS as `ps`, psutil and VmRSS report it (statm). The stat field can lag by per-CPU
        counter batches (hundreds of KB per process on recent kernels), so members of the trees
        we report get this one extra read; the rest of the host does not."""
        try:
            with open(f"{self.root}/{proc.pid}/statm", "rb") as handle:
                return int(handle.read().split()[1]) * PAGE_SIZE
        except (OSError, ValueError, IndexError):
            return proc.rss

    def scan(self) -> Scan:
        started = time.monotonic()
        errors: Counter[str] = Counter()
        procs: dict[int, Proc] = {}
        args: dict[tuple[int, float, str], Args] = {}
        for pid in self.pids():
            try:
                data = self.read_stat(pid)
                close = data.rindex(b")")
                comm = data[data.index(b"(") + 1 : close].decode(errors="replace")
                fields = data[close + 2 :].split()
                start = int(fields[19]) / CLOCK_TICKS
                utime, stime, cutime, cstime = fields[11:15]
                cpu = (int(utime) + int(stime) + int(cutime) + int(cstime)) / CLOCK_TICKS
                proc = Proc(
                    pid=pid,
                    ppid=int(fields[1]),
                    comm=comm,
                    start=start,
                    cpu=cpu,
                    rss=int(fields[21]) * PAGE_SIZE,
                    zombie=fields[0] in (b"Z", b"X"),
                    args=Args(),
                )
            except OSError as error:  # gone between listing and reading, or hidden from us
                errors[_classify(error)] += 1
                continue
            except (ValueError, IndexError):
                errors["malformed"] += 1
                continue
            key = (pid, start, comm)
            known = self._args.get(key)
            if known is None:
                try:
                    known = parse_args(self.read_cmdline(pid))
                except OSError as error:
                    errors[_classify(error)] += 1
                    known = Args()
            args[key] = proc.args = known
            procs[pid] = proc
        self._args = args
        return Scan(procs, errors, started, time.monotonic() - started)


class PsutilTable(ProcTable):
    """The same scan through psutil, for platforms without a Linux /proc (slower). psutil is
    imported here only: 1.5 MiB of private memory that a sentinel reading /proc never uses."""

    def __init__(self) -> None:
        super().__init__(root="")
        import psutil

        self.psutil = psutil

    def precise_rss(self, proc: Proc) -> int:
        return proc.rss

    def cwd(self, pid: int) -> str:
        psutil = self.psutil
        try:
            return psutil.Process(pid).cwd()
        except psutil.AccessDenied as error:
            raise PermissionError(str(error)) from error
        except psutil.NoSuchProcess as error:
            raise FileNotFoundError(str(error)) from error

    def scan(self) -> Scan:
        started = time.monotonic()
        errors: Counter[str] = Counter()
        procs: dict[int, Proc] = {}
        psutil = self.psutil
        boot = psutil.boot_time()
        for handle in psutil.process_iter():
            try:
                with handle.oneshot():
                    times = handle.cpu_times()
                    status = handle.status()
                    proc = Proc(
                        pid=handle.pid,
                        ppid=handle.ppid(),
                        comm=handle.name(),
                        start=round(handle.create_time() - boot, 2),
                        cpu=times.user + times.system + times.children_user + times.children_system,
                        rss=handle.memory_info().rss,
                        zombie=status == psutil.STATUS_ZOMBIE,
                        args=Args(),
                    )
                    proc.args = parse_args(handle.cmdline())
            except psutil.AccessDenied:
                errors["denied"] += 1
                continue
            except psutil.NoSuchProcess:  # includes ZombieProcess raised by cmdline()
                errors["vanished"] += 1
                continue
            procs[proc.pid] = proc
        return Scan(procs, errors, started, time.monotonic() - started)


def default_table() -> ProcTable:
    return ProcTable() if Path("/proc/self/stat").exists() else PsutilTable()
