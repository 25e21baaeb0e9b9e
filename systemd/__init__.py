"""The systemd user units `agentwatch install` renders, shipped as package data."""
