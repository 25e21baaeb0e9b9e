"""Small HTTP helpers shared by the Alertmanager reader, the adapters and `agentwatch ack`.

Every remote answer is untrusted: a failure of any kind (refused, timeout, HTTP error, a body
cut short, a body that is not JSON or nested too deep) becomes one `HttpError` with a short
reason, so callers handle one type and never crash. `timeout` is the whole exchange's deadline,
body included: a server that trickles one byte at a time cannot hold a cycle past it (a socket
timeout alone restarts with every byte; deadline.py cuts a trickled head short). URLs are
redacted (no user:password, no query) before they reach a log or label.
"""

from __future__ import annotations

import http.client
import json
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
import urllib3.exceptions

from agentwatch.controller import deadline

MAX_BODY = 16 * 2**20  # an answer larger than this is refused, not parsed
CHUNK = 64 * 1024
# Reasons of HttpError, for metrics.
REASONS = (
    "timeout",
    "unreachable",
    "protocol",
    "unauthorized",
    "http_error",
    "too_large",
    "invalid",
)


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


def _wait_at_most(raw: Any, seconds: float) -> None:
    """Let the next read of the body block no longer than `seconds` (urllib3 keeps the
    socket on the response while the body is read)."""
    sock = getattr(getattr(raw, "connection", None), "sock", None)
    if sock is not None:
        sock.settimeout(max(seconds, 0.001))


def _read_body(response: requests.Response, end: float, timeout: float, what: str) -> bytes:
    """The body, at most MAX_BODY + 1 bytes, read in pieces until the deadline `end`."""
    raw = response.raw
    if raw is None:
        return b""
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_BODY:
        left = end - time.monotonic()
        if left <= 0:
            raise HttpError("timeout", f"{what}: the answer took longer than {timeout:g}s")
        _wait_at_most(raw, min(left, timeout))
        try:
            chunk = raw.read1(min(CHUNK, MAX_BODY + 1 - size), decode_content=True)
        except urllib3.exceptions.ReadTimeoutError as err:
            raise HttpError("timeout", f"{what}: the answer took longer than {timeout:g}s") from err
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def decode(raw: bytes, what: str) -> Any:
    """JSON from an answer; too deep a nesting is as invalid as a syntax error."""
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError) as err:
        raise HttpError("invalid", f"{what}: answer is not JSON") from err
    except RecursionError as err:
        raise HttpError("invalid", f"{what}: answer is JSON nested too deep") from err


def request_json(
    session: requests.Session,
    method: str,
    url: str,
    timeout: float,
    body: Any = None,
    expect_json: bool = True,
) -> Any:
    """Send one request and return the decoded JSON answer (None when not expected), all of
    it within `timeout` seconds."""
    what = f"{method} {redact(url)}"
    end = time.monotonic() + timeout
    late = HttpError("timeout", f"{what}: the answer took longer than {timeout:g}s")
    deadline.prepare(session)
    with deadline.Watch(timeout) as watch:
        try:
            response = session.request(method, url, json=body, timeout=timeout, stream=True)
        except requests.Timeout as err:
            raise HttpError("timeout", f"{what}: timed out after {timeout:g}s") from err
        except requests.RequestException as err:
            if watch.expired:  # the watch cut a trickled head short
                raise late from err
            raise HttpError("unreachable", f"{what}: {type(err).__name__}") from err
        try:
            raw = _read_body(response, end, timeout, what)
        except HttpError:
            raise
        except (
            requests.RequestException,
            urllib3.exceptions.HTTPError,
            http.client.HTTPException,
            OSError,
            ValueError,
        ) as err:  # a body cut short (IncompleteRead), a reset, broken chunking or gzip
            if watch.expired:
                raise late from err
            raise HttpError(
                "protocol", f"{what}: reading the answer failed ({type(err).__name__})"
            ) from err
        finally:
            response.close()
    status = response.status_code
    if status in (401, 403):
        raise HttpError("unauthorized", f"{what}: HTTP {status} (check the token)", status)
    if not 200 <= status < 300:
        raise HttpError("http_error", f"{what}: HTTP {status}", status)
    if len(raw) > MAX_BODY:
        raise HttpError("too_large", f"{what}: answer larger than {MAX_BODY} bytes")
    if not expect_json:
        return None
    return decode(raw, what)
