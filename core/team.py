"""The labels of the team layout (docs/team.md): a host that writes to a central store adds
`host` (this machine) and `account` (the subscription it shares) to every series and alert.

Shared by the config writer (cli/remote_write.py) and the controller, which by default acts
only on its own host's alerts once the host writes to a centre.
"""

from __future__ import annotations

import socket
from typing import Any

HOST_LABEL = "host"
ACCOUNT_LABEL = "account"


def host_name() -> str:
    """This machine's short host name: the default `host` label."""
    return socket.gethostname().split(".", 1)[0] or "localhost"


def host_label(cfg: Any) -> str | None:
    """The `host` label this machine writes with, or None when it writes to no centre."""
    settings = cfg["stack"]["remote_write"]
    if settings["url"] is None:
        return None
    return str(settings["host"] or host_name())


def controller_match(cfg: Any) -> dict[str, str]:
    """controller.match_labels, or, when unset on a host that writes to a centre, its own
    `host`: a controller reading a central Alertmanager acts on its own host's alerts only."""
    configured = dict(cfg["controller"]["match_labels"])
    host = host_label(cfg)
    if configured or host is None:
        return configured
    return {HOST_LABEL: host}
