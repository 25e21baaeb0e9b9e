"""Token ledgers of agent CLIs other than Claude Code (Codex CLI, Gemini CLI, OpenCode).

Each reader turns one agent's session files into `AgentUsage` records, one per API response,
in the Claude ledger's four token types; see `base`.
"""
