"""The MCP half of `agentwatch install` / `uninstall`: `agentwatch mcp` registered for Claude
Code at user scope, as `mcpServers.agentwatch` in ~/.claude.json (what `claude mcp add
--scope user` writes), and taken out again.

Claude Code rewrites ~/.claude.json itself all the time (start counts, projects, caches), so
no byte-for-byte backup makes sense here: install sets only our one entry and keeps every
other key as it was; uninstall removes the entry only while it is still the one install wrote
(a server the user put under the same name is theirs), and the `mcpServers` object too when
install created it and nothing else is left in it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentwatch.cli import claude_settings as cs
from agentwatch.core import bounded
from agentwatch.core.files import write_atomic

SERVER = "agentwatch"
STATE_FILE = ".claude.json"
STATE_LIMIT = bounded.DATA_LIMIT  # it keeps per-project history: far larger than settings


def default_path(env: dict[str, str] | None = None) -> Path:
    """Claude Code's user state file: `$CLAUDE_CONFIG_DIR/.claude.json` (its first entry),
    else `~/.claude.json`."""
    env = dict(os.environ) if env is None else env
    first = env.get("CLAUDE_CONFIG_DIR", "").split(",")[0].strip()
    if first:
        return Path(first).expanduser() / STATE_FILE
    return Path.home() / STATE_FILE


def server_entry(agentwatch: tuple[str, ...], config_file: Path | None) -> dict[str, Any]:
    """The stdio server entry Claude Code starts: `<agentwatch> [--config F] mcp`."""
    extra = ["--config", str(config_file)] if config_file is not None else []
    return {"type": "stdio", "command": agentwatch[0], "args": [*agentwatch[1:], *extra, "mcp"],
            "env": {}}  # fmt: skip


def read(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    """(bytes, document) of the state file, (None, {}) when absent; SettingsError when it is
    not a JSON object or its `mcpServers` is not an object."""
    try:
        raw = bounded.read_bytes(path, STATE_LIMIT)
    except FileNotFoundError:
        return None, {}
    except OSError as err:
        raise cs.SettingsError(f"cannot read {path}: {err.strerror or err}") from err
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise cs.SettingsError(f"{path} is not valid JSON ({type(err).__name__})") from err
    if not isinstance(document, dict):
        raise cs.SettingsError(f"{path} is not a JSON object")
    servers = document.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise cs.SettingsError(f"{path}: 'mcpServers' is not an object")
    return raw, document


@dataclass
class Step:
    path: Path
    before: bytes | None
    after: bytes | None  # None: nothing to write
    record: dict[str, Any]

    @property
    def real(self) -> Path:
        return Path(os.path.realpath(self.path))


def plan(path: Path, entry: dict[str, Any], record: dict[str, Any] | None) -> Step:
    """Our entry into the file; SettingsError (nothing written) when the name is taken by a
    server install did not write."""
    record = record or {}
    before, document = read(path)
    servers = document.get("mcpServers")
    current = (servers or {}).get(SERVER)
    if current is not None and current != entry and current != record.get("entry"):
        raise cs.SettingsError(
            f"{path} already has an MCP server named {SERVER!r} that install did not write; "
            "remove it (`claude mcp remove agentwatch -s user`) or pass --no-claude-hooks"
        )
    created = bool(record.get("created_servers")) if record else servers is None
    new_record = {"entry": entry, "created_servers": created}
    if current == entry:
        return Step(path, before, None, new_record)
    after = dict(document)
    after["mcpServers"] = {**(servers or {}), SERVER: entry}
    return Step(path, before, cs.render(after), new_record)


def apply(step: Step, dry_run: bool) -> None:
    verb = "would " if dry_run else ""
    if step.after is None:
        return
    print(f"  {verb}{'update' if step.before is not None else 'create':<8}{step.path} "
          f"(MCP server {SERVER!r} for Claude Code)")  # fmt: skip
    if dry_run:
        print(cs.diff(step.path, step.before, step.after), end="")
    else:
        mode = cs_mode(step.real)
        write_atomic(step.real, step.after, mode)


def cs_mode(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        return 0o600


def uninstall(path: Path, record: dict[str, Any] | None, dry_run: bool) -> None:
    """Take our entry out; a server of the same name that is not ours stays."""
    record = record or {}
    before, document = read(path)
    servers = document.get("mcpServers")
    current = (servers or {}).get(SERVER)
    if current is None or before is None:
        return
    if record and current != record.get("entry"):
        print(f"  keep    {path} MCP server {SERVER!r} (changed since install)")
        return
    if not record and not _looks_ours(current):
        return
    rest = {name: value for name, value in (servers or {}).items() if name != SERVER}
    after = dict(document)
    if rest or not record.get("created_servers"):
        after["mcpServers"] = rest
    else:
        after.pop("mcpServers", None)
    verb = "would " if dry_run else ""
    print(f"  {verb}edit    {path} (MCP server {SERVER!r} removed)")
    if dry_run:
        print(cs.diff(path, before, cs.render(after)), end="")
    else:
        real = Path(os.path.realpath(path))
        write_atomic(real, cs.render(after), cs_mode(real))


def _looks_ours(entry: Any) -> bool:
    """Without a manifest record: an entry that runs `... agentwatch ... mcp`."""
    if not isinstance(entry, dict):
        return False
    words = [str(entry.get("command", "")), *map(str, entry.get("args") or [])]
    return words[-1:] == ["mcp"] and any("agentwatch" in word for word in words)
