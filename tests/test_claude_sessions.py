"""The claude-sessions sentinel on real spool files: every state from event sequences, the
tool and sub-agent counters, rotation, bounds and expiry, commit-completion against a real git
repository, the official quota, restart safety and `--once` through the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from agentwatch.core import claude_events
from agentwatch.sentinels import registry
from agentwatch.sentinels.claude_sessions.main import ClaudeSessions
from agentwatch.sentinels.claude_sessions.sessions import STATES
from agentwatch.sentinels.contract import Context
from tests import claude_spool as spool
from tests.claude_spool import append, event, git, head, rotate, snapshot
from tests.conftest import CLI, run_cli, samples

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


class _Families:
    def __init__(self, work: ClaudeSessions):
        self.work = work

    def collect(self):  # type: ignore[no-untyped-def]
        return self.work.families()


def build(
    state: Path, clock: Callable[[], float] = time.time, **settings: object
) -> ClaudeSessions:
    config = registry.config_from_mapping({"sentinels": {"claude-sessions": settings}})
    context = Context(
        config, state / "spool", state, True, lambda: None, lambda: False, "claude-sessions"
    )
    return ClaudeSessions(context, clock=clock)


def scrape(work: ClaudeSessions) -> Samples:
    metrics = CollectorRegistry(auto_describe=False)
    metrics.register(_Families(work))  # type: ignore[arg-type]
    return samples(generate_latest(metrics).decode())


def value(found: Samples, name: str, **labels: str) -> float | None:
    return found.get((name, tuple(sorted(labels.items()))))


def state_of(found: Samples, session: str) -> str:
    """The one state the state set holds at 1 (and it must be exactly one)."""
    states = [
        dict(labels)["state"]
        for (name, labels), got in found.items()
        if name == "agentwatch_claude_session_state" and dict(labels)["session"] == session
        if got == 1
    ]
    assert len(states) == 1, states
    return states[0]


# --- the state machine ------------------------------------------------------------------------

SEQUENCES = {
    "working": [("SessionStart", {}), ("UserPromptSubmit", {})],
    "waiting_for_permission": [
        ("PreToolUse", {"tool": "Bash"}),
        ("Notification", {"kind": "permission_prompt"}),
    ],
    "waiting_for_input": [("Stop", {}), ("Notification", {"kind": "idle_prompt"})],
    "idle": [("UserPromptSubmit", {}), ("PostToolUse", {"tool": "Read", "ok": True}), ("Stop", {})],
    "compacting": [("UserPromptSubmit", {}), ("PreCompact", {})],
    "ended": [("SessionStart", {}), ("Stop", {}), ("SessionEnd", {"reason": "other"})],
    "failed": [("UserPromptSubmit", {}), ("StopFailure", {"kind": "rate_limit"})],
}


def test_every_state_comes_from_its_event_sequence(tmp_path: Path) -> None:
    assert set(SEQUENCES) == set(STATES)
    start = time.time() - 100
    for number, (wanted, steps) in enumerate(SEQUENCES.items()):
        for offset, (name, fields) in enumerate(steps):
            append(
                tmp_path,
                event(f"s-{wanted}", name, start + number * 10 + offset, p="web", **fields),
            )
    work = build(tmp_path)
    work.cycle()
    found = scrape(work)
    for number, wanted in enumerate(SEQUENCES):
        assert state_of(found, f"s-{wanted}") == wanted
        since = value(
            found,
            "agentwatch_claude_session_state_since_timestamp_seconds",
            session=f"s-{wanted}",
            project="web",
        )
        # since: the event that changed the state (the last one of each sequence)
        assert since == start + number * 10 + len(SEQUENCES[wanted]) - 1, wanted
    failed = {"session": "s-failed", "project": "web", "kind": "rate_limit"}
    assert value(found, "agentwatch_claude_session_failure_info", **failed) == 1
    kinds = [key for key in found if key[0] == "agentwatch_claude_session_failure_info"]
    assert len(kinds) == 1, "only the failed session has a failure kind"
    assert value(found, "agentwatch_claude_sessions", state="working") == 1


def test_an_unrelated_notification_or_a_late_event_keeps_the_state(tmp_path: Path) -> None:
    now = time.time()
    append(
        tmp_path,
        event("a", "Notification", now - 5, kind="permission_prompt"),
        event("a", "Notification", now - 4, kind="auth_success"),  # no state of its own
        event("a", "SubagentStop", now - 3, agent="Explore"),
        event("b", "SessionEnd", now - 2, reason="other"),
        event("b", "PreToolUse", now - 1, tool="Bash"),  # after the end: changes nothing
    )
    work = build(tmp_path)
    work.cycle()
    found = scrape(work)
    assert state_of(found, "a") == "waiting_for_permission"
    assert value(found, "agentwatch_claude_session_subagents_total", session="a", project="") == 1
    assert state_of(found, "b") == "ended"


def test_tool_calls_and_failures_are_counted_by_tool_and_folded_past_the_cap(
    tmp_path: Path,
) -> None:
    now = time.time()
    calls = [("Bash", True), ("Bash", False), ("Read", True), ("Edit", False), ("Grep", True)]
    append(
        tmp_path,
        *[event("s", "PostToolUse", now, p="api", tool=tool, ok=ok) for tool, ok in calls],
        event("s", "PreCompact", now),
        event("s", "PreCompact", now),
        event("s", "SessionStart", now, pane="%7"),
        event("h", "SessionStart", now),
    )
    work = build(tmp_path, max_tools=2)
    work.cycle()
    found = scrape(work)
    labels = {"session": "s", "project": "api"}
    calls_of = {
        dict(key)["tool"]: got
        for (name, key), got in found.items()
        if name == "agentwatch_claude_session_tool_calls_total"
    }
    assert calls_of == {"Bash": 2, "Read": 1, "other": 2}
    failures = "agentwatch_claude_session_tool_failures_total"
    assert value(found, failures, tool="Bash", **labels) == 1
    assert value(found, failures, tool="other", **labels) == 1
    assert value(found, failures, tool="Read", **labels) == 0
    assert value(found, "agentwatch_claude_session_compactions_total", **labels) == 2
    info = "agentwatch_claude_session_info"
    assert value(found, info, mode="tmux", pane="%7", **labels) == 1
    assert value(found, info, session="h", project="", mode="headless", pane="") == 1


# --- bounds and expiry ------------------------------------------------------------------------


def sessions_in(found: Samples) -> set[str]:
    return {dict(k)["session"] for n, k in found if n == "agentwatch_claude_session_info"}


def test_sessions_are_bounded_and_expire_after_the_ttl(tmp_path: Path) -> None:
    now = [time.time()]
    append(tmp_path, *[event(f"s{n}", "UserPromptSubmit", now[0] - 50 + n) for n in range(5)])
    work = build(tmp_path, clock=lambda: now[0], max_sessions=3, session_ttl="1m")
    work.cycle()
    sessions = sessions_in(scrape(work))
    assert sessions == {"s2", "s3", "s4"}, "the most recently active are kept"
    now[0] += 60 - 47.5  # s2 (t-48) is past the 1 min ttl, s3 (t-47) not yet
    work.cycle()
    sessions = sessions_in(scrape(work))
    assert sessions == {"s3", "s4"}
    now[0] += 3600
    work.cycle()
    assert value(scrape(work), "agentwatch_claude_sessions", state="working") == 0


# --- the spool: rotation, restarts, bad lines -------------------------------------------------


def tool_calls(found: Samples) -> float:
    return sum(
        v for (n, _), v in found.items() if n == "agentwatch_claude_session_tool_calls_total"
    )


def test_rotation_is_followed_without_losing_or_repeating_a_line(tmp_path: Path) -> None:
    now = time.time()
    post = lambda n: event("s", "PostToolUse", now, tool="Bash", ok=True, n=n)  # noqa: E731
    append(tmp_path, post(1), post(2))
    work = build(tmp_path)
    work.cycle()
    assert tool_calls(scrape(work)) == 2
    # Lines land in the old file after our read, then it is rotated and a new one begun:
    append(tmp_path, post(3))
    rotate(tmp_path)
    append(tmp_path, post(4), post(5))
    work.cycle()
    assert tool_calls(scrape(work)) == 5
    # A restart after a second rotation goes on from the saved position.
    work.close()
    rotate(tmp_path)
    append(tmp_path, post(6))
    again = build(tmp_path)
    again.cycle()
    found = scrape(again)
    assert tool_calls(found) == 6
    assert value(found, "agentwatch_claude_spool_resets_total", reason="lost") == 0
    assert value(found, "agentwatch_claude_events_read_total") == 6


def test_a_file_rotated_out_of_the_chain_is_counted_lost_exactly(tmp_path: Path) -> None:
    """KEEP_ROTATED + 1 rotations before the next read: the file being read is deleted with
    one line unread; that one line is counted lost (dropped.json's count, less the three
    read), every other line is read once. The new events.jsonl often gets the inode a
    deleted file freed: the fingerprint of its first bytes tells them apart."""
    now = time.time() - 10
    post = lambda n: event("s", "PostToolUse", now + n, tool="Bash", n=n)  # noqa: E731
    append(tmp_path, post(0), post(1), post(2))
    work = build(tmp_path)
    work.cycle()
    append(tmp_path, post(3))  # never read: its file goes first
    for n in range(claude_events.KEEP_ROTATED + 1):
        rotate(tmp_path)
        append(tmp_path, post(4 + n))
    work.cycle()
    found = scrape(work)
    assert value(found, "agentwatch_claude_spool_resets_total", reason="lost") == 1
    assert value(found, "agentwatch_claude_events_lost_total", reason="rotated") == 1
    assert tool_calls(found) == 3 + claude_events.KEEP_ROTATED + 1
    assert value(found, "agentwatch_claude_events_read_total") == 3 + claude_events.KEEP_ROTATED + 1
    work.cycle()  # nothing new: counted once
    found = scrape(work)
    assert value(found, "agentwatch_claude_events_lost_total", reason="rotated") == 1


def test_bad_lines_are_rejected_by_reason(tmp_path: Path) -> None:
    path = spool.folder(tmp_path) / claude_events.EVENTS
    lines = [
        b"not json",
        b'{"v": 2, "t": 1, "s": "a", "e": "Stop"}',
        b'{"v": 1, "t": "soon", "s": "a", "e": "Stop"}',
        b'{"v": 1, "t": 1, "s": "a", "e": "Rm"}',
        b'{"v": 1, "t": 1, "s": "a", "e": "Stop", "tool": ' + b'"x' * 1500 + b'"}',
        b'{"v": 1, "t": 1, "s": "a", "e": "Stop", "tool": 5}',
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    work = build(tmp_path)
    work.cycle()
    found = scrape(work)
    rejected = {
        dict(k)["reason"]: v
        for (n, k), v in found.items()
        if n == "agentwatch_claude_events_rejected_total"
    }
    assert rejected == {
        "bad_json": 1,
        "bad_version": 1,
        "bad_field": 2,
        "unknown_event": 1,
        "too_long": 1,
    }
    assert value(found, "agentwatch_claude_events_read_total") == 0


def test_a_partial_last_line_waits_for_its_end(tmp_path: Path) -> None:
    path = spool.folder(tmp_path) / claude_events.EVENTS
    line = json.dumps(event("s", "PostToolUse", tool="Bash")).encode()
    path.write_bytes(line[:20])
    work = build(tmp_path)
    work.cycle()
    assert tool_calls(scrape(work)) == 0
    with path.open("ab") as handle:
        handle.write(line[20:] + b"\n")
    work.cycle()
    found = scrape(work)
    assert tool_calls(found) == 1
    assert value(found, "agentwatch_claude_events_rejected_total", reason="bad_json") == 0


@pytest.mark.slow
def test_sigkill_and_restart_neither_lose_nor_double_count(tmp_path: Path) -> None:
    """A live sentinel is killed again and again while hooks append and the spool rotates;
    whatever moment each kill hit (mid-read, before or during a save), the last one ends with
    every line counted exactly once."""
    dirs = ["--spool-dir", str(tmp_path / "spool"), "--state-dir", str(tmp_path)]
    written = 0
    for round_, delay in enumerate((0.0, 0.05, 0.15, 0.3, 0.6, 1.0)):
        child = subprocess.Popen([*CLI, "sentinel", "claude-sessions", *dirs])
        for part in range(4):
            now = time.time()
            lines = [
                event(f"s{round_}-{part}", "PostToolUse", now + n / 1e4, tool="Bash", ok=True)
                for n in range(500)
            ]
            append(tmp_path, *lines)
            written += len(lines)
            if part == 2 and round_ == 3:  # once: two rotations unread would lose lines
                rotate(tmp_path)
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    ran = run_cli("sentinel", "claude-sessions", "--once", *dirs)
    assert ran.returncode == 0, ran.stderr
    found = samples((tmp_path / "spool" / "claude-sessions.prom").read_text())
    assert value(found, "agentwatch_claude_events_read_total") == written
    assert tool_calls(found) == written
    assert value(found, "agentwatch_claude_spool_resets_total", reason="lost") == 0
    ran = run_cli("sentinel", "claude-sessions", "--once", *dirs)  # and once more: no change
    found = samples((tmp_path / "spool" / "claude-sessions.prom").read_text())
    assert value(found, "agentwatch_claude_events_read_total") == written


def test_an_unusable_state_file_is_set_aside(tmp_path: Path) -> None:
    append(tmp_path, event("s", "PostToolUse", tool="Bash"))
    (tmp_path / "claude-sessions.json").write_text('{"format": 1, "table": []}')
    work = build(tmp_path)
    work.cycle()
    found = scrape(work)
    assert value(found, "agentwatch_claude_state_rejected_total") == 1
    assert tool_calls(found) == 1, "the spool is read again from its start"
    assert (tmp_path / "claude-sessions.json.rejected").exists()


# --- commit-completion on a real repository ---------------------------------------------------


def test_commit_completion_against_a_real_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    empty = head(repo)  # no commit yet: unknown
    assert empty == ""
    (repo / "a").write_text("1")
    git(repo, "add", "a")
    git(repo, "commit", "-qm", "one")
    first = head(repo)
    now = time.time()
    # idle: started and ended at the same HEAD, normally
    append(tmp_path, event("idle", "SessionStart", now, p="repo", head=first))
    append(tmp_path, event("idle", "SessionEnd", now, p="repo", head=head(repo), reason="other"))
    # unknown: the repository had no commit at the start
    append(tmp_path, event("unknown", "SessionStart", now, p="repo", head=empty))
    append(tmp_path, event("unknown", "SessionEnd", now, p="repo", head=first, reason="other"))
    # failed: same HEAD, but the session failed before it ended
    append(tmp_path, event("failed", "SessionStart", now, p="repo", head=first))
    append(tmp_path, event("failed", "StopFailure", now, p="repo", kind="api_error"))
    append(tmp_path, event("failed", "SessionEnd", now, p="repo", head=first, reason="other"))
    # committed: HEAD moved between start and end
    append(tmp_path, event("committed", "SessionStart", now, p="repo", head=first))
    (repo / "a").write_text("2")
    git(repo, "commit", "-qam", "two")
    append(
        tmp_path, event("committed", "SessionEnd", now, p="repo", head=head(repo), reason="logout")
    )
    # no repository at all: no head on either side
    append(tmp_path, event("norepo", "SessionStart", now, p="scratch"))
    append(tmp_path, event("norepo", "SessionEnd", now, p="scratch", reason="other"))
    work = build(tmp_path)
    work.cycle()
    found = scrape(work)
    assert value(found, "agentwatch_sessions_without_commit_total", project="repo") == 1
    assert value(found, "agentwatch_sessions_without_commit_total", project="scratch") == 0
    assert value(found, "agentwatch_claude_sessions_ended_total", project="repo") == 4
    assert value(found, "agentwatch_claude_sessions_ended_total", project="scratch") == 1


# --- the official quota and the per-session snapshot figures ----------------------------------


def test_quota_comes_from_the_freshest_snapshot_with_rate_limits(tmp_path: Path) -> None:
    now = time.time()
    append(tmp_path, event("old", "UserPromptSubmit", now, p="web"))
    windows = lambda five, seven: {  # noqa: E731
        "five_hour": {"used_ratio": five, "resets_at": now + 3600},
        "seven_day": {"used_ratio": seven, "resets_at": now + 86400},
    }
    snapshot(tmp_path, "old", t=now - 30, rate_limits=windows(0.10, 0.05), cost_usd=1.25,
             context_used_ratio=0.61, cache_hit_ratio=0.9)  # fmt: skip
    snapshot(tmp_path, "new", t=now - 10, rate_limits=windows(0.42, 0.18))
    snapshot(tmp_path, "apikey", t=now - 1, cost_usd=0.5, rate_limits=None)  # newest, no limits
    work = build(tmp_path)
    work.cycle()
    found = scrape(work)
    assert value(found, "agentwatch_quota_used_ratio", window="five_hour") == 0.42
    assert value(found, "agentwatch_quota_used_ratio", window="seven_day") == 0.18
    resets = value(found, "agentwatch_quota_resets_timestamp_seconds", window="five_hour")
    assert resets == pytest.approx(now + 3600)
    assert value(found, "agentwatch_quota_reading_timestamp_seconds") == pytest.approx(now - 10)
    labels = {"session": "old", "project": "web"}
    assert value(found, "agentwatch_claude_session_cost_usd", **labels) == 1.25
    assert value(found, "agentwatch_claude_session_context_used_ratio", **labels) == 0.61
    assert value(found, "agentwatch_claude_session_cache_hit_ratio", **labels) == 0.9
    # a newer render of the session with the limits wins again
    snapshot(tmp_path, "old", t=now, rate_limits=windows(0.5, 0.2))
    work.cycle()
    assert value(scrape(work), "agentwatch_quota_used_ratio", window="five_hour") == 0.5


def test_model_windows_come_from_the_freshest_snapshot_that_has_them(tmp_path: Path) -> None:
    now = time.time()
    at = now + 5 * 86400
    snapshot(tmp_path, "a", t=now - 20, model_windows={"Fable": {"used_ratio": 0.3}})
    snapshot(tmp_path, "b", t=now - 5, cost_usd=1e308,  # a file not from our writer
             model_windows={"Fable": {"used_ratio": 0.425, "resets_at": at},
                            **{f"m{n}": {"used_ratio": 0.1} for n in range(20)}})  # fmt: skip
    snapshot(tmp_path, "c", t=now, cost_usd=2.0)  # newest, without per-model windows
    work = build(tmp_path)
    work.cycle()
    found = scrape(work)
    assert value(found, "agentwatch_quota_model_used_ratio", model="Fable") == 0.425
    assert value(found, "agentwatch_quota_model_resets_timestamp_seconds", model="Fable") == at
    used = [key for key in found if key[0] == "agentwatch_quota_model_used_ratio"]
    assert len(used) == claude_events.MAX_MODEL_WINDOWS
    costs = [key for key in found if key[0] == "agentwatch_claude_session_cost_usd"]
    assert [dict(labels)["session"] for _, labels in costs] == ["c"]  # 1e308 is not a cost


def test_writer_failures_are_exported_by_reason(tmp_path: Path) -> None:
    counters = spool.folder(tmp_path) / claude_events.COUNTERS
    counters.write_text(json.dumps({"bad_json": 3, "spool_unwritable": 1, "weird": "x"}))
    work = build(tmp_path)
    work.cycle()
    found = scrape(work)
    name = "agentwatch_claude_writer_failures_total"
    assert value(found, name, reason="bad_json") == 3
    assert value(found, name, reason="spool_unwritable") == 1
    assert value(found, name, reason="weird") is None


# --- the real CLI -----------------------------------------------------------------------------


def test_once_through_the_real_cli_is_promtool_clean(tmp_path: Path) -> None:
    now = time.time()
    append(
        tmp_path,
        event("s1", "SessionStart", now, p='we"ird\nproj', head="abc", pane="%1"),
        event("s1", "PostToolUse", now, tool="Bash", ok=False),
        event("s1", "StopFailure", now, kind="overloaded_error"),
        event("s2", "SessionStart", now, p="api", head="abc"),
        event("s2", "SessionEnd", now, p="api", head="abc", reason="prompt_input_exit"),
    )
    snapshot(tmp_path, "s1", rate_limits={"five_hour": {"used_ratio": 0.42, "resets_at": now}})
    dirs = ["--spool-dir", str(tmp_path / "spool"), "--state-dir", str(tmp_path)]
    ran = run_cli("sentinel", "claude-sessions", "--once", *dirs)
    assert ran.returncode == 0, ran.stderr
    text = (tmp_path / "spool" / "claude-sessions.prom").read_text()
    promtool = shutil.which("promtool")
    assert promtool
    checked = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    found = samples(text)
    assert value(found, "agentwatch_quota_used_ratio", window="five_hour") == 0.42
    assert value(found, "agentwatch_sessions_without_commit_total", project="api") == 1
    assert state_of(found, "s1") == "failed"
    assert 'project="we\\"ird\\\\x0aproj"' in text  # the newline is escaped, never raw
    assert os.stat(tmp_path / "claude-sessions.json").st_mode & 0o077 == 0


def test_payload_text_in_the_spool_goes_nowhere(tmp_path: Path) -> None:
    """A forged or future spool line with payload fields: only the contract's fields are
    read, so planted text reaches no metric, no state and no log line."""
    planted = "PLANTED-SECRET-sk-ant-0123456789"
    append(
        tmp_path,
        event("s", "UserPromptSubmit", prompt=planted, p="web"),
        event("s", "PreToolUse", tool="Bash", tool_input={"command": planted}),
        event("s", "PostToolUseFailure", tool="Bash", tool_response=planted, error=planted),
        event("s", "Stop", last_assistant_message=planted),
    )
    snapshot(tmp_path, "s", transcript_path=f"/home/{planted}", workspace={"cwd": planted})
    dirs = ["--spool-dir", str(tmp_path / "spool"), "--state-dir", str(tmp_path)]
    ran = run_cli("--log-level", "debug", "sentinel", "claude-sessions", "--once", *dirs)
    assert ran.returncode == 0, ran.stderr
    text = (tmp_path / "spool" / "claude-sessions.prom").read_text()
    found = samples(text)
    failures = "agentwatch_claude_session_tool_failures_total"
    assert value(found, failures, session="s", project="web", tool="Bash") == 1
    assert state_of(found, "s") == "idle"
    for where in (text, (tmp_path / "claude-sessions.json").read_text(), ran.stderr):
        assert "PLANTED" not in where


def test_a_fifo_in_place_of_the_spool_is_refused_without_blocking(tmp_path: Path) -> None:
    """A FIFO at events.jsonl.1 must neither hang the sentinel nor keep events.jsonl from
    being read; a FIFO at events.jsonl shows as failing until a real file is back."""
    spool_dir = spool.folder(tmp_path)
    os.mkfifo(spool_dir / claude_events.ROTATED)
    append(tmp_path, event("s", "PostToolUse", tool="Bash"))
    dirs = ["--spool-dir", str(tmp_path / "spool"), "--state-dir", str(tmp_path)]
    ran = run_cli("sentinel", "claude-sessions", "--once", *dirs, timeout=30)
    assert ran.returncode == 0, ran.stderr
    found = samples((tmp_path / "spool" / "claude-sessions.prom").read_text())
    assert tool_calls(found) == 1
    assert value(found, "agentwatch_claude_spool_failing") == 1
    assert "not a regular file" in ran.stderr

    (spool_dir / claude_events.ROTATED).unlink()
    rotate(tmp_path)
    os.mkfifo(spool_dir / claude_events.EVENTS)
    work = build(tmp_path)
    work.cycle()
    found = scrape(work)
    assert value(found, "agentwatch_claude_spool_failing") == 1
    (spool_dir / claude_events.EVENTS).unlink()
    append(tmp_path, event("s", "PostToolUse", tool="Bash"))
    work.cycle()
    found = scrape(work)
    assert value(found, "agentwatch_claude_spool_failing") == 0
    assert tool_calls(found) == 2


def test_a_permission_request_waits_for_permission_as_the_dialog_opens(tmp_path: Path) -> None:
    """2.1.328 runs the PermissionRequest hook when the dialog opens; its permission
    Notification comes 6 s later. The first one is enough."""
    start = time.time() - 10
    append(tmp_path, event("s-ask", "PreToolUse", start, p="web", tool="Bash"))
    append(tmp_path, event("s-ask", "PermissionRequest", start + 1, p="web", tool="Bash"))
    work = build(tmp_path)
    work.cycle()
    assert state_of(scrape(work), "s-ask") == "waiting_for_permission"
