"""Child processes that never outlive the process that started them."""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM, parent: int | None = None) -> None:
    """Ask the kernel to send `sig` to this process when its parent dies, however it dies
    (even SIGKILL): helpers of a component must never outlive it. Linux only."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
    if parent is not None and os.getppid() != parent:  # the parent died before we asked
        os.kill(os.getpid(), sig)


M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3


def reuse_freed_blocks(largest: int) -> None:
    """Let glibc's malloc keep freed blocks of up to `largest` bytes for the next allocation
    instead of giving them back to the kernel: a process that reads files a megabyte at a
    time otherwise faults every page of each new block in again (half the page faults of a
    backfill). Elsewhere than glibc, nothing changes."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(M_MMAP_THRESHOLD, largest)
    mallopt(M_TRIM_THRESHOLD, 4 * largest)
