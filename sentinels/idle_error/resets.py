"""When a usage limit resets, from the wording Claude Code shows next to it.

Seen forms: `resets 3:45pm (America/Los_Angeles)`, `resets 3pm`, `resets at 15:00`,
`resets Oct 9, 5pm (Europe/Berlin)`, and the older `Claude AI usage limit reached|1750000000`
(a Unix time). A time without a date is the next time the clock shows it (in the zone named,
else the local zone); a date without a year is this year's, or next year's if long past.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

_EPOCH = re.compile(r"\|\s*(\d{10})\b")
_RESET = re.compile(
    r"\breset(?:s|ting)?(?:\s+at)?\s+"
    r"(?:(?P<month>[a-z]{3})[a-z]*\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?:at\s+)?)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?"
    r"(?:\s*\((?P<zone>[A-Za-z0-9_+\-/]+)\))?",
    re.IGNORECASE,
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _zone(name: str | None, fallback: tzinfo | None) -> tzinfo | None:
    if name:
        # Only for a message that names its zone: zoneinfo (with sysconfig) is 0.6 MiB of
        # private memory the resident sentinel otherwise never uses.
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return fallback


def reset_timestamp(message: str, now: float, local: tzinfo | None = None) -> float | None:
    """The Unix time the message says the limit resets at, or None when it names none."""
    epoch = _EPOCH.search(message)
    if epoch:
        return float(epoch.group(1))
    match = _RESET.search(message)
    if not match:
        return None
    hour, minute = int(match["hour"]), int(match["minute"] or 0)
    ampm = (match["ampm"] or "").replace(".", "").lower()
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm == "pm" else 0)
    if hour > 23 or minute > 59:
        return None
    zone = _zone(match["zone"], local)
    current = datetime.fromtimestamp(now, zone).astimezone(zone)
    if match["month"]:
        month = match["month"][:3].lower()
        if month not in _MONTHS:
            return None
        try:
            when = current.replace(
                month=_MONTHS.index(month) + 1,
                day=int(match["day"]),
                hour=hour,
                minute=minute,
                second=0,
                microsecond=0,
            )
        except ValueError:
            return None
        if (current - when).days > 180:
            when = when.replace(year=when.year + 1)
        return when.timestamp()
    when = current.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if when <= current:
        when = (when.replace(tzinfo=None) + timedelta(days=1)).replace(tzinfo=zone)
    return when.timestamp()
