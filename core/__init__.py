"""The core every other part of agentwatch builds on; it imports no other agentwatch package.

`__version__` is the one place the version is written (pyproject.toml reads it from here):
asking importlib.metadata instead costs about 4 MiB of private memory in every process that
shows a version (the exporter, the release-readiness sentinel, `up`)."""

__version__ = "0.1.0"
