"""The `ci` probe: the CI status of the release branch head on GitHub.

Both GitHub mechanisms are read for the head commit: the combined commit status
(`/commits/{sha}/status`) and the check runs (`/commits/{sha}/check-runs`, e.g. Actions). A
failure in either blocks; pending or no CI at all does not (the age rules cover work that waits
too long). Anything that keeps us from knowing — timeout, connection error, 5xx, 401/403/404,
rate limiting, an answer that is not the expected JSON — is "undecided" (probe_error), never
"blocked". The token is sent only to the configured API host and never logged.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from agentwatch.core import __version__, bounded
from agentwatch.core.secretfiles import InsecureFileError, require_private
from agentwatch.sentinels.release_readiness.probes import Verdict

if TYPE_CHECKING:  # imported where a CI probe runs: 12 MiB a sentinel without one never pays
    import requests

SUCCESS, FAILURE, PENDING, NONE = "success", "failure", "pending", "none"
STATUSES = (SUCCESS, FAILURE, PENDING, NONE)
FAILED_STATES = {"failure", "error"}
FAILED_CONCLUSIONS = {"failure", "timed_out", "action_required", "startup_failure", "cancelled"}
MAX_PAGES = 10
MAX_BACKOFF_SECONDS = 3600.0


class ApiError(Exception):
    """GitHub could not tell us the CI status; the message is safe to log."""


@dataclass(frozen=True)
class CiResult:
    verdict: Verdict
    status: str | None  # one of STATUSES once decided, None when undecided


@dataclass(frozen=True)
class CiSettings:
    github_repo: str
    token_env: str = "GITHUB_TOKEN"
    token_file: Path | None = None
    api_url: str = "https://api.github.com"
    timeout: float = 10.0


class GitHubCi:
    """Asks GitHub about one repository; remembers a rate limit so it stops asking until the
    limit resets (in loop mode)."""

    def __init__(
        self,
        settings: CiSettings,
        session: requests.Session | None = None,
        clock: Callable[[], float] = time.time,
    ):
        import requests

        self.settings = settings
        self.session = session or requests.Session()
        self.clock = clock
        self.quiet_until = 0.0
        self._base = f"{settings.api_url.rstrip('/')}/repos/{settings.github_repo}"
        self._origin = urlsplit(settings.api_url)[:2]

    def check(self, sha: str) -> CiResult:
        now = self.clock()
        if now < self.quiet_until:
            until = datetime.fromtimestamp(self.quiet_until, UTC).strftime("%H:%M:%SZ")
            return CiResult(Verdict.undecided(f"GitHub rate limit: not asking until {until}"), None)
        try:
            headers = self._headers()
            combined = self._get(f"{self._base}/commits/{sha}/status", headers)
            runs = self._check_runs(sha, headers)
            status = summarize(combined, runs)
        except ApiError as err:
            return CiResult(Verdict.undecided(str(err)), None)
        if status == FAILURE:
            return CiResult(Verdict.block(f"CI failed on {sha[:12]}"), status)
        return CiResult(Verdict.clear(f"CI {status} on {sha[:12]}"), status)

    def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"agentwatch/{__version__}",
        }
        token = self._token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _token(self) -> str | None:
        """token_file when configured (read each time, so a rotated token is picked up), else
        the token_env variable, else none (public repositories, low rate limit)."""
        path = self.settings.token_file
        if path is not None:
            try:
                require_private(path, "GitHub token")  # others can read it: refuse
            except InsecureFileError as err:
                raise ApiError(str(err)) from None
            try:  # a FIFO, a link to /dev/zero or a huge file in its place is refused
                token = bounded.read_text(path, bounded.SECRET_LIMIT).strip()
            except bounded.FileRefused as err:  # its message: the path and why, no content
                raise ApiError(f"cannot read the token file {err}") from None
            except (OSError, UnicodeDecodeError) as err:
                reason = getattr(err, "strerror", None) or type(err).__name__
                raise ApiError(f"cannot read the token file {path}: {reason}") from None
            if not token:
                raise ApiError(f"the token file {path} is empty")
            return token
        return os.environ.get(self.settings.token_env, "").strip() or None

    def _check_runs(self, sha: str, headers: dict[str, str]) -> list[Any]:
        url: str | None = f"{self._base}/commits/{sha}/check-runs?per_page=100"
        runs: list[Any] = []
        for _ in range(MAX_PAGES):
            if url is None:
                break
            page, url = self._get_page(url, headers)
            if not isinstance(page, dict) or not isinstance(page.get("check_runs"), list):
                raise ApiError("GitHub check-runs answer is not the expected JSON")
            runs.extend(page["check_runs"])
        return runs

    def _get(self, url: str, headers: dict[str, str]) -> Any:
        return self._get_page(url, headers)[0]

    def _get_page(self, url: str, headers: dict[str, str]) -> tuple[Any, str | None]:
        """The JSON of one GET and the URL of the next page (only on the same host)."""
        if urlsplit(url)[:2] != self._origin:
            raise ApiError("GitHub pointed the next page at another host; not following")
        import requests

        try:
            response = self.session.get(url, headers=headers, timeout=self.settings.timeout)
        except requests.Timeout:
            raise ApiError(f"GitHub API timed out after {self.settings.timeout:g} s") from None
        except requests.RequestException as err:
            raise ApiError(f"GitHub API unreachable ({type(err).__name__})") from None
        if response.status_code != 200:
            raise self._http_error(response)
        try:
            body = response.json()
        except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
            raise ApiError("GitHub API answered with something that is not JSON") from None
        following = response.links.get("next", {}).get("url")
        return body, following

    def _http_error(self, response: requests.Response) -> ApiError:
        code = response.status_code
        retry_after = response.headers.get("Retry-After", "")
        limited = response.headers.get("X-RateLimit-Remaining") == "0"
        if code in (403, 429) and (limited or retry_after):
            now = self.clock()
            reset = _number(response.headers.get("X-RateLimit-Reset")) if limited else None
            wait = _number(retry_after)
            until = reset if reset is not None else now + (wait if wait is not None else 60.0)
            self.quiet_until = min(max(until, now), now + MAX_BACKOFF_SECONDS)
            return ApiError(f"GitHub API rate limited (HTTP {code})")
        meaning = {
            401: "the token was rejected",
            403: "access refused (token scope?)",
            404: "no such repository or commit, or the token cannot see it",
            422: "GitHub does not know the commit (not pushed yet?)",
        }.get(code, "server error" if code >= 500 else "unexpected answer")
        return ApiError(f"GitHub API HTTP {code}: {meaning}")


def summarize(combined: Any, runs: list[Any]) -> str:
    """One of STATUSES from the combined status and the check runs of a commit."""
    if not isinstance(combined, dict) or not isinstance(combined.get("state"), str):
        raise ApiError("GitHub status answer is not the expected JSON")
    if not all(isinstance(run, dict) for run in runs):
        raise ApiError("GitHub check-runs answer is not the expected JSON")
    has_statuses = bool(combined.get("total_count") or combined.get("statuses"))
    state = combined["state"] if has_statuses else None  # "pending" also means "no statuses"
    failed = state in FAILED_STATES or any(
        run.get("status") == "completed" and run.get("conclusion") in FAILED_CONCLUSIONS
        for run in runs
    )
    if failed:
        return FAILURE
    if state == "pending" or any(run.get("status") != "completed" for run in runs):
        return PENDING
    return SUCCESS if has_statuses or runs else NONE


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None
