"""A real Bernstein run (`bernstein run plan.yaml`) whose agents are real Claude Code 2.1.328
sessions against the scripted API stand-in, offline, in a scratch git repo.

What it takes, found by running it (3.23.0, as root on these machines):
- `bernstein init`, `cli: claude` in bernstein.yaml, and a working branch: it refuses to
  start on the repository's default branch (its merge guard would discard every agent's work).
- A plan file (`stages`/`steps`), so no model plans anything: each step is one task.
- `claude` on PATH. Bernstein runs it with an allow-listed environment (no
  ANTHROPIC_BASE_URL, no OTEL_*, no IS_SANDBOX), so everything Claude Code needs beyond PATH,
  HOME and the key comes from `~/.claude/settings.json`'s `env`: the stand-in's URL, the
  telemetry switches and IS_SANDBOX=1, without which Claude Code refuses the
  `--permission-mode bypassPermissions` Bernstein passes when run as root.
- Bernstein passes `--json-schema`: an agent ends with Claude Code's `StructuredOutput` tool,
  so each scripted session is a Bash tool call (write a file, commit) and then that tool.
`bernstein run` returns once its server, orchestrator and watchdog run detached; `stop()`
ends them with `bernstein stop --force` (by their pid files) and then their process groups.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from agentwatch.demo.bernstein import pids_of
from tests.bernstein_support import TOKEN, bernstein_command, environment
from tests.claude_cli import API_KEY, claude_command, prepare_home
from tests.conftest import free_port

RUN_TIMEOUT = 240.0  # seconds for `bernstein run` to hand over to its background processes


def session_steps(marker: str, delay: float, usage: dict[str, int]) -> list[dict[str, Any]]:
    """One agent's work: write `<marker>.txt` and commit it (after `delay` s, so agents
    overlap), then the structured result Bernstein asks for."""
    command = (
        f"printf '%s\\n' {marker} > {marker}.txt && git add {marker}.txt"
        f" && git commit -q -m 'agent: {marker}' && echo committed"
    )
    bash = {"name": "Bash", "input": {"command": command, "description": "write, commit"}}
    result = {"status": "done", "summary": f"{marker}.txt committed", "files_changed": []}
    return [
        {"tool_use": {**bash, "usage": usage}, "delay": delay},
        {"tool_use": {"name": "StructuredOutput", "input": result, "usage": usage}},
    ]


def task_step(marker: str, role: str) -> dict[str, Any]:
    """A plan step; each task gets a role of its own, or Bernstein batches two same-role
    tasks into one agent (`max_tasks_per_agent` 2, not settable from bernstein.yaml)."""
    return {
        "title": f"Write {marker}",
        "description": f"Write {marker}.txt and commit it (marker {marker}).",
        "role": role,
        "scope": "small",
        "complexity": "low",
    }


def claude_settings(home: Path, api_url: str, telemetry: dict[str, str]) -> None:
    """settings.json's `env`: the only way past Bernstein's environment allow-list.

    `disableAllHooks` keeps Bernstein's reaping race out (3.23.0). Its Claude adapter writes
    hooks into each worktree; the Stop hook makes its server write a completion marker
    while Claude Code is still exiting (result, OTel flush, MCP shutdown). An orchestrator
    tick that falls in that window (each tick looks for markers before it looks for dead
    processes) reaps the live agent through `_reap_completed_agent`: it merges the commit
    and kills the process, which marks it dead, but never completes its task; the task is
    then retried as "Dead agent ... no longer tracked" and every retry finds nothing to
    commit. Without the hook there is no marker in the orchestrator's folder (the wrapper's
    own marker goes to the worktree's), so every agent ends through the dead-process path,
    which completes its task ("made git commits on branch"). A user-level
    `disableAllHooks` overrides the worktree's `.claude/settings.local.json` (checked with
    2.1.328)."""
    config = home / ".claude"
    config.mkdir(parents=True, exist_ok=True)
    env = {
        "ANTHROPIC_BASE_URL": api_url,
        "IS_SANDBOX": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        **telemetry,
    }
    (config / "settings.json").write_text(json.dumps({"env": env, "disableAllHooks": True}))


def scratch_repo(root: Path, max_agents: int) -> Path:
    """A git repo on a working branch, initialised by `bernstein init`, `cli: claude`."""
    repo, home = root / "repo", root / "home"
    repo.mkdir(parents=True)
    env = environment(home)

    def run(*argv: str) -> None:
        done = subprocess.run(
            list(argv), cwd=repo, env=env, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{argv}: {done.stdout}{done.stderr}"

    run("git", "init", "-q", "-b", "main")  # its commit check reads `git log main..HEAD`
    run("git", "commit", "-q", "--allow-empty", "-m", "start")
    run(bernstein_command(), "init")
    seed = yaml.safe_load((repo / "bernstein.yaml").read_text())
    # without a goal the seed does not parse and the orchestrator takes max_agents 6
    seed.update(goal="agentwatch end-to-end test", cli="claude", max_agents=max_agents)
    (repo / "bernstein.yaml").write_text(yaml.safe_dump(seed))
    run("git", "checkout", "-q", "-b", "work")
    run("git", "add", "-A")
    run("git", "commit", "-q", "-m", "bernstein init")
    return repo


@dataclass
class Sample:
    at: float  # monotonic
    agents: int | None
    max_agents: int | None
    metric_agents: float


@dataclass
class Run:
    """`bernstein run plan.yaml` in `repo`; its task server on `port`."""

    repo: Path
    home: Path
    port: int = field(default_factory=free_port)
    log: Path | None = None
    samples: list[Sample] = field(default_factory=list)
    _watching: threading.Event = field(default_factory=threading.Event)
    _watcher: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        claude_bin = str(Path(claude_command()).parent)
        bernstein_bin = str(Path(bernstein_command()).parent)
        path = os.pathsep.join([claude_bin, bernstein_bin, os.environ.get("PATH", "/usr/bin")])
        prepare_home(self.home, [self.repo])
        return environment(
            self.home, BERNSTEIN_AUTH_TOKEN=TOKEN, ANTHROPIC_API_KEY=API_KEY, PATH=path
        )

    def start(self, plan: Path) -> float:
        """Runs the plan; returns the seconds `bernstein run` took to hand over."""
        self.log = self.repo.parent / "run.log"
        began = time.monotonic()
        with self.log.open("ab") as out:
            done = subprocess.run(
                [bernstein_command(), "run", str(plan), "--auto-approve", "--cli", "claude",
                 "--port", str(self.port)],
                cwd=self.repo, env=self.env(), stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT, check=False,
            )  # fmt: skip
        assert done.returncode == 0, self.log.read_text(errors="replace")[-3000:]
        return time.monotonic() - began

    def get(self, path: str) -> Any:
        answer = requests.get(
            self.url + path, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=15
        )
        answer.raise_for_status()
        return answer.json() if path != "/metrics" else answer.text

    def post(self, path: str, body: Any) -> Any:
        answer = requests.post(
            self.url + path, json=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=15
        )
        answer.raise_for_status()
        return answer.json()

    def tasks(self) -> dict[str, dict[str, Any]]:
        """Bernstein's tasks by title."""
        return {task["title"]: task for task in self.get("/tasks")}

    def reloaded(self, before: int, after: int) -> float | None:
        """When the orchestrator logged its hot reload of max_agents (epoch seconds)."""
        line = f"Config hot-reload: max_agents {before} -> {after}"
        log = self.repo / ".sdd" / "runtime" / "orchestrator-debug.log"
        with contextlib.suppress(OSError):
            for text in log.read_text(errors="replace").splitlines():
                if line in text:
                    stamp = time.strptime(text[:19], "%Y-%m-%d %H:%M:%S")
                    return time.mktime(stamp)  # logging's asctime is local time
        return None

    def logged(self, text: str) -> int:
        """How many lines of the orchestrator's debug log contain `text`."""
        log = self.repo / ".sdd" / "runtime" / "orchestrator-debug.log"
        with contextlib.suppress(OSError):
            return sum(text in line for line in log.read_text(errors="replace").splitlines())
        return 0

    def sample(self) -> Sample:
        """Bernstein's own counts of running agents: `bernstein_agents_active` (its /metrics,
        one series per role: the claimed tasks) and /status's summary (the agents its server
        still holds alive, which lags their exit)."""
        summary = self.get("/status").get("summary") or {}
        metric = 0.0
        for line in self.get("/metrics").splitlines():
            if line.startswith("bernstein_agents_active{"):
                metric += float(line.rsplit(" ", 1)[1])
        agents, limit = summary.get("agents"), summary.get("max_agents")
        return Sample(
            time.monotonic(),
            agents if isinstance(agents, int) else None,
            limit if isinstance(limit, int) else None,
            metric,
        )

    def watch(self, every: float = 0.3) -> None:
        """Samples Bernstein's agent count in the background until stop()."""

        def loop() -> None:
            while not self._watching.is_set():
                with contextlib.suppress(requests.RequestException, ValueError):
                    self.samples.append(self.sample())
                self._watching.wait(every)

        self._watcher = threading.Thread(target=loop, daemon=True)
        self._watcher.start()

    def peak(self, since: float, until: float | None = None) -> int:
        """The most agents Bernstein's `bernstein_agents_active` showed between two
        monotonic times."""
        seen = [
            int(s.metric_agents)
            for s in self.samples
            if s.metric_agents is not None and s.at >= since and (until is None or s.at <= until)
        ]
        return max(seen, default=0)

    def pids(self) -> list[int]:
        return pids_of(self.repo)

    def stop(self) -> None:
        self._watching.set()
        if self._watcher is not None:
            self._watcher.join(timeout=20)
        leftover = self.pids()
        subprocess.run(
            [bernstein_command(), "stop", "--force"], cwd=self.repo, env=self.env(),
            stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False,
        )  # fmt: skip
        for pid in leftover:  # anything `stop` missed, with its process group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> float:
    """Polls `condition` (generously: the machine is busy); returns the seconds it took."""
    began = time.monotonic()
    while True:
        with contextlib.suppress(requests.RequestException):
            if condition():
                return time.monotonic() - began
        if time.monotonic() - began > timeout:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)
