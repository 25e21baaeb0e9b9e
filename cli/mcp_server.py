"""`agentwatch mcp`: an MCP server over stdio, so an agent can ask agentwatch what it may still
spend, how much of its quota is used, how long it has run, whether it may spawn another agent
and which alerts concern it.

The tools only read (mcp_answers.py): spool files, the controller's decision file, Alertmanager.
A question that cannot be answered (no ledger, no controller, the stack down, a bad argument,
an unknown tool) comes back as an MCP tool error with one line saying why; the server keeps
serving. Claude Code starts it in the session's folder: that folder's name is the project the
session tools look in when no session id is given.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from agentwatch.cli import common, mcp_answers
from agentwatch.cli.mcp_alerts import AlertCache
from agentwatch.cli.mcp_answers import Sources, Unanswerable
from agentwatch.core import config, log

NAME = "agentwatch"
TOOLS = ("quota", "budget", "session_clock", "decision", "alerts")


def add(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "mcp",
        help="serve agentwatch's numbers to an agent over MCP (stdio)",
        description="An MCP server on stdin/stdout for Claude Code and other MCP clients: "
        "read-only tools for the quota windows, the budget left, this session's spend and "
        "clock, the controller's decision and the alerts that concern the session. "
        "`agentwatch install` registers it for Claude Code.",
    )
    common.add_dirs(parser)


def _json(answer: dict[str, Any]) -> str:
    return json.dumps(answer, sort_keys=True)


def build(src: Sources, project: str) -> Any:
    """The MCP server with agentwatch's tools (the SDK imported only here: other commands
    do not pay for it)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    from agentwatch.core import __version__

    server = MCPServer(NAME, version=__version__, log_level="WARNING")
    cache = AlertCache(mcp_answers.alert_reader(src.cfg))
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def answering(compute: Callable[[], dict[str, Any]]) -> str:
        try:
            return _json(compute())
        except Unanswerable as err:
            raise ToolError(str(err)) from None

    def quota() -> str:
        """The account's rate-limit windows: share used (0-1), when each resets, and the
        source: `official` (Claude Code's statusline reading) or `estimated` (the token
        ledger's 5-hour block against its limit)."""
        return answering(lambda: mcp_answers.quota(src, mcp_answers.clock()))

    def budget() -> str:
        """The budget cap in USD, what counts as spent against it (run or day), and what is
        left; `unlimited` when no cap is set."""
        return answering(lambda: mcp_answers.budget(src, mcp_answers.clock()))

    def session_clock(session: str = "", task: str = "") -> str:
        """This session's spend (USD, tokens) and clock: elapsed seconds since its first
        message, and remaining seconds when a deadline is known: the session's time-box, or
        the orchestrator's deadline of `task` (the earlier). Without `session`, the newest
        session of the current project."""
        return answering(
            lambda: mcp_answers.session_clock(src, mcp_answers.clock(), session, project, task)
        )

    def decision(tier: str = "") -> str:
        """The controller's decision for agents: may another agent be spawned now, is Opus
        (or `tier`: opus, sonnet, haiku) deferred, is the run paused or stopping, and why."""
        return answering(lambda: mcp_answers.decision(src, mcp_answers.clock(), tier))

    def alerts(session: str = "") -> str:
        """The active alerts that concern this session: about it, about its project, or
        account-wide; from Alertmanager."""

        def compute() -> dict[str, Any]:
            return mcp_answers.alerts(cache, session or _current(src, project), project)

        return answering(compute)

    for tool in (quota, budget, session_clock, decision, alerts):
        server.add_tool(tool, annotations=read_only, structured_output=False)
    cache.start()
    return server


def _current(src: Sources, project: str) -> str:
    """The newest session of the project in the ledger's file, or "" when none is known."""
    try:
        return mcp_answers.newest_session(src, project, only_project=True)
    except Unanswerable:
        return ""


def run(args: argparse.Namespace, cfg: config.Config) -> int:
    spool_dir, state_dir = common.dirs(args, cfg)
    # stdout carries the protocol: every log line goes to stderr, warnings only.
    log.setup("warning")  # core/log.py's format, on stderr
    server = build(Sources(spool_dir, state_dir, cfg), mcp_answers.project_of())
    server.run("stdio")
    return 0
