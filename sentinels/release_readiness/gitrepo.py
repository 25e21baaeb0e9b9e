"""Read-only questions to one git repository, asked through git's plumbing.

Every git runs from an argv list with a timeout, in an environment that cannot prompt (no
terminal, no askpass), takes no optional locks, and cannot wander up into a parent repository
(GIT_CEILING_DIRECTORIES), so a folder that is not a repository is reported as such. Nothing
here writes to the working tree; `fetch` only updates the remote-tracking branch and tags.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agentwatch.core.sanitize import label_value, mask_urls
from agentwatch.sentinels.release_readiness import process

# Variables that would point git at another repository than the configured one.
_LOCATION_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CONFIG_PARAMETERS",
)
# Keep a fetch from prompting or doing housekeeping; never anything that deepens or shallows.
_FETCH_CONFIG = (
    "-c",
    "core.askPass=",
    "-c",
    "credential.interactive=never",
    "-c",
    "maintenance.auto=false",
    "-c",
    "gc.auto=0",
)
_TAG_FORMAT = "\t".join(
    [
        "%(refname)",
        "%(objecttype)",
        "%(*objecttype)",
        "%(objectname)",
        "%(*objectname)",
        "%(taggerdate:unix)",
        "%(committerdate:unix)",
        "%(*committerdate:unix)",
    ]
)
TAGS_PREFIX = "refs/tags/"


MAX_MESSAGE = 1000  # characters of a GitError: git's first line, a path, the command


class GitError(Exception):
    """A git command failed; the message is one scrubbed line, safe to log: control characters
    (of a path, of git's own text) escaped, URL credentials and query strings masked."""

    def __init__(self, message: str):
        super().__init__(mask_urls(label_value(message, limit=MAX_MESSAGE)))


@dataclass(frozen=True)
class Tag:
    name: str
    commit: str
    timestamp: float  # tagger date of an annotated tag, commit time of a lightweight one


@dataclass(frozen=True)
class Unreleased:
    count: int
    oldest: float | None  # commit times of the oldest and newest unreleased commit
    newest: float | None


def scrub(text: str, limit: int = 200) -> str:
    """First non-empty line of git's stderr, URLs masked (user:password@ and ?query: tokens
    travel in both), controls escaped, length capped."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    first = lines[0] if lines else ""
    return mask_urls(label_value(mask_urls(first), limit=limit))


def environment(path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LOCATION_VARIABLES}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="",
        SSH_ASKPASS_REQUIRE="never",
        GCM_INTERACTIVE="never",
        GIT_OPTIONAL_LOCKS="0",
        GIT_CEILING_DIRECTORIES=str(path.parent),
        LC_ALL="C",
    )
    return env


class Repository:
    """One configured repository, addressed by its folder (working tree or bare)."""

    def __init__(self, path: Path, timeout: float):
        self.path = path
        self.timeout = timeout
        self._env = environment(path)

    def git(self, *args: str, stdin: str | None = None, timeout: float | None = None) -> str:
        """stdout of `git args…`; GitError on failure, timeout or a missing git."""
        return self.git_bytes(*args, stdin=stdin, timeout=timeout).decode("utf-8", "replace")

    def git_bytes(
        self,
        *args: str,
        stdin: str | None = None,
        timeout: float | None = None,
        ok: tuple[int, ...] = (0,),
    ) -> bytes:
        done = self._run(args, stdin, timeout)
        if done.returncode not in ok:
            reason = scrub(done.stderr.decode("utf-8", "replace")) or "no message"
            raise GitError(f"git {_command(args)} exited {done.returncode}: {reason}")
        return done.stdout

    def _run(
        self, args: tuple[str, ...], stdin: str | None, timeout: float | None
    ) -> process.Finished:
        if not self.path.is_dir():
            raise GitError(f"{self.path} is not a directory")
        try:
            return process.run(
                ["git", "-C", str(self.path), *args],
                cwd=self.path,
                timeout=timeout or self.timeout,
                env=self._env,
                stdin=None if stdin is None else stdin.encode(),
            )
        except process.TimedOut as err:
            raise GitError(f"git {_command(args)}: {err}") from None
        except OSError as err:
            raise GitError(f"cannot run git: {err.strerror or err}") from None

    def fetch(self, remote: str, branch: str, timeout: float) -> None:
        """Update refs/remotes/<remote>/<branch> and the tags; never --depth, never --unshallow,
        never the working tree or a local branch. A tag that moved on the remote fails the fetch
        rather than overwriting the local tag."""
        refspec = f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}"
        self.git(
            *_FETCH_CONFIG,
            "fetch",
            "--quiet",
            "--tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            "--",
            remote,
            refspec,
            timeout=timeout,
        )

    def resolve(self, ref: str) -> str:
        """The commit `ref` names; GitError when the ref does not exist."""
        # --verify --quiet exits 1 with no message when the ref is simply not there.
        answer = self.git_bytes("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", ok=(0, 1))
        sha = answer.decode("ascii", "replace").strip()
        if not sha:
            raise GitError(f"{ref} does not exist")
        if not re.fullmatch(r"[0-9a-f]{40,64}", sha):
            raise GitError(f"git rev-parse gave no commit for {ref}")
        return sha

    def tags(self, pattern: str) -> list[Tag]:
        """Tags whose name matches the glob `pattern` and that point (maybe via an annotated
        tag) at a commit."""
        found: list[Tag] = []
        for line in self.git("for-each-ref", f"--format={_TAG_FORMAT}", TAGS_PREFIX).splitlines():
            tag = _parse_tag(line, pattern)
            if tag is not None:
                found.append(tag)
        return found

    def ancestors_among(self, head: str, tags: Iterable[Tag]) -> list[Tag]:
        """The given tags whose commit is in the history of `head`."""
        merged = set(
            self.git("for-each-ref", "--merged", head, "--format=%(refname)", TAGS_PREFIX).split()
        )
        return [tag for tag in tags if TAGS_PREFIX + tag.name in merged]

    def unreleased(self, head: str, released: Iterable[str]) -> Unreleased:
        """Non-merge commits in the history of `head` and in the history of none of
        `released` (commits), with the commit times of the oldest and newest."""
        revisions = "".join([f"{head}\n", *(f"^{commit}\n" for commit in set(released))])
        output = self.git("rev-list", "--no-merges", "--timestamp", "--stdin", stdin=revisions)
        times = [float(line.split(" ", 1)[0]) for line in output.splitlines() if line]
        if not times:
            return Unreleased(0, None, None)
        return Unreleased(len(times), min(times), max(times))

    def blob(self, commit: str, path: str, limit: int) -> bytes | None:
        """Content of the file `path` in `commit`; None when there is no such file there."""
        answer = self.git("cat-file", "--batch-check", stdin=f"{commit}:{path}\n").strip()
        parts = answer.rsplit(" ", 2)
        if len(parts) != 3 or parts[1] != "blob":
            return None  # "<name> missing", or a folder/submodule: not a file
        if int(parts[2]) > limit:
            raise GitError(f"{path} is larger than {limit} bytes")
        return self.git_bytes("cat-file", "blob", parts[0])


def _command(args: tuple[str, ...]) -> str:
    """The git subcommand among the arguments (after any `-c key=value`), for messages."""
    options_with_value = {"-c", "-C"}
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in options_with_value:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return "(no command)"


def _parse_tag(line: str, pattern: str) -> Tag | None:
    fields = line.split("\t")
    if len(fields) != 8 or not fields[0].startswith(TAGS_PREFIX):
        return None
    refname, kind, peeled_kind, target, peeled, tagger_date, commit_date, peeled_date = fields
    name = refname[len(TAGS_PREFIX) :]
    if not fnmatch.fnmatchcase(name, pattern):
        return None
    if kind == "commit":
        return Tag(name, target, float(commit_date or 0))
    if kind == "tag" and peeled_kind == "commit":
        return Tag(name, peeled, float(tagger_date or peeled_date or 0))
    return None  # a tag of a tree, a blob, or of another tag: not a release of a commit
