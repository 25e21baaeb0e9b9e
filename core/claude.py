"""What agentwatch knows about Claude Code itself: where it keeps transcripts, how it names a
project's folder, and which name a project goes by. One module, so the ledger, the controller's
nudge check, the demo and `agentwatch up` agree (and follow Claude Code in one place)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from agentwatch.core.lazy_re import Pattern

AGENT = "claude-code"  # its value of the `agent` label (the agent ledger counts the others)
OTEL_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"


def telemetry_env(listen: str) -> dict[str, str]:
    """The variables that make Claude Code export its OpenTelemetry metrics and events to the
    otel sentinel listening on `listen` (HOST:PORT): `agentwatch install` writes them into
    settings.json's env, the demo sets them for its sessions."""
    return {
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        OTEL_ENDPOINT: f"http://{listen}",
    }


_NOT_ALPHANUMERIC = Pattern(r"[^A-Za-z0-9]")


def slug(cwd: str) -> str:
    """Claude Code's folder under `projects/` for a working directory: every character that
    is not a letter or digit becomes `-` (`/home/alice/my.app` -> `-home-alice-my-app`)."""
    return _NOT_ALPHANUMERIC.sub("-", cwd)


def project_name(cwd: str | None, folder: str = "") -> str:
    """The project label: the working directory's last component, else the project folder."""
    if cwd:
        name = os.path.basename(cwd.rstrip("/"))
        if name:
            return name
    return folder or "unknown"


def transcript_path(projects: Path, cwd: str, session: str) -> Path:
    """Where Claude Code writes the transcript of `session` run in `cwd`."""
    return projects / slug(cwd) / f"{session}.jsonl"


def has_transcripts(roots: Iterable[Path]) -> bool:
    """Whether any root holds at least one transcript (the demo starts when none does)."""
    return any(next(walk(root), None) is not None for root in roots)


@dataclass(frozen=True)
class Transcript:
    """What a JSONL file's place in the tree says about it."""

    slug: str  # the project folder under projects/ (see `slug`)
    session: str  # sub-agent and legacy files count under their parent session


def _expand(entry: str, home: Path) -> Path:
    entry = entry.strip()
    if entry == "~" or entry.startswith("~/"):
        return home / entry[2:]
    return Path(entry)


def projects_roots(
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    configured: list[Path] | None = None,
) -> list[Path]:
    """The `projects/` folders to read, in order, without duplicates.

    Precedence: the config file's list, else CLAUDE_CONFIG_DIR (comma-separated), else both
    `$XDG_CONFIG_HOME/claude` and `~/.claude`. Each entry may hold `projects/` or be it.
    Folders that do not exist yet are kept: they are watched for when they appear.
    """
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    if configured:
        bases = list(configured)
    elif env.get("CLAUDE_CONFIG_DIR", "").strip():
        bases = [
            _expand(part, home) for part in env["CLAUDE_CONFIG_DIR"].split(",") if part.strip()
        ]
    else:
        xdg = env.get("XDG_CONFIG_HOME", "").strip()
        bases = [(Path(xdg) if xdg else home / ".config") / "claude", home / ".claude"]
    roots: list[Path] = []
    real: set[str] = set()
    for base in bases:
        is_projects = base.name == "projects" and not (base / "projects").is_dir()
        root = base if is_projects else base / "projects"
        identity = os.path.realpath(root)
        if identity not in real:  # the same folder listed twice is read once
            real.add(identity)
            roots.append(root)
    return roots


def describe(root: str | Path, path: str | Path) -> Transcript | None:
    """Slug and session of a transcript path under a projects root, or None if not one.
    On the text of the paths (both as pathlib writes them, or as a walk of the root yields
    them): a scan describes every file, and pathlib's parsing was most of its time."""
    path = os.fspath(path)
    if not path.endswith(".jsonl"):
        return None
    prefix = os.path.join(os.fspath(root), "")
    if not path.startswith(prefix):
        return None
    parts = path[len(prefix) :].split(os.sep)
    if len(parts) == 1:  # directly in projects/: no project folder
        return Transcript(slug="", session=parts[0][: -len(".jsonl")])
    session = parts[1][: -len(".jsonl")] if len(parts) == 2 else parts[1]
    return Transcript(slug=parts[0], session=session)


def behind_symlink(root: Path, path: Path) -> bool:
    """True when the path, or a folder between it and the root, is a symlink (not followed)."""
    current = path
    while current != root and current != current.parent:
        if current.is_symlink():
            return True
        current = current.parent
    return False


def walk(
    root: Path, unreadable: Callable[[str, OSError], None] | None = None
) -> Iterator[os.DirEntry]:
    """Every `.jsonl` file below a root, at any depth, hidden ones included.

    Symlinks below the root are not followed (as the reference reader does), which also
    rules out loops; the root itself may be a symlink. Yields directory entries, whose
    `stat(follow_symlinks=False)` is one system call: a reconcile scan of thousands of
    files stays cheap. A folder that cannot be listed is skipped and, when given, told to
    `unreadable` (its transcripts are missing from the totals: that must be visible).
    """
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                children = list(entries)
        except OSError as err:
            if unreadable is not None and not isinstance(err, FileNotFoundError):
                unreadable(folder, err)
            continue
        for entry in children:
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                    continue
            except OSError:
                continue
            if entry.name.endswith(".jsonl"):
                yield entry
