"""Real process trees with controlled names: stand-ins for agent sessions, for the resources
sentinel's tests and benchmark (in the package, so bench/ imports it without path tricks).

A copy of /bin/sh named like an agent (`claude`) starts children that are copies of
/bin/sleep named `node`, `codex`, …; the kernel takes the process name from the file name, so
these look like the real thing to anything reading /proc. Each tree runs in its own process
group and is killed as a whole.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil

BUSY = "while :; do :; done"


def fake_bin(folder: Path, name: str, source: str = "/bin/sleep") -> Path:
    """A copy of `source` called `name` (a copy, not a link: comm comes from the file name)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if not path.exists():
        shutil.copy2(source, path)
    return path


def session_script(
    folder: Path, sleepers: tuple[str, ...] = ("node",), busy: int = 0, extra: str = ""
) -> str:
    """The sh script an agent root runs: sleeping children, busy children, then waits."""
    parts = [f"{shlex.quote(str(fake_bin(folder, name)))} 300 &" for name in sleepers]
    burn = fake_bin(folder, "burn", "/bin/sh")
    parts += [f"{shlex.quote(str(burn))} -c {shlex.quote(BUSY)} &" for _ in range(busy)]
    if extra:
        parts.append(extra)
    parts.append("wait")
    return " ".join(parts)


def spawn_session(
    folder: Path,
    agent: str = "claude",
    sleepers: tuple[str, ...] = ("node",),
    busy: int = 0,
    cwd: Path | None = None,
    extra: str = "",
) -> subprocess.Popen:
    """An agent root (sh named `agent`) with its children; returns once they all run."""
    root = fake_bin(folder, agent, "/bin/sh")
    script = session_script(folder, sleepers, busy, extra)
    process = subprocess.Popen(
        [str(root), "-c", script], cwd=cwd, start_new_session=True, stdin=subprocess.DEVNULL
    )
    wait_for_children(process.pid, len(sleepers) + busy)
    return process


def wait_for_children(pid: int, count: int, timeout: float = 5.0) -> list[psutil.Process]:
    """Wait until `pid` has `count` children that have exec'd (no longer named like the parent)."""
    deadline = time.monotonic() + timeout
    parent = psutil.Process(pid)
    while True:
        with contextlib.suppress(psutil.NoSuchProcess):
            children = parent.children()
            if len(children) >= count and all(c.name() != parent.name() for c in children):
                return children
        if time.monotonic() > deadline:
            raise TimeoutError(f"pid {pid} has not started {count} children")
        time.sleep(0.01)


def kill_tree(process: subprocess.Popen) -> None:
    """Kill the whole process group of a spawned session and reap its root."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def tree_rss(pid: int) -> int:
    """RSS of a process and all descendants, as psutil sees it (an independent reader)."""
    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
