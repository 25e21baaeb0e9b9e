"""`agentwatch install` / `uninstall` and Claude Code's settings.json: agentwatch's hooks and
statusLine go in as a JSON merge that keeps everything of the user's, a second install changes
nothing, --dry-run shows the diff and writes nothing, a malformed file is refused untouched, and
the round trip gives back the user's file byte for byte."""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest

from agentwatch.cli import claude_settings as cs
from agentwatch.cli import install
from agentwatch.cli import main as cli
from agentwatch.core import bounded, claude_events

from .test_install import layout, sources, tree  # noqa: F401  (fixtures)

# Settings files shaped like real ones: what users, teams and Claude Code itself write.
REAL_WORLD = {
    "user-with-statusline-and-hooks": (
        "{\n"
        '  "$schema": "https://json.schemastore.org/claude-code-settings.json",\n'
        '  "model": "opus",\n'
        '  "permissions": {\n'
        '    "allow": ["Bash(npm run lint)", "Bash(git diff:*)", "Read(~/.zshrc)"],\n'
        '    "deny": ["Read(./.env)", "Read(./secrets/**)"],\n'
        '    "defaultMode": "acceptEdits"\n'
        "  },\n"
        '  "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0", "OTEL_METRICS_EXPORTER": "none"},\n'
        '  "hooks": {\n'
        '    "PostToolUse": [\n'
        '      {"matcher": "Edit|MultiEdit|Write",\n'
        '       "hooks": [{"type": "command", "command": "npx prettier --write \\"$CLAUDE_FILE\\"",'
        ' "timeout": 30}]}\n'
        "    ],\n"
        '    "Notification": [{"hooks": [{"type": "command", "command": "notify-send Claude"}]}]\n'
        "  },\n"
        '  "statusLine": {"type": "command", "command": "~/.claude/statusline.sh", "padding": 0},\n'
        '  "includeCoAuthoredBy": false\n'
        "}\n"
    ),
    "odd-formatting": (
        '{\t"permissions":{"allow":["WebFetch(domain:github.com)"]},\r\n'
        '\t"hooks" : { "Stop" : [ ] , "PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command",'
        '"command":"~/bin/guard.sh"}]}]},\r\n'
        '\t"env":{"GREETING":"grüß dich ✓","ANTHROPIC_MODEL":"claude-sonnet-4-5"},'
        '"cleanupPeriodDays":30}'
    ),
    "project-permissions-only": '{"permissions": {"allow": ["Bash(make test)"]}}\n',
    "empty-object": "{}",
    "user-hook-running-agentwatch": (  # the user's own group with our command is theirs
        '{"hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": '
        '"agentwatch hook"}]}]}}\n'
    ),
}


def hook_command(*extra: str) -> str:
    return shlex.join([*install.agentwatch_command(), "hook", *extra])


def statusline_command(*extra: str) -> str:
    return shlex.join([*install.agentwatch_command(), "statusline", *extra])


def ours() -> set[str]:
    return {hook_command(), statusline_command()}


def write(path: Path, text: str | bytes, mode: int = 0o640) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)
    return data


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def chain_file(layout: dict[str, Path]) -> Path:  # noqa: F811
    return layout["config_home"] / "agentwatch" / cs.CHAIN_FILE


@pytest.mark.parametrize("name", sorted(REAL_WORLD))
def test_round_trip_gives_back_the_users_file_byte_for_byte(
    name: str,
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = layout["claude_settings"]
    original = write(settings, REAL_WORLD[name])
    user = json.loads(original)

    assert cli.main(["install"]) == 0
    document = json.loads(settings.read_text())
    for event in claude_events.HOOK_EVENTS:
        groups = document["hooks"][event]
        assert groups.count(cs.group(hook_command(), event)) == 1
        assert groups[:-1] == user.get("hooks", {}).get(event, [])  # theirs first, untouched
    assert document["statusLine"] == {
        **user.get("statusLine", {}),
        "type": "command",
        "command": statusline_command(),
    }
    telemetry = cs.telemetry("127.0.0.1:9853")  # the otel sentinel's default address
    theirs = user.get("env", {})
    if any(key in theirs and theirs[key] != value for key, value in telemetry.items()):
        assert document.get("env") == user.get("env")  # telemetry configured (off): theirs
    else:
        assert document["env"] == {**theirs, **telemetry}
    stripped = cs.stripped(document, ours(), user.get("statusLine"), cs.added_keys(user), telemetry)
    assert stripped == user
    assert cs.backup_path(settings).read_bytes() == original
    assert mode(settings) == mode(cs.backup_path(settings)) == 0o640
    chained = user.get("statusLine", {}).get("command")
    if chained:
        assert json.loads(chain_file(layout).read_text()) == {"command": chained}
        assert mode(chain_file(layout)) == 0o600
    else:
        assert not chain_file(layout).exists()

    assert cli.main(["uninstall"]) == 0
    assert settings.read_bytes() == original
    assert mode(settings) == 0o640
    assert not cs.backup_path(settings).exists()
    assert not chain_file(layout).exists()
    assert "restore" in capsys.readouterr().out


def test_second_install_changes_nothing(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write(layout["claude_settings"], REAL_WORLD["user-with-statusline-and-hooks"])
    assert cli.main(["install"]) == 0
    first = tree(tmp_path)
    capsys.readouterr()
    assert cli.main(["install"]) == 0
    assert tree(tmp_path) == first
    out = capsys.readouterr().out
    assert str(layout["claude_settings"]) not in out
    assert cli.main(["uninstall"]) == 0
    assert layout["claude_settings"].read_text() == REAL_WORLD["user-with-statusline-and-hooks"]


def test_dry_run_shows_the_diff_and_writes_nothing(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = layout["claude_settings"]
    write(settings, REAL_WORLD["user-with-statusline-and-hooks"])
    before = tree(tmp_path)
    assert cli.main(["install", "--dry-run"]) == 0
    assert tree(tmp_path) == before
    out = capsys.readouterr().out
    assert f"would update  {settings}" in out
    assert f"--- {settings}\n+++ {settings}\n" in out
    added = [line for line in out.splitlines() if line.startswith("+ ")]
    assert f'"command": {json.dumps(hook_command())}' in "\n".join(added)
    assert '-  "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"' in out
    assert f"would write   {chain_file(layout)}" in out

    assert cli.main(["install"]) == 0
    installed = tree(tmp_path)
    capsys.readouterr()
    assert cli.main(["uninstall", "--dry-run"]) == 0
    assert tree(tmp_path) == installed
    assert f"would restore {settings}" in capsys.readouterr().out


MALFORMED: dict[str, bytes] = {
    "not JSON": b'{"permissions": {"allow": [}',
    "an array": b"[]",
    "hooks a list": b'{"hooks": []}',
    "an event not a list": b'{"hooks": {"Stop": {"hooks": []}}}',
    "statusLine a string": b'{"statusLine": "echo hi"}',
    "not UTF-8": b'{"env": {"A": "\xff"}}',
    "NaN": b'{"cleanupPeriodDays": NaN}',
    "huge": b'{"x": "' + b"a" * cs.SETTINGS_LIMIT + b'"}',
}


@pytest.mark.parametrize("name", [*sorted(MALFORMED), "a FIFO", "a folder"])
@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_malformed_settings_are_refused_and_nothing_changes(
    name: str,
    command: str,
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = layout["claude_settings"]
    if command == "uninstall":
        assert cli.main(["install"]) == 0
        settings.unlink()
    settings.parent.mkdir(parents=True, exist_ok=True)
    if name == "a FIFO":
        os.mkfifo(settings)
    elif name == "a folder":
        settings.mkdir()
    else:
        write(settings, MALFORMED[name])
    before = tree(tmp_path)
    capsys.readouterr()
    assert cli.main([command]) == 2
    captured = capsys.readouterr()
    assert tree(tmp_path) == before
    assert captured.err.count("\n") == 1 and str(settings) in captured.err
    assert captured.err.startswith(f"agentwatch {command}: ")
    if command == "install":
        assert not layout["units"].exists()  # refused before anything was written


def test_edited_in_between_removes_only_our_entries(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = layout["claude_settings"]
    original = write(settings, REAL_WORLD["user-with-statusline-and-hooks"])
    assert cli.main(["install"]) == 0
    # The user (or Claude Code's /permissions) edits the file: a rule and a hook of theirs.
    document = json.loads(settings.read_text())
    document["permissions"]["allow"].append("Bash(pytest:*)")
    document["hooks"]["Stop"].insert(0, {"hooks": [{"type": "command", "command": "say done"}]})
    document["hooks"]["SessionStart"].append({"hooks": [{"type": "command", "command": "x"}]})
    settings.write_text(json.dumps(document, indent=4))
    capsys.readouterr()

    assert cli.main(["uninstall"]) == 0
    out = capsys.readouterr().out
    expected: dict[str, Any] = json.loads(original)
    expected["permissions"]["allow"].append("Bash(pytest:*)")
    expected["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": "say done"}]}]
    expected["hooks"]["SessionStart"] = [{"hooks": [{"type": "command", "command": "x"}]}]
    assert json.loads(settings.read_text()) == expected  # statusLine, padding too, restored
    assert mode(settings) == 0o640
    assert not chain_file(layout).exists()
    assert f"keep    {cs.backup_path(settings)}" in out
    assert cs.backup_path(settings).read_bytes() == original


def test_an_edit_between_two_installs_survives_uninstall(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
) -> None:
    settings = layout["claude_settings"]
    write(settings, REAL_WORLD["project-permissions-only"])
    assert cli.main(["install"]) == 0
    document = json.loads(settings.read_text())
    document["model"] = "opus"
    settings.write_text(json.dumps(document, indent=2))
    assert cli.main(["install"]) == 0  # nothing of ours to change: the file stays as edited
    assert json.loads(settings.read_text()) == document
    assert cli.main(["uninstall"]) == 0
    assert json.loads(settings.read_text()) == {
        "permissions": {"allow": ["Bash(make test)"]},
        "model": "opus",
    }


def test_no_settings_before_install_means_none_after_uninstall(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
) -> None:
    settings = layout["claude_settings"]
    assert cli.main(["install"]) == 0
    assert mode(settings) == 0o600
    assert set(json.loads(settings.read_text())) == {"hooks", "statusLine", "env"}
    assert not cs.backup_path(settings).exists() and not chain_file(layout).exists()
    assert cli.main(["uninstall"]) == 0
    assert not settings.exists()

    # Created by install, then the user added a setting: uninstall leaves just theirs.
    assert cli.main(["install"]) == 0
    document = json.loads(settings.read_text())
    document["model"] = "sonnet"
    settings.write_text(json.dumps(document))
    assert cli.main(["uninstall"]) == 0
    assert json.loads(settings.read_text()) == {"model": "sonnet"}


def test_project_settings_file_state_dir_and_opt_out(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    state = tmp_path / "elsewhere-state"
    config = tmp_path / "config.yaml"
    config.write_text(f"state_dir: {state}\n")
    project = tmp_path / "repo" / ".claude" / "settings.json"
    original = write(project, REAL_WORLD["project-permissions-only"])
    args = ["--config", str(config), "install", "--claude-settings", str(project)]
    assert cli.main(args) == 0
    document = json.loads(project.read_text())
    wanted = {"type": "command", "command": hook_command("--state-dir", str(state))}
    assert document["hooks"]["PreToolUse"] == [{"hooks": [wanted]}]
    # SessionEnd's 1.5 s default is too short for a loaded machine (cli/claude_settings.py)
    assert document["hooks"]["SessionEnd"] == [{"hooks": [{**wanted, "timeout": 10}]}]
    assert document["statusLine"]["command"] == statusline_command("--state-dir", str(state))
    assert not layout["claude_settings"].exists()  # the default file was not touched
    uninstall = ["--config", str(config), "uninstall", "--claude-settings", str(project)]
    assert cli.main(uninstall) == 0
    assert project.read_bytes() == original

    assert cli.main(["install", "--no-claude-hooks"]) == 0
    assert not layout["claude_settings"].exists()
    assert (layout["units"] / "agentwatch-exporter.service").is_file()


def test_uninstall_without_flag_cleans_every_recorded_settings_file(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    project = tmp_path / "repo" / ".claude" / "settings.json"
    original = write(project, REAL_WORLD["odd-formatting"])
    assert cli.main(["install", "--claude-settings", str(project)]) == 0
    assert cli.main(["install"]) == 0
    assert layout["claude_settings"].exists() and project.read_bytes() != original
    assert cli.main(["uninstall"]) == 0
    assert project.read_bytes() == original
    assert not layout["claude_settings"].exists()
    assert not (layout["data"] / install.MANIFEST).exists()


def test_a_moved_agentwatch_replaces_its_old_hooks(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """After the venv moved, install swaps the old commands for the new ones instead of adding
    a second set; uninstall then finds both generations."""
    settings = layout["claude_settings"]
    original = write(settings, REAL_WORLD["user-with-statusline-and-hooks"])
    old = tmp_path / "old-venv" / "bin" / "agentwatch"
    now = install.agentwatch_command()
    monkeypatch.setattr(install, "agentwatch_command", lambda: (str(old),))
    assert cli.main(["install"]) == 0
    monkeypatch.setattr(install, "agentwatch_command", lambda: now)
    assert cli.main(["install"]) == 0  # the units were unchanged since: updated
    text = settings.read_text()
    assert str(old) not in text and text.count(hook_command()) == len(claude_events.HOOK_EVENTS)
    # the user's statusLine is still the one chained, not the old agentwatch one
    assert json.loads(chain_file(layout).read_text())["command"] == "~/.claude/statusline.sh"
    assert cli.main(["uninstall"]) == 0
    assert settings.read_bytes() == original


def test_a_symlinked_settings_file_stays_a_symlink(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    original = write(dotfiles, REAL_WORLD["project-permissions-only"])
    settings = layout["claude_settings"]
    settings.parent.mkdir(parents=True)
    settings.symlink_to(dotfiles)
    assert cli.main(["install"]) == 0
    assert settings.is_symlink() and "statusLine" in dotfiles.read_text()
    assert cli.main(["uninstall"]) == 0
    assert settings.is_symlink() and dotfiles.read_bytes() == original


def test_chained_statusline_is_restored_after_a_lost_backup(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
) -> None:
    settings = layout["claude_settings"]
    write(settings, '{"statusLine": {"type": "command", "command": "starship statusline"}}')
    assert cli.main(["install"]) == 0
    cs.backup_path(settings).unlink()
    assert cli.main(["uninstall"]) == 0
    assert json.loads(settings.read_text()) == {
        "statusLine": {"type": "command", "command": "starship statusline"}
    }
    assert not chain_file(layout).exists()


def test_bounded_read_is_what_refuses_a_fifo(tmp_path: Path) -> None:
    """The refusal comes from core.bounded's check, not from a read that would block."""
    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)
    with pytest.raises(bounded.FileRefused):
        bounded.read_bytes(fifo, cs.SETTINGS_LIMIT)
    with pytest.raises(cs.SettingsError, match="FIFO"):
        cs.read(fifo)


def test_one_chain_file_serves_one_settings_file(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two settings files with a statusLine each cannot share the one chain file: the second
    install is refused, unwritten, instead of losing the first user command."""
    write(layout["claude_settings"], '{"statusLine": {"type": "command", "command": "mine"}}')
    project = tmp_path / "repo" / ".claude" / "settings.json"
    theirs = write(project, '{"statusLine": {"type": "command", "command": "team"}}')
    assert cli.main(["install"]) == 0
    capsys.readouterr()
    assert cli.main(["install", "--claude-settings", str(project)]) == 2
    assert "already chains the statusLine" in capsys.readouterr().err
    assert project.read_bytes() == theirs
    assert json.loads(chain_file(layout).read_text()) == {"command": "mine"}


def test_commands_are_quoted_for_the_shell_claude_code_runs_them_in() -> None:
    commands = cs.Commands.build(("/opt/my tools/agentwatch",), Path("/home/a b/state's"))
    assert shlex.split(commands.hook) == [
        "/opt/my tools/agentwatch",
        "hook",
        "--state-dir",
        "/home/a b/state's",
    ]
    assert shlex.split(commands.statusline)[1] == "statusline"
    assert cs.Commands.build(("aw",), None) == cs.Commands("aw hook", "aw statusline")


def test_settings_path_follows_claude_config_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cs.default_path({}) == tmp_path / ".claude" / "settings.json"
    assert cs.default_path({"CLAUDE_CONFIG_DIR": "/srv/claude"}) == Path(
        "/srv/claude/settings.json"
    )


def test_uninstall_keeps_a_users_group_that_runs_the_same_command(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
) -> None:
    """Ours is recognised by its exact shape: the user's group with a matcher (or a timeout)
    around the very same command survives an uninstall that has to edit the file."""
    settings = layout["claude_settings"]
    theirs = [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": hook_command()}]},
        {"hooks": [{"type": "command", "command": hook_command(), "timeout": 5}]},
    ]
    write(settings, json.dumps({"hooks": {"PreToolUse": theirs}}))
    assert cli.main(["install"]) == 0
    assert len(json.loads(settings.read_text())["hooks"]["PreToolUse"]) == 3
    document = json.loads(settings.read_text())
    document["model"] = "haiku"  # an edit: no byte restore, our entries are taken out
    settings.write_text(json.dumps(document))
    assert cli.main(["uninstall"]) == 0
    assert json.loads(settings.read_text()) == {"hooks": {"PreToolUse": theirs}, "model": "haiku"}


def test_a_stale_chain_file_goes_when_there_is_no_statusline_to_chain(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
) -> None:
    write(chain_file(layout), '{"command": "left over"}')
    write(layout["claude_settings"], REAL_WORLD["project-permissions-only"])
    assert cli.main(["install"]) == 0
    assert not chain_file(layout).exists()
