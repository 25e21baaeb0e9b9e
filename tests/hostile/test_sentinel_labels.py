"""Hostile label sources through the real sentinels (issue 12, case 2): every C0 control
character, quotes, backslashes, `}` and invalid UTF-8 in a process's working directory, a tmux
session and window name on a private server, a repository's path, name and tags, and a running
process's name and command line. Each `--once` run must exit 0 and write a spool file that is
UTF-8, passes `promtool check metrics` and parses back with the sanitized values.

What each source can hold: a path or an argv holds any byte but NUL (`/` separates); tmux 3.3
names hold any byte but NUL (it escapes a session name's controls itself, not a window's); the
YAML config (repository names and paths) holds any Unicode text but not invalid UTF-8; git ref
names hold no controls or spaces (git refuses them) but quotes, `}` and invalid UTF-8.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentwatch.core.sanitize import MAX_LABEL_LENGTH, label_value
from bench.generators.processes import fake_bin, kill_tree, spawn_session, wait_for_children
from tests.hostile.sentinel_support import (
    HOSTILE,
    HOSTILE_HALVES,
    HOSTILE_TEXT,
    TmuxServer,
    once,
    private_tmux,
    series,
    warnings,
)


@pytest.fixture
def tmux() -> Iterator[TmuxServer]:
    yield from private_tmux()


def assert_safe(value: str) -> None:
    """No control character, no surrogate, at most MAX_LABEL_LENGTH characters."""
    assert len(value) <= MAX_LABEL_LENGTH, value
    assert not any(
        ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or 0xD800 <= ord(c) < 0xE000 for c in value
    )


def hostile_folder(parent: Path, name: bytes) -> bytes:
    folder = os.path.join(os.fsencode(parent), name)
    os.mkdir(folder)
    return folder


def test_resources_hostile_cwd_and_tmux_names(tmux: TmuxServer, workdirs: dict[str, Path]) -> None:
    bindir = workdirs["state"].parent / "bin"
    agent, node = fake_bin(bindir, "claude", "/bin/sh"), fake_bin(bindir, "node")
    long_name = HOSTILE + b"x" * (255 - len(HOSTILE))  # the longest name a folder may have
    first, second = HOSTILE_HALVES
    # in tmux: a session and a window with hostile names, the agent in a hostile folder
    tmux.run(
        "new-session", "-d", "-s", HOSTILE, "-n", HOSTILE, "-c",
        hostile_folder(workdirs["state"].parent, first), "-x", "80", "-y", "20",
        f"exec {agent} -c '{node} 300 & wait'",
    )  # fmt: skip
    listed = tmux.run("list-panes", "-a", "-F", "#{pane_pid}\t#{session_name}").rstrip(b"\n")
    pane_pid, session_name = listed.split(b"\t", 1)
    wait_for_children(int(pane_pid), 1)
    # outside tmux: agents in the other half's folder and in one with a 255-byte name
    roots = [
        subprocess.Popen(
            [str(agent), "-c", f"{node} 300 & wait"],
            cwd=hostile_folder(workdirs["state"].parent, name),
            start_new_session=True,
        )
        for name in (second, long_name)
    ]
    try:
        for root in roots:
            wait_for_children(root.pid, 1)
        result, values = once(
            "resources", workdirs, {"agents": {"names": ["claude"], "tmux_sockets": [tmux.sock]}},
            env=tmux.env,
        )  # fmt: skip
    finally:
        for root in roots:
            kill_tree(root)
    sessions = {
        labels["pid"]: labels for labels, _ in series(values, "agentwatch_agent_session_processes")
    }
    in_tmux = sessions[pane_pid.decode()]
    other, long_one = (sessions[str(root.pid)] for root in roots)
    assert in_tmux["project"] == label_value(first)
    assert in_tmux["project"] == (
        "aw\"'\\}{=,#\\xff\\xfe\\xc3(\\x7f"
        "\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\x09\\x0a\\x0b\\x0c\\x0d\\x0e\\x0f\\x10"
    )
    assert other["project"] == label_value(second)
    assert other["project"] == (
        'aw\\x11\\x12\\x13\\x14\\x15\\x16\\x17\\x18\\x19\\x1a\\x1b\\x1c\\x1d\\x1e\\x1f"}'
    )
    assert in_tmux["tmux_session"] == label_value(session_name.decode("utf-8", "replace"))
    assert in_tmux["tmux_window"] == "0" and in_tmux["tmux_pane"].startswith("%")
    assert long_one["project"] == label_value(long_name)
    assert len(long_one["project"]) == MAX_LABEL_LENGTH  # cut, with the hash of the whole
    for labels in (in_tmux, other, long_one):
        for value in labels.values():
            assert_safe(value)
    assert warnings(result.stderr) == []


def test_idle_error_hostile_tmux_session_and_window(
    tmux: TmuxServer, workdirs: dict[str, Path]
) -> None:
    bindir = workdirs["state"].parent / "bin"
    bindir.mkdir()
    screen = bindir / "screen.txt"
    screen.write_text("⏺ Done.\n\n> \n")
    agent = bindir / "claude"
    agent.write_text('#!/bin/sh\ncat "$1"\nwhile :; do sleep 60; done\n')
    agent.chmod(0o755)
    cwd = hostile_folder(workdirs["state"].parent, HOSTILE)
    tmux.run(
        "new-session", "-d", "-s", HOSTILE, "-n", HOSTILE, "-c", cwd, "-x", "80", "-y", "20",
        f"{agent} {screen}",
    )  # fmt: skip
    session_name = tmux.run("list-sessions", "-F", "#{session_name}").rstrip(b"\n")
    window_name = tmux.run("list-windows", "-a", "-F", "#{window_name}").rstrip(b"\n")
    assert b"\r" in window_name  # tmux keeps a window name raw: the sentinel never uses it
    deadline = time.monotonic() + 10
    while "Done." not in tmux.run("capture-pane", "-p", "-t", "%0").decode():
        assert time.monotonic() < deadline, "the agent never printed its screen"
        time.sleep(0.05)
    result, values = once(
        "idle-error", workdirs, {"agents": {"names": ["claude"], "tmux_sockets": [tmux.sock]}},
        env=tmux.env,
    )  # fmt: skip
    states = series(values, "agentwatch_pane_state")
    assert {labels["tmux_session"] for labels, _ in states} == {
        label_value(session_name.decode("utf-8", "replace"))
    }
    assert [labels["state"] for labels, value in states if value == 1] == ["idle"]
    for labels, _ in states:
        for value in labels.values():
            assert_safe(value)
    assert warnings(result.stderr) == []


def git(repo: Path | bytes, *args: str | bytes) -> None:
    subprocess.run(
        ["git", "-C", repo, *args], check=True, capture_output=True, timeout=30,
        env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
             "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"},
    )  # fmt: skip


def test_release_readiness_hostile_repository_names_paths_and_tags(
    workdirs: dict[str, Path],
) -> None:
    base = workdirs["state"].parent
    at_hostile_path = base / HOSTILE_TEXT  # its name is its path's last part
    named = base / "plain"
    for repo in (at_hostile_path, named):
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        git(repo, "commit", "-q", "--allow-empty", "-m", "one")
        git(repo, "tag", b"v1\"}'{\xff\xfe")  # quotes, braces, invalid UTF-8
        git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    long_name = "\r" + HOSTILE_TEXT * 8
    result, values = once(
        "release-readiness",
        workdirs,
        {
            "sentinels": {
                "release-readiness": {
                    "repositories": [
                        {"path": str(at_hostile_path)},
                        {"path": str(named), "name": long_name, "probes": {"command": ["true"]}},
                    ]
                }
            }
        },
    )
    unreleased = {labels["repo"]: value for labels, value in series(
        values, "agentwatch_release_unreleased_commits")}  # fmt: skip
    assert unreleased == {label_value(HOSTILE_TEXT): 1, label_value(long_name): 1}
    assert label_value(HOSTILE_TEXT).startswith("aw\\x01\\x02")
    assert len(label_value(long_name)) == MAX_LABEL_LENGTH
    probes = series(values, "agentwatch_release_probe_blocked")
    assert probes == [({"repo": label_value(long_name), "probe": "command"}, 0.0)]
    for (_, labels), _value in values.items():
        for _key, value in labels:
            assert_safe(value)
    assert warnings(result.stderr) == []
    for line in result.stderr.splitlines():  # repository names in log lines are escaped too
        assert "\r" not in line and "\x1b" not in line


def test_footprint_hostile_process_name_and_command_line(workdirs: dict[str, Path]) -> None:
    bindir = workdirs["state"].parent / "bin"
    bindir.mkdir()
    program = os.path.join(os.fsencode(bindir), HOSTILE)
    shutil.copy2("/bin/sleep", program)  # comm: the first 15 bytes of the hostile name
    hostile = subprocess.Popen(
        [program, "300", HOSTILE, b"claude", b"mcp"], start_new_session=True
    )  # fmt: skip
    try:
        result, values = once("footprint", workdirs)
    finally:
        hostile.kill()
        hostile.wait(timeout=10)
    kinds = {labels["kind"] for labels, _ in series(values, "agentwatch_footprint_processes")}
    assert kinds and all(kind.isidentifier() for kind in kinds)  # the fixed kinds only
    assert values[("agentwatch_footprint_scan_success", ())] == 1
    assert warnings(result.stderr) == []


def test_resources_sessions_past_the_cap_fold_into_the_totals(workdirs: dict[str, Path]) -> None:
    """Issue 12, case 3 for resources: a flood of processes named like an agent cannot give
    one series per process; past max_sessions the newest are counted, not exported."""
    bindir = workdirs["state"].parent / "bin"
    roots = []
    try:
        for _ in range(4):
            roots.append(spawn_session(bindir))
        config = {"agents": {"names": ["claude"]}, "sentinels": {"resources": {"max_sessions": 2}}}
        result, values = once("resources", workdirs, config)
    finally:
        for root in roots:
            kill_tree(root)
    exported = [labels["pid"] for labels, _ in series(values, "agentwatch_agent_session_processes")]
    live = values[("agentwatch_agent_sessions", (("agent", "claude"),))]
    folded = values[("agentwatch_resources_sessions_folded", ())]
    assert len(exported) == 2 and live >= 4  # other claude processes may run on this host
    assert folded == live - 2
    assert str(roots[-1].pid) not in exported  # the newest fold first
    processes = values[("agentwatch_resources_processes", (("group", "sessions"),))]
    assert processes >= 8  # every session's tree is still in the total
    lines = warnings(result.stderr)
    assert len(lines) == 1 and "max_sessions (2) failing" in lines[0], result.stderr
    assert f"{int(folded)} more live sessions are counted in the totals only" in lines[0]
