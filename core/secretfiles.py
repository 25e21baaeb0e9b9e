"""Permission rules for files that hold secrets, shared by every reader and `config check`.

The rule, like ssh's for private keys: a file holding a secret (a bearer token, a TLS private
key) that *other* users can read is refused by the component that reads it; one the *group*
can read is accepted with a warning. Files that may hold secrets without being one (the config
file, whose URLs may carry user:password; a web config file with password hashes) only get a
warning from `agentwatch config check`. The fix is always the same: `chmod 600 FILE`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class InsecureFileError(Exception):
    """A secret file other users can read; the message names the file and the fix."""


def readable_by(path: Path) -> str | None:
    """'others' or 'group' when they can read the file, None when only its owner can (or it
    cannot be inspected: the reader reports that itself)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if mode & stat.S_IROTH:
        return "others"
    if mode & stat.S_IRGRP:
        return "group"
    return None


def problem(path: Path, holds: str) -> str | None:
    """One line naming the file, who can read it and the fix, or None when it is private."""
    who = readable_by(path)
    if who is None:
        return None
    mode = stat.S_IMODE(os.stat(path).st_mode)
    whom = "other users" if who == "others" else "its group"
    return f"{path} ({holds}) is readable by {whom} (mode {mode:04o}); fix: chmod 600 {path}"


def require_private(path: Path, holds: str) -> str | None:
    """Raise InsecureFileError when other users can read `path`; return a warning line when
    only its group can; None when it is private."""
    line = problem(path, holds)
    if line is not None and readable_by(path) == "others":
        raise InsecureFileError(f"refusing to use {line}")
    return line


SecretFile = tuple[Path, str, bool]  # (path, what it holds, refused when others can read it)


def secret_files(cfg: Any) -> Iterable[SecretFile]:
    """Every file the core sections of the config name that holds or may hold a secret.
    Sentinels name their own (agentwatch.sentinels.contract: `secret_files`)."""
    if cfg.source is not None:
        yield cfg.source, "config file; URLs in it may carry credentials", False
    for section in ("exporter", "controller"):
        web_config = cfg[section].get("web_config_file")
        if web_config is not None:
            yield web_config, f"{section}.web_config_file: password hashes", False
            yield from _tls_key_files(web_config, section)
    password_file = cfg["stack"]["remote_write"]["password_file"]
    if password_file is not None:
        yield password_file, "stack.remote_write.password_file: a password", True
    token_file = cfg["controller"]["orchestrator"]["token_file"]
    if token_file is not None:
        yield token_file, "controller.orchestrator.token_file: a bearer token", True


def _tls_key_files(web_config: Path, section: str) -> Iterable[SecretFile]:
    from agentwatch.core.webconfig import WebConfigError, read_raw

    try:
        raw = read_raw(web_config)
    except WebConfigError:
        return  # `config check` reports the web config's own problems separately
    tls = raw.get("tls_server_config")
    if isinstance(tls, dict) and isinstance(tls.get("key_file"), str):
        key = Path(os.path.expanduser(tls["key_file"]))
        if not key.is_absolute():
            key = web_config.parent / key
        yield key, f"{section} TLS private key", True


def audit(files: Iterable[SecretFile]) -> list[str]:
    """Warnings for `agentwatch config check`: each secret file others or the group can read."""
    seen: set[Path] = set()
    lines: list[str] = []
    for path, holds, strict in files:
        if path in seen:
            continue
        seen.add(path)
        line = problem(path, holds)
        if line is not None and strict and readable_by(path) == "others":
            line += " (agentwatch refuses to use it until then)"
        if line is not None:
            lines.append(line)
    return lines
