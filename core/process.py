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
