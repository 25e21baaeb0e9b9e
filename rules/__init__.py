"""Prometheus alerting and recording rules, the Alertmanager configs and their promtool tests,
shipped as package data (read with importlib.resources by `install` and `up`)."""
