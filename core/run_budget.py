"""The started run of the budget guard: `<state_dir>/run-budget.json` = {"started_at": seconds}.

A run is what the budget's `run` period counts from: `agentwatch run-budget start` writes the
file, `stop` removes it. The token ledger reads it to publish the spend since the start, the
controller to pick the period; both go through `read`, which never raises on a bad file (a
broken run file must not blind the budget guard: it reads as "no run" and says why once).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from agentwatch.core import bounded
from agentwatch.core.files import write_atomic

FILE_NAME = "run-budget.json"


@dataclass(frozen=True)
class Run:
    """A run as read from the file; `problem` says why a present file was not usable."""

    started_at: float | None
    problem: str | None = None

    @property
    def active(self) -> bool:
        return self.started_at is not None


def path(state_dir: Path) -> Path:
    return state_dir / FILE_NAME


def read(state_dir: Path) -> Run:
    """The active run, or Run(None) when none is started or the file is unusable."""
    try:
        raw = json.loads(bounded.read_bytes(path(state_dir), 64 * bounded.KiB))
    except FileNotFoundError:
        return Run(None)
    except bounded.FileRefused as err:
        return Run(None, f"refused ({err.reason})")
    except (OSError, ValueError, RecursionError) as err:
        return Run(None, f"unreadable or not JSON ({type(err).__name__})")
    started = raw.get("started_at") if isinstance(raw, dict) else None
    if (
        isinstance(started, bool)
        or not isinstance(started, int | float)
        or not math.isfinite(started)
        or started <= 0
    ):
        return Run(None, "started_at is not a positive number")
    return Run(float(started))


def start(state_dir: Path, now: float) -> Run:
    """Start a run now (a second start restarts it: the spend counts from the new start)."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path(state_dir), json.dumps({"started_at": now}) + "\n", durable=True)
    return Run(now)


def stop(state_dir: Path) -> bool:
    """End the run; False when none was started."""
    try:
        path(state_dir).unlink()
    except FileNotFoundError:
        return False
    return True


def period_starts(now: float) -> dict[str, float]:
    """Unix times of the current local day's, ISO week's and month's first instant (the
    zone is the process's: TZ or /etc/localtime)."""
    midnight = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
    return {
        "day": midnight.timestamp(),
        "week": (midnight - timedelta(days=midnight.weekday())).timestamp(),
        "month": midnight.replace(day=1).timestamp(),
    }
