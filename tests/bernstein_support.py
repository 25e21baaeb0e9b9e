"""The real Bernstein 3.23.0 (PyPI `bernstein`), the seeds' orchestrator, run offline.

Tests that need it fail (never skip) when it is missing: `scripts/setup --test` installs it
into its own Python 3.12 venv in .tools/bernstein, and AGENTWATCH_BERNSTEIN points elsewhere
if wanted. `project` makes a scratch git repo initialised by `bernstein init`; `Server` runs
`bernstein serve` on a free loopback port with a bearer token and kills it (its whole process
group) at the end.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import free_port

BERNSTEIN_VERSION = "3.23.0"
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BERNSTEIN = ROOT / ".tools" / "bernstein" / "bin" / "bernstein"
INSTALL_HINT = "scripts/setup --test (a Python 3.12 venv with bernstein==3.23.0, .tools/bernstein)"
TOKEN = "agentwatch-test-token"
READY_TIMEOUT = 120.0  # seconds; it is ready after 5-25 s on these machines


@functools.cache
def bernstein_command() -> str:
    """Path of the pinned Bernstein CLI; the test fails when it is missing."""
    path = os.environ.get("AGENTWATCH_BERNSTEIN") or str(DEFAULT_BERNSTEIN)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"Bernstein not found at {path}; install it with:\n    {INSTALL_HINT}")
    found = subprocess.run(
        [path, "--version"], capture_output=True, text=True, timeout=120, check=False
    ).stdout
    if BERNSTEIN_VERSION not in found:
        pytest.fail(f"{path} is {found.strip()!r}, not {BERNSTEIN_VERSION}: {INSTALL_HINT}")
    return path


def environment(home: Path, **extra: str) -> dict[str, str]:
    """Bernstein's environment: a scratch HOME (it reads ~/.bernstein), git identity, no
    inherited BERNSTEIN_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BERNSTEIN_")}
    env.update(
        HOME=str(home),
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    env.update(extra)
    return env


def project(root: Path) -> Path:
    """A git repo with one commit, initialised by `bernstein init` (stdin closed): it writes
    bernstein.yaml (`budget: "$10"`), .sdd/ and templates/."""
    repo, home = root / "repo", root / "home"
    repo.mkdir(parents=True)
    home.mkdir(exist_ok=True)
    env = environment(home)
    for argv in (["git", "init", "-q"], ["git", "commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(argv, cwd=repo, env=env, check=True, timeout=60)
    done = subprocess.run(
        [bernstein_command(), "init"],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (repo / "bernstein.yaml").is_file()
    return repo


class Server:
    """`bernstein serve` in `repo` on a free port; `stop()` ends it and its children."""

    def __init__(self, repo: Path, log: Path):
        self.repo = repo
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.started_in: float | None = None
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Server:
        env = environment(self.repo.parent / "home", BERNSTEIN_AUTH_TOKEN=TOKEN)
        began = time.monotonic()
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [bernstein_command(), "serve", "--port", str(self.port)],
                cwd=self.repo,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, killed whole by stop()
            )
        while time.monotonic() - began < READY_TIMEOUT:
            if self.process.poll() is not None:
                pytest.fail(f"bernstein serve exited {self.process.returncode}: {self.tail()}")
            try:
                if self.get("/status").status_code == 200:
                    self.started_in = time.monotonic() - began
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.2)
        self.stop()
        pytest.fail(f"bernstein serve not ready after {READY_TIMEOUT:.0f} s: {self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        process = self.process
        if process is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue
        process.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError):  # children left after the leader died
            os.killpg(process.pid, signal.SIGKILL)
        self.process = None

    def headers(self, token: str = TOKEN) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def get(self, path: str, token: str = TOKEN) -> requests.Response:
        return requests.get(self.url + path, headers=self.headers(token), timeout=10)

    def post(self, path: str, body: Any = None, token: str = TOKEN) -> requests.Response:
        return requests.post(self.url + path, json=body, headers=self.headers(token), timeout=10)

    def create_task(self, title: str) -> dict[str, Any]:
        """A task through the real API (`TaskCreate`: title and description are required)."""
        answer = self.post("/tasks", {"title": title, "description": f"{title} (agentwatch test)"})
        assert answer.status_code == 201, answer.text
        task: dict[str, Any] = answer.json()
        return task


def git_dir(repo: Path) -> Path:
    found = subprocess.run(
        ["git", "rev-parse", "--absolute-git-dir"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return Path(found.stdout.strip())


def overlay_max_agents(repo: Path) -> int | None:
    """max_agents of Bernstein's run overlay, `<git-dir>/bernstein/run-overlay.yaml`, which
    `POST /config` writes (bernstein.yaml stays as committed)."""
    import yaml

    path = git_dir(repo) / "bernstein" / "run-overlay.yaml"
    if not path.exists():
        return None
    value = (yaml.safe_load(path.read_text()) or {}).get("max_agents")
    return value if isinstance(value, int) else None
