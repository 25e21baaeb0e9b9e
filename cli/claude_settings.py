"""Claude Code's settings.json as `agentwatch install` edits it: find it, read it strictly,
add agentwatch's hook groups and statusLine, and take exactly those out again.

The file is the user's: everything else in it (other hooks, permissions, env, their key order)
must survive. So the document is only rewritten when our entries actually change, our hooks
go in as groups of their own (one per event, one command each) that are recognised by their
exact command, and a file that is not what Claude Code itself would accept is refused rather
than "repaired". Pure functions on parsed JSON; the install steps live in `install_claude`.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import shlex
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentwatch.core import bounded, claude, claude_events, paths

SETTINGS_LIMIT = bounded.CONFIG_LIMIT  # real settings files are a few KiB
CHAIN_FILE = "statusline-chain.json"
BACKUP_SUFFIX = ".agentwatch-backup"


class SettingsError(Exception):
    """A settings file install will not touch; the message is one line and says why."""


# The variables that make Claude Code export its telemetry to the otel sentinel. They go into
# settings.json's `env`, which Claude Code applies itself: an orchestrator that filters the
# environment of the sessions it starts does not filter them out.
ENDPOINT = claude.OTEL_ENDPOINT
# A user's own collector shows in any of these; then none of ours is written.
ENDPOINTS = (ENDPOINT, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")


def telemetry(listen: str) -> dict[str, str]:
    """The variables for a receiver listening on `listen` (HOST:PORT)."""
    return claude.telemetry_env(listen)


@dataclass(frozen=True)
class Commands:
    """The shell commands Claude Code runs for agentwatch (it runs them through a shell,
    so each word is quoted), and the telemetry variables install sets (none: not set)."""

    hook: str
    statusline: str
    telemetry: tuple[tuple[str, str], ...] = ()

    @classmethod
    def build(
        cls, agentwatch: Sequence[str], state_dir: Path | None, otel_listen: str | None = None
    ) -> Commands:
        extra = ["--state-dir", str(state_dir)] if state_dir is not None else []
        variables = telemetry(otel_listen) if otel_listen else {}
        return cls(
            hook=shlex.join([*agentwatch, "hook", *extra]),
            statusline=shlex.join([*agentwatch, "statusline", *extra]),
            telemetry=tuple(variables.items()),
        )


def foreign_endpoint(
    document: dict[str, Any], commands: Commands, environ: dict[str, str]
) -> str | None:
    """`NAME=value` of a telemetry setting of the user's: an OTLP endpoint that is not ours
    (in settings.json's env, or in the environment install runs in), or one of our variables
    set to another value in settings.json (telemetry turned off on purpose, another exporter);
    None when there is none."""
    ours = dict(commands.telemetry)
    env = document.get("env") or {}
    for key in ENDPOINTS:
        value = env.get(key, environ.get(key))
        if value and value != ours.get(key):
            return f"{key}={value}"
    for key, value in ours.items():
        if key in env and env[key] != value:
            return f"{key}={env[key]}"
    return None


def both_hint(found: str, commands: Commands) -> str:
    endpoint = dict(commands.telemetry).get(ENDPOINT, "")
    return (
        f"your settings already configure Claude Code's telemetry ({found}): left as they are, "
        "no telemetry variable added. To send to agentwatch as well, add an otlphttp exporter "
        f"with endpoint {endpoint} to your collector's metrics and logs pipelines (or set "
        "the variables of docs/otel.md yourself)."
    )


def default_path(env: dict[str, str] | None = None) -> Path:
    """Where Claude Code reads the user's settings: `$CLAUDE_CONFIG_DIR/settings.json` (its
    first entry, as agentwatch reads a comma-separated list), else `~/.claude/settings.json`."""
    env = dict(os.environ) if env is None else env
    first = env.get("CLAUDE_CONFIG_DIR", "").split(",")[0].strip()
    if first:
        return Path(first).expanduser() / "settings.json"
    return Path.home() / ".claude" / "settings.json"


def chain_path() -> Path:
    """Where the user's previous statusLine command is kept for `agentwatch statusline`."""
    return paths.default_config_file().parent / CHAIN_FILE


def backup_path(settings: Path) -> Path:
    return settings.with_name(settings.name + BACKUP_SUFFIX)


def read(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    """(the file's bytes, its document); (None, {}) when there is no file. SettingsError for
    anything else than a regular, bounded, UTF-8 JSON object whose hooks and statusLine have
    the shapes Claude Code expects."""
    try:
        raw = bounded.read_bytes(path, SETTINGS_LIMIT)
    except FileNotFoundError:
        return None, {}
    except OSError as err:  # FileRefused (a FIFO, a folder, too large) included
        raise SettingsError(f"cannot read {path}: {err.strerror or err}") from err
    try:
        document = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as err:
        raise SettingsError(f"{path} is not valid JSON ({_first_line(err)})") from err
    except RecursionError:  # 400k `[`: deeper than the parser goes, and than any settings
        raise SettingsError(f"{path} is nested too deep to be Claude Code settings") from None
    check(path, document)
    return raw, document


def check(path: Path, document: Any) -> None:
    """The shapes install relies on; the rest of the document is the user's business."""
    if not isinstance(document, dict):
        raise SettingsError(f"{path} is not a JSON object")
    hooks = document.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise SettingsError(f"{path}: 'hooks' is not an object")
    for event in claude_events.HOOK_EVENTS:
        groups = (hooks or {}).get(event)
        if groups is not None and not isinstance(groups, list):
            raise SettingsError(f"{path}: 'hooks.{event}' is not a list of matcher groups")
    line = document.get("statusLine")
    if line is not None and not isinstance(line, dict):
        raise SettingsError(f"{path}: 'statusLine' is not an object")
    env = document.get("env")
    if env is not None and not isinstance(env, dict):
        raise SettingsError(f"{path}: 'env' is not an object")


# Claude Code 2.1.328 gives the SessionEnd hooks 1.5 s in all unless a hook sets `timeout`
# (seconds; the largest one counts, up to 60 s): a Python start on a loaded machine took longer
# and was cancelled ("Hook cancelled"). Ten seconds is far above the hook's p99 under load
# (bench/bench_hook_latency.py); the session's exit waits only as long as the hook runs.
SESSION_END_TIMEOUT = 10
TIMEOUTS = {"SessionEnd": SESSION_END_TIMEOUT}


def group(command: str, event: str = "") -> dict[str, Any]:
    """agentwatch's matcher group for one event: no matcher (every tool, every source), the
    event's timeout where Claude Code's default is too short."""
    hook: dict[str, Any] = {"type": "command", "command": command}
    if event in TIMEOUTS:
        hook["timeout"] = TIMEOUTS[event]
    return {"hooks": [hook]}


def statusline(command: str) -> dict[str, Any]:
    return {"type": "command", "command": command}


def is_ours(entry: Any, known: Collection[str], event: str = "") -> bool:
    """Whether a matcher group is one agentwatch wrote: exactly our shape with one of our
    commands (today's, or one recorded at an earlier install); for an event with a timeout
    of ours, with that timeout or (an earlier install's) without one. A user's group around
    the same command with another timeout stays theirs."""
    if not (isinstance(entry, dict) and set(entry) == {"hooks"}):
        return False
    inner = entry["hooks"]
    if not (isinstance(inner, list) and len(inner) == 1 and isinstance(inner[0], dict)):
        return False
    command = inner[0].get("command")
    shapes = [{"type": "command", "command": command}]
    if event in TIMEOUTS:
        shapes.append({**shapes[0], "timeout": TIMEOUTS[event]})
    return inner[0] in shapes and command in known


def statusline_is_ours(document: dict[str, Any], known: Collection[str]) -> bool:
    line = document.get("statusLine")
    return isinstance(line, dict) and line.get("command") in known


def merged(
    document: dict[str, Any],
    commands: Commands,
    known: Collection[str],
    environ: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The document with agentwatch's hooks, statusLine and telemetry variables: our group kept
    where it is when it is already there, older agentwatch groups (`known`) replaced, the
    user's untouched; a variable the user set is never replaced, and with an OTLP endpoint of
    their own (`foreign_endpoint`) none is added."""
    result = copy.deepcopy(document)
    environ = dict(os.environ) if environ is None else environ
    if commands.telemetry and foreign_endpoint(document, commands, environ) is None:
        env = result.setdefault("env", {})
        for key, value in commands.telemetry:
            env.setdefault(key, value)
    hooks = result.setdefault("hooks", {})
    for event in claude_events.HOOK_EVENTS:
        ours = group(commands.hook, event)
        groups = [
            entry
            for entry in hooks.get(event, [])
            if entry == ours or not is_ours(entry, known, event)
        ]
        if ours not in groups:
            groups.append(ours)
        hooks[event] = groups
    if not statusline_is_ours(result, {commands.statusline}):
        # the user's other statusLine keys (padding) stay; the command becomes ours
        result["statusLine"] = {**result.get("statusLine", {}), **statusline(commands.statusline)}
    return result


def added_keys(document: dict[str, Any]) -> list[str]:
    """What `merged` adds besides groups: the events (and "hooks" itself) the user had not."""
    hooks = document.get("hooks")
    env = [] if "env" in document else ["env"]
    if hooks is None:
        return ["hooks", *claude_events.HOOK_EVENTS, *env]
    return [event for event in claude_events.HOOK_EVENTS if event not in hooks] + env


def stripped(
    document: dict[str, Any],
    known: Collection[str],
    previous: dict[str, Any] | None,
    added: Collection[str] | None = None,
    variables: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The document without agentwatch's entries: our groups removed, an event list or the
    `hooks` object left empty by that removed too when install added it (`added`; None: any),
    our statusLine replaced by `previous` (the user's, or none), the telemetry `variables` we
    wrote removed where they still hold our value (and `env` with them when we added it)."""
    result = copy.deepcopy(document)
    env = result.get("env")
    if isinstance(env, dict) and variables:
        for key, value in variables.items():
            if env.get(key) == value:
                del env[key]
        if not env and len(env) != len(document["env"]) and (added is None or "env" in added):
            del result["env"]
    hooks = result.get("hooks")
    if isinstance(hooks, dict):
        for event in list(hooks):
            groups = hooks[event]
            if not isinstance(groups, list):
                continue
            kept = [entry for entry in groups if not is_ours(entry, known, event)]
            if len(kept) == len(groups):
                continue
            if kept or (added is not None and event not in added):
                hooks[event] = kept
            else:
                del hooks[event]
        if not hooks and (added is None or "hooks" in added):
            del result["hooks"]
    if statusline_is_ours(result, known):
        if previous is None:
            del result["statusLine"]
        else:
            result["statusLine"] = previous
    return result


def has_ours(
    document: dict[str, Any], known: Collection[str], variables: dict[str, str] | None = None
) -> bool:
    return stripped(document, known, None, None, variables) != document


def written_variables(
    before: dict[str, Any], after: dict[str, Any], commands: Commands, recorded: dict[str, str]
) -> dict[str, str]:
    """The telemetry variables that are agentwatch's after install: the ones it adds now, and
    the ones an earlier install wrote that still hold that value."""
    old, new = before.get("env") or {}, after.get("env") or {}
    return {
        key: value
        for key, value in commands.telemetry
        if new.get(key) == value and (key not in old or recorded.get(key) == value)
    }


def render(document: dict[str, Any]) -> bytes:
    """JSON as Claude Code writes its settings: two-space indent, non-ASCII kept."""
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def diff(path: Path, before: bytes | None, after: bytes | None) -> str:
    """A unified diff of a file's change (either side may be absent)."""
    old = (before or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    new = (after or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    lines = difflib.unified_diff(
        old,
        new,
        fromfile=str(path) if before is not None else "/dev/null",
        tofile=str(path) if after is not None else "/dev/null",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__
