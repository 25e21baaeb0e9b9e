"""The statusline snapshots: one file per session, replaced at every render; the freshest one
with `rate_limits` gives the account-wide quota.

A file is read again only when its identity or size or mtime changed, so a cycle costs one
stat per file (at most claude_events.MAX_STATUS_FILES of them). Nothing here is persisted: the
snapshots are files already.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentwatch.core import bounded, claude_events
from agentwatch.core.sanitize import label_value

SNAPSHOT_LIMIT = 64 * bounded.KiB
MAX_WINDOWS = 16  # windows with series of their own (Claude Code names about six)
_Identity = tuple[int, int, int]


def _ratio(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return min(max(float(value), 0.0), 1.0)


def _time(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value) if value >= 0 else None


@dataclass(frozen=True)
class Snapshot:
    """The latest statusline reading of one session."""

    session: str
    project: str
    taken: float
    cost_usd: float | None = None
    context_used_ratio: float | None = None
    cache_hit_ratio: float | None = None
    windows: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    models: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)


def parse(data: bytes) -> Snapshot | None:
    """A snapshot of the contract's shape, or None."""
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(raw, dict) or raw.get("v") != claude_events.VERSION:
        return None
    taken, session = _time(raw.get("t")), raw.get("s")
    if taken is None or not isinstance(session, str) or not session:
        return None
    project = raw.get("p") if isinstance(raw.get("p"), str) else ""
    cost = _time(raw.get("cost_usd"))
    if cost is not None and cost > claude_events.MAX_COST_USD:  # the writer's bound, again
        cost = None
    return Snapshot(
        session=label_value(session),
        project=label_value(project),
        taken=taken,
        cost_usd=cost,
        context_used_ratio=_ratio(raw.get("context_used_ratio")),
        cache_hit_ratio=_ratio(raw.get("cache_hit_ratio")),
        windows=_windows(raw.get("rate_limits"), MAX_WINDOWS),
        models=_windows(raw.get("model_windows"), claude_events.MAX_MODEL_WINDOWS),
    )


def _windows(limits: Any, most: int) -> dict[str, tuple[float | None, float | None]]:
    """{name: (used ratio, resets at)} of a snapshot's windows, at most `most` of them."""
    windows: dict[str, tuple[float | None, float | None]] = {}
    if isinstance(limits, dict):
        for name, window in list(limits.items())[:most]:
            if isinstance(name, str) and name and isinstance(window, dict):
                used, resets = _ratio(window.get("used_ratio")), _time(window.get("resets_at"))
                if resets is not None and resets > claude_events.MAX_EPOCH:
                    resets = None
                if used is not None or resets is not None:
                    windows[label_value(name, 64)] = (used, resets)
    return windows


class Snapshots:
    """The latest snapshot of each session, read again only when its file changed."""

    def __init__(self, folder: Path):
        self.folder = folder / claude_events.STATUS
        self.seen: dict[str, tuple[_Identity, Snapshot | None]] = {}
        self.rejected = 0

    def refresh(self) -> bool:
        """Whether anything changed."""
        try:
            names = [
                entry.name for entry in os.scandir(self.folder) if entry.name.endswith(".json")
            ]
        except OSError:
            names = []
        names = sorted(names)[: claude_events.MAX_STATUS_FILES * 2]
        changed = set(self.seen) != set(names)
        kept: dict[str, tuple[_Identity, Snapshot | None]] = {}
        for name in names:
            path = self.folder / name
            try:
                info = os.lstat(path)  # a symlink is its own identity, and refused below
            except OSError:
                continue
            identity = (info.st_ino, info.st_size, info.st_mtime_ns)
            old = self.seen.get(name)
            if old is not None and old[0] == identity:
                kept[name] = old
                continue
            try:
                snapshot = parse(bounded.read_bytes(path, SNAPSHOT_LIMIT, follow=False))
            except OSError:
                snapshot = None
            if snapshot is None:
                self.rejected += 1
            kept[name] = (identity, snapshot)
            changed = True
        self.seen = kept
        return changed

    def latest(self) -> list[Snapshot]:
        return [snapshot for _, snapshot in self.seen.values() if snapshot is not None]

    def quota(self) -> Snapshot | None:
        """The freshest snapshot that carries rate limits (the windows are account-wide)."""
        with_limits = [snapshot for snapshot in self.latest() if snapshot.windows]
        return max(with_limits, key=lambda item: item.taken, default=None)

    def model_quota(self) -> Snapshot | None:
        """The freshest snapshot that carries per-model windows (account-wide too)."""
        with_models = [snapshot for snapshot in self.latest() if snapshot.models]
        return max(with_models, key=lambda item: item.taken, default=None)
