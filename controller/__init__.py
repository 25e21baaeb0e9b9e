"""The controller: read alert state back from Alertmanager and throttle the orchestrator."""
