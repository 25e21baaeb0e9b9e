"""The front page as HTML: one self-refreshing document, charts as inline SVG.

No script, no framework, nothing fetched but /overview.css (the CSP header says so); every
value that comes from a label, an alert or an answer is escaped here, at the one place it
meets markup. The facts come from overview.build.
"""

from __future__ import annotations

import html
import math
import socket
import time
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agentwatch.core import __version__
from agentwatch.exporter.overview import TOKEN_TYPES, Overview, Quota, Session
from agentwatch.exporter.remote import HOURS, Reading

REFRESH = 15  # seconds between the page's own reloads
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "form-action 'none'; frame-ancestors 'none'"
)
COLOURS = {
    "input": "#4e79a7",
    "output": "#f28e2b",
    "cache_read": "#59a14f",
    "cache_creation": "#b07aa1",
}
SPEND_COLOUR = "#76b7b2"
STATE_CLASS = {
    "working": "ok",
    "idle": "quiet",
    "ended": "quiet",
    "waiting_for_input": "warn",
    "waiting_for_permission": "warn",
    "compacting": "warn",
    "failed": "bad",
}


def e(value: object) -> str:
    return html.escape(str(value), quote=True)


def money(value: float) -> str:
    """$1,234.56, or four decimals under a dollar so a small spend is not $0.00."""
    if value == 0 or abs(value) >= 1:
        return f"${value:,.2f}"
    return f"${value:.4f}"


def tokens(value: float) -> str:
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f}"


def clock(at: float, now: float) -> str:
    """Local time, with the day when it is not today ("?" for a time no clock shows)."""
    try:
        local, today = time.localtime(at), time.localtime(now)
    except (ValueError, OverflowError, OSError):
        return "?"
    if local[:3] == today[:3]:
        return time.strftime("%H:%M", local)
    return time.strftime("%a %d %b %H:%M", local)


def relative(at: float, now: float) -> str:
    delta = at - now
    if not math.isfinite(delta):
        return "?"
    span = abs(delta)
    if span < 60:
        text = f"{span:.0f} s"
    elif span < 3600:
        text = f"{span // 60:.0f} min"
    elif span < 86400 * 2:
        text = f"{span // 3600:.0f} h {span % 3600 // 60:02.0f} min"
    else:
        text = f"{span // 86400:.0f} days"
    return f"in {text}" if delta >= 0 else f"{text} ago"


def when(at: float | None, now: float) -> str:
    if at is None:
        return '<span class="dim">—</span>'
    return f'<time>{e(clock(at, now))}</time> <span class="dim">({e(relative(at, now))})</span>'


def render(view: Overview) -> bytes:
    host = socket.gethostname()
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="refresh" content="{REFRESH}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>agentwatch · {e(host)}</title>",
        '<link rel="stylesheet" href="/overview.css"></head><body>',
        _header(view, host),
        _cards(view),
        '<main class="grid">',
        _spend(view),
        _quota(view),
        _alerts(view),
        _controller(view),
        _sessions(view),
        _models(view),
        _sentinels(view),
        "</main>",
        f"<footer>agentwatch {e(__version__)} · page built {e(clock(view.now, view.now))} "
        f"{e(time.strftime('%Z', time.localtime(view.now)))} · reloads every {REFRESH} s · "
        '<a href="/metrics">/metrics</a> · <a href="/healthz">/healthz</a></footer>',
        "</body></html>\n",
    ]
    return "\n".join(parts).encode("utf-8")


def _header(view: Overview, host: str) -> str:
    ends = view.remote.endpoints
    links = [
        ("Prometheus", ends.prometheus, view.remote.prometheus),
        ("Alertmanager", ends.alertmanager, view.remote.alertmanager),
        (
            "Controller /throttle",
            ends.controller and f"{ends.controller.rstrip('/')}/throttle",
            view.remote.controller,
        ),
    ]
    items = []
    for name, url, reading in links:
        dot = _dot(reading)
        if url:
            items.append(f'<a href="{e(without_credentials(url))}">{dot}{e(name)}</a>')
        else:
            items.append(f'<span class="dim">{dot}{e(name)}: not configured</span>')
    items += ['<a href="/metrics">/metrics</a>', '<a href="/healthz">/healthz</a>']
    return (
        f'<header><h1>agentwatch <span class="host">{e(host)}</span></h1>'
        f'<nav id="links">{"".join(items)}</nav></header>'
    )


def _dot(reading: Reading) -> str:
    if reading.error is None:
        return '<span class="dot ok" title="answering"></span>'
    return f'<span class="dot bad" title="{e(reading.error)}"></span>'


def _cards(view: Overview) -> str:
    totals = view.spend_totals
    cards = [
        ("Today", money(totals.get("day", 0.0)), "since midnight", ""),
        ("This week", money(totals.get("week", 0.0)), "since Monday", ""),
    ]
    if "run" in totals:
        cards.append(("This run", money(totals["run"]), _run_note(view), ""))
    else:
        cards.append(("This run", "—", "no run started", "dim"))
    official = [q for q in view.quotas if q.used is not None]
    if official:
        quota = official[0]
        level = _level(quota.used or 0.0)
        note = (
            f"{quota.source}, resets {relative(quota.resets, view.now)}"
            if quota.resets
            else quota.source
        )
        cards.append(
            (f"Quota {window_name(quota.window)}", f"{(quota.used or 0) * 100:.0f}%", note, level)
        )
    remote = view.remote
    if remote.alertmanager.error is None:
        count = len(remote.alerts)
        cards.append(
            (
                "Alerts firing",
                str(count),
                _suppressed(remote.silenced, remote.inhibited),
                "bad" if count else "ok",
            )
        )
    else:
        cards.append(("Alerts firing", "?", f"Alertmanager {remote.alertmanager.error}", "dim"))
    allowed = _allowed(view)
    if allowed is not None:
        cards.append(("Agents allowed", allowed[0], allowed[1], allowed[2]))
    body = "".join(
        f'<div class="card {cls}"><div class="label">{e(label)}</div>'
        f'<div class="figure">{e(figure)}</div><div class="note">{e(note)}</div></div>'
        for label, figure, note, cls in cards
    )
    return f'<section class="cards" id="summary">{body}</section>'


def _run_note(view: Overview) -> str:
    if view.run_started is None:
        return "run started"
    return f"since {clock(view.run_started, view.now)}"


def _suppressed(silenced: int, inhibited: int) -> str:
    return f"not counted: {silenced} silenced, {inhibited} inhibited"


def _allowed(view: Overview) -> tuple[str, str, str] | None:
    throttle = view.remote.throttle if view.remote.controller.error is None else None
    if throttle is not None:
        effective, level = throttle.get("effective_max_agents"), throttle.get("max_agents")
        note = f"of {level} (mode {throttle.get('mode', '?')})"
    elif "effective_max_agents" in view.controller:
        effective = f"{view.controller['effective_max_agents']:g}"
        note = f"of {view.controller.get('max_agents', 0):g} (from controller.prom)"
    else:
        return None
    cls = "bad" if str(effective) == "0" else "ok"
    return str(effective), note, cls


def _level(used: float) -> str:
    return "bad" if used >= 0.9 else ("warn" if used >= 0.7 else "ok")


def _section(ident: str, title: str, body: str, wide: bool = False) -> str:
    cls = ' class="wide"' if wide else ""
    return f'<section id="{ident}"{cls}><h2>{e(title)}</h2>{body}</section>'


def _table(
    head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = (), cls: str = ""
) -> str:
    """Cells are markup already (escaped by the caller); `numeric` columns align right;
    `cls` "wrap" breaks long words anywhere (free text from alerts)."""
    heads = "".join(
        f"<th{' class=num' if i in numeric else ''}>{e(h)}</th>" for i, h in enumerate(head)
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=num' if i in numeric else ''}>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table>"


def _spend(view: Overview) -> str:
    periods = [p for p in ("day", "week", "month", "run") if p in view.spend_totals]
    names = {"day": "today", "week": "this week", "month": "this month", "run": "this run"}
    rows = [
        [
            e(agent),
            *(
                e(money(values[p])) if p in values else '<span class="dim">—</span>'
                for p in periods
            ),
        ]
        for agent, values in view.spend.items()
    ]
    if len(rows) > 1:
        totals = view.spend_totals
        rows.append(["<b>all agents</b>", *(f"<b>{e(money(totals[p]))}</b>" for p in periods)])
    if rows:
        table = _table(["agent", *(names[p] for p in periods)], rows, range(1, len(periods) + 1))
    else:
        table = '<p class="dim">No spend counted yet: no ledger has written.</p>'
    budget = ""
    if view.budget is not None:
        limit, spent, period = view.budget
        if limit > 0 and spent is not None:
            share = spent / limit
            budget = (
                f'<p class="budget">Budget ({e(period)}): {e(money(spent))} of {e(money(limit))} '
                f"{_bar(share, 160)} {share * 100:.0f}%</p>"
            )
        else:
            budget = '<p class="budget dim">No budget cap.</p>'
    return _section("spend", "Spend", table + budget + _hourly(view))


def _hourly(view: Overview) -> str:
    reading = view.remote.prometheus
    title = f"<h3>Spend per hour, last {HOURS} h <span class=dim>(from Prometheus)</span></h3>"
    if reading.error is not None or not view.remote.spend_per_hour:
        why = reading.error or "no history yet"
        return f'{title}<p class="dim chart-missing">Prometheus: {e(why)}</p>'
    return title + hourly_chart(view.remote.spend_per_hour, view.now)


def hourly_chart(points: Sequence[tuple[float, float]], now: float) -> str:
    width, height, left, bottom = 520, 150, 44, 20
    top = max((v for _, v in points), default=0.0) or 1.0
    bar = (width - left) / len(points)
    shapes = [
        f'<line x1="{left}" y1="{height - bottom}" x2="{width}" y2="{height - bottom}" '
        'class="axis"/>',
        f'<text x="{left - 4}" y="12" class="tick" text-anchor="end">{e(money(top))}</text>',
        f'<text x="{left - 4}" y="{height - bottom}" class="tick" text-anchor="end">$0</text>',
    ]
    for i, (end, value) in enumerate(points):
        h = (height - bottom - 8) * value / top
        x = left + i * bar + 1
        label = f"{clock(end - 3600, now)}–{clock(end, now)}: {money(value)}"
        shapes.append(
            f'<rect class="spend" x="{x:.1f}" y="{height - bottom - h:.1f}" width="{bar - 2:.1f}" '
            f'height="{h:.1f}" fill="{SPEND_COLOUR}"><title>{e(label)}</title></rect>'
        )
        if i % 6 == 0:  # the hour each sixth bar starts
            shapes.append(
                f'<text x="{x:.1f}" y="{height - 5}" class="tick">'
                f"{e(clock(end - 3600, end))}</text>"
            )
    return (
        f'<svg class="chart" id="spend-chart" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="spend per hour">{"".join(shapes)}</svg>'
    )


def _bar(share: float, width: int = 120) -> str:
    filled = max(0.0, min(1.0, share if math.isfinite(share) else 0.0)) * width
    colour = {"ok": "#59a14f", "warn": "#edc948", "bad": "#e15759"}[_level(share)]
    return (
        f'<svg class="bar" width="{width}" height="12" viewBox="0 0 {width} 12">'
        f'<rect width="{width}" height="12" rx="3" fill="#e6e8eb"/>'
        f'<rect width="{filled:.1f}" height="12" rx="3" fill="{colour}"/></svg>'
    )


SOURCES = {
    "official": "Claude Code's statusline",
    "estimated": "by agentwatch, with ccusage's block rule",
    "stated": "a usage-limit message",
}
WINDOWS = {
    "five_hour": "5-hour",
    "seven_day": "7-day",
    "seven_day_opus": "7-day Opus",
    "seven_day_sonnet": "7-day Sonnet",
}


def window_name(window: str) -> str:
    return WINDOWS.get(window, window.replace("_", " "))


def _quota(view: Overview) -> str:
    if not view.quotas:
        body = (
            '<p class="dim">No quota known: no subscription session has sent a statusline '
            "with rate limits, and no 5-hour block is active.</p>"
        )
        return _section("quota", "Quota windows", body)
    rows = []
    for quota in view.quotas:
        used = (
            f'<span class="nowrap">{_bar(quota.used)} {quota.used * 100:.0f}%</span>'
            if quota.used is not None
            else '<span class="dim">—</span>'
        )
        name = f'<span title="{e(quota.window)}">{e(window_name(quota.window))}</span>'
        rows.append([name, used, when(quota.resets, view.now), _source(quota, view.now)])
    return _section("quota", "Quota windows", _table(["window", "used", "resets", "source"], rows))


def _source(quota: Quota, now: float) -> str:
    text = f'<span class="tag {e(quota.source)}">{e(quota.source)}</span> '
    text += f'<span class="dim">{e(SOURCES.get(quota.source, quota.detail))}'
    if quota.source == "estimated":
        text += f"; {e(quota.detail)}"
    if quota.read_at is not None:
        text += f", read {e(relative(quota.read_at, now))}"
    return text + "</span>"


def _alerts(view: Overview) -> str:
    remote = view.remote
    reading = remote.alertmanager
    if reading.error is not None:
        return _section(
            "alerts",
            "Firing alerts",
            f'<p class="unreachable">Alertmanager: {e(reading.error)}</p>',
        )
    note = f'<p class="dim">{e(_suppressed(remote.silenced, remote.inhibited))}.</p>'
    if not remote.alerts:
        return _section(
            "alerts", "Firing alerts", '<p class="ok-text">Nothing is firing.</p>' + note
        )
    rows = [
        [
            f'<span class="sev {e(a.severity)}">{e(a.severity or "—")}</span>',
            f"<b>{e(a.name)}</b><br>{e(a.summary)}",
            e(a.where),
            when(a.starts_at, view.now),
        ]
        for a in remote.alerts
    ]
    return _section(
        "alerts",
        "Firing alerts",
        _table(["severity", "alert", "where", "since"], rows, cls="wrap") + note,
    )


def _controller(view: Overview) -> str:
    reading = view.remote.controller
    throttle = view.remote.throttle
    if reading.error is not None or throttle is None:
        lines = [
            f'<p class="unreachable">Controller /throttle: {e(reading.error or "no answer")}</p>'
        ]
        if view.controller:
            facts = ", ".join(f"{e(k.replace('_', ' '))} {v:g}" for k, v in view.controller.items())
            lines.append(f'<p class="dim">From its spool file: {facts}.</p>')
        return _section("controller", "Controller", "".join(lines))
    states = []
    if throttle.get("should_stop"):
        states.append('<span class="tag bad">stop</span>')
    if throttle.get("paused"):
        states.append('<span class="tag bad">paused</span>')
    breaker = str(throttle.get("breaker", ""))
    states.append(
        f'<span class="tag {"ok" if breaker == "closed" else "bad"}">breaker {e(breaker)}</span>'
    )
    states.append(f'<span class="tag quiet">mode {e(throttle.get("mode", "?"))}</span>')
    deferred = throttle.get("deferred_tiers") or []
    if deferred:
        states.append(f'<span class="tag warn">deferred {e(", ".join(map(str, deferred)))}</span>')
    head = (
        '<p class="decision"><span class="big">'
        f"{e(throttle.get('effective_max_agents', '?'))}</span> "
        f"agents may run now (level {e(throttle.get('max_agents', '?'))}, bounds "
        f"{e(throttle.get('min_agents', '?'))}–{e(throttle.get('configured_max_agents', '?'))}) "
        f"{' '.join(states)}</p>"
    )
    found = throttle.get("actions")
    actions: dict[str, Any] = found if isinstance(found, dict) else {}
    why = [
        f"<li><b>{e(action)}</b>: {e(', '.join(map(str, names)))}</li>"
        for action, names in sorted(actions.items())
        if isinstance(names, list) and names
    ]
    reasons = (
        f"<p>Why:</p><ul class=why>{''.join(why)}</ul>"
        if why
        else '<p class="dim">Why: no alert asks for an action.</p>'
    )
    limit = throttle.get("budget_limit_usd")
    budget = ""
    if isinstance(limit, (int, float)):
        cap = money(limit) if limit > 0 else "none"
        source = throttle.get("budget_source", "?")
        budget = f'<p class="dim">Budget cap {e(cap)} (source {e(source)}).</p>'
    return _section("controller", "Controller", head + reasons + budget)


def _sessions(view: Overview) -> str:
    if not view.sessions:
        return _section("sessions", "Sessions", '<p class="dim">No recent session.</p>', wide=True)
    rows = [_session_row(s, view.now) for s in view.sessions]
    table = _table(
        ["agent", "project", "session", "state", "since", "last activity", "tokens", "cost"],
        rows,
        (6, 7),
    )
    chart = session_chart(view.sessions)
    return _section("sessions", "Sessions", table + chart, wide=True)


def _session_row(s: Session, now: float) -> list[str]:
    state = (
        f'<span class="state {STATE_CLASS.get(s.state, "quiet")}">'
        f"{e(s.state.replace('_', ' '))}</span>"
        if s.state
        else '<span class="dim">—</span>'
    )
    if s.mode:
        state += f' <span class="dim">{e(s.mode)}</span>'
    total = sum(s.tokens.values())
    return [
        e(s.agent),
        e(s.project),
        f'<span class="mono" title="{e(s.session)}">{e(s.session[:8])}</span>',
        state,
        when(s.since, now) if s.since is not None else '<span class="dim">—</span>',
        when(s.last, now),
        e(tokens(total)) if s.tokens else '<span class="dim">—</span>',
        e(money(s.cost)) if s.cost is not None else '<span class="dim">—</span>',
    ]


def session_chart(sessions: Sequence[Session], top: int = 10) -> str:
    """Tokens per session, stacked by type: who is using the tokens, at a glance."""
    ranked = sorted((s for s in sessions if s.tokens), key=lambda s: -sum(s.tokens.values()))[:top]
    if not ranked:
        return ""
    width, row, left = 640, 22, 170
    most = max(sum(s.tokens.values()) for s in ranked) or 1.0
    height = row * len(ranked) + 26
    shapes = []
    for i, s in enumerate(ranked):
        y = i * row + 4
        shapes.append(
            f'<text x="{left - 6}" y="{y + 13}" class="tick" text-anchor="end">'
            f"{e(s.project[:16])} · {e(s.session[:8])}</text>"
        )
        x = float(left)
        for kind in TOKEN_TYPES:
            w = (width - left - 70) * s.tokens.get(kind, 0.0) / most
            if w > 0:
                shapes.append(
                    f'<rect class="tokens" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 6}" '
                    f'fill="{COLOURS[kind]}"><title>{e(kind)}: '
                    f"{e(tokens(s.tokens.get(kind, 0.0)))}</title></rect>"
                )
                x += w
        shapes.append(
            f'<text x="{x + 5:.1f}" y="{y + 13}" class="tick">'
            f"{e(tokens(sum(s.tokens.values())))}</text>"
        )
    legend_y = height - 6
    lx = float(left)
    for kind in TOKEN_TYPES:
        shapes.append(
            f'<rect x="{lx:.0f}" y="{legend_y - 9}" width="10" height="10" fill="{COLOURS[kind]}"/>'
        )
        shapes.append(
            f'<text x="{lx + 14:.0f}" y="{legend_y}" class="tick">'
            f"{e(kind.replace('_', ' '))}</text>"
        )
        lx += 105
    return (
        '<h3>Tokens per session <span class="dim">(ledger, by type)</span></h3>'
        f'<svg class="chart" id="tokens-chart" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="tokens per session">{"".join(shapes)}</svg>'
    )


def _models(view: Overview) -> str:
    if not view.models:
        return _section("models", "By model", '<p class="dim">No response counted yet.</p>')
    rows = [
        [e(agent), e(model), e(money(cost)), e(tokens(count))]
        for agent, model, cost, count in view.models
    ]
    note = '<p class="dim">Totals the ledgers have counted, all time.</p>'
    return _section(
        "models",
        "By agent and model",
        _table(["agent", "model", "cost", "tokens"], rows, (2, 3)) + note,
    )


def _sentinels(view: Overview) -> str:
    rows = []
    for item in view.health:
        state = "up" if item.up else ("stale" if item.stale else "error")
        if not item.present:
            state = "missing"
        cls = {"up": "ok", "stale": "warn", "error": "bad", "missing": "quiet"}[state]
        age = "never" if item.last_write is None else relative(item.last_write, view.now)
        rows.append(
            [
                e(item.sentinel),
                f'<span class="state {cls}">{e(state)}</span>',
                e(age),
                e(item.error or ""),
            ]
        )
    if not rows:
        return _section("sentinels", "Sentinels", '<p class="dim">No sentinel has written yet.</p>')
    return _section(
        "sentinels", "Sentinels", _table(["sentinel", "state", "last write", "error"], rows)
    )


def without_credentials(url: str) -> str:
    """The link to a part of the stack, never with the user and password the exporter reads
    it with (`controller.alertmanagers` may hold `http://user:pass@host`)."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:
        return ""
