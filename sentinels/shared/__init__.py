"""Host-inspection helpers that more than one sentinel uses: the /proc table, process trees
and tmux panes. Not a sentinel itself (no SENTINEL): sentinels import it, never each other."""
