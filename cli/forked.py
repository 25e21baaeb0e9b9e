"""`up`'s own children forked from it instead of started as new interpreters.

Why: every sentinel, the exporter and the controller is a Python process of its own (one
process per sentinel, as the design keeps it), and each would import much the same modules
again: about 11 MiB of private memory apiece. Forked after `up` has imported those modules
once (and frozen them out of the garbage collector, whose passes would write to every
object's header), the children share those pages with `up` and each other until they write
to them, and PSS counts a page shared by n processes 1/n in each. The installed units start
their commands from systemd, each alone; this only changes how `up` starts its own.

A fork is only safe from a process with one thread, so `start` forks only then and the caller
falls back to a new interpreter otherwise. In the child, before the command runs: every
descriptor above 2 is closed (`up`'s lock must never outlive `up` in a child), the signal
handlers `up` set are reset, the environment is the child's own, stdout and stderr go to its
log, and the kernel is asked for SIGTERM when `up` dies. The command then runs as
`python -m MODULE ARGS` would run it, and the child leaves with os._exit: it never returns
into `up`'s stack (whose `finally` stops every child)."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import io
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentwatch.core.process import die_with_parent

if TYPE_CHECKING:
    from agentwatch.core.config import Config

# What runs in a fork: `python -m NAME`, for each NAME here, is `main(args)` of the module
# it maps to.
ENTRIES = {
    "agentwatch.cli": "agentwatch.cli.entry",
}
PR_SET_NAME = 15


def entry_of(argv: list[str]) -> tuple[str, list[str]] | None:
    """The module whose `main` runs `argv` in a fork, and its arguments; None when `argv`
    is not `python -m` one of ENTRIES (Prometheus, Alertmanager, the demo: new processes)."""
    if len(argv) < 3 or argv[0] != sys.executable or argv[1] != "-m" or argv[2] not in ENTRIES:
        return None
    return ENTRIES[argv[2]], argv[3:]


def preload(modules: Iterable[str]) -> None:
    """Import what the children will run, then keep every object alive now out of the
    collector's passes, so the children's pages stay shared."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # the child that needs it says why, in its own log
            continue
    gc.freeze()


class Forked:
    """A forked child, with the part of subprocess.Popen's interface `up` uses."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
            time.sleep(0.02)
        assert self.returncode is not None
        return self.returncode

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # gone, not reaped yet
                os.kill(self.pid, sig)


def can_fork() -> bool:
    """Only a process with one thread can fork safely (a lock another thread held would
    stay held in the child forever)."""
    return threading.active_count() == 1


def start(
    name: str,
    module: str,
    args: list[str],
    env: Mapping[str, str],
    log: Path,
    to_terminal: bool = False,
    prepared: Callable[[], int] | None = None,
) -> Forked:
    """Fork; in the child run `module.main(args)` (or `prepared`, what `prepare` made of
    them) with its output in `log` (stdout on the terminal instead when `to_terminal`), and
    exit with its status."""
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # what was made since (`prepared`'s config, say) stays shared too
    log_fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    parent = os.getpid()
    pid = os.fork()
    if pid:
        os.close(log_fd)
        return Forked(pid)
    code = 1
    try:
        _become_child(name, env, log_fd, to_terminal, parent)
        code = _run(module, args, prepared)
    except BaseException:  # anything must end here, never in `up`'s stack
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def _become_child(
    name: str, env: Mapping[str, str], log_fd: int, to_terminal: bool, parent: int
) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    if not to_terminal:
        os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    os.environ.clear()
    os.environ.update(env)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]))  # what ps and top show
    die_with_parent(signal.SIGTERM, parent)


def _run(module: str, args: list[str], prepared: Callable[[], int] | None = None) -> int:
    sys.argv = [module, *args]  # as `python -m` would show it
    try:
        code = prepared() if prepared else importlib.import_module(module).main(args)
    except SystemExit as done:
        code = done.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def prepare(module: str, args: list[str], env: Mapping[str, str]) -> Callable[[], int] | None:
    """`python -m agentwatch.cli ARGS` with its command line parsed and its config loaded
    here, before the fork, under the child's environment: what the child then runs.

    Why: building the parser and loading the config in each child wrote to pages spread all
    over the modules `up` shares (about 2 MiB of copies apiece); done once here, the children
    share the result. None (the child parses and loads for itself, and says what is wrong
    in its own log) for another module, a command without a config, or any problem."""
    if module != ENTRIES["agentwatch.cli"]:
        return None
    from agentwatch.cli import main as cli
    from agentwatch.cli.entry import FAST
    from agentwatch.core import config, log

    command = cli.command_in(args)
    if command is None or command in FAST or command not in cli.WITH_CONFIG:
        return None
    quiet = io.StringIO()
    try:
        with _environ(env), contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            parsed = cli.build_parser(command).parse_args(args)
            cfg = _config(parsed.config, env)
    except (SystemExit, config.ConfigError, OSError, ValueError):
        return None
    target = importlib.import_module(f"agentwatch.cli.{cli.COMMANDS[command]}")
    level = parsed.log_level or cfg["log_level"]

    def run() -> int:  # cli.main's last steps: logging as common.load sets it, then the command
        log.setup(level)
        return int(target.run(parsed, cfg))

    return run


_CONFIGS: dict[tuple[Any, ...], Config] = {}


def _config(path: Path | None, env: Mapping[str, str]) -> Config:
    """The config as the children load it, once for every child of the same file (as it is
    now) and environment."""
    from agentwatch.sentinels import registry

    stat = path.stat() if path is not None else None
    key = (str(path), stat and (stat.st_mtime_ns, stat.st_size), tuple(sorted(env.items())))
    if key not in _CONFIGS:
        _CONFIGS.clear()
        _CONFIGS[key] = registry.load_config(path)
    return _CONFIGS[key]


@contextlib.contextmanager
def _environ(env: Mapping[str, str]) -> Iterator[None]:
    """`env` as this process's environment for a while (`up` has one thread: nothing else
    reads it meanwhile)."""
    saved = dict(os.environ)
    if saved == dict(env):
        yield
        return
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


COMMON = ("agentwatch.cli.main", "agentwatch.cli.common", "agentwatch.core.loop")
BY_COMMAND = {
    "sentinel": ("agentwatch.cli.sentinel",),
    "exporter": (
        "agentwatch.cli.exporter",
        "agentwatch.core.webconfig",
        "agentwatch.exporter.server",
        "agentwatch.exporter.collector",
        "agentwatch.exporter.remote",
    ),
    "controller": ("agentwatch.cli.controller", "agentwatch.controller.main"),
}


def modules_for(argvs: Iterable[list[str]]) -> list[str]:
    """The modules the forked ones among these command lines run: each command's, and each
    sentinel's package and main module."""
    from agentwatch.cli.main import command_in
    from agentwatch.sentinels import registry

    wanted: dict[str, None] = {}
    for argv in argvs:
        entry = entry_of(argv)
        if entry is None:
            continue
        module, args = entry
        wanted[module] = None
        command = command_in(args) if module == ENTRIES["agentwatch.cli"] else None
        if command is None:
            continue
        wanted.update(dict.fromkeys(COMMON + BY_COMMAND.get(command, ())))
        if command == "sentinel":
            name = args[args.index("sentinel") + 1]
            package = f"agentwatch.sentinels.{registry.get(name).module}"
            wanted.update(dict.fromkeys((package, f"{package}.main")))
    return list(wanted)
