"""Which exposition format a scrape asked for, and the Content-Type to answer with.

The same choice as prometheus_client's `choose_encoder` (tests/test_negotiate.py holds them
equal on real Accept headers) without importing the library's `exposition` module, which
loads its HTTP server, WSGI and urllib parts: 7 MiB of the exporter's memory for a function
of twenty lines. Where the library raises (a version that does not compare, `version=a.b`),
this answers the plain text format instead of failing the scrape."""

from __future__ import annotations

from typing import NamedTuple

from prometheus_client.utils import parse_version

OPENMETRICS = "application/openmetrics-text"
TEXT = "text/plain"
TEXT_0_0_4 = "text/plain; version=0.0.4; charset=utf-8"
TEXT_1_0_0 = "text/plain; version=1.0.0; charset=utf-8"
OPENMETRICS_1_0_0 = "application/openmetrics-text; version=1.0.0; charset=utf-8"
ESCAPINGS = frozenset({"allow-utf-8", "underscores", "dots", "values"})
DEFAULT_ESCAPING = "underscores"


class Choice(NamedTuple):
    openmetrics: bool
    content_type: str


def _parameter(tokens: list[str], name: str) -> str:
    for token in tokens:
        if "=" in token:
            key, value = token.strip().split("=", 1)
            if key == name:
                return value
    return ""


def _escaping(tokens: list[str]) -> str:
    for token in tokens:
        if "=" in token:
            key, value = token.strip().split("=", 1)
            if key == "escaping":
                return value if value in ESCAPINGS else DEFAULT_ESCAPING
    return DEFAULT_ESCAPING


def _at_least_1(version: str) -> bool:
    try:
        return parse_version(version) >= (1, 0, 0)
    except TypeError:  # a part that is not a number, compared with one
        return False


def choose(accept: str | None) -> Choice:
    """The first acceptable OpenMetrics or versioned text entry of the header, else text 0.0.4."""
    for accepted in (accept or "").split(","):
        tokens = accepted.split(";")
        media = tokens[0].strip()
        if media == OPENMETRICS:
            version = _parameter(tokens, "version")
            if not version:
                return Choice(True, OPENMETRICS_1_0_0)
            if _at_least_1(version):
                escaping = _escaping(tokens)
                content_type = f"{OPENMETRICS}; version={version}; charset=utf-8; escaping="
                return Choice(True, content_type + escaping)
        elif media == TEXT:
            version = _parameter(tokens, "version")
            if version and _at_least_1(version):
                return Choice(False, f"{TEXT_1_0_0}; escaping={_escaping(tokens)}")
    return Choice(False, TEXT_0_0_4)
