"""Run a program from an argv list (never a shell) with a deadline.

The child gets its own session: it has no controlling terminal, so neither git, ssh nor a
release-check script can stop to prompt for a password, and on timeout the whole process group
(e.g. git and the ssh it started) is killed, not only the direct child.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


class TimedOut(Exception):
    """The program ran past its deadline and was killed."""


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: bytes
    stderr: bytes


def run(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    capture: bool = True,
) -> Finished:
    """Run `argv` in `cwd`; raises TimedOut, or OSError when it cannot be started."""
    output = subprocess.PIPE if capture else subprocess.DEVNULL
    with subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=output,
        stderr=output,
        start_new_session=True,
    ) as child:
        try:
            stdout, stderr = child.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(child)
            raise TimedOut(f"{argv[0]} ran longer than {timeout:g} s and was killed") from None
    return Finished(child.returncode, stdout or b"", stderr or b"")


def _kill_group(child: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    try:  # collect the pipes; a grandchild that left the group must not hang us
        child.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        child.kill()
