"""A scripted stand-in for the Anthropic Messages API, for the real Claude Code CLI.

Claude Code runs against it unchanged (`ANTHROPIC_BASE_URL=http://127.0.0.1:PORT`): streaming
and plain answers, `count_tokens`, errors with real statuses and bodies, tool calls that make
Claude Code run a tool and come back, delays, hangs, streams cut mid-way and the
`anthropic-ratelimit-unified-*` headers. Each session follows a script of steps
(`script.py`), and every served message is logged with its id, model and usage (`served.py`):
the ground truth the token ledger is checked against.
"""
