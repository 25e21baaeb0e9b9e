"""`agentwatch hook`, run as Claude Code runs it: the real console script in a subprocess, the
recorded 2.1.328 payloads on stdin (tests/fixtures/hooks/), real files, real git repositories.

Every call exits 0 with nothing on stdout or stderr; what it could not do is counted."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentwatch.cli import hook
from agentwatch.core import claude, claude_events

AGENTWATCH = str(Path(sys.executable).parent / "agentwatch")
FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
PLANTED = ("PLANTED-PROMPT", "PLANTED-TOOL", "PLANTED-ASSISTANT")
SESSION = "771f2fee-076f-454f-a028-c8cc72859343"


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def call(
    state: Path, data: bytes, env: dict[str, str] | None = None, *args: str
) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [AGENTWATCH, "hook", "--state-dir", str(state), *args],
        input=data,
        capture_output=True,
        env=dict(os.environ, **(env or {})),
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    return done


def events(state: Path) -> list[dict[str, Any]]:
    path = claude_events.events_dir(state) / claude_events.EVENTS
    return [json.loads(line) for line in path.read_text().splitlines()]


def digest(name: str, salt: bytes) -> str:
    """The hash the hook writes of a fixture's tool input (the install's salt, then the
    canonical JSON; sha256)."""
    text = json.dumps(fixture(name)["tool_input"], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(salt + text.encode()).hexdigest()


SALT = b"s" * claude_events.SALT_BYTES


INPUT = claude_events.INPUT_HASH
EXPECTED = {  # fixture -> the line's fields besides v, t, s, pane
    "SessionStart": {"e": "SessionStart", "p": "cap-project"},
    "UserPromptSubmit": {"e": "UserPromptSubmit", "p": "cap-project"},
    "PreToolUse": {
        "e": "PreToolUse",
        "p": "cap-project",
        "tool": "Bash",
        INPUT: "PreToolUse",  # digest(name, the state's salt)
    },
    "PostToolUse": {"e": "PostToolUse", "p": "cap-project", "tool": "Bash", "ok": True},
    "PostToolUseFailure": {"e": "PostToolUse", "p": "cap-project", "tool": "Bash", "ok": False},
    "PreToolUse-Agent": {
        "e": "PreToolUse",
        "p": "cap-project",
        "tool": "Agent",
        INPUT: "PreToolUse-Agent",
    },
    "PermissionRequest": {"e": "PermissionRequest", "p": "tui-project", "tool": "Bash"},
    "Notification": {"e": "Notification", "p": "tui-project", "kind": "permission_prompt"},
    "Stop": {"e": "Stop", "p": "cap-project"},
    "StopFailure": {"e": "StopFailure", "p": "cap-project", "kind": "rate_limit"},
    "SubagentStop": {"e": "SubagentStop", "p": "cap-project", "agent": "general-purpose"},
    "PreCompact": {"e": "PreCompact", "p": "cap-project"},
    "SessionEnd": {"e": "SessionEnd", "p": "cap-project", "reason": "other"},
    "SessionEnd-exit": {"e": "SessionEnd", "p": "tui-project", "reason": "prompt_input_exit"},
}


def test_each_recorded_event_gives_its_line_and_no_payload_text(tmp_path: Path) -> None:
    state = tmp_path / "state"
    for name in EXPECTED:
        call(state, (FIXTURES / f"{name}.json").read_bytes(), {"TMUX_PANE": ""})
    lines = events(state)
    assert len(lines) == len(EXPECTED)
    salt = claude_events.salt(state)
    assert salt is not None
    for name, line in zip(EXPECTED, lines, strict=True):
        assert line.pop("v") == 1 and line.pop("s") == fixture(name)["session_id"]
        assert isinstance(line.pop("t"), float) and line.pop("pane") == ""
        want = dict(EXPECTED[name])
        if INPUT in want:
            want[INPUT] = digest(str(want[INPUT]), salt)
        assert line == want, name
    everything = b"".join(p.read_bytes() for p in state.rglob("*") if p.is_file())
    fed = "".join((FIXTURES / f"{name}.json").read_text() for name in EXPECTED)
    for secret in PLANTED:
        assert secret in fed  # the payloads carried it

        assert secret.encode() not in everything
    assert claude_events.read_counters(state) == {}


def test_the_pane_and_an_unknown_event(tmp_path: Path) -> None:
    state = tmp_path / "state"
    call(state, (FIXTURES / "Stop.json").read_bytes(), {"TMUX_PANE": "%7"})
    call(state, (FIXTURES / "SubagentStart.json").read_bytes())  # not one the spool records
    assert [line["pane"] for line in events(state)] == ["%7"]
    assert claude_events.read_counters(state) == {claude_events.UNKNOWN_EVENT: 1}


def test_message_display_and_post_tool_batch_are_ignored_not_unknown(tmp_path: Path) -> None:
    """2.1.328 sends both to a hook configured for them (their fields from the binary:
    MessageDisplay turn_id, message_id, index, final, delta (the text!); PostToolBatch
    tool_calls): no line, no count, and never the message text."""
    state = tmp_path / "state"
    base = {key: value for key, value in fixture("Stop.json"[:-5]).items()
            if key in ("session_id", "transcript_path", "cwd", "permission_mode")}  # fmt: skip
    display = {**base, "hook_event_name": "MessageDisplay", "turn_id": "t1",
               "message_id": "msg_1", "index": 0, "final": True,
               "delta": "PLANTED text"}  # fmt: skip
    batch = {**base, "hook_event_name": "PostToolBatch",
             "tool_calls": [{"tool_name": "Bash", "tool_use_id": "toolu_1"}]}  # fmt: skip
    for payload in (display, batch):
        call(state, json.dumps(payload).encode())
    assert claude_events.read_counters(state) == {}
    assert not (claude_events.events_dir(state) / claude_events.EVENTS).exists()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"{not json", claude_events.BAD_JSON),
        (b"", claude_events.BAD_JSON),
        (b"[1, 2]", claude_events.BAD_JSON),
        (b"\xff\xfe{}", claude_events.BAD_JSON),
        (b'{"hook_event_name": "Stop"}', claude_events.NO_SESSION),
        (b'{"session_id": "x", "hook_event_name": "Bogus"}', claude_events.UNKNOWN_EVENT),
        (b'{"session_id": "x", "hook_event_name": "Stop", "p": "' + b"a" * 10**7 + b'"}',
         claude_events.TOO_LARGE),
    ],
)  # fmt: skip
def test_bad_input_exits_0_silently_and_is_counted(
    tmp_path: Path, data: bytes, reason: str
) -> None:
    state = tmp_path / "state"
    call(state, data)
    call(state, data)
    assert claude_events.read_counters(state) == {reason: 2}
    assert not (claude_events.events_dir(state) / claude_events.EVENTS).exists()


def test_a_stdin_that_never_closes(tmp_path: Path) -> None:
    state = tmp_path / "state"
    process = subprocess.Popen(
        [AGENTWATCH, "hook", "--state-dir", str(state)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None
    process.stdin.write((FIXTURES / "Stop.json").read_bytes())
    process.stdin.flush()  # and never closed
    try:
        assert process.wait(timeout=20) == 0
        assert process.stdout is not None and process.stderr is not None
        out, err = process.stdout.read(), process.stderr.read()
    finally:
        process.stdin.close()
        process.kill()
        process.wait()
    assert (out, err) == (b"", b"")
    assert claude_events.read_counters(state) == {claude_events.STDIN_TIMEOUT: 1}
    assert [line["e"] for line in events(state)] == ["Stop"]  # the whole object came


def test_a_missing_state_dir_is_created_private(tmp_path: Path) -> None:
    state = tmp_path / "not" / "yet" / "state"
    call(state, (FIXTURES / "Stop.json").read_bytes())
    assert [line["e"] for line in events(state)] == ["Stop"]
    assert (claude_events.events_dir(state).stat().st_mode & 0o777) == 0o700
    path = claude_events.events_dir(state) / claude_events.EVENTS
    assert (path.stat().st_mode & 0o777) == 0o600


def test_the_default_state_dir_is_the_environment_one(tmp_path: Path) -> None:
    state = tmp_path / "from-env"
    done = subprocess.run(
        [AGENTWATCH, "hook"],
        input=(FIXTURES / "Stop.json").read_bytes(),
        capture_output=True,
        env=dict(os.environ, AGENTWATCH_STATE_DIR=str(state)),
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, b"")
    assert [line["e"] for line in events(state)] == ["Stop"]


def test_an_unusable_state_dir_still_exits_0(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    call(blocker / "state", (FIXTURES / "Stop.json").read_bytes())  # cannot even count
    assert blocker.read_text() == ""


def test_an_unwritable_spool_and_a_full_disk_are_counted(tmp_path: Path) -> None:
    state = tmp_path / "state"
    folder = claude_events.events_dir(state)
    folder.mkdir(parents=True)
    (folder / claude_events.EVENTS).mkdir()  # not a file we can append to
    call(state, (FIXTURES / "Stop.json").read_bytes())
    assert claude_events.read_counters(state) == {claude_events.SPOOL_REFUSED: 1}
    (folder / claude_events.EVENTS).rmdir()
    (folder / claude_events.EVENTS).write_bytes(b"x" * 8192)
    # A full disk: the hook may not grow any file past 8 KiB (write: EFBIG; Python ignores
    # SIGXFSZ), which events.jsonl already is; counters.json stays far below it.
    done = subprocess.run(
        [AGENTWATCH, "hook", "--state-dir", str(state)],
        input=(FIXTURES / "Stop.json").read_bytes(),
        capture_output=True,
        timeout=30,
        check=False,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192)),
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert claude_events.read_counters(state) == {
        claude_events.SPOOL_REFUSED: 1,
        claude_events.SPOOL_UNWRITABLE: 1,
    }
    assert (folder / claude_events.EVENTS).stat().st_size == 8192


def test_twenty_hooks_at_once_never_interleave(tmp_path: Path) -> None:
    state = tmp_path / "state"
    payloads = []
    for number in range(20):
        payload = fixture("PostToolUse")
        payload["session_id"] = f"{number:02d}" + "s" * 200  # long lines (cut at 128)
        payload["tool_name"] = f"mcp__server{number}__" + "t" * 200
        payloads.append(json.dumps(payload).encode())
    processes = [
        subprocess.Popen(
            [AGENTWATCH, "hook", "--state-dir", str(state)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
        )
        for _ in payloads
    ]
    for process, data in zip(processes, payloads, strict=True):  # all started, then all fed
        assert process.stdin is not None
        process.stdin.write(data)
        process.stdin.close()
    assert [process.wait(timeout=60) for process in processes] == [0] * 20
    raw = (claude_events.events_dir(state) / claude_events.EVENTS).read_text()
    lines = [json.loads(line) for line in raw.splitlines()]
    assert sorted(line["s"][:2] for line in lines) == [f"{n:02d}" for n in range(20)]
    assert all(len(line["s"]) == 128 and line["tool"].startswith("mcp__") for line in lines)


@pytest.mark.slow
def test_rotation_keeps_the_spool_bounded_and_counts_what_it_drops(tmp_path: Path) -> None:
    """Each file is filled to ROTATE_BYTES with the writer's own lines (fast), and the next
    append_event rotates it; past KEEP_ROTATED the oldest is deleted with its line count in
    dropped.json, and no line is lost at a seam."""
    state = tmp_path / "state"
    folder = claude_events.events_dir(state)
    payload = fixture("PreToolUse")
    number, per_file = 0, []

    def line(n: int) -> dict[str, object]:
        found = hook.record(dict(payload, tool_use_id=str(n)), float(n), "")
        found["tool"] = f"Bash{n}"
        return found

    rotations = claude_events.KEEP_ROTATED + 2
    for _ in range(rotations):
        claude_events.append_event(state, line(number))
        number += 1
        size = (folder / claude_events.EVENTS).stat().st_size
        with (folder / claude_events.EVENTS).open("ab") as spool:
            while size < claude_events.ROTATE_BYTES:
                data = claude_events.encode(line(number))
                spool.write(data)
                size += len(data)
                number += 1
        per_file.append(len((folder / claude_events.EVENTS).read_bytes().splitlines()))
    claude_events.append_event(state, line(number))  # rotates the last full one
    names = {path.name for path in folder.iterdir()}
    rotated = {claude_events.rotated(folder, n).name for n in range(1, 5)}
    assert names == {claude_events.EVENTS, ".rotate.lock", claude_events.DROPPED} | rotated
    for name in names - {".rotate.lock", claude_events.DROPPED}:
        size = (folder / name).stat().st_size
        assert size <= claude_events.ROTATE_BYTES + claude_events.MAX_LINE
    dropped = claude_events.read_dropped(folder)
    assert dropped["files"] == 2 and dropped["lines"] == per_file[0] + per_file[1]
    kept = [claude_events.rotated(folder, n) for n in range(4, 0, -1)]
    kept.append(folder / claude_events.EVENTS)
    tools = [int(json.loads(raw)["tool"][4:]) for path in kept
             for raw in path.read_bytes().splitlines()]  # fmt: skip
    assert tools == list(range(per_file[0] + per_file[1], number + 1))  # no seam loses one


def test_a_line_never_passes_max_line() -> None:
    record = {"v": 1, "t": 1.0, "s": "s", "e": "Stop", "p": "\\" * 700, "tool": "\\" * 700}
    data = claude_events.encode(record)
    assert len(data) <= claude_events.MAX_LINE and data.endswith(b"\n")
    assert "tool" not in json.loads(data) and "p" in json.loads(data)


@pytest.mark.parametrize("cwd", ["/home/a/my.app", "/home/a/my.app/", "/", "", "x", "/a/b\nc"])
def test_the_project_is_core_claude_project_name(cwd: str) -> None:
    line = hook.record(dict(fixture("Stop"), cwd=cwd or None), 1.0, "")
    from agentwatch.core.sanitize import label_value

    expected = label_value(claude.project_name(cwd)) if cwd else None
    assert line.get("p") == expected


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@e", GIT_CONFIG_GLOBAL="/dev/null")  # fmt: skip
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env=env, timeout=30, check=True)  # fmt: skip
    return done.stdout.strip()


def head_at(state: Path, cwd: Path, event: str = "SessionStart") -> str | None:
    call(state, json.dumps(dict(fixture(event), cwd=str(cwd))).encode())
    return events(state)[-1].get("head")


def test_git_head_at_session_start_and_end(tmp_path: Path) -> None:
    state, repo = tmp_path / "state", tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    assert head_at(state, repo) is None  # no commit yet: unknown
    (repo / "f").write_text("1")
    git(repo, "add", "f")
    git(repo, "commit", "-qm", "one")
    (repo / "sub" / "deeper").mkdir(parents=True)
    assert head_at(state, repo / "sub" / "deeper") == git(repo, "rev-parse", "HEAD")
    git(repo, "pack-refs", "--all")  # refs/heads/main now only in packed-refs
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert head_at(state, repo, "SessionEnd") == git(repo, "rev-parse", "HEAD")
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"))
    (tmp_path / "wt" / "g").write_text("2")
    git(tmp_path / "wt", "add", "g")
    git(tmp_path / "wt", "commit", "-qm", "two")
    assert head_at(state, tmp_path / "wt") == git(tmp_path / "wt", "rev-parse", "HEAD")
    assert head_at(state, repo) != head_at(state, tmp_path / "wt")
    git(repo, "checkout", "-q", "--detach", "HEAD")
    assert head_at(state, repo) == git(repo, "rev-parse", "HEAD")
    assert head_at(state, tmp_path / "elsewhere") is None  # no repository at all
    assert head_at(state, repo, "Stop") is None  # only at start and end


def test_the_full_command_line_knows_both_commands(tmp_path: Path) -> None:
    listed = subprocess.run([AGENTWATCH, "--help"], capture_output=True, text=True, timeout=60,
                            check=True).stdout  # fmt: skip
    assert "hook" in listed and "statusline" in listed
    for command in ("hook", "statusline"):
        shown = subprocess.run([AGENTWATCH, command, "--help"], capture_output=True, text=True,
                               timeout=60, check=True).stdout  # fmt: skip
        assert "--state-dir" in shown and "Always exits 0" in " ".join(shown.split())
    state = tmp_path / "state"
    done = subprocess.run(  # `python -m agentwatch.cli` takes the same fast path
        [sys.executable, "-m", "agentwatch.cli", "hook", "--state-dir", str(state)],
        input=(FIXTURES / "Stop.json").read_bytes(),
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert [line["e"] for line in events(state)] == ["Stop"]
    full = "import sys; from agentwatch.cli.main import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(  # and cli.main.main itself, for callers of the full parser
        [sys.executable, "-c", full, "hook", "--state-dir", str(state)],
        input=b"{", capture_output=True, timeout=30, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert claude_events.read_counters(state) == {claude_events.BAD_JSON: 1}


def test_only_the_tool_inputs_hash_is_kept_and_key_order_does_not_change_it() -> None:
    payload = fixture("PreToolUse")
    line = hook.record(payload, 1.0, "", SALT)
    reordered = dict(payload, tool_input=dict(reversed(list(payload["tool_input"].items()))))
    assert hook.record(reordered, 2.0, "", SALT)[INPUT] == line[INPUT] == digest("PreToolUse", SALT)
    changed = dict(payload, tool_input={**payload["tool_input"], "command": "echo other"})
    assert hook.record(changed, 3.0, "", SALT)[INPUT] != line[INPUT]
    assert INPUT not in hook.record(fixture("PostToolUse"), 4.0, "", SALT)  # PreToolUse only
    assert INPUT not in hook.record(payload, 5.0, "")  # no salt: no hash (it could be reversed)
    del payload["tool_input"]
    assert INPUT not in hook.record(payload, 6.0, "", SALT)
    deep: list[object] = []
    for _ in range(100_000):  # an input JSON cannot write back: the event stays, unhashed
        deep = [deep]
    kept = hook.record(dict(payload, tool_input=deep), 7.0, "", SALT)
    assert kept["e"] == "PreToolUse" and INPUT not in kept


def test_the_hash_is_salted_per_install(tmp_path: Path) -> None:
    """An unsalted sha256 of a short input (`ls`) is found again by hashing candidates: each
    install hashes with its own secret salt, a 0600 file made on first use."""
    payload = (FIXTURES / "PreToolUse.json").read_bytes()
    hashes = []
    for name in ("one", "two"):
        state = tmp_path / name
        call(state, payload)
        salt_file = claude_events.events_dir(state) / claude_events.SALT
        assert stat.S_IMODE(salt_file.stat().st_mode) == 0o600
        assert len(salt_file.read_bytes()) == 2 * claude_events.SALT_BYTES
        hashes.append(events(state)[0][INPUT])
    unsalted = claude_events.input_hash(fixture("PreToolUse")["tool_input"])
    assert len(set(hashes)) == 2 and unsalted not in hashes
    call(tmp_path / "one", payload)  # the salt stays: a repeat still hashes the same
    assert events(tmp_path / "one")[1][INPUT] == hashes[0]
