"""The files agentwatch ships beside its code — rules, systemd units, Grafana dashboards — found
with importlib.resources, so an installed wheel finds them as a source checkout does."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def folder(package: str) -> Path:
    """The folder of a data package (`agentwatch.rules`, `.systemd`, `.grafana`)."""
    root = files(package)
    if not isinstance(root, Path):  # e.g. run from a zip: Prometheus needs real files
        raise RuntimeError(f"{package} is not installed as plain files ({root})")
    return root


def rules_dir() -> Path:
    return folder("agentwatch.rules")


def systemd_dir() -> Path:
    return folder("agentwatch.systemd")


def grafana_dir() -> Path:
    return folder("agentwatch.grafana")
