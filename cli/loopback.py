"""Plain GETs to the stack's own services on loopback (Alertmanager, Prometheus) for what
`up` shows: http.client rather than requests, because `up` stays resident the whole run and
requests would cost it 8 MiB of memory for three kinds of GET without redirects, auth or TLS."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit


@dataclass(frozen=True)
class Reply:
    status: int
    location: str
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not."""
        return json.loads(self.body)


def get(url: str, params: dict[str, str] | None = None, timeout: float = 1.0) -> Reply | None:
    """One GET (redirects not followed); None when the service does not answer in time."""
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{urlencode(params)}" if params else "")
    host = parts.hostname or "127.0.0.1"
    connection = http.client.HTTPConnection(host, parts.port, timeout=timeout)
    try:
        connection.request("GET", path, headers={"Accept": "application/json"})
        response = connection.getresponse()
        return Reply(response.status, response.getheader("Location", ""), response.read())
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()
