"""The core every other part of agentwatch builds on; it imports no other agentwatch package."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("agentwatch")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+unknown"
