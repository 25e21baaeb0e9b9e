"""`agentwatch install` / `uninstall` and Claude Code's ~/.claude.json: the MCP server goes in
as `mcpServers.agentwatch` beside whatever else is there, a second install changes nothing,
--dry-run shows the diff and writes nothing, uninstall removes only our entry (a server of the
user's under the same name is refused at install and kept at uninstall)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentwatch.cli import install, install_mcp
from agentwatch.cli import main as cli

from .test_install import layout, sources  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("sources")

# As Claude Code 2.1.328 keeps it (tests/claude_cli.prepare_home) with a server that
# `claude mcp add --scope user ccusage -- npx -y @ccusage/mcp` adds.
USERS = {
    "hasCompletedOnboarding": True,
    "numStartups": 7,
    "projects": {"/home/ana/shop": {"hasTrustDialogAccepted": True, "allowedTools": []}},
    "mcpServers": {
        "ccusage": {"type": "stdio", "command": "npx", "args": ["-y", "@ccusage/mcp"], "env": {}}
    },
}


@pytest.fixture
def state_file(layout: dict[str, Path], tmp_path: Path) -> Path:  # noqa: F811
    path = tmp_path / "claude" / ".claude.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def ours() -> dict:
    return install_mcp.server_entry(install.agentwatch_command(), None)


def test_install_adds_our_server_and_uninstall_takes_only_it_out(
    state_file: Path,
) -> None:
    state_file.write_text(json.dumps(USERS, indent=2))
    assert cli.main(["install"]) == 0
    document = json.loads(state_file.read_text())
    assert document["mcpServers"] == {**USERS["mcpServers"], "agentwatch": ours()}
    assert ours()["args"][-1] == "mcp" and ours()["type"] == "stdio"
    assert {k: v for k, v in document.items() if k != "mcpServers"} == {
        k: v for k, v in USERS.items() if k != "mcpServers"
    }
    before = state_file.read_bytes()
    assert cli.main(["install"]) == 0
    assert state_file.read_bytes() == before  # a second install changes nothing

    document["numStartups"] = 8  # Claude Code rewrites the file between the two
    state_file.write_text(json.dumps(document))
    assert cli.main(["uninstall"]) == 0
    assert json.loads(state_file.read_text()) == {**USERS, "numStartups": 8}


def test_a_fresh_file_gets_only_our_server_and_loses_it_again(
    state_file: Path,
) -> None:
    assert cli.main(["install"]) == 0
    assert json.loads(state_file.read_text()) == {"mcpServers": {"agentwatch": ours()}}
    assert cli.main(["uninstall"]) == 0
    assert json.loads(state_file.read_text()) == {}


def test_dry_run_shows_the_entry_and_writes_nothing(
    state_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    state_file.write_text(json.dumps(USERS))
    before = state_file.read_bytes()
    assert cli.main(["install", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"would update{state_file} (MCP server 'agentwatch' for Claude Code)" in out.replace(
        "would update  ", "would update"
    )
    assert '+    "agentwatch": {' in out and '"mcp"' in out
    assert state_file.read_bytes() == before
    assert cli.main(["install"]) == 0
    installed = state_file.read_bytes()
    assert cli.main(["uninstall", "--dry-run"]) == 0
    assert "would edit    " in capsys.readouterr().out
    assert state_file.read_bytes() == installed


def test_a_server_of_the_users_named_agentwatch_is_theirs(
    state_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    theirs = {"type": "http", "url": "http://127.0.0.1:9999/mcp"}
    state_file.write_text(json.dumps({"mcpServers": {"agentwatch": theirs}}))
    before = state_file.read_bytes()
    assert cli.main(["install"]) == 2
    assert "already has an MCP server named 'agentwatch'" in capsys.readouterr().err
    assert state_file.read_bytes() == before
    assert cli.main(["uninstall"]) == 0
    assert state_file.read_bytes() == before


def test_a_broken_state_file_stops_install_unwritten(
    state_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    state_file.write_text('{"mcpServers": []}')
    assert cli.main(["install"]) == 2
    assert "'mcpServers' is not an object" in capsys.readouterr().err
    assert state_file.read_text() == '{"mcpServers": []}'
