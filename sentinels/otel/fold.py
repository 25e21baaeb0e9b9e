"""Claude Code's telemetry folded into bounded counters, per session until it is classified.

Claude Code exports delta sums by default, so a point is simply added; a cumulative series
(OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=cumulative) adds its growth since the last
point of the same series and start time. Every name that becomes a label passes a `Names` cap
(past it: "other"), every number is checked, and sessions are capped too (the least recently
seen is evicted), so 100k session ids cost a bounded table.

Counting once: a session whose transcript the token ledger reads is counted there. Its usage is
held here per session until the session is classified (`grace` seconds after its first usage,
when its transcript, if it writes one, exists): with a transcript it is dropped from the shared
families (tokens, cost, responses, errors, spend) and only reconciled; without one it is added
to them with `source="otel"` from then on.
"""

from __future__ import annotations

import math
import time
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass, field
from typing import Any

from agentwatch.sentinels.otel.decode import Batch, Event, Point

OTHER = "other"
NO_TRANSCRIPT = "no_transcript"  # the project label of the shared families' otel series
PENDING, TRANSCRIPT, HEADLESS = "pending", "transcript", NO_TRANSCRIPT
TOKEN_TYPES = {  # Claude Code's token.usage type -> the ledger's
    "input": "input",
    "output": "output",
    "cacheRead": "cache_read",
    "cacheCreation": "cache_creation",
}
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
TTFT_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0)
MAX_ATTEMPT = 10  # attempts above this show as "other"
MINUTE = 60
KEEP_MINUTES = 40 * 24 * 60  # spend buckets kept: a month and a week or two of runs
MAX_VALUE = 1e15  # a point past this is not a real count (and would swamp every sum)
COUNTER_METRICS = {  # metric -> (otel family, the attribute that labels it, or None)
    "claude_code.session.count": ("sessions_started", None),
    "claude_code.active_time.total": ("active_seconds", "type"),
    "claude_code.lines_of_code.count": ("lines_of_code", "type"),
    "claude_code.commit.count": ("commits", None),
    "claude_code.pull_request.count": ("pull_requests", None),
}
DECISIONS = ("accept", "reject")
Key = tuple[str, tuple[str, ...]]  # (family, label values)


def sums() -> defaultdict[Key, float]:
    return defaultdict(float)


def minutes() -> defaultdict[int, float]:
    return defaultdict(float)


class Names:
    """At most `cap` distinct values keep their name; later ones are "other" (for good)."""

    def __init__(self, cap: int, kept: list[str] | None = None):
        self.cap = cap
        self.kept: set[str] = set(kept or [])

    def show(self, value: Any) -> str:
        if not isinstance(value, str) or not value:
            return "unknown" if value is None or value == "" else OTHER
        if value in self.kept:
            return value
        if len(self.kept) < self.cap:
            self.kept.add(value)
            return value
        return OTHER


@dataclass
class Session:
    """One session seen over OTLP, for the reconciliation with the ledger."""

    first_seen: float
    last_seen: float
    state: str = PENDING
    first_usage: float | None = None
    tokens: float = 0.0  # every type, for the reconciliation with the ledger
    cost: float = 0.0
    held: defaultdict[Key, float] = field(default_factory=sums)
    held_minutes: defaultdict[int, float] = field(default_factory=minutes)


@dataclass
class Histogram:
    """A cumulative histogram folded from OTLP points."""

    buckets: list[float]
    total: float = 0.0
    count: float = 0.0

    def observe(self, bounds: tuple[float, ...], value: float) -> None:
        for index, bound in enumerate(bounds):
            if value <= bound:
                self.buckets[index] += 1
        self.total += value
        self.count += 1


class Fold:
    """Everything the sentinel counts; the receiver's threads call `add` under `lock` (main)."""

    def __init__(self, max_sessions: int, max_models: int, max_tools: int, grace: float):
        self.max_sessions = max_sessions
        self.grace = grace
        self.models = Names(max_models)
        self.tools = Names(max_tools)
        self.clear()

    def clear(self) -> None:
        """Nothing counted (and no names kept)."""
        self.models = Names(self.models.cap)
        self.tools = Names(self.tools.cap)
        self.small = Names(32)  # types, decisions, sources: a handful each in practice
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self.shared = sums()  # the usage of sessions without a transcript
        self.spend_minutes = minutes()
        self.otel = sums()  # every session
        self.histograms: dict[tuple[str, str], Histogram] = {}
        self.counts: Counter[str] = Counter()  # requests, points, rejections, evictions
        self.last_cumulative: dict[tuple[Any, ...], tuple[int, float]] = {}

    # ---- intake
    def add(self, batch: Batch, now: float) -> None:
        for point in batch.points:
            self._point(point, now)
        for event in batch.events:
            self._event(event, now)
        if batch.unsupported:
            self.counts["rejected.unsupported_metric"] += batch.unsupported

    def _session(self, session: str | None, now: float) -> Session | None:
        if session is None:
            return None
        found = self.sessions.get(session)
        if found is None:
            found = self.sessions[session] = Session(now, now)
            while len(self.sessions) > self.max_sessions:
                _, evicted = self.sessions.popitem(last=False)
                if evicted.state == PENDING and evicted.held:
                    self.counts["evicted_unclassified"] += 1
                self.counts["evicted"] += 1
        else:
            found.last_seen = now
            self.sessions.move_to_end(session)
        return found

    def _delta(self, point: Point) -> float | None:
        value = point.value
        if not math.isfinite(value) or value < 0 or value > MAX_VALUE:
            return None
        if not point.cumulative:
            return value
        key = (point.name, point.session, tuple(sorted(point.attributes.items())))
        start, last = self.last_cumulative.get(key, (point.start_ns, 0.0))
        if len(self.last_cumulative) >= 4 * self.max_sessions * 16:
            self.last_cumulative.clear()  # bounded; a cleared series counts its next point whole
        self.last_cumulative[key] = (point.start_ns, value)
        return value - last if start == point.start_ns and value >= last else value

    def _point(self, point: Point, now: float) -> None:
        delta = self._delta(point)
        if delta is None:
            self.counts["rejected.bad_value"] += 1
            return
        self.counts["points.metrics"] += 1
        name, attributes = point.name, point.attributes
        if name in COUNTER_METRICS:
            family, label = COUNTER_METRICS[name]
            labels = (self.small.show(attributes.get(label)),) if label else ()
            self.otel[(family, labels)] += delta
            self._session(point.session, now)
            return
        if name == "claude_code.code_edit_tool.decision":
            tool = self.tools.show(attributes.get("tool_name"))
            self.otel[("code_edit_decisions", (tool, _decision(attributes)))] += delta
            return
        if name not in ("claude_code.token.usage", "claude_code.cost.usage"):
            self.counts["points.ignored"] += 1
            return
        model = self.models.show(attributes.get("model"))
        if name == "claude_code.token.usage":
            kind = TOKEN_TYPES.get(str(attributes.get("type")))
            if kind is None:
                self.counts["points.ignored"] += 1
                return
            self.otel[("tokens", (model, kind))] += delta
            shared: Key = ("tokens", (model, kind))
        else:
            self.otel[("cost", (model,))] += delta
            shared = ("cost", (model,))
        session = self._session(point.session, now)
        if session is None:
            self.counts["points.no_session"] += 1
            return
        if name == "claude_code.token.usage":
            session.tokens += delta
        else:
            session.cost += delta
        minute = int(now // MINUTE) if name == "claude_code.cost.usage" else None  # as received
        self._usage(session, now, shared, delta, minute)

    def _usage(
        self,
        session: Session,
        now: float,
        key: Key,
        delta: float,
        minute: int | None,
    ) -> None:
        """Usage of a session: held while pending, shared when it has no transcript."""
        if session.first_usage is None:
            session.first_usage = now
        if session.state == TRANSCRIPT:
            return
        held = session.state == PENDING
        (session.held if held else self.shared)[key] += delta
        if minute is not None:
            (session.held_minutes if held else self.spend_minutes)[minute] += delta

    def _event(self, event: Event, now: float) -> None:
        self.counts["points.events"] += 1
        attributes, name = event.attributes, event.name
        if name == "api_request":
            model = self.models.show(attributes.get("model"))
            self.otel[("api_requests", (model,))] += 1
            self._observe("api_duration", model, DURATION_BUCKETS, attributes.get("duration_ms"))
            self._observe("api_ttft", model, TTFT_BUCKETS, attributes.get("ttft_ms"))
            session = self._session(event.session, now)
            if session is not None:
                self._usage(session, now, ("responses", (model,)), 1, None)
        elif name == "api_error":
            model = self.models.show(attributes.get("model"))
            status = _status(attributes.get("status_code"))
            attempt = _attempt(attributes.get("attempt"))
            self.otel[("api_errors", (model, status, attempt))] += 1
            self._observe("api_duration", model, DURATION_BUCKETS, attributes.get("duration_ms"))
            session = self._session(event.session, now)
            if session is not None:
                self._usage(session, now, ("errors", (_kind(status),)), 1, None)
        elif name == "tool_result":
            tool = self.tools.show(attributes.get("tool_name"))
            success = attributes.get("success")
            outcome = success if success in ("true", "false") else "unknown"
            self.otel[("tool_results", (tool, str(outcome)))] += 1
            self._session(event.session, now)
        elif name == "tool_decision":
            tool = self.tools.show(attributes.get("tool_name"))
            source = self.small.show(attributes.get("source"))
            self.otel[("tool_decisions", (tool, _decision(attributes), source))] += 1
            self._session(event.session, now)
        else:
            self.counts["points.ignored"] += 1
            self._session(event.session, now)

    def _observe(self, family: str, model: str, bounds: tuple[float, ...], value: Any) -> None:
        if not isinstance(value, float) or not math.isfinite(value) or not 0 <= value < 1e9:
            return
        found = self.histograms.get((family, model))
        if found is None:
            found = self.histograms[(family, model)] = Histogram([0.0] * len(bounds))
        found.observe(bounds, value / 1000.0)

    # ---- classification, from the loop
    def due(self, now: float) -> list[str]:
        """Pending sessions whose usage began at least `grace` ago."""
        return [
            key
            for key, session in self.sessions.items()
            if session.state == PENDING
            and session.first_usage is not None
            and now - session.first_usage >= self.grace
        ]

    def next_due_in(self, now: float) -> float | None:
        """Seconds until the next pending session with usage is due (None: none waits)."""
        waits = [
            session.first_usage + self.grace - now
            for session in self.sessions.values()
            if session.state == PENDING and session.first_usage is not None
        ]
        return max(min(waits), 0.0) if waits else None

    def classify(self, key: str, has_transcript: bool) -> None:
        session = self.sessions.get(key)
        if session is None or session.state != PENDING:
            return
        if has_transcript:
            session.state = TRANSCRIPT
        else:
            session.state = HEADLESS
            for held, value in session.held.items():
                self.shared[held] += value
            for minute, cost in session.held_minutes.items():
                self.spend_minutes[minute] += cost
        session.held = sums()
        session.held_minutes = minutes()

    def expire(self, now: float, ttl: float) -> list[str]:
        """Drop sessions quiet for `ttl`; the pending ones among them, for a last look."""
        old = [key for key, session in self.sessions.items() if now - session.last_seen > ttl]
        pending = [key for key in old if self.sessions[key].state == PENDING]
        return pending

    def drop(self, keys: list[str]) -> None:
        for key in keys:
            self.sessions.pop(key, None)

    def prune_minutes(self, now: float) -> None:
        oldest = int(now // MINUTE) - KEEP_MINUTES
        for minute in [m for m in self.spend_minutes if m < oldest]:
            del self.spend_minutes[minute]

    def spend_since(self, start: float) -> float:
        """Cost of no-transcript sessions in the minutes ending after `start`."""
        first = math.floor(start / MINUTE)
        return sum(cost for minute, cost in self.spend_minutes.items() if minute >= first)

    def states(self) -> Counter[str]:
        return Counter(session.state for session in self.sessions.values())


def _status(value: Any) -> str:
    if isinstance(value, str) and value.isdigit():
        value = float(value)
    if isinstance(value, float) and value.is_integer() and 100 <= value <= 599:
        return str(int(value))
    return "unknown" if value is None else OTHER


def _attempt(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and 1 <= value <= MAX_ATTEMPT:
        return str(int(value))
    return OTHER


def _kind(status: str) -> str:
    """The token ledger's error kinds, from a status code."""
    if status == "429":
        return "rate_limit"
    if status == "529":
        return "overloaded"
    if status.startswith("5"):
        return "server_error"
    return "other"


def _decision(attributes: dict[str, str | float]) -> str:
    value = attributes.get("decision")
    return value if isinstance(value, str) and value in DECISIONS else OTHER


def wall() -> float:
    return time.time()
