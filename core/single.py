"""One process at a time on a state folder (or a database): an exclusive flock on a lock file.

The lock is the kernel's: it goes with the process however that ends (a SIGKILL too), so
there is never a stale lock to clean up. The holder writes its PID into the file, so the one
turned away can say who holds it. The file is opened without following a symlink and without
blocking (a FIFO put in its place cannot hang us), close-on-exec (children do not inherit the
lock), and must be a regular file. `agentwatch up` holds `<state>/up.lock` this way; the
single-writer stores (the token and agent ledgers' databases) hold `<db>.lock` through
`hold_writer`, so a second sentinel on the same state cannot count twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from pathlib import Path

PID_BYTES = 32  # "1234567\n" with room to spare


class Held(OSError):
    """Another process holds the lock; `pid` is the one it wrote (None if not yet known)."""

    def __init__(self, path: Path, pid: int | None):
        who = f"PID {pid}" if pid is not None else "another process"
        super().__init__(f"{path} is held by {who}")
        self.path = path
        self.pid = pid


def hold(path: Path) -> int:
    """Take the lock on `path` (created 0600) and write our PID into it; return the open
    descriptor, which holds the lock until it is closed or the process ends. Raises Held
    when another process holds it, OSError when the file cannot be used (e.g. not regular)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    descriptor = os.open(path, flags, 0o600)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(f"{path} is not a regular file; move it away")
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Held(path, _pid(descriptor)) from None
        os.ftruncate(descriptor, 0)
        # The PID only names the holder to the one turned away: a full disk (the ledgers
        # wait one out with their state) must not cost the lock itself.
        with contextlib.suppress(OSError):
            os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


class StateInUse(RuntimeError):
    """Another process of the same component writes this database."""


def hold_writer(database: Path, owner: str) -> int:
    """The single-writer lock of `database` (`<database>.lock`), as `hold`'s descriptor.
    Raises StateInUse, naming the owner (e.g. "token-ledger") and the holder's PID, when
    another process writes it."""
    try:
        return hold(Path(f"{database}.lock"))
    except Held as err:
        who = f" (PID {err.pid})" if err.pid is not None else ""
        raise StateInUse(
            f"{database} is in use by another {owner} process{who}; stop it or use another "
            "--state-dir"
        ) from None


def release(descriptor: int) -> None:
    """Let the lock go (the file stays: removing it would race a newcomer's open)."""
    with contextlib.suppress(OSError):
        os.close(descriptor)


def _pid(descriptor: int) -> int | None:
    try:
        text = os.pread(descriptor, PID_BYTES, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
