"""The exporter: the one endpoint Prometheus scrapes (the spool merged, per-sentinel health)."""
