"""One way to read a file that something else can replace: regular files only, without
blocking, up to a size cap.

Spool files, state files, the config, token and secret files and the web config all live in
folders another process (or an attacker with the same uid) can write to. Replaced by a symlink
to /dev/zero, a FIFO or a 10 GB file, a naive `read_text()` hangs or eats all memory. Here the
file is opened with O_NONBLOCK (a FIFO cannot block the open), checked with fstat on the open
descriptor (what was checked is what is read), and read up to its kind's cap. Every refusal is
a `FileRefused`, an OSError, so callers that already handle a missing or unreadable file handle
these too; its message names the file and the reason, never a byte of the content.

The writer side (`open_write`, `open_lock`) keeps the same rule for the files a writer appends
to, creates or locks: non-blocking (a FIFO put in place of the Claude Code hook's spool made
every hook wait for a reader that never came), no-follow (a symlink put there would have the
line appended to its target) and regular files only. Readers of files only agentwatch writes
(the hook-event spool, its counters) pass `follow=False` too; files a user may keep as a
symlink on purpose (a dotfiles-managed config or settings.json) are still followed.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

KiB = 1024
MiB = 1024 * KiB

SPOOL_LIMIT = 16 * MiB  # a sentinel's spool file; the largest real one is well under 2 MiB
STATE_LIMIT = 16 * MiB  # a sentinel's or the controller's JSON state
CONFIG_LIMIT = 1 * MiB  # the YAML config and the web config
SECRET_LIMIT = 64 * KiB  # a bearer token, a password file
DATA_LIMIT = 16 * MiB  # other JSON we read: a run config, a price table, a report


class FileRefused(OSError):
    """A file agentwatch will not read or write: not a regular file, a symlink where none is
    followed, or larger than its cap. `reason` is `not_regular`, `symlink` or `too_large`,
    for metrics."""

    def __init__(self, path: Path | str, reason: str, detail: str):
        super().__init__(errno.EINVAL, f"{path}: {detail}")
        self.reason = reason
        self.path = str(path)

    def __str__(self) -> str:
        return str(self.strerror)


_SAFE = os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def _open(path: Path | str, flags: int, follow: bool, mode: int = 0o600) -> int:
    """os.open with the rule's flags; a symlink (when not followed) or a FIFO without a reader
    (opened for writing) is a FileRefused."""
    try:
        return os.open(path, flags | _SAFE | (0 if follow else os.O_NOFOLLOW), mode)
    except OSError as err:
        if err.errno == errno.ELOOP and not follow:
            raise FileRefused(path, "symlink", "a symbolic link (not followed)") from None
        if err.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO without a reader; a folder
            raise FileRefused(path, "not_regular", "not a regular file") from None
        raise


def _regular(descriptor: int, path: Path | str) -> os.stat_result:
    """fstat of the open descriptor; FileRefused (and the descriptor closed) unless it is a
    regular file."""
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        os.close(descriptor)
        raise FileRefused(path, "not_regular", f"not a regular file ({_kind(info.st_mode)})")
    return info


def open_write(
    path: Path | str, mode: int = 0o600, append: bool = True, truncate: bool = False
) -> int:
    """A descriptor to write the regular file `path` (created with `mode` when missing):
    never a symlink's target, never waiting on a FIFO, never a device (FileRefused). The
    caller closes it."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0)
    descriptor = _open(path, flags | (os.O_TRUNC if truncate else 0), False, mode)
    _regular(descriptor, path)
    return descriptor


def open_lock(path: Path | str) -> int:
    """A descriptor of the lock file `path` for flock (created 0600 when missing), by the
    same rule as `open_write`."""
    return open_write(path, 0o600, append=False)


def read_bytes(path: Path | str, limit: int, follow: bool = True) -> bytes:
    """The content of the regular file `path`, at most `limit` bytes (FileRefused otherwise;
    OSError as usual for a missing or unreadable file). `follow=False`: a symlink is refused."""
    descriptor = _open(path, os.O_RDONLY, follow)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(path, "not_regular", f"not a regular file ({_kind(info.st_mode)})")
        if info.st_size > limit:
            raise FileRefused(path, "too_large", f"{info.st_size} bytes, over the cap of {limit}")
        chunks: list[bytes] = []
        left = limit + 1  # one byte more tells a file that grew past the cap
        while left > 0:
            chunk = os.read(descriptor, min(left, MiB))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise FileRefused(path, "too_large", f"grew past the cap of {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def read_text(path: Path | str, limit: int, follow: bool = True) -> str:
    """`read_bytes` decoded as UTF-8 without newline translation (a `\\r` stays a `\\r`);
    UnicodeDecodeError for invalid UTF-8."""
    return read_bytes(path, limit, follow).decode("utf-8")


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def read_from(
    path: Path | str, offset: int, limit: int, follow: bool = True
) -> tuple[os.stat_result, bytes]:
    """The regular file `path`'s identity (fstat of what was opened) and at most `limit`
    bytes from `offset`, for a reader that follows an append-only file by inode and
    position; the file may be any size (FileRefused only when it is not a regular file, or
    a symlink with `follow=False`)."""
    descriptor = _open(path, os.O_RDONLY, follow)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(path, "not_regular", f"not a regular file ({_kind(info.st_mode)})")
        if offset >= info.st_size or limit <= 0:
            return info, b""
        return info, os.pread(descriptor, min(limit, info.st_size - offset), offset)
    finally:
        os.close(descriptor)
