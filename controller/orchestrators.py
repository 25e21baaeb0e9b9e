"""Which adapter the config asks for (`controller.orchestrator`), with its bearer token.

Problems here are configuration errors: `agentwatch controller` refuses to start (exit 2)
with the key named, rather than running without the throttle the user asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentwatch.controller.adapters import Adapter, AdapterConfigError
from agentwatch.controller.bernstein import BernsteinAdapter
from agentwatch.controller.hooks import CommandAdapter, WebhookAdapter
from agentwatch.core.bounded import SECRET_LIMIT, FileRefused, read_text
from agentwatch.core.secretfiles import InsecureFileError, require_private


def read_token(
    token_env: str | None, token_file: Path | None, env: Mapping[str, str]
) -> str | None:
    """The bearer token from an environment variable or a file (first line), if configured."""
    if token_env:
        token = env.get(token_env, "").strip()
        if not token:
            raise AdapterConfigError(f"orchestrator.token_env: ${token_env} is empty or unset")
        return token
    if token_file is not None:
        try:
            require_private(token_file, "bearer token")  # others can read it: refuse
        except InsecureFileError as err:
            raise AdapterConfigError(f"orchestrator.token_file: {err}") from None
        try:
            lines = read_text(token_file, SECRET_LIMIT).splitlines()
        except FileRefused as err:  # a FIFO, a device or a huge file: never read
            raise AdapterConfigError(f"orchestrator.token_file: refusing {err}") from None
        except (OSError, UnicodeDecodeError) as err:
            raise AdapterConfigError(
                f"orchestrator.token_file: cannot read {token_file} ({type(err).__name__})"
            ) from err
        token = lines[0].strip() if lines else ""
        if not token:
            raise AdapterConfigError(f"orchestrator.token_file: {token_file} is empty")
        return token
    return None


def build(settings: Mapping[str, Any], env: Mapping[str, str]) -> Adapter | None:
    """The adapter the config asks for (`controller.orchestrator`), or None for kind none."""
    kind = settings["kind"]
    timeout = float(settings["timeout"])
    if kind == "none":
        return None
    if kind == "command":
        if not settings["command"]:
            raise AdapterConfigError("orchestrator.command: kind command needs an argv list")
        return CommandAdapter(settings["command"], timeout)
    url = settings["url"]
    if not url or not str(url).startswith(("http://", "https://")):
        raise AdapterConfigError(f"orchestrator.url: kind {kind} needs an http(s) URL")
    token = read_token(settings["token_env"], settings["token_file"], env)
    if kind == "bernstein":
        return BernsteinAdapter(url, token, timeout)
    return WebhookAdapter(url, token, timeout)
