"""The demo workload of `agentwatch up`: simulated Claude Code sessions in tmux, a stand-in
orchestrator the controller steers, and a webhook sink that prints the alert messages."""
