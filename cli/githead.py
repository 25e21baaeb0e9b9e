"""The commit a working directory's repository has checked out, read from the files under
`.git` (HEAD, loose refs, packed-refs, a worktree's gitdir and commondir) without running git:
it is on the hook's hot path. Anything not understood is unknown (None), never a guess."""

from __future__ import annotations

import os

from agentwatch.core import bounded

_SMALL = 4 * 1024  # HEAD, a loose ref, a gitdir or commondir file
_PACKED = 4 * bounded.MiB  # packed-refs of a large repository
_HEX = frozenset("0123456789abcdef")
_MAX_DEPTH = 64  # folders walked up from the cwd
_MAX_SYMREFS = 5  # HEAD -> ref -> ref ... (git's own limit is 5)


def head(cwd: str) -> str | None:
    """The object id HEAD resolves to in the repository holding `cwd`, or None (no
    repository, no commit yet, a layout this reader does not know)."""
    try:
        found = _git_dir(cwd)
        if found is None:
            return None
        git_dir, common_dir = found
        return _resolve(git_dir, common_dir, "HEAD")
    except (OSError, ValueError):
        return None


def _is_object_id(text: str) -> bool:
    return len(text) in (40, 64) and set(text) <= _HEX


def _read(path: str, limit: int = _SMALL) -> str:
    return bounded.read_text(path, limit)


def _git_dir(cwd: str) -> tuple[str, str] | None:
    """(git dir, common dir) of the repository around `cwd`: `.git` a folder, or a file
    `gitdir: PATH` (worktrees, submodules) whose folder may name its common dir."""
    folder = os.path.abspath(cwd)
    for _ in range(_MAX_DEPTH):
        dot_git = os.path.join(folder, ".git")
        if os.path.isdir(dot_git):
            return dot_git, _common(dot_git)
        if os.path.isfile(dot_git):
            line = _read(dot_git).strip()
            if not line.startswith("gitdir:"):
                return None
            git_dir = os.path.join(folder, line[len("gitdir:") :].strip())
            return git_dir, _common(git_dir)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return None


def _common(git_dir: str) -> str:
    try:
        relative = _read(os.path.join(git_dir, "commondir")).strip()
    except FileNotFoundError:
        return git_dir
    return os.path.normpath(os.path.join(git_dir, relative)) if relative else git_dir


def _resolve(git_dir: str, common_dir: str, name: str) -> str | None:
    for _ in range(_MAX_SYMREFS):
        content = _ref_file(git_dir, common_dir, name)
        if content is None:
            return _packed(common_dir, name)
        content = content.strip()
        if content.startswith("ref:"):
            name = content[len("ref:") :].strip()
            if not name.startswith("refs/") or ".." in name.split("/"):
                return None
            continue
        return content if _is_object_id(content) else None
    return None


def _ref_file(git_dir: str, common_dir: str, name: str) -> str | None:
    """A loose ref: HEAD and per-worktree refs in the git dir, shared refs in the common dir."""
    for folder in (git_dir, common_dir) if git_dir != common_dir else (git_dir,):
        try:
            return _read(os.path.join(folder, name))
        except FileNotFoundError:
            continue
    return None


def _packed(common_dir: str, name: str) -> str | None:
    try:
        text = _read(os.path.join(common_dir, "packed-refs"), _PACKED)
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        if line.startswith(("#", "^")):
            continue
        object_id, _, ref = line.partition(" ")
        if ref.strip() == name and _is_object_id(object_id):
            return object_id
    return None
