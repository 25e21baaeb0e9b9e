"""Idle-error: classify the live tail of each agent tmux pane."""
