"""The footprint sentinel: classifier table, /proc parsing, and real processes end to end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentwatch.core import spool
from agentwatch.core.log import FailureGate
from agentwatch.sentinels.footprint import classify
from agentwatch.sentinels.footprint.classify import Process, SignatureError
from agentwatch.sentinels.footprint.main import log as footprint_log
from agentwatch.sentinels.footprint.main import step
from agentwatch.sentinels.footprint.metrics import PREFIX, State, families
from agentwatch.sentinels.footprint.scan import PAGE_SIZE, Scanner
from tests.conftest import run_cli, samples

KINDS = ("agent_cli", "mcp_server", "browser", "electron", "other_node")
SLEEP = shutil.which("sleep") or "/bin/sleep"
DASH = shutil.which("dash") or "/bin/sh"
PROMTOOL = shutil.which("promtool")

# (comm, exe, command line) -> kind; exe "" = unreadable (another user's process).
TABLE: list[tuple[str, str, str, str | None]] = [
    # agent CLIs: by what runs, never by a path mentioning a name
    ("claude", "/home/a/.local/share/claude/versions/2.0.14", "claude", "agent_cli"),
    ("2.0.14", "/home/a/.local/share/claude/versions/2.0.14", "/x/versions/2.0.14 -c", "agent_cli"),
    ("claude", "", "claude --resume", "agent_cli"),
    (
        "node",
        "/usr/bin/node",
        "node /usr/lib/node_modules/@anthropic-ai/claude-code/cli.js -p",
        "agent_cli",
    ),
    (
        "node",
        "/usr/bin/node",
        "node /home/a/.claude/local/node_modules/@anthropic-ai/claude-code/cli.js",
        "agent_cli",
    ),
    ("node", "/usr/bin/node", "node /usr/local/bin/gemini", "agent_cli"),
    (
        "node",
        "/usr/bin/node",
        "node --max-old-space-size=4096 /usr/local/bin/codex exec hi",
        "agent_cli",
    ),
    (
        "codex-x86_64-un",
        "/n/@openai/codex/bin/codex-x86_64-unknown-linux-musl",
        "codex",
        "agent_cli",
    ),
    (
        "aider",
        "/usr/bin/python3.11",
        "/venv/bin/python /home/a/.local/bin/aider --yes",
        "agent_cli",
    ),
    ("python3", "/usr/bin/python3.11", "python3 -m aider --model x", "agent_cli"),
    ("cursor-agent", "/home/a/.local/bin/cursor-agent", "cursor-agent", "agent_cli"),
    # MCP servers
    ("codex", "/usr/local/bin/codex", "codex mcp-server", "mcp_server"),
    (
        "npm exec @model",
        "/usr/bin/node",
        "npm exec @modelcontextprotocol/server-filesystem /h",
        "mcp_server",
    ),
    (
        "node",
        "/usr/bin/node",
        "node /r/.npm/_npx/ab/node_modules/.bin/mcp-server-filesystem /h",
        "mcp_server",
    ),
    (
        "node",
        "/usr/bin/node",
        "node /x/node_modules/@modelcontextprotocol/server-memory/dist/index.js",
        "mcp_server",
    ),
    ("sh", "/usr/bin/dash", "sh -c mcp-server-filesystem /home/a", "mcp_server"),
    (
        "mcp-server-fetc",
        "/usr/bin/python3.12",
        "/u/bin/python /u/bin/mcp-server-fetch",
        "mcp_server",
    ),
    ("uv", "/usr/bin/uv", "uv tool uvx mcp-server-fetch", "mcp_server"),
    ("python3", "/usr/bin/python3.11", "python3 -m mcp_server_git --repository /r", "mcp_server"),
    (
        "node",
        "/usr/bin/node",
        "node /h/.npm/_npx/1/node_modules/.bin/mcp-remote https://x/sse",
        "mcp_server",
    ),
    (
        "node",
        "/usr/bin/node",
        "node /x/node_modules/@playwright/mcp/cli.js --headless",
        "mcp_server",
    ),
    ("npm exec @playw", "/usr/bin/node", "npm exec @playwright/mcp@latest", "mcp_server"),
    (
        "github-mcp-serv",
        "/usr/local/bin/github-mcp-server",
        "github-mcp-server stdio",
        "mcp_server",
    ),
    (
        "docker",
        "/usr/bin/docker",
        "docker run -i --rm ghcr.io/github/github-mcp-server",
        "mcp_server",
    ),
    ("node", "/usr/bin/node", "node /opt/instar/dist/mcp-stdio-entry.js", "mcp_server"),
    # headless browsers started by automation
    (
        "chrome",
        "/h/.cache/ms-playwright/chromium-1187/chrome-linux/chrome",
        "chrome --type=renderer",
        "browser",
    ),
    (
        "headless_shell",
        "/h/.cache/ms-playwright/x/chrome-linux/headless_shell",
        "headless_shell",
        "browser",
    ),
    (
        "chrome",
        "",
        "/h/.cache/ms-playwright/chromium-1187/chrome-linux/chrome --no-sandbox",
        "browser",
    ),
    ("chrome", "/opt/google/chrome/chrome", "/opt/google/chrome/chrome --headless=new", "browser"),
    (
        "chrome",
        "/opt/google/chrome/chrome",
        "chrome --remote-debugging-pipe --no-first-run",
        "browser",
    ),
    (
        "chrome",
        "/opt/google/chrome/chrome",
        "chrome --user-data-dir=/tmp/puppeteer_dev_profile-X",
        "browser",
    ),
    ("chrome", "/h/.cache/puppeteer/chrome/linux-131/chrome-linux64/chrome", "chrome", "browser"),
    # Electron
    ("electron", "/usr/lib/electron/electron", "electron /opt/app/resources/app.asar", "electron"),
    ("code", "/usr/share/code/code", "/usr/share/code/code --type=renderer", "electron"),
    ("slack", "/usr/lib/slack/slack", "/usr/lib/slack/slack", "electron"),
    ("myapp", "/opt/MyApp/myapp", "/opt/MyApp/myapp --type=zygote", "electron"),
    # other node
    ("node", "/usr/bin/node", "node server.js", "other_node"),
    ("npm run dev", "/usr/bin/node", "npm run dev", "other_node"),
    ("node", "/usr/bin/node", "node /home/a/.claude/hooks/notify.js", "other_node"),
    ("node", "/usr/bin/node", "node /home/a/.claude/local/x.js", "other_node"),
    ("next-server (v", "/usr/bin/node", "next-server (v14.2.3)", "other_node"),
    ("node", "/usr/bin/node", "node /x/node_modules/.bin/jest mcp-server.test.js", "other_node"),
    # not agent-related: tools mentioning names, paths containing .claude/, a human's Chrome
    ("vim", "/usr/bin/vim.basic", "vim /home/a/.claude/settings.json", None),
    ("grep", "/usr/bin/grep", "grep -r claude /home/a", None),
    ("rg", "/usr/bin/rg", "rg @modelcontextprotocol/server- /src", None),
    ("ps", "/usr/bin/ps", "ps -ef", None),
    ("less", "/usr/bin/less", "less /home/a/.claude/projects/p/s.jsonl", None),
    ("tail", "/usr/bin/tail", "tail -f /home/a/.claude/debug/latest", None),
    ("cat", "/usr/bin/cat", "cat /home/a/.claude/CLAUDE.md", None),
    ("bash", "/usr/bin/bash", "bash /home/a/.claude/hooks/on-stop.sh", None),
    ("python3", "/usr/bin/python3.11", "python3 /home/a/.claude/hooks/check.py", None),
    ("sleep", "/usr/bin/sleep", "/home/x/.claude/local/claude 30", None),
    ("git", "/usr/bin/git", "git commit -m add claude mcp-server support", None),
    ("python3", "/usr/bin/python3.11", "python3 -m pytest tests/test_mcp_server.py", None),
    ("python3", "/usr/bin/python3.11", "python3 /v/bin/pytest -k mcp-remote", None),
    ("node", "/usr/bin/node", "node build.js --config .mcp.json", "other_node"),
    ("chrome", "/opt/google/chrome/chrome", "/opt/google/chrome/chrome --type=renderer", None),
    ("claude-shim", "/usr/bin/dash", "/bin/sh /tmp/claude-shim", None),
    ("tmux: server", "/usr/bin/tmux", "tmux new -s x claude", None),
    ("systemd", "/usr/lib/systemd/systemd", "/lib/systemd/systemd --user", None),
    ("claude-code-rou", "/usr/bin/node", "node /x/claude-code-router/dist/cli.js", "other_node"),
]


@pytest.fixture(scope="module")
def classifier() -> classify.Classifier:
    return classify.load()


@pytest.mark.parametrize(("comm", "exe", "cmdline", "kind"), TABLE)
def test_classifier_table(
    classifier: classify.Classifier, comm: str, exe: str, cmdline: str, kind: str | None
) -> None:
    process = Process(comm=comm, exe=exe, cmdline=cmdline)
    signature = classifier.signature_for(process)
    assert classifier.classify(process) == kind, signature and signature.id


def test_shipped_kinds_are_fixed_and_ordered(classifier: classify.Classifier) -> None:
    assert classifier.kinds == KINDS


@pytest.mark.parametrize(
    ("signatures", "problem"),
    [
        ([{"id": "a", "kind": "x", "comm": "("}], "comm"),
        ([{"id": "a", "kind": "x", "color": "red", "comm": "a"}], "unknown field"),
        ([{"id": "a", "kind": "Bad Kind", "comm": "a"}], "kind must match"),
        ([{"id": "a", "kind": "x", "not_cmdline": "a"}], "positive matcher"),
        ([{"id": "a", "kind": "x", "all_of": [""]}], "all_of"),
        ([{"id": "a", "kind": "x", "comm": "a"}, {"id": "a", "kind": "y", "comm": "b"}], "dupl"),
        ([], "non-empty list"),
    ],
)
def test_bad_signature_files_are_rejected_by_name(
    tmp_path: Path, signatures: list, problem: str
) -> None:
    path = tmp_path / "sig.json"
    path.write_text(json.dumps({"signatures": signatures}))
    with pytest.raises(SignatureError, match=problem):
        classify.load(path)


def test_user_file_replaces_the_shipped_list(tmp_path: Path) -> None:
    path = tmp_path / "sig.json"
    rules = [
        {"id": "skip", "kind": "ignore", "all_of": ["--dry-run"]},
        {"id": "w", "kind": "worker", "comm": "worker-.*", "all_of": ["--queue"]},
    ]
    path.write_text(json.dumps({"kinds": ["worker", "spare"], "signatures": rules}))
    loaded = classify.load(path)
    assert loaded.kinds == ("worker", "spare")
    assert loaded.classify(Process("worker-1", "", "worker-1 --queue q")) == "worker"
    assert loaded.classify(Process("worker-1", "", "worker-1 --queue q --dry-run")) is None
    assert loaded.classify(Process("claude", "", "claude")) is None


# ---- /proc parsing on a fake tree -------------------------------------------------------


def _fake_proc(
    root: Path, pid: int, comm: str, argv: list[str], state: str = "S", **kw: int
) -> None:
    folder = root / str(pid)
    folder.mkdir(parents=True)
    (folder / "cmdline").write_bytes(b"".join(a.encode() + b"\0" for a in argv))
    flags, start, rss = kw.get("flags", 4194560), kw.get("start", 1000 + pid), kw.get("rss", 10)
    rest = f"{state} 1 {pid} {pid} 0 -1 {flags} " + "0 " * 12 + f"{start} 123456 {rss} " + "0 " * 27
    (folder / "stat").write_text(f"{pid} ({comm}) {rest.strip()}\n")


def test_fake_proc_zombies_kernel_threads_odd_names_and_vanishing(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    _fake_proc(proc, 10, "claude", ["claude"], rss=100)
    _fake_proc(proc, 11, "claude", [], state="Z")  # zombie: no command line, state Z
    _fake_proc(proc, 12, "kworker/0:1", [], flags=0x00200000)  # kernel thread
    _fake_proc(proc, 13, "node", ["node", "/x/@modelcontextprotocol/server-a/i.js"], rss=7)
    _fake_proc(proc, 14, "a) (b", ["weird"])  # comm with parentheses and spaces
    _fake_proc(proc, 15, "node", ["node", "x.js"], state="Z")  # zombie still showing argv
    (proc / "16").mkdir()  # listed, then gone before its files could be read
    (proc / "self").mkdir()
    scanner = Scanner(classify.load(), proc=proc, keep_pids=True)
    result = scanner.scan()
    assert result.counts == {
        "agent_cli": 1, "mcp_server": 1, "browser": 0, "electron": 0, "other_node": 0
    }  # fmt: skip
    assert result.resident_bytes["agent_cli"] == 100 * PAGE_SIZE
    assert result.resident_bytes["mcp_server"] == 7 * PAGE_SIZE
    assert result.processes_seen == 3 and result.vanished == 1
    assert scanner.last_pids["agent_cli"] == [10]


def test_cache_notices_exec_on_the_same_pid(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    _fake_proc(proc, 20, "claude-shim", ["/bin/sh", "/usr/local/bin/claude-shim"])
    scanner = Scanner(classify.load(), proc=proc)
    assert scanner.scan().counts["agent_cli"] == 0
    shutil.rmtree(proc / "20")
    _fake_proc(proc, 20, "claude", ["/opt/claude/claude"])  # same pid and start time: exec
    assert scanner.scan().counts["agent_cli"] == 1


# ---- failures and the exposition -------------------------------------------------------


def _render(state: State) -> str:
    return spool.render(list(families(state)))


def _promtool_check(text: str) -> None:
    assert PROMTOOL, "promtool is required (Debian package prometheus); scripts/setup installs it"
    checked = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_failed_scan_is_an_error_metric_not_a_zero(tmp_path: Path) -> None:
    kinds = classify.load().kinds
    state = State(kinds=kinds)
    gate = FailureGate(footprint_log, "scan of /proc")
    step(Scanner(classify.load(), proc=tmp_path / "proc"), state, gate)  # no /proc: fails
    values = samples(_render(state))
    assert values[("agentwatch_footprint_scan_success", ())] == 0
    assert values[("agentwatch_footprint_scan_errors_total", ())] == 1
    assert not [name for name, _ in values if name.endswith(("_processes", "_memory_bytes"))]
    assert ("agentwatch_footprint_last_success_timestamp_seconds", ()) not in values

    _fake_proc(tmp_path / "proc", 30, "claude", ["claude"])
    step(Scanner(classify.load(), proc=tmp_path / "proc"), state, gate)
    values = samples(_render(state))
    assert values[("agentwatch_footprint_scan_success", ())] == 1
    assert values[("agentwatch_footprint_agent_processes", ())] == 1
    exported = {dict(labels)["kind"] for n, labels in values if n == PREFIX + "processes"}
    assert exported == set(kinds)
    shutil.rmtree(tmp_path / "proc")
    step(Scanner(classify.load(), proc=tmp_path / "proc"), state, gate)
    text = _render(state)
    values = samples(text)
    assert values[("agentwatch_footprint_scan_errors_total", ())] == 2
    assert ("agentwatch_footprint_agent_processes", ()) not in values  # omitted, not 0
    assert values[("agentwatch_footprint_last_success_timestamp_seconds", ())] > 0
    _promtool_check(text)


# ---- real processes -------------------------------------------------------------------


class Spawner:
    """Starts real processes with chosen executables and argv; the fixture kills them all."""

    def __init__(self, root: Path, started: list[subprocess.Popen]):
        self.root, self.started = root, started

    def binary(self, source: str, relative: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            shutil.copy2(source, path)
        return path

    def script(self, relative: str, text: str = "read _\n") -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def start(self, argv: list[str | Path], executable: str | Path | None = None) -> int:
        process = subprocess.Popen(
            [str(a) for a in argv],
            executable=str(executable) if executable else None,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.started.append(process)  # Popen returns after exec: /proc shows the new program
        return process.pid

    def sleeper(self, name: str, *argv: str) -> int:
        path = self.binary(SLEEP, f"sleepers/{name}")
        return self.start([path, *(argv or ("300",))], path)

    def node_running(self, script: str) -> int:
        """A dash copy named `node` running a script that blocks: `node X.js` in /proc."""
        node = self.binary(DASH, "dash/node")
        return self.start([node, self.script(script)], node)

    def stop(self, pids: list[int]) -> None:
        for process in self.started:
            if process.pid in pids and process.poll() is None:
                process.kill()
                process.wait(timeout=10)


@pytest.fixture
def spawn(tmp_path: Path, processes: list[subprocess.Popen]) -> Spawner:
    return Spawner(tmp_path / "fleet", processes)


def _positives(spawn: Spawner) -> dict[str, list[int]]:
    """Processes each kind must count, plus the negatives that must not count at all."""
    mcp = "x/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
    return {
        "agent_cli": [spawn.sleeper("claude"), spawn.sleeper("claude"), spawn.sleeper("codex")],
        "mcp_server": [spawn.node_running(mcp)],
        "other_node": [spawn.sleeper("node"), spawn.node_running("home/a/.claude/local/x.js")],
        "none": [
            spawn.start(["/home/x/.claude/local/claude", "300"], spawn.binary(SLEEP, "bin/sleep")),
            spawn.start(["grep", "-e", "claude", "-e", "/home/x/.claude/y", "-e", mcp]),
            spawn.start(["cat", "-", "/home/x/.claude/settings.json"]),
            spawn.start(
                [sys.executable, "-c", "import sys; sys.stdin.read()", "claude", ".claude/"]
            ),
        ],
    }


def test_real_processes_are_classified_by_pid(spawn: Spawner) -> None:
    started = _positives(spawn)
    scanner = Scanner(classify.load(), keep_pids=True)
    scanner.scan()
    for kind, pids in started.items():
        for pid in pids:
            found = [k for k, members in scanner.last_pids.items() if pid in members]
            assert found == ([] if kind == "none" else [kind]), (kind, pid, _cmdline(pid))


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _wait_for(condition: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_shim_is_classified_by_what_it_became(spawn: Spawner) -> None:
    claude = spawn.binary(SLEEP, "sleepers/claude")
    shim = spawn.script("bin/claude-shim", f"#!/bin/sh\nread _\nexec {claude} 300\n")
    shim.chmod(0o755)
    pid = spawn.start([shim])
    scanner = Scanner(classify.load(), keep_pids=True)
    scanner.scan()
    assert Path(f"/proc/{pid}/comm").read_text().strip() == "claude-shim"
    assert pid not in scanner.last_pids["agent_cli"]
    process = next(p for p in spawn.started if p.pid == pid)
    assert process.stdin is not None
    process.stdin.write(b"go\n")
    process.stdin.flush()
    _wait_for(lambda: Path(f"/proc/{pid}/comm").read_text().strip() == "claude")
    scanner.scan()  # same pid, same start time: the cached "not an agent" must not stick
    assert pid in scanner.last_pids["agent_cli"]


def test_zombies_are_skipped(spawn: Spawner) -> None:
    true = spawn.binary(shutil.which("true") or "/bin/true", "bin/zombie/claude")
    process = subprocess.Popen([str(true)])  # exits at once; not reaped until wait()
    try:
        _wait_for(lambda: Path(f"/proc/{process.pid}/stat").read_text().split(") ")[1][0] == "Z")
        scanner = Scanner(classify.load(), keep_pids=True)
        scanner.scan()
        assert all(process.pid not in pids for pids in scanner.last_pids.values())
    finally:
        process.wait(timeout=10)


@pytest.mark.slow
def test_processes_dying_mid_scan_are_tolerated(spawn: Spawner) -> None:
    """Short-lived `claude` processes churn while scans run: no scan fails, nothing lingers."""
    short = spawn.binary(SLEEP, "bin/churn/claude")
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            batch = [subprocess.Popen([str(short), "0.01"]) for _ in range(10)]
            for child in batch:
                child.wait(timeout=10)

    worker = threading.Thread(target=churn, daemon=True)
    worker.start()
    scanner = Scanner(classify.load(), keep_pids=True)
    try:
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            scanner.scan()
    finally:
        stop.set()
        worker.join(timeout=20)
    assert len(scanner._cache) < 100_000
    scanner.scan()
    mine = {p for p in scanner.last_pids["agent_cli"] if _exe(p).startswith(str(short.parent))}
    assert mine == set()  # the churned processes left nothing behind


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to scan as another user")
def test_other_users_processes_are_tolerated(spawn: Spawner) -> None:
    """A scan as `nobody` cannot read root's exe links; root's processes are still classified
    (by comm and command line) and nothing fails."""
    pid = spawn.sleeper("claude")
    classifier = classify.load()
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked child
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            scanner = Scanner(classifier, keep_pids=True)
            scanner.scan()
            os.write(write_end, json.dumps(scanner.last_pids).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        output = pipe.read()
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert pid in json.loads(output)["agent_cli"]
    with pytest.raises(PermissionError):
        _readlink_as_nobody(pid)


def _readlink_as_nobody(pid: int) -> None:
    """Shows the premise of the test above: root's exe link is unreadable to `nobody`."""
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked child
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.readlink(f"/proc/{pid}/exe")
            os._exit(0)
        except PermissionError:
            os._exit(13)
        finally:
            os._exit(1)
    _, status = os.waitpid(child, 0)
    if os.waitstatus_to_exitcode(status) == 13:
        raise PermissionError(pid)


# ---- the CLI, end to end ---------------------------------------------------------------


def _once(dirs: Path, *extra: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    result = run_cli(
        *extra,
        "sentinel",
        "footprint",
        "--once",
        "--spool-dir",
        str(dirs / "spool"),
        "--state-dir",
        str(dirs / "state"),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    text = (dirs / "spool" / "footprint.prom").read_text()
    _promtool_check(text)
    return samples(text)


def _counts(values: dict) -> dict[str, float]:
    return {
        dict(labels)["kind"]: value
        for (name, labels), value in values.items()
        if name == "agentwatch_footprint_processes"
    }


@pytest.fixture
def cli_dirs(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "cli" / "spool").mkdir(parents=True)
    yield tmp_path / "cli"


@pytest.mark.slow
def test_once_counts_rise_by_exactly_what_was_started_and_fall_back(
    spawn: Spawner, cli_dirs: Path
) -> None:
    """Host-wide counts: other sessions' processes may come and go meanwhile, so a round
    whose baseline moved is retried (a real miscount would repeat every time)."""
    for _attempt in range(4):
        before = _counts(_once(cli_dirs))
        started = _positives(spawn)
        after_values = _once(cli_dirs)
        after = _counts(after_values)
        spawn.stop([pid for pids in started.values() for pid in pids])
        again = _counts(_once(cli_dirs))
        expected = {kind: len(started.get(kind, [])) for kind in KINDS}
        rise = {kind: after[kind] - before[kind] for kind in KINDS}
        if rise == expected and again == before:
            break
    assert set(after) == set(KINDS)  # every kind always exported
    assert rise == expected
    assert again == before
    assert after_values[("agentwatch_footprint_scan_success", ())] == 1
    total = after_values[("agentwatch_footprint_agent_processes", ())]
    assert total == sum(after.values())
    assert after_values[("agentwatch_footprint_resident_memory_bytes", (("kind", "agent_cli"),))]


def test_signatures_file_from_config(spawn: Spawner, cli_dirs: Path, tmp_path: Path) -> None:
    signatures = tmp_path / "mine.json"
    rules = [{"id": "w", "kind": "worker", "comm": "fp-worker-[0-9]+"}]
    signatures.write_text(json.dumps({"signatures": rules}))
    config = tmp_path / "config.yaml"
    config.write_text(f"sentinels:\n  footprint:\n    signatures_file: {signatures}\n")
    pids = [spawn.sleeper(f"fp-worker-{n}") for n in range(3)]
    assert _counts(_once(cli_dirs, "--config", str(config))) == {"worker": 3}
    spawn.stop(pids)
    assert _counts(_once(cli_dirs, "--config", str(config))) == {"worker": 0}
    signatures.write_text("{not json")
    broken = run_cli(
        "--config",
        str(config),
        "sentinel",
        "footprint",
        "--once",
        "--spool-dir",
        str(cli_dirs / "spool"),
        "--state-dir",
        str(cli_dirs),
    )
    assert broken.returncode == 2 and "signatures" in broken.stderr
