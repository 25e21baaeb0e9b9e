"""The `agentwatch` command line; `agentwatch.cli.main:main` is the console script."""
