"""The demo's orchestrator when it can be had: the real Bernstein 3.23.0 (`bernstein run`) in a
scratch git repo, its agents real Claude Code sessions (Bernstein's own Claude adapter) against
the scripted API, so the controller steers the seeds' own orchestrator.

    python -m agentwatch.demo.bernstein DIR --bernstein PATH --claude PATH --port P \
        --token-env VAR [--max-agents 3] [--otel-listen HOST:PORT] [--agent-seconds 20]

It keeps `max_agents` tasks waiting (one role each: Bernstein batches same-role tasks), so
Bernstein always has work; each agent writes and commits a file of its own, then ends with the
`StructuredOutput` Bernstein asks for. What Bernstein needs, found by running it
(tests/bernstein_run.py has the details): `git init -b main` and a working branch, a `goal`
in bernstein.yaml, and, past its environment allow-list, Claude Code's settings.json `env`
(the API's URL, the telemetry, IS_SANDBOX=1 since it passes bypassPermissions) plus
`disableAllHooks`, which keeps its reaping race out (docs/controller.md). Its server listens on
127.0.0.1 and wants the bearer token from `--token-env`. SIGTERM stops it (`bernstein stop`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import requests
import yaml

from agentwatch.core import log as agentwatch_log
from agentwatch.core.claude import telemetry_env
from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn

log = logging.getLogger("agentwatch.demo.bernstein")
API_KEY = "sk-ant-api03-standin-0123456789abcdefghij"  # the scripted API takes any key
ROLES = ("backend", "frontend", "devops", "architect", "analyst", "ml-engineer", "qa")
USAGE = {"input_tokens": 1500, "output_tokens": 40, "cache_read_input_tokens": 300}
SETUP_TIMEOUT = 180.0  # seconds for git / `bernstein init`
RUN_TIMEOUT = 240.0  # seconds for `bernstein run` to hand over to its background processes
STOP_TIMEOUT = 5.0  # seconds for `bernstein stop --force` before its processes are killed


def script(agent_seconds: float) -> dict[str, Any]:
    """Every agent: after `agent_seconds`, write a file named after the time and commit it;
    then the structured result Bernstein's `--json-schema` asks for."""
    command = (
        'f="work-$(date +%s%N).txt" && date > "$f" && git add "$f"'
        ' && git commit -q -m "demo agent" && echo committed'
    )
    bash = {"name": "Bash", "input": {"command": command, "description": "write, commit"}}
    result = {"status": "done", "summary": "a file committed", "files_changed": []}
    steps = [
        {"tool_use": {**bash, "usage": USAGE}, "delay": agent_seconds},
        {"tool_use": {"name": "StructuredOutput", "input": result, "usage": USAGE}},
    ]
    return {"default": steps, "sessions": []}


def environment(home: Path, **extra: str) -> dict[str, str]:
    """Bernstein's own environment: the demo's HOME, a git identity, no inherited BERNSTEIN_*
    nor CLAUDE_CONFIG_DIR (its agents read HOME/.claude)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("BERNSTEIN_") and k != "CLAUDE_CONFIG_DIR"
    }
    env.update(
        HOME=str(home),
        GIT_AUTHOR_NAME="demo",
        GIT_AUTHOR_EMAIL="demo@example.invalid",
        GIT_COMMITTER_NAME="demo",
        GIT_COMMITTER_EMAIL="demo@example.invalid",
        **extra,
    )
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=SETUP_TIMEOUT, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} {argv[1]}: {(done.stdout + done.stderr).strip()[-400:]}")


def prepare_repo(repo: Path, bernstein: str, env: dict[str, str], max_agents: int) -> None:
    """A git repo on a working branch, initialised by `bernstein init` (once)."""
    if (repo / "bernstein.yaml").is_file():
        return
    repo.mkdir(parents=True, exist_ok=True)
    _run(["git", "init", "-q", "-b", "main"], repo, env)  # it reads `git log main..HEAD`
    _run(["git", "commit", "-q", "--allow-empty", "-m", "start"], repo, env)
    _run([bernstein, "init"], repo, env)
    seed = yaml.safe_load((repo / "bernstein.yaml").read_text()) or {}
    seed.update(goal="agentwatch demo", cli="claude", max_agents=max_agents)
    (repo / "bernstein.yaml").write_text(yaml.safe_dump(seed))
    _run(["git", "checkout", "-q", "-b", "work"], repo, env)  # it refuses the default branch
    _run(["git", "add", "-A"], repo, env)
    _run(["git", "commit", "-q", "-m", "bernstein init"], repo, env)


def prepare_home(home: Path, api_url: str, otel_listen: str | None) -> None:
    """Claude Code's settings for Bernstein's agents: the only way past its allow-list."""
    config = home / ".claude"
    config.mkdir(parents=True, exist_ok=True)
    env = {
        "ANTHROPIC_BASE_URL": api_url,
        "IS_SANDBOX": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        **(telemetry_env(otel_listen) if otel_listen else {}),
    }
    settings = {"env": env, "disableAllHooks": True}
    (config / "settings.json").write_text(json.dumps(settings))
    state = {"hasCompletedOnboarding": True,
             "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []}}  # fmt: skip
    (home / ".claude.json").write_text(json.dumps(state))


def task(number: int) -> dict[str, Any]:
    return {
        "title": f"Demo task {number}",
        "description": f"Write a file and commit it (demo task {number}).",
        "role": ROLES[number % len(ROLES)],
        "scope": "small",
        "complexity": "low",
    }


def pids_of(repo: Path) -> list[int]:
    """The PIDs a Bernstein run in `repo` recorded: its server, spawner and watchdog, and its
    agents' (in their worktrees). They run detached, so only these files name them."""
    runtime = repo / ".sdd" / "runtime"
    found = []
    for name in ("server.pid", "spawner.pid", "watchdog.pid"):
        with contextlib.suppress(OSError, ValueError):
            found.append(int((runtime / name).read_text().split()[0]))
    for path in repo.glob(".sdd/worktrees/*/.sdd/runtime/pids/*"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            text = path.read_text()
            found.append(int(json.loads(text)["pid"]) if "{" in text else int(text.split()[0]))
    return found


class Bernstein:
    """`bernstein run` of the demo's plan and the feeder that keeps it busy."""

    def __init__(self, repo: Path, bernstein: str, env: dict[str, str], port: int, token: str):
        self.repo, self.bernstein, self.env = repo, bernstein, env
        self.url = f"http://127.0.0.1:{port}"
        self.port = port
        self.headers = {"Authorization": f"Bearer {token}"}
        self.posted = 0

    def start(self, max_agents: int, stopping: threading.Event) -> bool:
        """Runs the plan; False when stopped first (its handover takes 20-60 s, longer than
        `up` waits for a child to end, so a stop must not wait for it)."""
        steps = [task(n) for n in range(max_agents)]
        self.posted = max_agents
        plan = self.repo.parent / "plan.yaml"
        plan.write_text(yaml.safe_dump(
            {"name": "demo", "cli": "claude", "stages": [{"name": "work", "steps": steps}]}
        ))  # fmt: skip
        with (self.repo.parent / "bernstein-run.log").open("ab") as out:
            running = subprocess.Popen(
                [self.bernstein, "run", str(plan), "--auto-approve", "--cli", "claude",
                 "--port", str(self.port)],
                cwd=self.repo, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        began = time.monotonic()
        while running.poll() is None:
            if stopping.wait(0.5) or time.monotonic() - began > RUN_TIMEOUT:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(running.pid, signal.SIGKILL)
                running.wait()
                if stopping.is_set():
                    return False
                raise RuntimeError(f"bernstein run did not hand over in {RUN_TIMEOUT:.0f} s")
        if running.returncode != 0:
            raise RuntimeError(f"bernstein run exited {running.returncode} (bernstein-run.log)")
        # its orchestrator stops itself once idle; a hold keeps it up for the fed tasks
        self.post("/orchestrator/holds", {"reason": "agentwatch demo", "ttl_seconds": 86400})
        return True

    def post(self, path: str, body: Any) -> Any:
        answer = requests.post(self.url + path, json=body, headers=self.headers, timeout=15)
        answer.raise_for_status()
        return answer.json()

    def feed(self, waiting: int) -> None:
        """Post tasks until `waiting` are open (a paused Bernstein lets them wait)."""
        answer = requests.get(self.url + "/tasks", headers=self.headers, timeout=15)
        answer.raise_for_status()
        open_tasks = sum(1 for t in answer.json() if t.get("status") == "open")
        for _ in range(waiting - open_tasks):
            self.post("/tasks", task(self.posted))
            self.posted += 1

    def pids(self) -> list[int]:
        return pids_of(self.repo)

    def stop(self) -> None:
        """`bernstein stop --force`, then its own processes' groups: its server, orchestrator
        and watchdog run detached, so nothing else would end them. Quick enough for `up`,
        which gives its children 10 s."""
        began = time.monotonic()
        leftover = self.pids()
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run(
                [self.bernstein, "stop", "--force"], cwd=self.repo, env=self.env,
                stdin=subprocess.DEVNULL, capture_output=True, timeout=STOP_TIMEOUT, check=False,
            )  # fmt: skip
        for pid in leftover:  # anything `stop` missed, with its process group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        log.info("demo: Bernstein stopped in %.1f s", time.monotonic() - began)


def run(args: argparse.Namespace, token: str) -> int:
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    root: Path = args.dir
    root.mkdir(parents=True, exist_ok=True)
    home = root / "home"
    served = ServedLog(root / "served.jsonl")
    with StandIn(parse(script(args.agent_seconds)), served) as api:
        prepare_home(home, api.url, args.otel_listen)
        claude_bin = str(Path(args.claude).parent)
        bernstein_bin = str(Path(args.bernstein).parent)
        path = os.pathsep.join([claude_bin, bernstein_bin, os.environ.get("PATH", "/usr/bin")])
        env = environment(home, BERNSTEIN_AUTH_TOKEN=token, ANTHROPIC_API_KEY=API_KEY, PATH=path)
        repo = root / "repo"
        orchestrator = Bernstein(repo, args.bernstein, env, args.port, token)
        try:
            prepare_repo(repo, args.bernstein, env, args.max_agents)
            began = time.monotonic()
            if not orchestrator.start(args.max_agents, stopping):
                return 0
            log.info("demo: Bernstein 3.23.0 runs on %s (handed over in %.0f s); its agents "
                     "are Claude Code sessions against %s", orchestrator.url,
                     time.monotonic() - began, api.url)  # fmt: skip
            gate = agentwatch_log.FailureGate(log, "demo: Bernstein's task server")
            while not stopping.wait(5.0):
                try:
                    orchestrator.feed(args.max_agents)
                except requests.RequestException as err:
                    gate.failed(err)
                else:
                    gate.succeeded()
        except (RuntimeError, OSError, subprocess.TimeoutExpired, requests.RequestException) as err:
            log.error("demo: Bernstein could not start: %s", err)
            return 1
        finally:
            orchestrator.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentwatch.demo.bernstein",
        description="Run the real Bernstein with Claude Code agents as the demo's orchestrator.",
    )
    parser.add_argument("dir", type=Path, help="the demo's Bernstein folder (repo, HOME)")
    parser.add_argument("--bernstein", required=True, help="the bernstein CLI (3.23.0)")
    parser.add_argument("--claude", required=True, help="the Claude Code binary its agents run")
    parser.add_argument("--port", type=int, required=True, help="its task server's port")
    parser.add_argument("--token-env", required=True, help="variable holding the bearer token")
    parser.add_argument("--max-agents", type=int, default=3)
    parser.add_argument("--otel-listen", help="HOST:PORT of the otel sentinel")
    parser.add_argument("--agent-seconds", type=float, default=20.0, help="each agent's work")
    args = parser.parse_args(argv)
    agentwatch_log.setup("info")
    token = os.environ.get(args.token_env, "")
    if not token:
        print(f"${args.token_env} is empty", file=sys.stderr)
        return 2
    return run(args, token)


if __name__ == "__main__":
    sys.exit(main())
