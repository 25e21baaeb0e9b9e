"""`python -m agentwatch.cli`: the same as the `agentwatch` command."""

from agentwatch.cli.entry import run

run()
