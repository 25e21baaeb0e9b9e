"""The Claude Code half of `agentwatch install` / `uninstall`: agentwatch's hooks and
statusLine into a settings.json, and out again leaving the user's file as it was.

Install plans everything before anything is written (a malformed file stops the whole install),
keeps the bytes it replaces in `settings.json.agentwatch-backup`, moves a statusLine the user
had into the chain file `agentwatch statusline` runs first, and records in the install manifest
what it wrote. Uninstall puts the backup back byte for byte when the file is still exactly what
install wrote; when the user edited it since, it removes only agentwatch's entries. A
settings.json that install created is deleted again.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentwatch.cli import claude_settings as cs
from agentwatch.core import bounded
from agentwatch.core.files import write_atomic

NEW_FILE_MODE = 0o600  # settings may carry env secrets; Claude Code's own are private too
CHAIN_MODE = 0o600


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Step:
    """One settings file's change, computed before anything is written."""

    path: Path  # as the user names it (the manifest key)
    before: bytes | None  # None: there is no file
    after: bytes | None  # None: leave the file as it is
    mode: int
    chain: dict[str, str] | None  # what the chain file must hold; None: leave it
    drop_chain: bool
    record: dict[str, Any]
    keep_backup: bool = False  # the backup already holds the user's file from before agentwatch
    note: str | None = None  # said after the change (a telemetry endpoint of the user's)

    @property
    def real(self) -> Path:
        """Where to write: a settings.json that is a symlink (dotfiles) stays one."""
        return Path(os.path.realpath(self.path))


def file_mode(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return NEW_FILE_MODE


def read_chain(path: Path) -> dict[str, str] | None:
    """The chain file's content, or None when there is none or it is unusable."""
    try:
        document = json.loads(bounded.read_text(path, bounded.SECRET_LIMIT))
    except (OSError, ValueError):
        return None
    if isinstance(document, dict) and isinstance(document.get("command"), str):
        return {"command": document["command"]}
    return None


def plan(
    path: Path, commands: cs.Commands, record: dict[str, Any] | None, owners: dict[str, Any]
) -> Step:
    """What install does to `path`; `record` is the manifest's entry for it from an earlier
    install, `owners` every settings file's entry (one chain file serves one of them)."""
    record = record or {}
    before, document = cs.read(path)
    known = set(record.get("commands", [])) | {commands.hook, commands.statusline}
    environ = dict(os.environ)
    after_doc = cs.merged(document, commands, known, environ)
    previous, chain, drop_chain = _statusline_change(path, document, known, record, owners)
    after = None if after_doc == document else cs.render(after_doc)
    # what we last wrote: a file the user edited since stays theirs (no byte restore over it)
    written = digest(after) if after is not None else record.get("written")
    recorded_env = record.get("env") or {}
    ours = cs.has_ours(document, known, recorded_env)
    added = record.get("added") if ours else cs.added_keys(document)
    foreign = cs.foreign_endpoint(document, commands, environ) if commands.telemetry else None
    new_record = {
        "env": cs.written_variables(document, after_doc, commands, recorded_env),
        "written": written,
        "added": added,
        "commands": sorted(set(record.get("commands", [])) | {commands.hook, commands.statusline}),
        "previous_statusline": previous,
        "created": bool(record.get("created")) if before is not None else True,
        "chain": chain is not None or (bool(record.get("chain")) and not drop_chain),
    }
    # Unchanged since our last write: the backup taken then is still the user's own file.
    keep_backup = (
        before is not None
        and record.get("written") == digest(before)
        and cs.backup_path(Path(os.path.realpath(path))).is_file()
    )
    note = cs.both_hint(foreign, commands) if foreign else None
    return Step(
        path, before, after, file_mode(path), chain, drop_chain, new_record, keep_backup, note
    )


def _statusline_change(
    path: Path,
    document: dict[str, Any],
    known: set[str],
    record: dict[str, Any],
    owners: dict[str, Any],
) -> tuple[dict[str, Any] | None, dict[str, str] | None, bool]:
    """(the user's statusLine to restore at uninstall, the chain file's new content or None to
    leave it, whether to remove it). The user's statusLine moves into the chain file; with
    none, a stale chain file goes, unless it serves another settings file."""
    line = document.get("statusLine")
    if line is not None and cs.statusline_is_ours(document, known):
        return record.get("previous_statusline"), None, False  # installed before: as it was
    command = line.get("command") if line is not None else None
    chain = {"command": command} if isinstance(command, str) and command else None
    other = next(
        (
            name
            for name, entry in owners.items()
            if name != str(path) and entry.get("chain") and cs.chain_path().exists()
        ),
        None,
    )
    if other is not None and chain is not None:
        raise cs.SettingsError(
            f"{cs.chain_path()} already chains the statusLine of {other}; uninstall that "
            "first or pass --no-claude-hooks"
        )
    return line, chain, chain is None and other is None


def apply(step: Step, dry_run: bool) -> None:
    """Write (or, dry, show) the planned change: backup, settings, chain file."""
    verb = "would " if dry_run else ""
    chain = cs.chain_path()
    if step.after is not None:
        if step.before is not None and not step.keep_backup:
            backup = cs.backup_path(step.real)
            print(f"  {verb}{'back up':<8}{step.path} -> {backup}")
            if not dry_run:
                write_atomic(backup, step.before, step.mode)
        action = "update" if step.before is not None else "create"
        print(f"  {verb}{action:<8}{step.path} (Claude Code hooks, statusLine, telemetry env)")
        if dry_run:
            print(cs.diff(step.path, step.before, step.after), end="")
        else:
            write_atomic(step.real, step.after, step.mode)
    if step.chain is not None and read_chain(chain) != step.chain:
        print(f"  {verb}{'write':<8}{chain} (your statusLine, which agentwatch's runs first)")
        if not dry_run:
            write_atomic(chain, json.dumps(step.chain) + "\n", CHAIN_MODE)
    elif step.drop_chain and chain.exists():
        print(f"  {verb}{'remove':<8}{chain} (no statusLine of yours to chain)")
        if not dry_run:
            chain.unlink()
    if step.note:
        print(f"  note: {step.note}")


def uninstall(
    path: Path, commands: cs.Commands, record: dict[str, Any] | None, dry_run: bool
) -> None:
    """Take agentwatch out of `path`: the original bytes back when nothing changed since
    install, else only our entries removed. SettingsError (nothing changed) for a bad file."""
    record = record or {}
    before, document = cs.read(path)
    known = set(record.get("commands", [])) | {commands.hook, commands.statusline}
    verb = "would " if dry_run else ""
    real = Path(os.path.realpath(path))
    backup = cs.backup_path(real)
    chain = cs.chain_path()
    owns_chain = bool(record.get("chain")) or not record
    # the variables install wrote; without a record, ours are those holding our exact values
    variables = record.get("env") if record else dict(commands.telemetry)
    if before is not None:
        unchanged = record.get("written") == digest(before)
        original = _clean_backup(backup, known) if unchanged else None
        if unchanged and record.get("created"):
            print(f"  {verb}remove  {path} (created by install, unchanged)")
            if not dry_run:
                real.unlink()
        elif original is not None:
            print(f"  {verb}restore {path} from {backup} (byte for byte)")
            if not dry_run:
                write_atomic(real, original, file_mode(real))
                backup.unlink()
        elif cs.has_ours(document, known, variables):
            previous = record.get("previous_statusline")
            if previous is None and owns_chain:
                chained = read_chain(chain)
                previous = cs.statusline(chained["command"]) if chained else None
            result = cs.stripped(document, known, previous, record.get("added"), variables)
            if record.get("created") and result == {}:
                print(f"  {verb}remove  {path} (created by install; nothing of yours left)")
                if not dry_run:
                    real.unlink()
            else:
                print(f"  {verb}edit    {path} (agentwatch's hooks, statusLine, env removed)")
                if dry_run:
                    print(cs.diff(path, before, cs.render(result)), end="")
                else:
                    write_atomic(real, cs.render(result), file_mode(real))
        if backup.exists() and original is None:
            print(f"  keep    {backup} (the file changed since install; delete it by hand)")
    if owns_chain and chain.exists():
        print(f"  {verb}remove  {chain}")
        if not dry_run:
            chain.unlink()


def _clean_backup(backup: Path, known: set[str]) -> bytes | None:
    """The backup's bytes when it is a settings file without agentwatch in it."""
    try:
        raw, document = cs.read(backup)
    except cs.SettingsError:
        return None
    if raw is None or cs.has_ours(document, known):
        return None
    return raw
