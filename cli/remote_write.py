"""The team layout's part of a host Prometheus config: `remote_write` to a central store and
the `external_labels` that tell the hosts (and the subscription they share) apart there.

The host's Prometheus keeps evaluating every local rule over its own series (the controller
of the host still steers its loops from them); remote_write only forwards copies. External
labels are added to every forwarded series and to every alert the host sends, so the central
rules (rules/central/) can sum one subscription's windows `by (account)` and still tell each
`host`'s share. The password is never written into the config: Prometheus reads the file.
"""

from __future__ import annotations

from typing import Any

from agentwatch.core import config
from agentwatch.core.secretfiles import InsecureFileError, require_private
from agentwatch.core.team import ACCOUNT_LABEL, HOST_LABEL, host_label


class RemoteWriteError(Exception):
    """The remote_write settings cannot be used; the message names the key and the fix."""


def with_url(cfg: config.Config, url: str | None) -> config.Config:
    """`cfg` with stack.remote_write.url set from a command-line option (validated as the
    config key is); unchanged when `url` is None."""
    if url is None:
        return cfg
    try:
        parsed = config.optional_http_url(url)
    except ValueError as err:
        raise RemoteWriteError(f"--remote-write: {err}") from err
    stack = dict(cfg["stack"], remote_write=dict(cfg["stack"]["remote_write"], url=parsed))
    values = dict(cfg.values, stack=stack)
    return config.Config(values=values, source=cfg.source, warnings=list(cfg.warnings))


def external_labels(cfg: config.Config) -> dict[str, str]:
    """`host` (and `account` when configured); empty when nothing is forwarded."""
    settings = cfg["stack"]["remote_write"]
    host = host_label(cfg)
    if host is None:
        return {}
    labels = {HOST_LABEL: host}
    if settings["account"] is not None:
        labels[ACCOUNT_LABEL] = settings["account"]
    return labels


def remote_write(cfg: config.Config) -> list[dict[str, Any]]:
    """The `remote_write` list of the host Prometheus: one store, or none."""
    settings = cfg["stack"]["remote_write"]
    if settings["url"] is None:
        return []
    target: dict[str, Any] = {"url": settings["url"]}
    username, password_file = settings["username"], settings["password_file"]
    if (username is None) != (password_file is None):
        raise RemoteWriteError(
            "stack.remote_write.username and stack.remote_write.password_file go together: "
            "set both (basic auth) or neither"
        )
    if password_file is not None:
        try:
            require_private(password_file, "stack.remote_write.password_file: a password")
        except InsecureFileError as err:  # its message names the file and the fix
            raise RemoteWriteError(str(err)) from err
        target["basic_auth"] = {"username": username, "password_file": str(password_file)}
    return [target]


def apply(cfg: config.Config, document: dict[str, Any]) -> dict[str, Any]:
    """A host Prometheus config with the remote_write part added (when configured)."""
    targets = remote_write(cfg)
    if not targets:
        return document
    document.setdefault("global", {})["external_labels"] = external_labels(cfg)
    document["remote_write"] = targets
    return document
