"""Small HTTP helpers shared by the Alertmanager reader, the adapters and `agentwatch ack`.

Every remote answer is untrusted: a failure of any kind (refused, timeout, HTTP error, body
that is not JSON) becomes one `HttpError` with a short reason, so callers handle one type and
never crash. URLs are redacted (no user:password, no query) before they reach a log or label.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

MAX_BODY = 16 * 2**20  # an answer larger than this is refused, not parsed


class HttpError(Exception):
    """A request failed; `reason` is a short fixed word for metrics, the message for logs."""

    def __init__(self, reason: str, message: str, status: int | None = None):
        super().__init__(message)
        self.reason = reason
        self.status = status


def redact(url: str) -> str:
    """The URL without credentials, query or fragment: safe for labels and logs."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:  # IPv6 literal
            host = f"[{host}]"
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return "<invalid url>"


def join(base: str, path: str) -> str:
    return base.rstrip("/") + path


def request_json(
    session: requests.Session,
    method: str,
    url: str,
    timeout: float,
    body: Any = None,
    expect_json: bool = True,
) -> Any:
    """Send one request and return the decoded JSON answer (None when not expected)."""
    where = redact(url)
    try:
        response = session.request(method, url, json=body, timeout=timeout, stream=True)
    except requests.Timeout as err:
        raise HttpError("timeout", f"{method} {where}: timed out after {timeout:g}s") from err
    except requests.RequestException as err:
        raise HttpError("unreachable", f"{method} {where}: {type(err).__name__}") from err
    try:
        raw = response.raw.read(MAX_BODY + 1, decode_content=True) if response.raw else b""
    except (requests.RequestException, OSError, ValueError) as err:
        raise HttpError("unreachable", f"{method} {where}: reading the answer failed") from err
    finally:
        response.close()
    status = response.status_code
    if status in (401, 403):
        raise HttpError(
            "unauthorized", f"{method} {where}: HTTP {status} (check the token)", status
        )
    if not 200 <= status < 300:
        raise HttpError("http_error", f"{method} {where}: HTTP {status}", status)
    if len(raw) > MAX_BODY:
        raise HttpError("invalid", f"{method} {where}: answer larger than {MAX_BODY} bytes")
    if not expect_json:
        return None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError) as err:
        raise HttpError("invalid", f"{method} {where}: answer is not JSON") from err
