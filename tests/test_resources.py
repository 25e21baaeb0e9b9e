"""The resources sentinel against real process trees (and a real tmux server)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from agentwatch.core import spool
from agentwatch.sentinels.resources.metrics import families
from agentwatch.sentinels.resources.sampler import Sample, Sampler, Session
from agentwatch.sentinels.shared.proctable import ProcTable, PsutilTable, parse_args
from agentwatch.sentinels.shared.tmux import Tmux
from bench.generators.processes import (
    fake_bin,
    kill_tree,
    spawn_session,
    tree_rss,
    wait_for_children,
)
from tests.conftest import run_cli, samples

AGENTS = ["claude", "codex", "aider"]


@pytest.fixture
def trees() -> Iterator[list[subprocess.Popen]]:
    """Session roots started by a test; their whole process groups are killed at the end."""
    started: list[subprocess.Popen] = []
    try:
        yield started
    finally:
        for process in started:
            kill_tree(process)


@pytest.fixture
def bindir(tmp_path: Path) -> Path:
    return tmp_path / "bin"


def session_of(sample: Sample, pid: int) -> Session | None:
    return next((s for s in sample.sessions if s.labels["pid"] == str(pid)), None)


def test_command_lines_that_are_and_are_not_agents() -> None:
    assert (
        parse_args(["node", "/usr/lib/node_modules/@openai/codex/bin/codex.js"]).script == "codex"
    )
    assert parse_args(["node", "--max-old-space-size=4096", "/x/bin/claude"]).script == "claude"
    assert parse_args(["python3", "-m", "aider.main"]).script == "aider"
    assert parse_args(["grep", "claude"]).script == ""
    assert parse_args(["vim", "/home/u/.claude/settings.json"]).argv0 == "vim"
    assert parse_args(["node", "-e", "claude"]).script == ""
    assert parse_args(["/v/bin/python", "-m", "agentwatch.cli", "up"]).agentwatch
    assert parse_args(["/v/bin/python", "/v/bin/agentwatch", "exporter"]).agentwatch
    assert parse_args(["/v/bin/agentwatch", "exporter"]).agentwatch
    assert not parse_args(["less", "agentwatch.log"]).agentwatch


def test_tree_cpu_memory_and_count(trees: list, bindir: Path, tmp_path: Path) -> None:
    project = tmp_path / "my-project"
    project.mkdir()
    root = spawn_session(bindir, sleepers=("node", "node", "codex"), busy=1, cwd=project)
    trees.append(root)
    codex = next(p.pid for p in psutil.Process(root.pid).children() if p.name() == "codex")
    sampler = Sampler(AGENTS)
    first = session_of(sampler.cycle(), root.pid)
    assert first is not None
    assert first.usage.cpu_total is None and first.usage.cores is None  # priming, not a 0
    time.sleep(1.0)
    sample = sampler.cycle()
    session = session_of(sample, root.pid)
    assert session is not None
    assert session_of(sample, codex) is None  # an agent started by an agent: same session
    assert session.labels["agent"] == "claude"
    assert session.labels["project"] == "my-project"
    assert session.labels["tmux_pane"] == ""
    assert session.usage.processes == 5  # root, node, node, codex, busy child
    assert session.usage.rss == pytest.approx(tree_rss(root.pid), rel=0.02)
    assert session.usage.cores is not None and 0.3 < session.usage.cores < 1.3
    assert session.usage.cpu_total is not None and session.usage.cpu_total > 0.3
    assert abs(session.start - psutil.Process(root.pid).create_time()) < 0.05
    total = sample.groups["sessions"]
    assert total.processes >= 5 and total.cores is not None and total.cores >= session.usage.cores
    assert sample.agents["claude"] >= 1


@pytest.mark.slow
def test_short_lived_children_count_once(trees: list, bindir: Path, tmp_path: Path) -> None:
    """CPU of children that come and go between (and during) scans counts, and only once."""
    burner = fake_bin(bindir, "burner", "/bin/sh")
    loop = 'i=0; while [ "$i" -lt 600000 ]; do i=$((i+1)); done'
    done = tmp_path / "done"
    extra = f"sleep 1; {burner} -c '{loop}'; {burner} -c '{loop}'; : > {done};"
    root = spawn_session(bindir, sleepers=("node",), extra=extra)
    trees.append(root)
    sampler = Sampler(AGENTS)
    sampler.cycle()
    started = time.monotonic()
    saw_burner = False
    while not done.exists() and time.monotonic() - started < 20:
        time.sleep(0.05)
        sampler.cycle()
        with contextlib.suppress(psutil.NoSuchProcess):  # a burner may exit as we look
            names = {p.name() for p in psutil.Process(root.pid).children()}
            saw_burner = saw_burner or "burner" in names
    sample = sampler.cycle()
    elapsed = time.monotonic() - started
    session = session_of(sample, root.pid)
    assert session is not None and session.usage.cpu_total is not None
    burnt = sum(psutil.Process(root.pid).cpu_times()[2:4])  # reaped children, as the kernel says
    assert burnt > 0.1
    assert session.usage.cpu_total == pytest.approx(burnt, abs=0.05)
    assert session.usage.cpu_total <= elapsed + 0.05
    assert saw_burner  # the scans in between saw it running: still counted only once


def test_tmux_attribution_on_a_private_server(trees: list, bindir: Path) -> None:
    assert shutil.which("tmux"), "tmux is required (Debian package tmux); scripts/setup installs it"
    folder = Path(tempfile.mkdtemp(prefix="aw-tmux-"))  # a short path: sockets are <108 bytes
    sock = str(folder / "sock")
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    base = ["tmux", "-f", "/dev/null", "-S", sock]
    agent = fake_bin(bindir, "claude", "/bin/sh")
    command = f"exec {agent} -c '{fake_bin(bindir, 'node')} 300 & wait'"
    subprocess.run(
        [*base, "new-session", "-d", "-s", "aw-test", "-x", "80", "-y", "20", command],
        env=env,
        check=True,
        timeout=10,
    )
    outside = spawn_session(bindir)
    trees.append(outside)
    try:
        pane_pid = int(
            subprocess.run(
                [*base, "list-panes", "-a", "-F", "#{pane_pid}"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
                timeout=10,
            ).stdout.split()[0]
        )
        wait_for_children(pane_pid, 1)
        sampler = Sampler(AGENTS, tmux=Tmux([sock]))
        sample = sampler.cycle()
        inside = session_of(sample, pane_pid)
        assert inside is not None
        assert inside.labels["tmux_session"] == "aw-test"
        assert inside.labels["tmux_window"] == "0"
        assert inside.labels["tmux_pane"].startswith("%")
        assert inside.usage.processes == 2
        other = session_of(sample, outside.pid)
        assert other is not None and other.labels["tmux_session"] == ""
        assert sample.tmux_panes >= 1 and sample.tmux_failing == 0
    finally:
        subprocess.run([*base, "kill-server"], env=env, timeout=10, check=False)
        for proc in psutil.process_iter():
            try:
                if proc.exe().startswith(str(bindir)) and proc.pid != outside.pid:
                    proc.kill()
            except psutil.Error:
                pass
        shutil.rmtree(folder, ignore_errors=True)


def test_a_broken_tmux_is_a_failing_server_not_a_crash(trees: list, bindir: Path) -> None:
    trees.append(spawn_session(bindir))
    fake = fake_bin(bindir, "tmux", "/bin/false")
    sampler = Sampler(AGENTS, tmux=Tmux(["/nonexistent/sock"], binary=str(fake)))
    sample = sampler.cycle()
    assert sample.tmux_failing == 2 and sample.sessions
    missing = Sampler(AGENTS, tmux=Tmux([], binary=str(bindir / "no-such-tmux")))
    assert missing.cycle().tmux_failing == 0


def _render(sample: Sample, sampler: Sampler) -> dict:
    return samples(spool.render(families(sample, sampler.agent_names, sampler.errors)))


def test_series_vanish_when_the_session_ends(trees: list, bindir: Path) -> None:
    root = spawn_session(bindir, sleepers=("node", "node"))
    trees.append(root)
    sampler = Sampler(AGENTS)
    sampler.cycle()
    rendered = _render(sampler.cycle(), sampler)
    mine = [key for key in rendered if ("pid", str(root.pid)) in key[1]]
    assert {name for name, _ in mine} == {
        "agentwatch_agent_session_cpu_seconds_total",
        "agentwatch_agent_session_cpu_cores",
        "agentwatch_agent_session_resident_memory_bytes",
        "agentwatch_agent_session_processes",
        "agentwatch_agent_session_start_timestamp_seconds",
    }
    kill_tree(root)
    rendered = _render(sampler.cycle(), sampler)
    assert not [key for key in rendered if ("pid", str(root.pid)) in key[1]]


def test_processes_dying_mid_scan_are_tolerated(
    trees: list, bindir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = spawn_session(bindir, sleepers=("node", "node"))
    trees.append(root)
    victim = subprocess.Popen([str(fake_bin(bindir, "victim")), "300"])
    table = ProcTable()
    real_read = table.read_stat

    def dying_read(pid: int) -> bytes:
        if pid == victim.pid and victim.poll() is None:
            victim.kill()  # dies (and is reaped) between listing /proc and reading it
            victim.wait()
        return real_read(pid)

    monkeypatch.setattr(table, "read_stat", dying_read)
    sampler = Sampler(AGENTS, table=table)
    try:
        sample = sampler.cycle()
    finally:
        if victim.poll() is None:
            victim.kill()
        victim.wait()
    assert sampler.errors["vanished"] >= 1
    session = session_of(sample, root.pid)
    assert session is not None and session.usage.processes == 3


def test_unreadable_processes_are_tolerated(
    trees: list, bindir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests run as root, so "another user's process" is simulated at the read calls."""
    root = spawn_session(bindir, sleepers=("node", "node"))
    trees.append(root)
    child = psutil.Process(root.pid).children()[0].pid
    table = ProcTable()
    real_read = table.read_stat

    def denied(pid: int) -> bytes:
        if pid == child:
            raise PermissionError(13, "Permission denied")
        return real_read(pid)

    def denied_cwd(pid: int) -> str:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(table, "read_stat", denied)
    monkeypatch.setattr(table, "cwd", denied_cwd)
    sampler = Sampler(AGENTS, table=table)
    sample = sampler.cycle()
    session = session_of(sample, root.pid)
    assert session is not None
    assert session.usage.processes == 2  # the unreadable child is left out, not fatal
    assert session.labels["project"] == ""
    assert sampler.errors["denied"] >= 2


def test_psutil_fallback_sees_the_same_tree(
    trees: list, bindir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = spawn_session(bindir, sleepers=("node", "node"), cwd=bindir)
    trees.append(root)
    child = psutil.Process(root.pid).children()[0].pid
    real = psutil.Process.cmdline

    def denied(self: psutil.Process) -> object:
        if self.pid == child:
            raise psutil.AccessDenied(self.pid)
        return real(self)

    fast = session_of(Sampler(AGENTS).cycle(), root.pid)
    monkeypatch.setattr(psutil.Process, "cmdline", denied)
    sampler = Sampler(AGENTS, table=PsutilTable())
    slow = session_of(sampler.cycle(), root.pid)
    assert fast is not None and slow is not None
    assert fast.labels == slow.labels
    assert (fast.usage.processes, slow.usage.processes) == (3, 2)
    assert sampler.errors["denied"] >= 1


def test_orchestrator_and_own_processes(trees: list, bindir: Path, tmp_path: Path) -> None:
    """The orchestrator's tree counts without the agent sessions it started."""
    session = f"{fake_bin(bindir, 'claude', '/bin/sh')} -c '{fake_bin(bindir, 'node')} 300 & wait'"
    orchestrator = spawn_session(
        bindir, agent="bernstein", sleepers=("helper",), extra=session + " &"
    )
    trees.append(orchestrator)
    wait_for_children(orchestrator.pid, 2)
    by_name = Sampler(AGENTS, orchestrator_name="bernstein").cycle()
    assert by_name.orchestrator_running is True
    assert by_name.groups["orchestrator"].processes == 2  # itself and its helper
    pidfile = tmp_path / "orch.pid"
    pidfile.write_text(f"{orchestrator.pid}\n")
    by_file = Sampler(AGENTS, orchestrator_pidfile=pidfile).cycle()
    assert by_file.groups["orchestrator"].processes == 2
    claude = [s for s in by_file.sessions if s.labels["agent"] == "claude"]
    assert any(psutil.Process(int(s.labels["pid"])).ppid() == orchestrator.pid for s in claude)
    pidfile.unlink()
    missing = Sampler(AGENTS, orchestrator_pidfile=pidfile).cycle()
    assert missing.orchestrator_running is False and "orchestrator" not in missing.groups
    assert Sampler(AGENTS).cycle().orchestrator_running is None


def test_once_writes_a_valid_spool_file(trees: list, bindir: Path, tmp_path: Path) -> None:
    root = spawn_session(bindir, sleepers=("node",), busy=1, cwd=bindir)
    trees.append(root)
    spool_dir, state_dir = tmp_path / "spool", tmp_path / "state"
    config = tmp_path / "config.yaml"
    config.write_text("agents:\n  names: [claude, codex]\n")
    result = run_cli(
        "--config",
        str(config),
        "sentinel",
        "resources",
        "--once",
        "--spool-dir",
        str(spool_dir),
        "--state-dir",
        str(state_dir),
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    text = (spool_dir / "resources.prom").read_text()
    values = samples(text)
    labels = (
        ("agent", "claude"),
        ("pid", str(root.pid)),
        ("project", "bin"),
        ("tmux_pane", ""),
        ("tmux_session", ""),
        ("tmux_window", ""),
    )
    assert values[("agentwatch_agent_session_processes", labels)] == 3
    assert values[("agentwatch_agent_session_cpu_cores", labels)] > 0.3
    assert values[("agentwatch_resources_processes", (("group", "agentwatch"),))] >= 1
    if shutil.which("promtool"):
        check = subprocess.run(
            ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
        )
        assert check.returncode == 0, check.stdout + check.stderr
