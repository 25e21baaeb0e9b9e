"""The demo workload of `agentwatch up`: simulated Claude Code sessions in tmux, a stand-in
orchestrator the controller steers, and a webhook sink that prints the alert messages. Also the
transcript lines (`transcripts`) the demo agent writes; the corpus generators built on them,
which only the tests and the benchmarks use, live in bench/generators/ (not in the wheel)."""
