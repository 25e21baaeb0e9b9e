"""Generic adapters: POST the decision to a webhook, or run a command with it on stdin.

Both act only when the decision changed (its timestamps aside), judged by a digest kept in
the adapter's memo, so a restart or a `--once` run does not repeat an unchanged decision.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import requests

from agentwatch.controller.adapters import AdapterError, digest, http_session
from agentwatch.controller.web import HttpError, request_json


class WebhookAdapter:
    """POST the decision JSON to a URL whenever the decision changes."""

    name = "webhook"

    def __init__(
        self, url: str, token: str | None, timeout: float, session: requests.Session | None = None
    ):
        self.url = url
        self.timeout = timeout
        self.session = session or http_session(token)

    def pending(self, public: dict[str, Any], memo: dict[str, Any]) -> bool:
        return memo.get("digest") != digest(public)

    def apply(self, public: dict[str, Any], memo: dict[str, Any], now: float) -> None:
        try:
            request_json(self.session, "POST", self.url, self.timeout, public, expect_json=False)
        except HttpError as err:
            raise AdapterError(str(err)) from err
        memo["digest"] = digest(public)


class CommandAdapter:
    """Run a command (argv, no shell) with the decision JSON on stdin whenever it changes."""

    name = "command"

    def __init__(self, argv: list[str], timeout: float):
        self.argv = list(argv)
        self.timeout = timeout

    def pending(self, public: dict[str, Any], memo: dict[str, Any]) -> bool:
        return memo.get("digest") != digest(public)

    def apply(self, public: dict[str, Any], memo: dict[str, Any], now: float) -> None:
        data = json.dumps(public, sort_keys=True).encode() + b"\n"
        try:
            result = subprocess.run(
                self.argv,
                input=data,
                capture_output=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise AdapterError(f"{self.argv[0]}: timed out after {self.timeout:g}s") from err
        except OSError as err:
            raise AdapterError(f"{self.argv[0]}: cannot run ({err.strerror})") from err
        if result.returncode != 0:
            raise AdapterError(f"{self.argv[0]}: exited with status {result.returncode}")
        memo["digest"] = digest(public)
