"""One way to replace a file so that a reader never sees half of it.

Every file agentwatch writes for another reader (spool files, state files, installed units and
configs) goes through `write_atomic`: a temporary file beside the target, created with its final
mode (a secret file is never readable by others, not even for a moment), renamed over the old
one. `durable=True` adds the fsyncs that make the new content survive a power loss, for state
that is the only record of something; the spool is rewritten every few seconds and skips them.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from agentwatch.core import bounded


def write_atomic(path: Path, data: bytes | str, mode: int = 0o644, durable: bool = False) -> None:
    """Write `data` to `path` atomically with permissions `mode` (umask does not apply)."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    # pid and thread id: two writers of the same file never share a temporary name
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    # by bounded's writer rule: a symlink or FIFO planted at the temporary name is refused
    descriptor = bounded.open_write(temporary, mode, append=False, truncate=True)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(payload)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    if durable:
        _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    """Persist the rename itself (the folder entry), as fsync of the file does not."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
