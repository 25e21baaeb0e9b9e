"""The receiver's state file: every counter and the per-session table, in one atomic write.

Delta points are added to the state as they arrive and the state is saved (durably) at most
every SAVE_GAP seconds and at the end, so a restart goes on from the saved totals: nothing is
read twice, because nothing is ever read again — OTLP clients send each delta once. An
unreadable file is set aside and counting starts afresh (said once, counted).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from agentwatch.core import bounded
from agentwatch.core.files import write_atomic
from agentwatch.sentinels.otel.fold import Fold, Histogram, Key, Names, Session, minutes, sums

log = logging.getLogger("agentwatch.otel")
FORMAT = 1
NAME = "otel.json"


def _pairs(counter: dict[Key, float]) -> list[Any]:
    return [[name, list(labels), value] for (name, labels), value in counter.items()]


def _counter(raw: Any) -> defaultdict[Key, float]:
    found = sums()
    for name, labels, value in raw:
        found[(str(name), tuple(str(x) for x in labels))] += float(value)
    return found


def _minutes(raw: Any) -> defaultdict[int, float]:
    found = minutes()
    for minute, value in raw.items():
        found[int(minute)] += float(value)
    return found


def dump(fold: Fold) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "names": {
            "models": sorted(fold.models.kept),
            "tools": sorted(fold.tools.kept),
            "small": sorted(fold.small.kept),
        },
        "sessions": [
            [
                key,
                s.first_seen,
                s.last_seen,
                s.state,
                s.first_usage,
                s.tokens,
                s.cost,
                _pairs(s.held),
                {str(k): v for k, v in s.held_minutes.items()},
            ]
            for key, s in fold.sessions.items()
        ],
        "shared": _pairs(fold.shared),
        "spend_minutes": {str(k): v for k, v in fold.spend_minutes.items()},
        "otel": _pairs(fold.otel),
        "histograms": [
            [family, model, h.buckets, h.total, h.count]
            for (family, model), h in fold.histograms.items()
        ],
        "counts": dict(fold.counts),
        "cumulative": [
            [list(key[:2]), [list(pair) for pair in key[2]], start, value]
            for key, (start, value) in fold.last_cumulative.items()
        ],
    }


def load_into(fold: Fold, raw: Any) -> None:
    if raw["format"] != FORMAT:
        raise ValueError(f"format {raw['format']!r}")
    names = raw["names"]
    fold.models = Names(fold.models.cap, [str(x) for x in names["models"]])
    fold.tools = Names(fold.tools.cap, [str(x) for x in names["tools"]])
    fold.small = Names(fold.small.cap, [str(x) for x in names["small"]])
    for key, first, last, state, usage, tokens, cost, held, spent in raw["sessions"]:
        session = Session(float(first), float(last), str(state))
        session.first_usage = None if usage is None else float(usage)
        session.tokens, session.cost = float(tokens), float(cost)
        session.held, session.held_minutes = _counter(held), _minutes(spent)
        fold.sessions[str(key)] = session
    fold.shared = _counter(raw["shared"])
    fold.spend_minutes = _minutes(raw["spend_minutes"])
    fold.otel = _counter(raw["otel"])
    for family, model, buckets, total, count in raw["histograms"]:
        fold.histograms[(str(family), str(model))] = Histogram(
            [float(x) for x in buckets], float(total), float(count)
        )
    fold.counts = Counter({str(k): int(v) for k, v in raw["counts"].items()})
    for (name, session), pairs, start, value in raw["cumulative"]:
        key = (name, session, tuple((str(k), v) for k, v in pairs))
        fold.last_cumulative[key] = (int(start), float(value))


class Store:
    def __init__(self, state_dir: Path):
        self.path = state_dir / NAME
        self.rejected = 0

    def load(self, fold: Fold) -> None:
        try:
            raw = json.loads(bounded.read_text(self.path, bounded.STATE_LIMIT, follow=False))
            load_into(fold, raw)
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as err:
            self.rejected += 1
            fold.clear()
            log.warning("state file %s is unusable (%s): set aside, starting afresh", self.path,
                        type(err).__name__)  # fmt: skip
            with contextlib.suppress(OSError):
                self.path.replace(self.path.with_name(NAME + ".rejected"))

    def save(self, data: dict[str, Any]) -> None:
        write_atomic(self.path, json.dumps(data, separators=(",", ":")), 0o600, durable=True)
