"""`agentwatch ack ALERTNAME`: acknowledge an alert by creating an Alertmanager silence.

A silenced alert is not actionable, so the controller stops acting on it, and Alertmanager
stops notifying. The silence is posted to the first configured Alertmanager that answers, not
to all of them: in an HA cluster silences gossip to every peer within seconds, while posting
the same silence to each peer would create one duplicate per peer (each with its own id, each
to be expired separately). A peer that refuses the silence (HTTP 4xx) stops the command — the
request itself is wrong, another peer would refuse it too; a peer that cannot be reached is
skipped for the next one.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import re
import sys
from datetime import UTC, datetime, timedelta

import requests

from agentwatch.controller.web import HttpError, join, redact, request_json
from agentwatch.core.config import Config
from agentwatch.core.config import duration as parse_duration

log = logging.getLogger("agentwatch.controller")

LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def silence_body(
    alertname: str,
    duration: float,
    comment: str,
    matches: list[tuple[str, str]],
    now: datetime,
    author: str,
) -> dict[str, object]:
    """The POST /api/v2/silences payload: exact (non-regex, equal) matchers only."""
    matchers = [{"name": "alertname", "value": alertname, "isRegex": False, "isEqual": True}]
    for name, value in matches:
        matchers.append({"name": name, "value": value, "isRegex": False, "isEqual": True})
    return {
        "matchers": matchers,
        "startsAt": _timestamp(now),
        "endsAt": _timestamp(now + timedelta(seconds=duration)),
        "createdBy": author,
        "comment": comment,
    }


def parse_match(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not LABEL_NAME.match(name) or not value:
        raise ValueError(f"--match {text!r} is not LABEL=VALUE")
    return name, value


def post_silence(
    urls: list[str], body: dict[str, object], timeout: float, session: requests.Session
) -> tuple[str, str]:
    """(silence id, redacted URL) from the first Alertmanager that accepts the silence."""
    problems: list[str] = []
    for url in urls:
        try:
            answer = request_json(session, "POST", join(url, "/api/v2/silences"), timeout, body)
        except HttpError as err:
            if err.status is not None and 400 <= err.status < 500 and err.status not in (401, 403):
                raise
            problems.append(str(err))
            continue
        silence_id = answer.get("silenceID") if isinstance(answer, dict) else None
        if not isinstance(silence_id, str) or not silence_id:
            problems.append(f"{redact(url)}: answer carries no silenceID")
            continue
        return silence_id, redact(url)
    raise HttpError("unreachable", "; ".join(problems) or "no Alertmanager configured")


def run(config: Config, args: argparse.Namespace) -> int:
    """The `agentwatch ack` command: 0 when the silence exists, 1 when none took it, 2 on usage."""
    section = config["controller"]
    alertname = str(args.alertname).strip()
    try:
        if not alertname:
            raise ValueError("ALERTNAME must not be empty")
        duration = parse_duration(args.duration)
        matches = [parse_match(item) for item in args.match or []]
    except ValueError as err:
        print(f"agentwatch ack: {err}", file=sys.stderr)
        return 2
    urls = list(dict.fromkeys(args.alertmanager or section["alertmanagers"]))
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        user = "unknown user"
    author = f"agentwatch ack ({user})"
    comment = args.comment or "acknowledged with agentwatch ack"
    body = silence_body(alertname, duration, comment, matches, datetime.now(UTC), author)
    try:
        silence_id, where = post_silence(urls, body, float(section["timeout"]), requests.Session())
    except HttpError as err:
        print(f"agentwatch ack: no silence created: {err}", file=sys.stderr)
        return 1
    hours = duration / 3600
    print(f"silenced {alertname} for {hours:g}h on {where}: silence {silence_id}")
    return 0
