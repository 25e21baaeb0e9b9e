"""A ledger's SQLite database, opened as both ledgers open theirs.

The token and the agent ledger each keep one database a single process writes: WAL with
synchronous=NORMAL (a crash loses at most the last commits, never the file's consistency; each
ledger's read position is saved in the same transaction as its counters, so nothing counts
twice), the schema applied, and its version checked, so a database of another layout is
refused with what to do rather than misread."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path


def open_versioned(
    path: Path, schema: str, version: str, what: str, source: str, page_size: int = 0
) -> sqlite3.Connection:
    """The database at `path` with `schema` applied and its `meta` row 'schema' at `version`
    (written when new). Another version is a RuntimeError naming `what` ("agent ledger") and
    what it is rebuilt from (`source`); the connection is closed then. `page_size`: the page
    size of a database made now (0: SQLite's; an existing one keeps its own)."""
    db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    try:
        if page_size:
            db.execute(f"PRAGMA page_size={int(page_size)}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(schema)
        row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None:
            db.execute("INSERT INTO meta VALUES ('schema', ?)", (version,))
        elif row[0] != version:
            raise RuntimeError(
                f"{path}: {what} schema {row[0]} is not {version}; move the file away to "
                f"rebuild it from {source}"
            )
    except BaseException:
        with contextlib.suppress(Exception):
            db.close()
        raise
    return db


def size_bytes(path: Path) -> int:
    """The database with its WAL and shared-memory files: what it takes on disk."""
    total = 0
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            total += Path(str(path) + suffix).stat().st_size
    return total
