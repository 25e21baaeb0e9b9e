"""The token ledger's metric families, built fresh from the ledger state at each write."""

from __future__ import annotations

import math
from collections.abc import Iterator

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from agentwatch.core import claude, spool
from agentwatch.core import session_families as shared
from agentwatch.core.fold import OTHER
from agentwatch.sentinels.token_ledger.ledger import TOKEN_TYPES, Ledger, folded_labels
from agentwatch.sentinels.token_ledger.store import CounterKey

ERROR_KINDS = ("rate_limit", "overloaded", "usage_limit", "server_error", "other")

# name (without _total) -> (help, label names); every persisted counter is declared here.
COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    # shared with the other writers (core/session_families.py); `agent` is added when shown
    shared.TOKENS.name: (shared.TOKENS.help, ("project", "model", "type")),
    shared.COST.name: (shared.COST.help, ("project", "model")),
    shared.RESPONSES.name: (shared.RESPONSES.help, ("project", "model")),
    shared.API_ERRORS.name: (shared.API_ERRORS.help, shared.API_ERRORS.labels),
    "agentwatch_ledger_lines_read": ("Complete transcript lines read.", ()),
    "agentwatch_ledger_bytes_read": ("Transcript bytes consumed.", ()),
    "agentwatch_ledger_lines_rejected": (
        "Lines with usage that the reference reader would skip, by reason.",
        ("reason",),
    ),
    "agentwatch_ledger_duplicate_copies": (
        "Extra copies of already counted responses, by how they were resolved.",
        ("kind",),
    ),
    "agentwatch_ledger_file_resets": (
        "Transcripts re-read from the start because they were truncated or replaced.",
        (),
    ),
    "agentwatch_ledger_unpriced_tokens": (
        "Tokens of models without a price (cost counted as 0).",
        ("model",),
    ),
}


# Families the agent ledger writes too: they carry the agent (not stored, added when shown).
BY_AGENT = frozenset({shared.TOKENS.name, shared.COST.name, shared.RESPONSES.name})


class CounterText:
    """The persisted counters as exposition text, re-rendering only the series that changed.

    A live line changes a handful of the several hundred counter series, and the spool file
    is rewritten for it: rendering every series again would cost most of the CPU a line
    costs. The output equals rendering the families afresh (same order, same bytes). Names
    past the caps are folded (core/fold.py): a kept series shows its counter, "other" the sum of
    the deltas of every folded one.
    """

    def __init__(self) -> None:
        self.lines: dict[str, dict[tuple[str, ...], str]] = {name: {} for name in COUNTERS}
        self.text: dict[str, str | None] = dict.fromkeys(COUNTERS)
        self.values: dict[CounterKey, float] = {}  # as exposed (folded labels)
        self.zero_errors: set[tuple[str, ...]] = set()

    def render(self, ledger: Ledger) -> Iterator[str]:
        deltas, ledger.deltas = ledger.deltas, {}
        ledger.changed = set()
        fold, values = ledger.fold, self.values
        for (name, labels), delta in deltas.items():
            if name not in self.lines:
                continue
            shown = folded_labels(fold, name, labels)
            if shown == labels and OTHER not in labels:  # its own series: the exact value
                value = ledger.counters[(name, labels)]
            else:
                value = values.get((name, shown), 0.0) + delta
            values[(name, shown)] = value
            self._set(name, shown, value)
        self._zero_errors(ledger)
        for name, (documentation, _) in COUNTERS.items():
            text = self.text[name]
            if text is None:
                lines = self.lines[name]
                header = spool.family_header(name + "_total", documentation, "counter")
                text = self.text[name] = header + "".join(lines[key] for key in sorted(lines))
            yield text

    def _set(self, name: str, labels: tuple[str, ...], value: float) -> None:
        shown = dict(zip(COUNTERS[name][1], labels, strict=True))
        if name in BY_AGENT:
            shown["agent"] = claude.AGENT
        line = spool.sample_line(name + "_total", shown, value)
        self.lines[name][labels] = line
        self.text[name] = None

    def _zero_errors(self, ledger: Ledger) -> None:
        """Pre-initialise the error kinds of projects active now, so that a first error shows
        as an increase; older projects keep only the kinds they ever had (bounded)."""
        name = "agentwatch_api_errors"
        projects = {ledger.fold.show("project", row[0]) for row in ledger.sessions.values()}
        wanted: set[tuple[str, ...]] = {
            (project, kind)
            for project in projects
            for kind in ERROR_KINDS
            if (name, (project, kind)) not in self.values
        }
        if wanted == self.zero_errors:
            return
        for labels in self.zero_errors - wanted:
            if (name, labels) not in self.values:
                del self.lines[name][labels]
        for labels in wanted:
            self._set(name, labels, 0.0)
        self.text[name] = None
        self.zero_errors = wanted


def families(
    ledger: Ledger, database_bytes: int, counters: CounterText, roots_polled: int = 0
) -> Iterator[Metric | str]:
    ledger.expire_sessions()
    yield from counters.render(ledger)

    last_error = GaugeMetricFamily(
        "agentwatch_api_error_last_timestamp_seconds",
        "Transcript time of the newest API error line of each kind.",
        labels=["kind"],
    )
    for key, value in sorted(ledger.gauges.items()):
        if key.startswith("api_error_last:"):
            last_error.add_metric([key.split(":", 1)[1]], value)
    yield last_error
    reset = GaugeMetricFamily(
        "agentwatch_usage_limit_reset_timestamp_seconds",
        "When the newest usage-limit message says the limit resets (absent if never stated).",
    )
    if "usage_limit_reset" in ledger.gauges:
        reset.add_metric([], ledger.gauges["usage_limit_reset"])
    yield reset

    yield from _session_families(ledger)

    read_errors = CounterMetricFamily(
        "agentwatch_ledger_read_errors",
        "Transcripts that vanished, could not be read, or were skipped (not a regular file, "
        "a symlink), since the sentinel started.",
        labels=["reason"],
    )
    for reason in ("vanished", "unreadable", "not_regular", "symlink"):
        read_errors.add_metric([reason], ledger.read_errors.get(reason, 0))
    yield read_errors
    existing = sum(1 for root in ledger.roots if root.is_dir())
    for name, documentation, value in (
        ("agentwatch_ledger_files_tracked", "Transcript files being followed.", len(ledger.files)),
        ("agentwatch_ledger_unread_bytes", "Bytes written to transcripts but not yet read.",
         ledger.unread_bytes()),
        ("agentwatch_ledger_database_bytes", "Size of the ledger's SQLite files.", database_bytes),
        ("agentwatch_ledger_roots", "Transcript roots that exist.", existing),
        ("agentwatch_ledger_roots_missing", "Transcript roots that do not exist (yet).",
         len(ledger.roots) - existing),
        ("agentwatch_ledger_unreadable_dirs",
         "Folders under the transcript roots that could not be listed at the last scan.",
         len(ledger.unreadable_dirs)),
        ("agentwatch_ledger_roots_polled",
         "Transcript roots followed by polling because inotify is not available for them.",
         roots_polled),
    ):  # fmt: skip
        yield GaugeMetricFamily(name, documentation, value=value)


def _session_families(ledger: Ledger) -> Iterator[Metric]:
    tokens, cost = shared.SESSION_TOKENS.counter(), shared.SESSION_COST.counter()
    first, last = shared.SESSION_FIRST.gauge(), shared.SESSION_LAST.gauge()
    deadline = GaugeMetricFamily(
        "agentwatch_session_deadline_timestamp_seconds",
        "When a recent session's time-box (timebox_minutes, project_timebox_minutes) ends: "
        "its first counted line plus the box.",
        labels=["agent", "project", "session"],
    )
    kept = ledger.session_fold.kept
    fold = ledger.fold
    other = list(ledger.session_fold.retired)
    other_first, other_last, folded = math.inf, -math.inf, 0
    for session, (project, first_ts, last_ts, *values) in sorted(ledger.sessions.items()):
        if session not in kept:
            folded += 1
            for index, amount in enumerate(values[:5]):
                other[index] += amount
            other_first, other_last = min(other_first, first_ts), max(other_last, last_ts)
            continue
        box = ledger.timebox(project)
        project = fold.show("project", project)
        if box > 0:
            deadline.add_metric([claude.AGENT, project, session], first_ts + box)
        for kind, value in zip(TOKEN_TYPES, values[:4], strict=True):
            tokens.add_metric([claude.AGENT, project, session, kind], value)
        cost.add_metric([claude.AGENT, project, session], values[4])
        first.add_metric([claude.AGENT, project, session], first_ts)
        last.add_metric([claude.AGENT, project, session], last_ts)
    if folded or any(other):  # once shown, "other" stays: a counter must not vanish and return
        for kind, value in zip(TOKEN_TYPES, other[:4], strict=True):
            tokens.add_metric([claude.AGENT, OTHER, OTHER, kind], value)
        cost.add_metric([claude.AGENT, OTHER, OTHER], other[4])
    if folded:
        first.add_metric([claude.AGENT, OTHER, OTHER], other_first)
        last.add_metric([claude.AGENT, OTHER, OTHER], other_last)
    yield from (tokens, cost, first, last, deadline)
    series = GaugeMetricFamily(
        "agentwatch_ledger_folded_series",
        'Distinct label values shown as "other" (past max_projects, max_models, '
        'max_sessions); their tokens are all in the "other" series.',
        labels=["label"],
    )
    series.add_metric(["project"], fold.folded("project"))
    series.add_metric(["model"], fold.folded("model"))
    series.add_metric(["session"], folded)
    yield series
