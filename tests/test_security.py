"""Security properties, checked on the real thing: loopback-only listeners by default, secrets
planted everywhere agentwatch reads never reaching its outputs, secret files others can read
refused or warned about, and no subprocess through a shell."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import requests
import yaml

from agentwatch.core.config import Key, schema
from agentwatch.demo import transcripts
from agentwatch.sentinels import registry
from agentwatch.sentinels.release_readiness.github import CiSettings, GitHubCi
from tests.conftest import CLI, free_port, run_cli

ROOT = Path(__file__).resolve().parent.parent
CODE_FOLDERS = ("exporter", "sentinels", "controller")

# --- no shell -------------------------------------------------------------------------------

SHELL_CALLS = {
    ("os", "system"),
    ("os", "popen"),
    ("subprocess", "getoutput"),
    ("subprocess", "getstatusoutput"),
}
SPAWN_CALLS = {"run", "Popen", "call", "check_call", "check_output"}


def _python_files() -> list[Path]:
    files = [path for folder in CODE_FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]
    assert len(files) > 20, "the source folders were not found"
    return files


def _dotted(node: ast.AST) -> tuple[str, str] | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id, node.attr
    return None


def shell_uses(source: str, filename: str) -> list[str]:
    """Every shell=True, os.system/popen, subprocess.getoutput and string argv in `source`."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.ImportFrom) and node.module in ("os", "subprocess"):
            for alias in node.names:
                if (node.module, alias.name) in SHELL_CALLS:
                    found.append(f"{filename}:{node.lineno}: imports {node.module}.{alias.name}")
        if not isinstance(node, ast.Call):
            continue
        where = f"{filename}:{node.lineno}"
        for keyword in node.keywords:
            if keyword.arg == "shell" and not (
                isinstance(keyword.value, ast.Constant) and keyword.value.value is False
            ):
                found.append(f"{where}: shell= other than False")
        name = _dotted(node.func)
        if name in SHELL_CALLS:
            found.append(f"{where}: {name[0]}.{name[1]}")
        if name and name[0] == "subprocess" and name[1] in SPAWN_CALLS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant | ast.JoinedStr | ast.BinOp):
                found.append(f"{where}: subprocess.{name[1]} with a string, not an argv list")
    return found


def test_the_shell_detector_finds_what_it_should() -> None:
    bad = (
        "import os, subprocess\nfrom os import system\n"
        "subprocess.run('ls -l', shell=True)\nos.system('ls')\nos.popen('ls')\n"
        "subprocess.getoutput('ls')\nsubprocess.Popen(f'ls {x}')\n"
        "subprocess.check_output('a' + b)\n"
    )
    assert len(shell_uses(bad, "bad.py")) == 8
    good = "import subprocess\nsubprocess.run(['ls', '-l'], shell=False, timeout=5)\n"
    assert shell_uses(good, "good.py") == []


def test_no_subprocess_uses_a_shell() -> None:
    found = []
    for path in _python_files():
        found += shell_uses(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == []


# --- loopback by default ------------------------------------------------------------------------


def _listen_defaults(schema: dict, prefix: str = "") -> Iterator[tuple[str, str]]:
    for name, spec in schema.items():
        if isinstance(spec, Key):
            if name.endswith("listen"):
                yield prefix + name, spec.default
        else:
            yield from _listen_defaults(spec, f"{prefix}{name}.")


def config_schema() -> dict:
    return schema(registry.config_sections())


def test_every_listen_default_is_loopback() -> None:
    defaults = dict(_listen_defaults(config_schema()))
    assert "exporter.listen" in defaults and "controller.listen" in defaults
    for key, value in defaults.items():
        assert value.startswith("127.0.0.1:"), key
    assert config_schema()["exporter"]["web_config_file"].default is None
    assert config_schema()["controller"]["web_config_file"].default is None


def _listening(pid: int) -> list[str]:
    return [
        conn.laddr.ip
        for conn in psutil.Process(pid).net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN
    ]


@pytest.mark.slow
def test_exporter_and_controller_listen_only_on_loopback_by_default(tmp_path: Path) -> None:
    for port in (9847, 9848):
        if psutil.net_connections(kind="inet") and any(
            c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN
            for c in psutil.net_connections(kind="inet")
        ):
            pytest.skip(f"the default port {port} is taken on this machine")
    env = dict(
        os.environ,
        XDG_CONFIG_HOME=str(tmp_path / "config"),  # no config file: every default
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_RUNTIME_DIR="",
        HOME=str(tmp_path),
    )
    children = [
        subprocess.Popen([*CLI, command], env=env, stderr=subprocess.PIPE, text=True)
        for command in ("exporter", "controller")
    ]
    try:
        addresses: dict[int, list[str]] = {}
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(addresses) < 2:
            for child in children:
                assert child.poll() is None, child.stderr.read() if child.stderr else ""
                found = _listening(child.pid)
                if found:
                    addresses[child.pid] = found
            time.sleep(0.1)
        assert len(addresses) == 2, f"not both listening: {addresses}"
        for found in addresses.values():
            assert set(found) == {"127.0.0.1"}
    finally:
        for child in children:
            child.terminate()
            child.wait(timeout=10)


# --- secret files readable by others ----------------------------------------------------------


def test_config_check_names_each_secret_file_others_can_read(tmp_path: Path) -> None:
    orchestrator_token = tmp_path / "orchestrator.token"
    orchestrator_token.write_text("t0ken\n")
    orchestrator_token.chmod(0o644)
    ci_token = tmp_path / "ci.token"
    ci_token.write_text("t0ken\n")
    ci_token.chmod(0o640)
    web = tmp_path / "web.yml"
    web.write_text("basic_auth_users: {}\n")
    web.chmod(0o644)
    (tmp_path / "repo").mkdir()
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "exporter": {"web_config_file": str(web)},
                "controller": {
                    "orchestrator": {
                        "kind": "webhook",
                        "url": "http://127.0.0.1:1/hook",
                        "token_file": str(orchestrator_token),
                    }
                },
                "sentinels": {
                    "release-readiness": {
                        "repositories": [
                            {
                                "path": str(tmp_path / "repo"),
                                "probes": {
                                    "ci": {"github_repo": "o/r", "token_file": str(ci_token)}
                                },
                            }
                        ]
                    }
                },
            }
        )
    )
    config.chmod(0o640)
    done = run_cli("--config", str(config), "config", "check", timeout=30)
    assert done.returncode == 0, done.stderr  # warnings, not problems
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    for path in (config, orchestrator_token, ci_token, web):
        line = next((w for w in warnings if f"{path} (" in w), None)
        assert line is not None, f"no warning about {path}: {done.stderr}"
        assert f"chmod 600 {path}" in line
    assert "refuses" in next(w for w in warnings if str(orchestrator_token) in w)
    for path in (config, orchestrator_token, ci_token, web):
        path.chmod(0o600)
    quiet = run_cli("--config", str(config), "config", "check", timeout=30)
    assert quiet.returncode == 0 and "warning" not in quiet.stderr


def test_controller_refuses_a_token_file_others_can_read(tmp_path: Path) -> None:
    token = tmp_path / "orchestrator.token"
    token.write_text("t0ken\n")
    token.chmod(0o604)
    config = tmp_path / "config.yaml"
    orchestrator = {"kind": "webhook", "url": "http://127.0.0.1:1/h", "token_file": str(token)}
    config.write_text(yaml.safe_dump({"controller": {"orchestrator": orchestrator}}))
    args = ("--config", str(config), "controller", "--once", "--state-dir", str(tmp_path))
    done = run_cli(*args, "--spool-dir", str(tmp_path / "spool"), timeout=30)
    assert done.returncode == 2
    assert "orchestrator.token_file" in done.stderr and f"chmod 600 {token}" in done.stderr
    token.chmod(0o600)
    done = run_cli(*args, "--spool-dir", str(tmp_path / "spool"), timeout=30)
    assert done.returncode == 0, done.stderr


def test_ci_probe_refuses_a_token_file_others_can_read(tmp_path: Path) -> None:
    token = tmp_path / "gh.token"
    token.write_text("ghp_x\n")
    token.chmod(0o644)
    ci = GitHubCi(CiSettings("o/r", token_file=token, api_url="http://127.0.0.1:1"))
    result = ci.check("0" * 40)
    assert result.verdict.error and "chmod 600" in result.verdict.reason
    token.chmod(0o600)
    result = ci.check("0" * 40)  # now it asks (and fails to reach) the API instead
    assert result.verdict.error and "chmod" not in result.verdict.reason


# --- planted secrets never come out -------------------------------------------------------------

MARKER = "PLANTED"
SECRETS = {
    "anthropic": "sk-ant-api03-PLANTEDx9Kq2mW7vLr4Tz8Ns1Bc6Hd3Fg5Jk0PaQeRtYuIoPlZ-xcvbnmAA",
    "github": "ghp_PLANTED7hG2kL9mN4pQ8rS1tV6wX3yZ0aB5",
    "aws": "AKIAPLANTED4EXAMPLE7",
    "slack": "xoxb-PLANTED-1234567890-abcdefghijkl",
    "password": "hunter2-PLANTED-pw",
}
AGENT = '#!/bin/sh\ncat "$1"\nwhile :; do sleep 60; done\n'


AT = "2026-11-28T10:00:00.000Z"


def _transcript(claude: Path) -> None:
    secret = " ".join(SECRETS.values())
    cwd = "/home/alice/proj"
    folder = claude / "projects" / "-home-alice-proj"
    folder.mkdir(parents=True)
    user = transcripts.user_prompt(
        f"deploy with ANTHROPIC_API_KEY={secret}", cwd=cwd, session="s1", timestamp=AT
    )
    reply = transcripts.assistant(
        "msg_1", "req_1", input_tokens=10, output_tokens=5, cwd=cwd, session="s1",
        text=f"I used the key {secret} for you",
    )  # fmt: skip
    text = (
        'API Error: 401 {"type":"error","error":{"type":"authentication_error",'
        f'"message":"invalid x-api-key {secret}"}}}}'
    )
    error = transcripts.api_error("msg_2", text, request_id="req_2", cwd=cwd, session="s1")
    (folder / "s1.jsonl").write_bytes(transcripts.encode_lines([user, reply, error]))


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=30)


def _repository(repo: Path) -> None:
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "a@example.com")
    _git(repo, "config", "user.name", "A")
    (repo / "settings.env").write_text(f"GITHUB_TOKEN={SECRETS['github']}\n")
    (repo / "NOTES.md").write_text(f"aws {SECRETS['aws']} TODO\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", f"add deploy key {SECRETS['anthropic']}")
    _git(repo, "tag", "v1")
    (repo / "more.txt").write_text(SECRETS["slack"])
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", f"rotate {SECRETS['slack']}")


@pytest.fixture
def tmux_folder() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="aw-sec-"))  # short: socket paths are < 108 bytes
    try:
        yield folder
    finally:
        subprocess.run(["tmux", "-S", str(folder / "sock"), "kill-server"],
                       capture_output=True, timeout=10, check=False)  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)


def _pane(folder: Path, env: dict[str, str]) -> None:
    """A private tmux server whose 'claude' pane shows an API error with secrets in it (and
    has one in its argv)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    agent = bin_dir / "claude"
    agent.write_text(AGENT)
    agent.chmod(0o755)
    screen = folder / "screen.txt"
    screen.write_text(
        f"> export GITHUB_TOKEN={SECRETS['github']}\n\n"
        f'  ⎿  API Error: 500 {{"type":"error","error":{{"type":"api_error",'
        f'"message":"Internal server error {SECRETS["anthropic"]}"}}}}\n\n'
        "╭────────────────────────────────────────╮\n"
        "│ >                                      │\n"
        "╰────────────────────────────────────────╯\n"
    )
    base = ["tmux", "-f", "/dev/null", "-S", str(folder / "sock")]
    subprocess.run(
        [*base, "new-session", "-d", "-s", "work", "-x", "120", "-y", "40",
         str(agent), str(screen), f"--api-key={SECRETS['aws']}"],
        env=env, check=True, timeout=10,
    )  # fmt: skip
    deadline = time.monotonic() + 5
    while "API Error" not in subprocess.run(
        [*base, "capture-pane", "-p", "-t", "work"], env=env, capture_output=True, text=True,
        timeout=10,
    ).stdout:  # fmt: skip
        assert time.monotonic() < deadline, "the pane never showed its text"
        time.sleep(0.05)


def _everything_under(folder: Path) -> dict[str, bytes]:
    return {str(path): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


@pytest.mark.slow
def test_planted_secrets_never_reach_metrics_logs_state_or_spool(
    tmp_path: Path, tmux_folder: Path
) -> None:
    spool, state, claude = tmp_path / "spool", tmp_path / "state", tmp_path / "claude"
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    env.update(
        CLAUDE_CONFIG_DIR=str(claude),
        TMUX_TMPDIR=str(tmux_folder),
        GITHUB_TOKEN=SECRETS["github"],
        ANTHROPIC_API_KEY=SECRETS["anthropic"],
        AWS_SECRET_ACCESS_KEY=SECRETS["aws"],
        XDG_STATE_HOME=str(tmp_path / "xdg-state"),
    )
    _transcript(claude)
    _repository(tmp_path / "repo")
    _pane(tmux_folder, env)
    token_file = tmp_path / "orchestrator.token"
    token_file.write_text(SECRETS["slack"] + "\n")
    token_file.chmod(0o600)
    closed = free_port()  # nothing listens: every remote call fails
    exporter_port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "exporter": {"listen": f"127.0.0.1:{exporter_port}"},
                "controller": {
                    "alertmanagers": [f"http://aw:{SECRETS['password']}@127.0.0.1:{closed}"],
                    "listen": f"127.0.0.1:{free_port()}",
                    "timeout": 1,
                    "orchestrator": {
                        "kind": "webhook",
                        "url": f"http://127.0.0.1:{closed}/hook",
                        "token_file": str(token_file),
                        "timeout": 1,
                    },
                },
                "claude": {"config_dirs": str(claude)},
                "agents": {"tmux_sockets": [str(tmux_folder / "sock")], "names": ["claude"]},
                "sentinels": {
                    "idle-error": {"settle_time": 1},
                    "release-readiness": {
                        "repositories": [
                            {
                                "path": str(tmp_path / "repo"),
                                "probes": {
                                    "command": ["git", "log", "-2", "--format=%B"],
                                    "required_file": "NOTES.md",
                                    "ci": {
                                        "github_repo": "alice/proj",
                                        "api_url": f"http://127.0.0.1:{closed}",
                                        "timeout": 1,
                                    },
                                },
                            }
                        ]
                    },
                },
            }
        )
    )
    config.chmod(0o600)
    common = ("--config", str(config), "--log-level", "debug")
    dirs = ("--spool-dir", str(spool), "--state-dir", str(state))
    outputs: dict[str, str] = {}
    for name in ("token-ledger", "resources", "footprint", "release-readiness", "idle-error"):
        for attempt in (1, 2):  # idle-error settles on the second look
            done = run_cli(*common, "sentinel", name, "--once", *dirs, env=env, timeout=60)
            assert done.returncode == 0, f"{name}: {done.stderr}"
            outputs[f"{name} log {attempt}"] = done.stdout + done.stderr
        if name == "idle-error":
            time.sleep(1.2)
            done = run_cli(*common, "sentinel", name, "--once", *dirs, env=env, timeout=60)
            outputs[f"{name} log 3"] = done.stdout + done.stderr
    done = run_cli(*common, "controller", "--once", *dirs, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    outputs["controller log"] = done.stdout + done.stderr
    exporter = subprocess.Popen(
        [*CLI, *common, "exporter", "--spool-dir", str(spool)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{exporter_port}"
        deadline = time.monotonic() + 15
        while True:
            try:
                metrics = requests.get(base + "/metrics", timeout=5).text
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline and exporter.poll() is None
                time.sleep(0.1)
        outputs["/metrics"] = metrics
        outputs["/"] = requests.get(base + "/", timeout=5).text
        outputs["/healthz"] = requests.get(base + "/healthz", timeout=5).text
    finally:
        exporter.terminate()
        out, err = exporter.communicate(timeout=10)
        outputs["exporter log"] = out + err

    # The inputs really held the secrets and the sentinels really read them:
    scraped = outputs["/metrics"]
    tokens = 'agentwatch_tokens_total{agent="claude-code",model="claude-sonnet-4-5-20250929"'
    assert tokens + ',project="proj"' in scraped
    assert 'agentwatch_api_errors_total{kind="' in scraped
    assert 'agentwatch_pane_state{agent="claude",pane="%0",state="api_error"' in scraped
    assert 'tmux_session="work"' in scraped, "idle-error/resources did not see the pane"
    assert 'repo="repo"' in scraped, "release-readiness did not check the repository"
    assert "agentwatch_controller" in scraped
    assert f"127.0.0.1:{closed}" in outputs["controller log"]  # the URL was logged, redacted
    files = {**_everything_under(spool), **_everything_under(state)}
    assert any(name.endswith("controller.json") for name in files)
    leaks = [where for where, text in outputs.items() if MARKER in text]
    leaks += [where for where, blob in files.items() if MARKER.encode() in blob]
    assert leaks == [], f"a planted secret came out in: {leaks}"
