"""Shared code of agentwatch: spool format, exporter server, config, CLI."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("agentwatch")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+unknown"
