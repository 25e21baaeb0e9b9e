"""`agentwatch install` / `uninstall`: systemd user units plus the files they point at.

Install renders the units of `systemd/` for this machine (the real command, data and state
paths, the configured addresses), copies the rules, the Alertmanager config and the Grafana
provisioning under the data folder, writes a commented example config if none exists, and
records what it wrote with a checksum in a manifest. Uninstall removes exactly those files,
and only while they are unchanged: the user's config, edits and state are never touched.
Neither runs systemctl; both print the commands to run. Both also put agentwatch's hooks and
statusLine into Claude Code's settings.json and take them out again (`install_claude`),
and register `agentwatch mcp` as Claude Code's user-scope MCP server (`install_mcp`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentwatch.cli import assets, install_claude, install_mcp, remote_write, stack
from agentwatch.cli import claude_settings as cs
from agentwatch.core import config, paths
from agentwatch.core.files import write_atomic
from agentwatch.sentinels import registry

MANIFEST = "install-manifest.json"
MCP_TABLE = "claude_mcp"  # the manifest's table of MCP server entries install wrote
DASHBOARDS_PLACEHOLDER = "@AGENTWATCH_DASHBOARDS_DIR@"

# Literal paths in systemd/*.service (the layout of `pipx install` with XDG defaults) that
# install replaces with this machine's real ones.
UNIT_COMMAND = "%h/.local/bin/agentwatch"
UNIT_DATA = "%h/.local/share/agentwatch"
UNIT_STATE = "%h/.local/state/agentwatch"
OPTIONAL_UNITS = {
    "agentwatch-prometheus.service": "prometheus",
    "agentwatch-alertmanager.service": "alertmanager",
}
_UNSAFE_IN_UNIT = re.compile(r"[\s\"'\\$%;]")


def add(commands: argparse._SubParsersAction) -> None:
    for name, summary in (
        ("install", "write systemd user units, monitoring configs and an example config"),
        ("uninstall", "remove what `agentwatch install` wrote (never your config or state)"),
    ):
        command = commands.add_parser(
            name,
            help=summary,
            description=summary + ". Prints the `systemctl --user` commands to run; a "
            "manifest in the data folder records each file, and files you changed are kept.",
        )
        command.add_argument("--dry-run", action="store_true", help="show, write nothing")
        command.add_argument(
            "--unit-dir",
            type=Path,
            help="unit folder (default: $AGENTWATCH_UNIT_DIR or ~/.config/systemd/user)",
        )
        command.add_argument(
            "--prefix",
            type=Path,
            help="data folder (default: $AGENTWATCH_PREFIX or ~/.local/share/agentwatch)",
        )
        command.add_argument(
            "--claude-settings",
            type=Path,
            metavar="FILE",
            help="Claude Code settings file for the hooks and statusLine (default: "
            "$CLAUDE_CONFIG_DIR/settings.json or ~/.claude/settings.json; a project's "
            ".claude/settings.json works too)",
        )
        command.add_argument(
            "--no-claude-hooks",
            action="store_true",
            help="leave Claude Code's settings alone (no hooks, no statusLine)",
        )
        if name == "install":
            command.add_argument(
                "--force", action="store_true", help="also replace files changed since install"
            )
            command.add_argument(
                "--remote-write",
                metavar="URL",
                help="the installed Prometheus also writes every series to this central store "
                "(stack.remote_write.url; labels host and account: see docs/team.md)",
            )


class InstallError(Exception):
    """Something that makes the install impossible as asked; the message says what to do."""


@dataclass(frozen=True)
class Target:
    """Where install writes: overridable by options or environment, so tests use tmp dirs."""

    unit_dir: Path
    prefix: Path
    config_file: Path
    command: tuple[str, ...]
    claude_settings: Path | None = None  # None: --no-claude-hooks
    claude_state: Path | None = None  # ~/.claude.json for the MCP server; None: leave it

    @property
    def manifest(self) -> Path:
        return self.prefix / MANIFEST


@dataclass(frozen=True)
class Planned:
    path: Path
    content: bytes
    mode: int = 0o644


@dataclass
class Plan:
    files: list[Planned] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, path: Path, text: str | bytes, mode: int = 0o644) -> None:
        data = text.encode() if isinstance(text, str) else text
        self.files.append(Planned(path, data, mode))


def agentwatch_command() -> tuple[str, ...]:
    """How a unit runs agentwatch: the console script next to this Python, else `python -m`.
    sys.executable is kept unresolved: a venv's python is a symlink that must stay one."""
    script = Path(sys.executable).parent / "agentwatch"
    if script.is_file() and os.access(script, os.X_OK):
        return (str(script),)
    return (sys.executable, "-m", "agentwatch.cli")


def target_from(args: argparse.Namespace) -> Target:
    unit_dir = getattr(args, "unit_dir", None) or paths.default_unit_dir()
    prefix = getattr(args, "prefix", None) or paths.default_data_dir()
    settings = state = None
    if not getattr(args, "no_claude_hooks", False):
        settings = (getattr(args, "claude_settings", None) or cs.default_path()).expanduser()
        state = install_mcp.default_path().expanduser().absolute()
    return Target(
        unit_dir=unit_dir.expanduser().absolute(),
        prefix=prefix.expanduser().absolute(),
        config_file=(args.config or paths.default_config_file()).expanduser().absolute(),
        command=agentwatch_command(),
        claude_settings=settings.absolute() if settings is not None else None,
        claude_state=state,
    )


def unit_word(value: str | Path) -> str:
    """A path as one word of a unit file; paths systemd would split or expand are refused."""
    text = str(value)
    if _UNSAFE_IN_UNIT.search(text):
        raise InstallError(
            f"{text!r} contains a space, quote, backslash, '$', '%' or ';', which a unit file "
            "would split or expand: choose --prefix/--unit-dir/--config paths without them"
        )
    return text


def outside_comments(text: str, words: Mapping[str, str]) -> str:
    """`text` with each placeholder of `words` replaced by its real value, except in comment
    lines: a comment that names a placeholder keeps saying what it says."""
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        if not line.lstrip().startswith("#"):
            for placeholder, real in words.items():
                line = line.replace(placeholder, real)
            lines[number] = line
    return "".join(lines)


def render_unit(text: str, exec_start: list[str] | None, words: Mapping[str, str]) -> str:
    """A unit of systemd/ with this machine's paths: each placeholder path in `words` is
    replaced, and the ExecStart= line too when `exec_start` is given (Prometheus and
    Alertmanager, whose flags come from the config)."""
    text = outside_comments(text, words)
    if exec_start is not None:
        line = "ExecStart=" + " ".join(unit_word(word) for word in exec_start)
        text = re.sub(r"^ExecStart=.*$", lambda _: line, text, count=1, flags=re.M)
    return text


def _writable_lines(paths_: list[Path]) -> str:
    return "".join(f"ReadWritePaths=-{unit_word(path)}\n" for path in paths_)


def plan_units(cfg: config.Config, target: Target, plan: Plan) -> list[str]:
    """Add every unit to the plan; returns the optional units left out (binary missing)."""
    state = cfg.state_dir.expanduser().absolute()
    command = list(target.command)
    if target.config_file != paths.default_config_file().absolute():
        command += ["--config", str(target.config_file)]
    words = {
        UNIT_COMMAND: " ".join(unit_word(word) for word in command),
        UNIT_DATA: unit_word(target.prefix),
        UNIT_STATE: unit_word(state),
    }
    # A configured spool folder outside $XDG_RUNTIME_DIR must stay writable for the writers.
    extra = [cfg.spool_dir.expanduser().absolute()] if cfg["spool_dir"] is not None else []
    files = stack_files(target, state)
    found = stack.binaries()
    argv = {
        "prometheus": lambda binary: stack.prometheus_argv(binary, cfg, files),
        "alertmanager": lambda binary: stack.alertmanager_argv(binary, cfg, files),
    }
    left_out = []
    rules_dir = assets.rules_dir()
    for source in sorted(assets.systemd_dir().glob("agentwatch*.*")):
        exec_start = None
        if source.name in OPTIONAL_UNITS:
            tool = OPTIONAL_UNITS[source.name]
            if found[tool] is None:
                left_out.append(source.name)
                plan.notes.append(f"{source.name} left out: no {tool} binary on PATH")
                continue
            if tool == "alertmanager" and not (rules_dir / "alertmanager.yml").is_file():
                left_out.append(source.name)
                continue
            exec_start = argv[tool](str(found[tool]))
        text = render_unit(source.read_text(encoding="utf-8"), exec_start, words)
        if extra and "RuntimeDirectoryPreserve=yes\n" in text:
            text = text.replace(
                "RuntimeDirectoryPreserve=yes\n",
                "RuntimeDirectoryPreserve=yes\n" + _writable_lines(extra),
            )
        plan.add(target.unit_dir / source.name, text)
    return left_out


def stack_files(target: Target, state: Path) -> stack.StackFiles:
    return stack.StackFiles(
        prometheus_config=target.prefix / "prometheus" / "prometheus.yml",
        prometheus_data=state / "prometheus",
        alertmanager_config=target.prefix / "alertmanager" / "alertmanager.yml",
        alertmanager_data=state / "alertmanager",
        alerts_log=state / "alerts.jsonl",
    )


def plan_monitoring(cfg: config.Config, target: Target, plan: Plan) -> None:
    """Rules, Prometheus and Alertmanager configs and Grafana provisioning for this install."""
    import yaml

    shipped = assets.rules_dir()
    rules_dir = target.prefix / "rules"
    rules = sorted(shipped.glob("*.rules.yml"))
    if not rules:
        raise InstallError(f"no rules found in {shipped}: is this a complete install?")
    for source in rules:
        plan.add(rules_dir / source.name, source.read_bytes())
    files = stack_files(target, cfg.state_dir)
    bernstein = stack.bernstein_scrape(cfg, files.prometheus_config.parent, os.environ)
    if bernstein is not None and bernstein.token_path is not None and bernstein.token:
        plan.add(bernstein.token_path, bernstein.token + "\n", mode=0o600)
    prometheus = stack.prometheus_config(
        cfg, cfg["exporter"]["listen"], [rules_dir / source.name for source in rules], bernstein
    )
    header = "# Written by `agentwatch install`; `agentwatch uninstall` removes it if unchanged.\n"
    plan.add(files.prometheus_config, header + yaml.safe_dump(prometheus, sort_keys=False))
    alertmanager = shipped / "alertmanager.yml"
    if alertmanager.is_file():
        # Chat webhooks and tokens end up in the installed copy: readable by the user only.
        plan.add(files.alertmanager_config, alertmanager.read_bytes(), mode=0o600)
        for template in sorted((shipped / "templates").glob("*")):
            if template.is_file():
                plan.add(
                    files.alertmanager_config.parent / "templates" / template.name,
                    template.read_bytes(),
                )
    else:
        plan.notes.append(f"no {alertmanager}: Alertmanager config not installed")
    dashboards = target.prefix / "grafana" / "dashboards"
    grafana = assets.grafana_dir()
    for source in sorted((grafana / "dashboards").glob("*.json")):
        plan.add(dashboards / source.name, source.read_bytes())
    prometheus_url = f"http://{cfg['stack']['prometheus_listen']}"
    for source in sorted((grafana / "provisioning").glob("*/*.yml")):
        text = outside_comments(source.read_text(encoding="utf-8"), {
            DASHBOARDS_PLACEHOLDER: str(dashboards), "http://127.0.0.1:9850": prometheus_url,
        })  # fmt: skip
        plan.add(
            target.prefix / "grafana" / "provisioning" / source.parent.name / source.name, text
        )


def build_plan(cfg: config.Config, target: Target) -> tuple[Plan, list[str]]:
    plan = Plan()
    left_out = plan_units(cfg, target, plan)
    plan_monitoring(cfg, target, plan)
    local = f"http://{cfg['stack']['alertmanager_listen']}"
    if "agentwatch-alertmanager.service" not in left_out and all(
        not url.rstrip("/").startswith(local) for url in cfg["controller"]["alertmanagers"]
    ):
        plan.notes.append(
            f"the controller reads controller.alertmanagers {cfg['controller']['alertmanagers']}; "
            f"to use the installed Alertmanager set it to ['{local}'] in {target.config_file}"
        )
    return plan, left_out


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_digest(path: Path) -> str | None:
    try:
        return _digest(path.read_bytes())
    except FileNotFoundError:
        return None


def _manifest_document(path: Path) -> Any:
    """The manifest's JSON, or None when there is none; InstallError when it is unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise InstallError(f"cannot read the install manifest {path}: {err}") from err


def read_manifest(path: Path) -> dict[str, str]:
    """{file: sha256 as written}; empty when there is none. A broken manifest is an error:
    guessing what to delete is worse than refusing."""
    raw = _manifest_document(path)
    if raw is None:
        return {}
    files = raw.get("files") if isinstance(raw, dict) else None
    if not isinstance(files, dict):
        raise InstallError(f"install manifest {path} has no 'files' table")
    return {str(name): str(digest) for name, digest in files.items()}


def read_claude_records(path: Path) -> dict[str, dict[str, Any]]:
    """{settings file: what install wrote there (install_claude's record)}; empty when none."""
    raw = _manifest_document(path)
    if raw is None:
        return {}
    records = raw.get("claude_settings", {}) if isinstance(raw, dict) else None
    if not isinstance(records, dict) or not all(isinstance(v, dict) for v in records.values()):
        raise InstallError(f"install manifest {path} has a broken 'claude_settings' table")
    return records


def read_mcp_records(path: Path) -> dict[str, dict[str, Any]]:
    """{Claude Code state file: the MCP entry install wrote there}; empty when none."""
    raw = _manifest_document(path)
    records = raw.get(MCP_TABLE, {}) if isinstance(raw, dict) else {}
    if not isinstance(records, dict) or not all(isinstance(v, dict) for v in records.values()):
        raise InstallError(f"install manifest {path} has a broken {MCP_TABLE!r} table")
    return records


def _write_manifest(
    target: Target,
    files: dict[str, str],
    claude: dict[str, dict[str, Any]] | None = None,
    mcp: dict[str, dict[str, Any]] | None = None,
) -> None:
    """The manifest; `mcp` None keeps the MCP table it has."""
    from agentwatch.core import __version__

    if mcp is None:
        raw = _manifest_document(target.manifest)
        kept = raw.get(MCP_TABLE) if isinstance(raw, dict) else None
        mcp = kept if isinstance(kept, dict) else {}
    document: dict[str, Any] = {"agentwatch": __version__, "files": dict(sorted(files.items()))}
    if claude:
        document["claude_settings"] = dict(sorted(claude.items()))
    if mcp:
        document[MCP_TABLE] = dict(sorted(mcp.items()))
    write_atomic(target.manifest, (json.dumps(document, indent=2) + "\n").encode(), 0o644)


def claude_commands(cfg: config.Config, target: Target) -> cs.Commands:
    """`<agentwatch> hook` and `<agentwatch> statusline`, with --state-dir when the configured
    state dir is not the one they find by default."""
    state = cfg.state_dir.expanduser().absolute()
    default = paths.default_state_dir().absolute()
    otel = cfg.sentinel("otel")
    listen = otel["listen"] if otel["enabled"] else None
    return cs.Commands.build(target.command, state if state != default else None, listen)


def mcp_entry(target: Target) -> dict[str, Any]:
    """`<agentwatch> [--config FILE] mcp`: the config named only when it is not the default."""
    default = paths.default_config_file().expanduser().absolute()
    config_file = target.config_file if target.config_file != default else None
    return install_mcp.server_entry(target.command, config_file)


def install(cfg: config.Config, target: Target, dry_run: bool, force: bool) -> int:
    claude = mcp = None
    try:
        plan, left_out = build_plan(cfg, target)
        recorded = read_manifest(target.manifest)
        claude_records = read_claude_records(target.manifest)
        if target.claude_settings is not None:  # a bad settings.json stops it all, unwritten
            claude = install_claude.plan(
                target.claude_settings,
                claude_commands(cfg, target),
                claude_records.get(str(target.claude_settings)),
                claude_records,
            )
        mcp_records = read_mcp_records(target.manifest)
        if target.claude_state is not None:
            mcp = install_mcp.plan(
                target.claude_state, mcp_entry(target), mcp_records.get(str(target.claude_state))
            )
    except (InstallError, cs.SettingsError, remote_write.RemoteWriteError) as err:
        print(f"agentwatch install: {err}", file=sys.stderr)
        return 2
    verb = "would " if dry_run else ""
    written = dict(recorded)
    kept = 0
    for item in plan.files:
        name = str(item.path)
        current = _file_digest(item.path)
        wanted = _digest(item.content)
        if current == wanted:
            action = "unchanged"
        elif current is None:
            action = "create"
        elif current == recorded.get(name) or force:
            action = "update"
        else:
            why = "changed since install" if name in recorded else "not written by install"
            print(f"  keep    {item.path} ({why}; --force replaces it)")
            kept += 1
            continue
        if action != "unchanged" and not dry_run:
            write_atomic(item.path, item.content, item.mode)
        if current != wanted or name not in recorded:
            print(f"  {verb}{action:<8}{item.path}")
        written[name] = wanted
    if not target.config_file.exists():
        print(f"  {verb}create  {target.config_file} (example config, every key commented)")
        if not dry_run:
            write_atomic(target.config_file, registry.defaults_as_yaml(), 0o600)
    if claude is not None:
        install_claude.apply(claude, dry_run)
        claude_records[str(claude.path)] = claude.record
    if mcp is not None:
        install_mcp.apply(mcp, dry_run)
        mcp_records[str(mcp.path)] = mcp.record
    if not dry_run:
        _write_manifest(target, written, claude_records, mcp_records)
    for note in plan.notes:
        print(f"  note: {note}")
    print(next_steps(cfg, target, left_out, dry_run))
    return 1 if kept else 0


def sentinel_unit(name: str) -> str:
    """The unit that runs a sentinel: its loop as an instance of agentwatch-sentinel@.service,
    or the timer (agentwatch-NAME.timer, shipped with its service) of a sentinel that runs
    from one."""
    if registry.get(name).schedule == "timer":
        return f"agentwatch-{name}.timer"
    return f"agentwatch-sentinel@{name}.service"


def unit_names(cfg: config.Config, left_out: list[str]) -> tuple[list[str], list[str]]:
    """(units to enable for the core set, optional units) by the config's enabled sentinels."""
    core = ["agentwatch-exporter.service"]
    core += [sentinel_unit(name) for name in registry.enabled(cfg)]
    optional = [name for name in OPTIONAL_UNITS if name not in left_out]
    optional.append("agentwatch-controller.service")
    return core, optional


def next_steps(cfg: config.Config, target: Target, left_out: list[str], dry_run: bool) -> str:
    core, optional = unit_names(cfg, left_out)
    user = os.environ.get("USER") or "$USER"
    lines = [
        "",
        "Nothing was written (--dry-run). Then run:" if dry_run else "Now run:",
        "  systemctl --user daemon-reload",
        f"  systemctl --user enable --now {' '.join(core)}",
        "Optional (Prometheus + Alertmanager with the agentwatch rules, and the controller):",
        f"  systemctl --user enable --now {' '.join(optional)}",
        "Keep them running while you are logged out:",
        f"  loginctl enable-linger {user}",
        "Logs: journalctl --user -u 'agentwatch-*' -f",
        f"Grafana provisioning: {target.prefix / 'grafana' / 'provisioning'}",
    ]
    if target.unit_dir != paths.user_unit_dir():
        lines.append(f"(units went to {target.unit_dir}, which systemd --user may not read)")
    return "\n".join(lines)


def settings_to_clean(
    target: Target, records: dict[str, dict[str, Any]], only_given: bool
) -> list[Path]:
    """The settings files uninstall takes agentwatch out of: the one --claude-settings names,
    else every one install recorded plus the default (a lost manifest still finds ours)."""
    if target.claude_settings is None:
        return []
    if only_given:
        return [target.claude_settings]
    return sorted({Path(name) for name in records} | {target.claude_settings})


def uninstall(
    cfg: config.Config, target: Target, dry_run: bool, only_given_settings: bool = False
) -> int:
    commands = claude_commands(cfg, target)
    try:
        recorded = read_manifest(target.manifest)
        claude_records = read_claude_records(target.manifest)
        settings = settings_to_clean(target, claude_records, only_given_settings)
        for path in settings:  # every file checked before any is changed
            cs.read(path)
        mcp_records = read_mcp_records(target.manifest)
        states = (
            []
            if target.claude_state is None
            else sorted({Path(name) for name in mcp_records} | {target.claude_state})
        )
        for path in states:
            install_mcp.read(path)
    except (InstallError, cs.SettingsError) as err:
        print(f"agentwatch uninstall: {err}", file=sys.stderr)
        return 2
    for path in settings:
        install_claude.uninstall(path, commands, claude_records.get(str(path)), dry_run)
        claude_records.pop(str(path), None)
    for path in states:
        install_mcp.uninstall(path, mcp_records.get(str(path)), dry_run)
        mcp_records.pop(str(path), None)
    if not recorded:
        if not dry_run and claude_records:
            _write_manifest(target, {}, claude_records, mcp_records)
        elif not dry_run:
            target.manifest.unlink(missing_ok=True)
        print(f"agentwatch uninstall: no units to remove (no manifest at {target.manifest})")
        return 0
    units = sorted(
        Path(name).name
        for name in recorded
        if Path(name).parent == target.unit_dir
        and Path(name).name != "agentwatch-sentinel@.service"
    )
    instances = [
        sentinel_unit(name)
        for name, item in registry.sentinels().items()
        if item.schedule == "loop"
    ]
    print("First stop and disable the units:")
    print(f"  systemctl --user disable --now {' '.join(instances + units)}")
    verb = "would remove" if dry_run else "remove"
    kept: dict[str, str] = {}
    for name, digest in sorted(recorded.items()):
        path = Path(name)
        current = _file_digest(path)
        if current is None:
            continue
        if current != digest:
            print(f"  keep    {path} (changed since install)")
            kept[name] = digest
            continue
        print(f"  {verb} {path}")
        if not dry_run:
            path.unlink()
            if path.is_relative_to(target.prefix):  # our data folder; the unit folder is shared
                _remove_empty_parents(path.parent, stop_at={target.prefix.parent})
    if not dry_run:
        if kept or claude_records:
            _write_manifest(target, kept, claude_records, mcp_records)
        else:
            target.manifest.unlink(missing_ok=True)
            _remove_empty_parents(target.prefix, stop_at={target.prefix.parent})
    print("Then: systemctl --user daemon-reload")
    print(f"Kept: your config {target.config_file} and state {cfg.state_dir} (delete by hand).")
    return 0


def _remove_empty_parents(folder: Path, stop_at: set[Path]) -> None:
    """Remove folders install created and left empty, up to (not including) `stop_at`."""
    while folder not in stop_at and folder != folder.parent:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def load_config(path: Path | None) -> config.Config:
    """The config install renders from; a --config file that does not exist yet is fine
    (install writes the example there), so it means all defaults."""
    if path is not None and not path.exists():
        return registry.config_from_mapping({})
    return registry.load_config(path)


def run(args: argparse.Namespace) -> int:
    """`agentwatch install` and `agentwatch uninstall`."""
    try:
        cfg = load_config(args.config)
    except config.ConfigError as err:
        for problem in err.problems:
            print(f"agentwatch {args.command}: config problem: {problem}", file=sys.stderr)
        return 2
    target = target_from(args)
    if args.command == "install":
        try:
            cfg = remote_write.with_url(cfg, args.remote_write)
        except remote_write.RemoteWriteError as err:
            print(f"agentwatch install: {err}", file=sys.stderr)
            return 2
        return install(cfg, target, args.dry_run, args.force)
    return uninstall(cfg, target, args.dry_run, args.claude_settings is not None)
