"""The `repositories` key of release-readiness: validated entry by entry, each bad key named."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentwatch.core.config import (
    absolute_path,
    argv,
    duration,
    env_name,
    only_keys,
    optional_field,
    string,
    string_list,
)
from agentwatch.core.lazy_re import Pattern
from agentwatch.core.sanitize import label_value, mask_urls, preview
from agentwatch.core.secretfiles import SecretFile

_GIT_REF_NAME = Pattern(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/+@-]+(?<![./])$")
_GITHUB_REPO = Pattern(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
TEMPLATE_MARKERS = ["TODO", "TBD", "FIXME", "Lorem ipsum", "<!-- template -->"]


def _git_name(value: Any) -> str:
    text = string(value)
    if not _GIT_REF_NAME.match(text):
        raise ValueError(f"{preview(text)} is not a plain git branch or remote name")
    return text


def _repo_relative_file(value: Any) -> str:
    text = string(value).strip()
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if not parts or text.startswith("/") or ".." in parts or any(c < " " for c in text):
        raise ValueError(f"{preview(value)} is not a file path relative to the repository")
    return "/".join(parts)


def _api_url(value: Any) -> str:
    text = string(value).rstrip("/")
    local = re.match(r"^http://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(/|$)", text + "/")
    if not (text.startswith("https://") or local):
        shown = preview(mask_urls(text))
        raise ValueError(f"{shown}: expected an https:// URL (the token is sent to it)")
    return text


def _ci_probe(value: Any, where: str) -> dict[str, Any]:
    keys = ("github_repo", "token_env", "token_file", "api_url", "timeout")
    entry = only_keys(value, keys, where)
    github_repo = optional_field(entry, "github_repo", string, where, None)
    if github_repo is None or not _GITHUB_REPO.match(github_repo):
        raise ValueError(f"{where}.github_repo: required, as owner/name")
    return {
        "github_repo": github_repo,
        "token_env": optional_field(entry, "token_env", env_name, where, "GITHUB_TOKEN"),
        "token_file": optional_field(entry, "token_file", absolute_path, where, None),
        "api_url": optional_field(entry, "api_url", _api_url, where, "https://api.github.com"),
        "timeout": optional_field(entry, "timeout", duration, where, 10.0),
    }


def _probes(value: Any, where: str) -> dict[str, Any]:
    keys = ("command", "command_timeout", "required_file", "template_markers", "ci")
    entry = only_keys(value or {}, keys, where)
    markers = list(TEMPLATE_MARKERS)
    return {
        "command": optional_field(entry, "command", argv, where, None),
        "command_timeout": optional_field(entry, "command_timeout", duration, where, 60.0),
        "required_file": optional_field(entry, "required_file", _repo_relative_file, where, None),
        "template_markers": optional_field(entry, "template_markers", string_list, where, markers),
        "ci": None if entry.get("ci") is None else _ci_probe(entry["ci"], f"{where}.ci"),
    }


def _repository(value: Any, where: str) -> dict[str, Any]:
    keys = ("path", "name", "branch", "remote", "tag_pattern", "probes")
    entry = only_keys(value, keys, where)
    path = optional_field(entry, "path", absolute_path, where, None)
    if path is None:
        raise ValueError(f"{where}.path: required (the repository's folder)")
    name = optional_field(entry, "name", string, where, path.name)
    tag_pattern = optional_field(entry, "tag_pattern", string, where, "v*")
    for key, text in (("name", name), ("tag_pattern", tag_pattern)):
        if not text.strip():
            raise ValueError(f"{where}.{key}: must not be empty")
    return {
        "name": name,
        "path": path,
        "branch": optional_field(entry, "branch", _git_name, where, "main"),
        "remote": optional_field(entry, "remote", _git_name, where, None),
        "tag_pattern": tag_pattern,
        "probes": _probes(entry.get("probes"), f"{where}.probes"),
    }


def repositories(value: Any) -> list[dict[str, Any]]:
    """The repositories release-readiness watches; every bad entry is reported by its index."""
    if not isinstance(value, list):
        raise ValueError("expected a list of repositories (mappings with at least `path`)")
    problems: list[str] = []
    found: list[dict[str, Any]] = []
    for index, entry in enumerate(value):
        try:
            repository = _repository(entry, f"[{index}]")
        except ValueError as err:
            problems.append(str(err))
            continue
        if any(label_value(known["name"]) == label_value(repository["name"]) for known in found):
            shown = preview(repository["name"])
            problems.append(f"[{index}].name: {shown} is used twice (as a label); set `name`")
        found.append(repository)
    if problems:
        raise ValueError("; ".join(problems))
    return found


def missing_repositories(value: list[dict[str, Any]]) -> list[str]:
    """`config check` warnings: configured repository folders that do not exist."""
    return [
        f"[{index}].path: {entry['path']} does not exist"
        for index, entry in enumerate(value)
        if not Path(entry["path"]).exists()
    ]


def secret_files(settings: Mapping[str, Any]) -> Iterable[SecretFile]:
    """The CI probes' token files (a token: refused when other users can read it)."""
    for repository in settings.get("repositories", []):
        ci = repository["probes"].get("ci") or {}
        if ci.get("token_file") is not None:
            where = f"release-readiness {repository['name']} probes.ci.token_file: a token"
            yield ci["token_file"], where, True
