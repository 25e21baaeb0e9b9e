"""What `agentwatch mcp` answers, computed from what agentwatch already knows: the sentinels'
spool files (the numbers the exporter serves, read the same way), the controller's decision
file and the Alertmanagers it reads. Read-only and quick: nothing here writes, nothing scans
transcripts or opens the ledger's database.

Every answer is a plain dict (JSON for the agent). What cannot be answered raises `Unanswerable`
with one line saying what is missing and what would fix it; the server turns that into an MCP
tool error, never a crash.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentwatch.cli import mcp_spool, status
from agentwatch.cli.mcp_alerts import AlertCache
from agentwatch.controller import spend as spend_module
from agentwatch.controller.alerts import Alert, AlertReader
from agentwatch.controller.web import redact
from agentwatch.core import config, run_budget, spool_readers

# The spool files read here, as core/spool_readers.py declares them for every outside reader.
LEDGER, HOOKS = spool_readers.TOKEN_LEDGER, spool_readers.CLAUDE_SESSIONS
RESOURCES, CONTROLLER = spool_readers.RESOURCES, spool_readers.CONTROLLER
SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
ALERT_TIMEOUT = 2.0  # seconds for each Alertmanager: an agent waits for the answer
SESSION_FAMILIES = (
    "agentwatch_session_deadline_timestamp_seconds",
    "agentwatch_session_cost_usd_total",
    "agentwatch_session_tokens_total",
    "agentwatch_session_first_activity_timestamp_seconds",
    "agentwatch_session_last_activity_timestamp_seconds",
)
ALERT_LABELS = ("severity", "project", "session", "model", "window", "kind", "agentwatch_action")


class Unanswerable(Exception):
    """A question that cannot be answered now; the message says why, in one line."""


Samples = list[tuple[str, dict[str, str], float]]


def samples(
    spool_dir: Path, sentinel: str, names: tuple[str, ...], contains: str = ""
) -> Samples | None:
    """The samples of the families `names` (prefixes) in a sentinel's spool file, of the
    lines holding `contains`; None when it has no file. Unanswerable when it is unusable."""
    try:
        return mcp_spool.read(spool_dir, sentinel, names, contains)
    except (OSError, ValueError) as err:
        path = spool_readers.path(spool_dir, sentinel)
        raise Unanswerable(f"the {sentinel} spool file {path} is unusable: {err}") from None


def _finite(value: float) -> bool:
    return math.isfinite(value)


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(frozen=True)
class Sources:
    """Where the answers come from (the config's folders and files)."""

    spool_dir: Path
    state_dir: Path
    cfg: config.Config

    @property
    def decision_files(self) -> list[Path]:
        return status.decision_files(self.cfg, self.state_dir)


# -- quota ---------------------------------------------------------------------------------


def quota(src: Sources, now: float) -> dict[str, Any]:
    """Each rate-limit window: used share, reset time and whether the numbers are Claude
    Code's own (`official`, from the statusline) or the ledger's 5-hour block (`estimated`)."""
    hooks = samples(src.spool_dir, HOOKS, ("agentwatch_quota_",)) or []
    ledger = samples(src.spool_dir, LEDGER, ("agentwatch_block_",))
    stale_after = float(src.cfg["thresholds"]["quota_stale_seconds"])
    windows: list[dict[str, Any]] = []
    reading = next(
        (v for n, _, v in hooks if n == "agentwatch_quota_reading_timestamp_seconds"), None
    )
    resets = {
        labels.get("window", ""): value
        for name, labels, value in hooks
        if name == "agentwatch_quota_resets_timestamp_seconds"
    }
    for name, labels, value in hooks:
        if name == "agentwatch_quota_used_ratio" and _finite(value):
            window = labels.get("window", "")
            age = None if reading is None else max(now - reading, 0.0)
            windows.append(
                {
                    "window": window,
                    "used_ratio": _round(value),
                    "resets_at": resets.get(window),
                    "source": "official",
                    "reading_age_seconds": _round(age, 1),
                    "stale": age is None or age > stale_after,
                }
            )
    block = _block(ledger or [], now) if ledger is not None else None
    if block is not None:
        windows.append(block)
    if not windows:
        raise Unanswerable(
            "no quota reading: no statusline snapshot with rate_limits in the "
            f"{HOOKS} spool file and no active 5-hour block in the {LEDGER} spool file "
            f"under {src.spool_dir} (is `agentwatch install` done and the token ledger running?)"
        )
    return {"windows": windows, "now": round(now, 3)}


def _block(ledger: Samples, now: float) -> dict[str, Any] | None:
    """The active 5-hour block as the token ledger exports it, with its limit's source."""
    one = {name: value for name, labels, value in ledger if not labels}
    tokens = one.get("agentwatch_block_tokens")
    if tokens is None:
        return None
    limit = next(
        ((v, labels.get("source", "")) for n, labels, v in ledger
         if n == "agentwatch_block_limit_tokens"),
        None,
    )  # fmt: skip
    used = tokens / limit[0] if limit is not None and limit[0] > 0 else None
    return {
        "window": "five_hour_block",
        "tokens": tokens,
        "limit_tokens": None if limit is None else limit[0],
        "limit_source": None if limit is None else limit[1],
        "used_ratio": _round(used),
        "starts_at": one.get("agentwatch_block_start_timestamp_seconds"),
        "resets_at": one.get("agentwatch_block_end_timestamp_seconds"),
        "source": "estimated",
    }


# -- budget --------------------------------------------------------------------------------


def budget(src: Sources, now: float) -> dict[str, Any]:
    """The cap, what the guard counts as spent against it, and what is left."""
    _, decision = status.newest_decision(src.decision_files)
    section = src.cfg["controller"]
    if decision is not None and isinstance(decision.get("budget_limit_usd"), int | float):
        limit, source = float(decision["budget_limit_usd"]), str(decision.get("budget_source"))
    else:
        limit = float(section["budget_usd"])
        source = "config" if limit > 0 else "default"
    run = run_budget.read(src.state_dir)
    period = spend_module.resolve_period(section["budget_period"], run)
    spent = _spent(src.spool_dir, period)
    if spent is None:
        raise Unanswerable(
            f"no spend known: the {LEDGER} spool file under {src.spool_dir} is missing or has "
            f"no {spool_readers.SPEND} (is the token ledger running?)"
        )
    unlimited = limit <= 0
    return {
        "limit_usd": None if unlimited else limit,
        "limit_source": source,
        "unlimited": unlimited,
        "period": period,
        "run_started_at": run.started_at if run.active else None,
        "spent_usd": round(spent, 6),
        "left_usd": None if unlimited else round(max(limit - spent, 0.0), 6),
        "used_ratio": None if unlimited else _round(spent / limit),
        "now": round(now, 3),
    }


def _spent(spool_dir: Path, period: str) -> float | None:
    """What the budget guard counts (controller/spend.py): the token ledger's
    agentwatch_spend_usd{period} plus the agent ledger's; None when neither file has it."""
    total: float | None = None
    for sentinel in (LEDGER, spool_readers.AGENT_LEDGER):
        found = samples(spool_dir, sentinel, (spool_readers.SPEND + "{",)) or []
        values = [v for _, labels, v in found if labels.get("period") == period and v >= 0]
        if values:
            total = (total or 0.0) + sum(values)
    return total


# -- this session --------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionSeries:
    session: str
    project: str
    cost: float = 0.0
    tokens: float = 0.0
    first: float | None = None
    last: float | None = None
    deadline: float | None = None  # the time-box's end (token-ledger timebox_minutes)


def _sessions(ledger: Samples) -> dict[str, SessionSeries]:
    """The ledger's per-session series, summed over agents and token types."""
    found: dict[str, dict[str, Any]] = {}
    for name, labels, value in ledger:
        session = labels.get("session")
        if session is None or not name.startswith("agentwatch_session_"):
            continue
        item = found.setdefault(session, {"project": labels.get("project", "")})
        if name == "agentwatch_session_cost_usd_total":
            item["cost"] = item.get("cost", 0.0) + value
        elif name == "agentwatch_session_tokens_total":
            item["tokens"] = item.get("tokens", 0.0) + value
        elif name == "agentwatch_session_first_activity_timestamp_seconds":
            item["first"] = min(item.get("first", value), value)
        elif name == "agentwatch_session_last_activity_timestamp_seconds":
            item["last"] = max(item.get("last", value), value)
        elif name == "agentwatch_session_deadline_timestamp_seconds":
            item["deadline"] = min(item.get("deadline", value), value)
    return {sid: SessionSeries(sid, **item) for sid, item in found.items()}


def resolve_session(
    known: Iterable[SessionSeries], session: str, project: str
) -> SessionSeries | None:
    """The session asked for; without an id, the newest active one of this project (the
    folder Claude Code started the server in), else the newest of all."""
    items = list(known)
    if session:
        return next((item for item in items if item.session == session), None)
    mine = [item for item in items if item.project == project] or items
    return max(mine, key=lambda item: (item.last or 0.0, item.session), default=None)


def check_session_id(session: str) -> str:
    if session and not SESSION_ID.match(session):
        raise Unanswerable("session must be a Claude Code session id (letters, digits, ._:-)")
    return session


def newest_session(src: Sources, project: str, only_project: bool = False) -> str:
    """The id of the newest session of `project` in the ledger's file (of any project unless
    `only_project`); "" when there is none. Unanswerable without the file."""
    last = samples(src.spool_dir, LEDGER, (SESSION_FAMILIES[-1] + "{",))
    if last is None:
        raise Unanswerable(
            f"no {LEDGER} spool file under {src.spool_dir}: is the token ledger running?"
        )
    found = resolve_session(_sessions(last).values(), "", project)
    if found is None or (only_project and found.project != project):
        return ""
    return found.session


TASK_DEADLINE = "agentwatch_orchestrator_task_deadline_timestamp_seconds"


def task_deadline(src: Sources, task: str) -> float:
    """The orchestrator's deadline of `task`, as the controller exports it (Bernstein's
    /tasks); Unanswerable when the controller does not know one."""
    if not SESSION_ID.match(task):
        raise Unanswerable("task must be an orchestrator task id (letters, digits, ._:-)")
    found = samples(src.spool_dir, CONTROLLER, (TASK_DEADLINE + "{",), f'task="{task}"')
    values = [v for _, labels, v in found or [] if labels.get("task") == task]
    if not values:
        raise Unanswerable(
            f"no deadline for task {task}: the controller exports the open tasks' deadlines of "
            "its orchestrator (controller.adapter kind bernstein) in its spool file"
        )
    return min(values)


def session_clock(
    src: Sources, now: float, session: str, project: str, task: str = ""
) -> dict[str, Any]:
    """This session's spend and clock: elapsed since its first counted line, and remaining
    when a deadline is known: its time-box (the token ledger's timebox_minutes) or, given
    `task`, the orchestrator's deadline of that task; the earlier of the two."""
    check_session_id(session)
    deadlines = {"task": task_deadline(src, task)} if task else {}
    wanted = session or newest_session(src, project)
    # only the lines of that session: a year of sessions is not parsed to answer for one
    ledger = samples(src.spool_dir, LEDGER, SESSION_FAMILIES, f'session="{wanted}"')
    if ledger is None:
        raise Unanswerable(
            f"no {LEDGER} spool file under {src.spool_dir}: is the token ledger running?"
        )
    found = _sessions(ledger).get(wanted) if wanted else None
    if found is None:
        which = f"session {session}" if session else "no session"
        raise Unanswerable(
            f"{which} in the {LEDGER} spool file: only sessions active within the ledger's "
            "session_ttl have series of their own"
        )
    if found.deadline is not None:
        deadlines["timebox"] = found.deadline
    source = min(deadlines, key=lambda key: deadlines[key]) if deadlines else None
    deadline = deadlines[source] if source is not None else None
    elapsed = None if found.first is None else max(now - found.first, 0.0)
    return {
        "session": found.session,
        "project": found.project,
        "spent_usd": round(found.cost, 6),
        "tokens": found.tokens,
        "started_at": found.first,
        "last_activity_at": found.last,
        "elapsed_seconds": _round(elapsed, 1),
        "deadline_at": deadline,
        "deadline_source": source,
        "remaining_seconds": None if deadline is None else round(deadline - now, 1),
        "now": round(now, 3),
    }


# -- the controller's decision -------------------------------------------------------------


def decision(src: Sources, now: float, tier: str = "") -> dict[str, Any]:
    """May this agent spawn another, and which model tiers wait, from the controller's file."""
    from agentwatch.controller.policy import TIERS

    if tier and tier not in TIERS:
        raise Unanswerable(f"tier must be one of {', '.join(TIERS)}")
    path, found = status.newest_decision(src.decision_files)
    if found is None:
        raise Unanswerable(f"no controller decision in {path}: is `agentwatch controller` running?")
    resources = samples(
        src.spool_dir, RESOURCES, ("agentwatch_agent_sessions ", "agentwatch_agent_sessions{")
    )
    running = None
    if resources is not None:
        counts = [v for n, _, v in resources if n == "agentwatch_agent_sessions"]
        running = int(sum(counts)) if counts else None
    effective = found.get("effective_max_agents")
    allowed = int(effective) if isinstance(effective, int | float) else 0
    may_spawn = allowed > (running or 0) if running is not None else allowed > 0
    deferred = [str(t) for t in found.get("deferred_tiers") or []]
    updated = found.get("updated_at")
    answer = {
        "may_spawn": bool(may_spawn and not found.get("should_stop")),
        "running_agents": running,
        "effective_max_agents": allowed,
        "max_agents": found.get("max_agents"),
        "paused": found.get("paused") is True,
        "should_stop": found.get("should_stop") is True,
        "breaker": found.get("breaker"),
        "deferred_tiers": deferred,
        "opus_deferred": "opus" in deferred,
        "reasons": found.get("reasons") or [],
        "mode": found.get("mode"),
        "age_seconds": round(now - updated, 1) if isinstance(updated, int | float) else None,
    }
    if tier:
        answer["tier"] = tier
        answer["tier_deferred"] = tier in deferred
    return answer


# -- alerts --------------------------------------------------------------------------------


def concerns(alert: Alert, session: str, project: str) -> bool:
    """An alert about this session, about its project as a whole, or about no project and
    no session at all (account-wide: the quota, the budget, the stack)."""
    labels = alert.labels
    if "session" in labels:
        return labels["session"] == session
    if "project" in labels:
        return labels["project"] == project
    return True


def alert_reader(cfg: config.Config) -> AlertReader:
    """Every configured Alertmanager, each given ALERT_TIMEOUT at most."""
    section = cfg["controller"]
    timeout = min(float(section["timeout"]), ALERT_TIMEOUT)
    return AlertReader(list(section["alertmanagers"]), timeout, match=section["match_labels"])


def alerts(cache: AlertCache, session: str, project: str) -> dict[str, Any]:
    """The active alerts that concern this session, from every configured Alertmanager."""
    check_session_id(session)
    snapshot, age = cache.get()
    if snapshot.alerts is None:
        down = ", ".join(redact(url) for url in cache.reader.urls)
        raise Unanswerable(f"no Alertmanager answered ({down}): is the stack up (`agentwatch up`)?")
    mine = [a for a in snapshot.alerts if concerns(a, session, project)]
    return {
        "session": session or None,
        "project": project,
        "alerts": [
            {
                "alertname": a.name,
                "state": "suppressed" if a.silenced or a.inhibited else "active",
                "labels": {k: a.labels[k] for k in ALERT_LABELS if k in a.labels},
                "starts_at": a.starts_at or None,
            }
            for a in sorted(mine, key=lambda a: (a.name, a.fingerprint))
        ],
        "alertmanagers_up": sum(snapshot.up.values()),
        "read_seconds_ago": round(age, 1),
    }


def project_of(cwd: str | None = None) -> str:
    """The project as the ledger labels it: the last part of the folder the agent runs in."""
    return Path(cwd or os.getcwd()).name


def clock() -> float:
    return time.time()
