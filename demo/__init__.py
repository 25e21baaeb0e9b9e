"""The demo workload of `agentwatch up`: simulated Claude Code sessions in tmux, a stand-in
orchestrator the controller steers, and a webhook sink that prints the alert messages. Also the
transcript lines (`transcripts`) and the generated corpus (`corpus`) the demo, the benchmarks
and the tests write, so that they ship with the package."""
