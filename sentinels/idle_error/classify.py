"""The pane classifier: (captured text, what we saw last time, now) -> one state.

A pure function, so the loop, the `classify-pane` debugging command and the tests all run the
same decision. The rules, in order (docs/metrics.md repeats them for users):

1. The tail is the last `capture_rows` lines with trailing blank lines dropped; the window is
   its last `window_lines` NON-EMPTY lines (blank rows never push a line out of it).
   `line_from_end` counts non-empty lines: 1 is the bottom one.
2. A candidate is a window line the harness printed whose text (after the lead glyphs) STARTS
   with a harness pattern: glyph-led lines for every pattern, unindented (column-0) lines only
   for patterns marked `column0` (`API Error:`, usage limit, context too long). The same token
   anywhere else is suppressed: `mid_line` (not at the start of the text) or
   `not_harness_line` (at the start of an indented, prompt or menu line). An `API Error:` line
   is refined by the message it carries (the line plus its continuation lines).
   An approval menu (a `N.` line led by the selector glyph, with a "Do you want to …" question
   above it or "Esc to cancel" below it) is a candidate at the selector's line.
3. A candidate is `stale` when a newer message line (led by ⏺ or ●) is below it, or a prompt
   the user sent (a prompt line with text above the input box), or an "Interrupted" line: the
   session went on after it.
4. The pane is `working` when a spinner ("esc to interrupt", or the newer "Verb… (44s · ↓ 247
   tokens)") or a retry spinner ("Retrying in N s") is at or below the newest message line and
   no sent prompt, "Interrupted" line or live candidate is below it (an error printed below
   retry lines is where the retries gave up); then every candidate is suppressed (`working`,
   or `retry_spinner`) and the state is `working`.
5. Vetoes: usage-limit text in the window vetoes a throttle (`usage_limit_veto`); compaction
   text vetoes "context too long" (`compaction`). Two or more usage-policy lines in the window
   are a policy wedge (`context_wedge`).
6. The bottom-most remaining candidate decides. A `rate_limited` one must be settled: the tail
   unchanged for `settle_time`; until then it is suppressed (`unsettled`).
7. No candidate: `idle` if the prompt or its footer is in the window, else `working`.
Matches above the window in the tail are counted as `outside_window`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import tzinfo

from agentwatch.sentinels.idle_error import resets, screen
from agentwatch.sentinels.idle_error.patterns import APPROVAL_CLASS, STALL_STATES, Patterns, Rule
from agentwatch.sentinels.idle_error.screen import MAX_LINE, Line

CONTINUATION_LINES = 4  # lines after a matched line that may continue its message
SUPPRESSION_REASONS = (
    "mid_line",
    "not_harness_line",
    "outside_window",
    "stale",
    "working",
    "retry_spinner",
    "unsettled",
    "usage_limit_veto",
    "compaction",
)


@dataclass(frozen=True)
class Settings:
    """The classifier's knobs (the sentinel's config keys)."""

    capture_rows: int = 45
    window_lines: int = 20
    settle_time: float = 20.0


@dataclass(frozen=True)
class Observation:
    """What the loop keeps per pane between captures (never any pane text)."""

    tail_hash: str
    unchanged_since: float  # when the tail last changed
    state: str
    since: float  # when the pane entered `state`


@dataclass(frozen=True)
class Suppression:
    """A pattern that held a stall back, and where it matched."""

    reason: str
    pattern: str
    line_from_end: int


@dataclass(frozen=True)
class Candidate:
    """A line that matched a stall pattern, before suppressions."""

    pattern: str
    state: str
    line: Line
    message: str


@dataclass(frozen=True)
class Result:
    """A pane tail's classification."""

    state: str
    pattern: str
    line_from_end: int | None
    line: str  # the deciding line, for the classify-pane output only: never a label or log
    reset_at: float | None  # usage_limit: when the message says it resets, if it says
    suppressed: tuple[Suppression, ...]
    observation: Observation
    fired: bool  # the pane just changed into a stall state
    tail_changed: bool

    @property
    def stalled(self) -> bool:
        return self.state in STALL_STATES


@dataclass
class _Scan:
    """The facts one pass over the window gathers."""

    window: list[Line]
    newest_message: int  # index in `window` of the newest ⏺/● line, -1 if none
    candidates: list[Candidate] = field(default_factory=list)
    suppressed: list[Suppression] = field(default_factory=list)


def _message(lines: list[Line], index: int, patterns: Patterns) -> str:
    """The matched line's text plus its continuation lines: indented (Claude Code wraps that
    way) or unindented (a terminal wrap captured without -J), up to the next line that starts
    with a token (a token inside a wrapped JSON body continues the message)."""
    message = lines[index].text
    for line in lines[index + 1 : index + 1 + CONTINUATION_LINES]:
        if line.lead not in ("indent", "column0") or _starts_with_token(line, patterns):
            break
        # Claude Code wraps at word breaks and indents; a terminal wraps mid-word at column 0.
        message += (" " if line.lead == "indent" else "") + line.text
    return message


def _starts_with_token(line: Line, patterns: Patterns) -> bool:
    return any(rule.regex.match(line.text) for rule in patterns.harness)


def _refine(rule: Rule, message: str, patterns: Patterns) -> tuple[str, str]:
    if rule.refine:
        for refinement in patterns.refine:
            if rule.refine_only and refinement.cls not in rule.refine_only:
                continue
            if refinement.regex.search(message):
                return refinement.cls, refinement.state
    return rule.cls, rule.state


def _harness_match(line: Line, patterns: Patterns) -> tuple[Rule | None, str | None]:
    """(rule, None) for a harness line starting with a pattern; (rule, reason) for a token
    that must not fire; (None, None) for a line without any token."""
    for rule in patterns.harness:
        if rule.regex.match(line.text):
            if line.lead == "glyph" or (line.lead == "column0" and rule.column0):
                return rule, None
            return rule, "not_harness_line"
    for rule in patterns.harness:
        if rule.regex.search(line.text):
            return rule, "mid_line"
    return None, None


def _find_candidates(scan: _Scan, patterns: Patterns) -> None:
    window = scan.window
    retrying = patterns.signals["retry_spinner"]
    for index, line in enumerate(window):
        rule, reason = _harness_match(line, patterns)
        if rule is None:
            continue
        if reason:
            reason = "retry_spinner" if retrying.search(line.raw) else reason
            scan.suppressed.append(Suppression(reason, rule.cls, line.from_end))
            continue
        message = _message(window, index, patterns)
        cls, state = _refine(rule, message, patterns)
        scan.candidates.append(Candidate(cls, state, line, message))
    _find_approval(scan, patterns)


def _find_approval(scan: _Scan, patterns: Patterns) -> None:
    signals = patterns.signals
    window = scan.window
    for index in range(len(window) - 1, -1, -1):
        line = window[index]
        if line.lead != "prompt" or not signals["approval_selector"].match(line.text):
            continue
        asked = any(signals["approval_question"].match(other.text) for other in window[:index])
        cancel = any(signals["approval_cancel"].match(other.text) for other in window[index:])
        if asked or cancel:
            scan.candidates.append(Candidate(APPROVAL_CLASS, "approval_prompt", line, line.text))
            return


def _outside_window(lines: list[Line], window_size: int, patterns: Patterns) -> list[Suppression]:
    found = []
    for line in lines[: max(len(lines) - window_size, 0)]:
        rule, reason = _harness_match(line, patterns)
        if rule is not None and reason is None:
            found.append(Suppression("outside_window", rule.cls, line.from_end))
    return found


def _signal(lines: list[Line], name: str, patterns: Patterns) -> Line | None:
    """The bottom-most line carrying a signal anywhere in its text."""
    regex = patterns.signals[name]
    return next((line for line in reversed(lines) if regex.search(line.raw)), None)


def _idle_signal(window: list[Line], patterns: Patterns) -> tuple[str, Line] | None:
    for line in reversed(window):
        if patterns.signals["idle_footer"].search(line.raw):
            return "footer", line
        if line.lead == "prompt" and not patterns.signals["approval_selector"].match(line.text):
            return "prompt", line
    return None


def _scan(text: str, settings: Settings, patterns: Patterns) -> tuple[_Scan, str]:
    raw_lines = screen.meaningful_lines(text, settings.capture_rows)
    lines = screen.parse(raw_lines, patterns)
    window = lines[-settings.window_lines :] if settings.window_lines > 0 else []
    newest = -1
    for index, line in enumerate(window):
        if line.lead == "glyph" and line.first_glyph in patterns.message_glyphs:
            newest = index
    scan = _Scan(window=window, newest_message=newest)
    _find_candidates(scan, patterns)
    scan.suppressed.extend(_outside_window(lines, settings.window_lines, patterns))
    return scan, screen.tail_hash(raw_lines)


def _resubmitted(window: list[Line], patterns: Patterns) -> Line | None:
    """The newest prompt the user sent after the input box was drawn anew: a prompt line with
    text that is not the input box itself (the bottom-most prompt line) nor a menu choice.
    Whatever the harness printed above it belongs to a turn that is over."""
    selector = patterns.signals["approval_selector"]
    prompts = [line for line in window if line.lead == "prompt"]
    sent = [line for line in prompts[:-1] if line.text and not selector.match(line.text)]
    return sent[-1] if sent else None


def _suppress(suppressed: list[Suppression], reason: str, candidates: list[Candidate]) -> None:
    suppressed.extend(Suppression(reason, c.pattern, c.line.from_end) for c in candidates)


def _decide(
    scan: _Scan, settled: bool, patterns: Patterns
) -> tuple[Candidate | None, str, Line | None]:
    """The deciding candidate (or None) and, without one, the base state's pattern and line."""
    window, suppressed = scan.window, scan.suppressed
    newest = window[scan.newest_message].from_end if scan.newest_message >= 0 else 0
    # A prompt the user sent, or an "Interrupted" line, ends the turn above it too.
    ended = [
        line
        for line in (_resubmitted(window, patterns), _signal(window, "interrupted", patterns))
        if line
    ]
    turn_over = min((line.from_end for line in ended), default=0)
    stale = [
        c
        for c in scan.candidates
        if c.line.from_end > newest > 0 or c.line.from_end > turn_over > 0
    ]
    _suppress(suppressed, "stale", stale)
    live = [c for c in scan.candidates if c not in stale]

    recent = window[max(scan.newest_message, 0) :]
    retry = _signal(recent, "retry_spinner", patterns)
    spinner = _signal(recent, "spinner", patterns)
    spun = retry or spinner
    if spun is not None and 0 < turn_over < spun.from_end:
        retry = spinner = None  # what spun above it is over
    if spun is not None and any(c.line.from_end < spun.from_end for c in live):
        retry = spinner = None  # an error printed below the retries: they gave up
    if retry or spinner:
        _suppress(suppressed, "retry_spinner" if retry else "working", live)
        return None, "retry_spinner" if retry else "spinner", retry or spinner

    policy = [c for c in scan.candidates if c.pattern == patterns.policy_class]
    if len(policy) >= patterns.policy_min_lines:
        cls, state = patterns.policy_becomes
        live = [replace(c, pattern=cls, state=state) if c in policy else c for c in live]
    if any(c.state == "usage_limit" for c in live):
        vetoed = [c for c in live if c.state == "rate_limited"]
        _suppress(suppressed, "usage_limit_veto", vetoed)
        live = [c for c in live if c not in vetoed]
    if _signal(window, "compaction", patterns):
        vetoed = [c for c in live if c.state == "context_too_long"]
        _suppress(suppressed, "compaction", vetoed)
        live = [c for c in live if c not in vetoed]

    if live:
        chosen = min(live, key=lambda c: c.line.from_end)
        if chosen.state != "rate_limited" or settled:
            return chosen, chosen.pattern, chosen.line
        _suppress(suppressed, "unsettled", [chosen])
    idle = _idle_signal(window, patterns)
    if idle:
        return None, idle[0], idle[1]
    return None, "no_prompt", None


def classify(
    text: str,
    previous: Observation | None,
    now: float,
    settings: Settings,
    patterns: Patterns,
    local_zone: tzinfo | None = None,
) -> Result:
    """Classify one capture of a pane; `previous` is this pane's last observation, if any."""
    scan, digest = _scan(text, settings, patterns)
    tail_changed = previous is None or previous.tail_hash != digest
    unchanged_since = now if tail_changed or previous is None else previous.unchanged_since
    settled = now - unchanged_since >= settings.settle_time
    chosen, pattern, line = _decide(scan, settled, patterns)
    if chosen is not None:
        state = chosen.state
    else:
        state = "idle" if pattern in ("footer", "prompt") else "working"
    reset_at = None
    if chosen is not None and state == "usage_limit":
        reset_at = resets.reset_timestamp(chosen.message, now, local_zone)
    same = previous is not None and previous.state == state
    if same and previous is not None:
        since = previous.since
    else:  # a settled throttle has shown since the tail stopped changing
        since = unchanged_since if state == "rate_limited" else now
    return Result(
        state=state,
        pattern=pattern,
        line_from_end=line.from_end if line else None,
        line=line.raw.strip()[:MAX_LINE] if line else "",
        reset_at=reset_at,
        suppressed=tuple(sorted(scan.suppressed, key=lambda s: s.line_from_end)),
        observation=Observation(digest, unchanged_since, state, since),
        fired=state in STALL_STATES and not same,
        tail_changed=tail_changed,
    )
