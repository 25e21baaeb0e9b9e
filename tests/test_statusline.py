"""`agentwatch statusline`, run as Claude Code runs it: the real console script, the statusline
payload of 2.1.328 on stdin (tests/fixtures/hooks/statusline-*.json: with `rate_limits` as a
subscription session sends them, without as an API-key session does), a real chained
statusLine command through /bin/sh."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentwatch.cli import statusline
from agentwatch.core import claude_events

AGENTWATCH = str(Path(sys.executable).parent / "agentwatch")
FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
SESSION = "771f2fee-076f-454f-a028-c8cc72859343"


def payload(name: str) -> bytes:
    return (FIXTURES / f"statusline-{name}.json").read_bytes()


def call(state: Path, data: bytes, config: Path, **env: str) -> str:
    done = subprocess.run(
        [AGENTWATCH, "statusline", "--state-dir", str(state)],
        input=data,
        capture_output=True,
        env=dict(os.environ, XDG_CONFIG_HOME=str(config), **env),
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    return done.stdout.decode()


def snapshot(state: Path, session: str = SESSION) -> dict[str, Any]:
    return json.loads((claude_events.status_dir(state) / f"{session}.json").read_text())


def chain(config: Path, command: str) -> None:
    folder = config / "agentwatch"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / statusline.CHAIN_FILE).write_text(json.dumps({"command": command}))


def test_a_subscription_session_records_every_window(tmp_path: Path) -> None:
    state = tmp_path / "state"
    out = call(state, payload("subscription"), tmp_path / "config")
    assert out == "5h 42% · 7d 18% · $3.20 · ctx 61%\n"
    record = snapshot(state)
    assert isinstance(record.pop("t"), float)
    assert record == {
        "v": 1,
        "s": SESSION,
        "p": "cap-project",
        "model": "claude-sonnet-4-5",
        "cost_usd": 3.2041,
        "context_used_ratio": 0.61,
        "cache_hit_ratio": 0.89,
        "rate_limits": {
            "five_hour": {"used_ratio": 0.42, "resets_at": 1796140800},
            "seven_day": {"used_ratio": pytest.approx(0.184), "resets_at": 1796601600},
        },
    }
    path = claude_events.status_dir(state) / f"{SESSION}.json"
    assert (path.stat().st_mode & 0o777) == 0o600


def test_an_api_key_session_has_no_rate_limits(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert call(state, payload("api-key"), tmp_path / "config") == "$3.20 · ctx 61%\n"
    assert "rate_limits" not in snapshot(state) and snapshot(state)["cost_usd"] == 3.2041


def test_other_windows_and_iso_resets(tmp_path: Path) -> None:
    state = tmp_path / "state"
    data = json.loads(payload("api-key"))
    data["rate_limits"] = {
        "seven_day_opus": {"used_percentage": 130, "resets_at": "2026-12-01T12:00:00Z"},
        "spend_limit": {"used_percentage": 5.5, "resets_at": 1796601600, "used_usd": 2},
        "five_hour": None,
        "model_scoped": [{"display_name": "x", "utilization": 3}],
        "seven_day": {"used_percentage": "high"},
    }
    call(state, json.dumps(data).encode(), tmp_path / "config")
    assert snapshot(state)["rate_limits"] == {
        "seven_day_opus": {"used_ratio": 1.0, "resets_at": 1796126400.0},
        "spend_limit": {"used_ratio": 0.055, "resets_at": 1796601600},
    }


def test_model_scoped_windows_are_recorded_by_display_name_bounded(tmp_path: Path) -> None:
    """`rate_limits.model_scoped` as Claude Code 2.1.328's schema gives it (strings of the
    binary: `model_scoped: T(c({display_name: n(), utilization: v().nullable(), resets_at:
    n().nullable()}))`, built as `utilization: d.percent`, `resets_at` ISO 8601, and printed by
    /usage as `Math.floor(utilization)%`): a percentage. Its 2.1.328 statusline sends only
    five_hour, seven_day and spend_limit; this is read for the versions that add it."""
    state = tmp_path / "state"
    data = json.loads(payload("subscription"))
    data["rate_limits"]["model_scoped"] = [
        {"display_name": "Fable", "utilization": 42.5, "resets_at": "2026-12-01T12:00:00Z"},
        {"display_name": "Opus", "utilization": None, "resets_at": None},  # no reading
        {"display_name": 'x"}\n' + "y" * 300, "utilization": 7, "resets_at": None},
        *({"display_name": f"m{n}", "utilization": n, "resets_at": None} for n in range(20)),
    ]
    call(state, json.dumps(data).encode(), tmp_path / "config")
    windows = snapshot(state)["model_windows"]
    assert len(windows) == claude_events.MAX_MODEL_WINDOWS
    assert windows["Fable"] == {"used_ratio": 0.425, "resets_at": 1796126400.0}
    assert "Opus" not in windows
    assert all(len(name) <= 64 and "\n" not in name for name in windows)
    assert claude_events.read_counters(state) == {}
    data["rate_limits"]["model_scoped"] = [{"display_name": "Fable", "utilization": 1e308}]
    call(state, json.dumps(data).encode(), tmp_path / "config")
    assert "model_windows" not in snapshot(state)
    assert claude_events.read_counters(state) == {claude_events.OUT_OF_RANGE: 1}


def test_the_previous_statusline_comes_first_with_the_same_stdin(tmp_path: Path) -> None:
    state, config = tmp_path / "state", tmp_path / "config"
    seen = tmp_path / "seen.json"
    chain(config, f"cat > {seen}; printf '\\033[32mmy line\\033[0m\\nsecond line\\n'")
    out = call(state, payload("subscription"), config)
    assert out == "\x1b[32mmy line\x1b[0m\n5h 42% · 7d 18% · $3.20 · ctx 61%\n"
    assert seen.read_bytes() == payload("subscription")


@pytest.mark.parametrize(
    ("data", "reason"),
    [(b"{broken", claude_events.BAD_JSON), (b'{"model": {}}', claude_events.NO_SESSION)],
)
def test_on_bad_input_the_chained_line_alone(tmp_path: Path, data: bytes, reason: str) -> None:
    state, config = tmp_path / "state", tmp_path / "config"
    chain(config, "echo mine")
    assert call(state, data, config) == "mine\n"
    assert claude_events.read_counters(state) == {reason: 1}
    assert call(state, data, tmp_path / "no-config") == ""


def test_a_failing_chain_is_counted_and_ours_still_prints(tmp_path: Path) -> None:
    state, config = tmp_path / "state", tmp_path / "config"
    chain(config, "echo partial; exit 4")
    assert call(state, payload("api-key"), config) == "partial\n$3.20 · ctx 61%\n"
    chain(config, "exec /nonexistent/program")
    assert call(state, payload("api-key"), config) == "$3.20 · ctx 61%\n"
    assert claude_events.read_counters(state) == {claude_events.CHAIN_FAILED: 2}


def test_a_chain_to_itself_does_not_loop(tmp_path: Path) -> None:
    state, config = tmp_path / "state", tmp_path / "config"
    chain(config, f"{AGENTWATCH} statusline --state-dir {state}")
    out = call(state, payload("api-key"), config)
    assert out == "$3.20 · ctx 61%\n$3.20 · ctx 61%\n"  # the inner one did not chain again


def test_an_unwritable_snapshot_still_prints(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (claude_events.status_dir(state) / f"{SESSION}.json").mkdir(parents=True)
    assert call(state, payload("api-key"), tmp_path / "config") == "$3.20 · ctx 61%\n"
    assert claude_events.read_counters(state) == {claude_events.STATUS_UNWRITABLE: 1}


def test_at_most_max_status_files_snapshots(tmp_path: Path) -> None:
    state = tmp_path / "state"
    base = json.loads(payload("api-key"))
    for number in range(claude_events.MAX_STATUS_FILES + 5):
        record = statusline.snapshot(dict(base, session_id=f"s{number:04d}"), float(number))
        assert record is not None
        claude_events.write_status(state, record)
        path = claude_events.status_dir(state) / f"s{number:04d}.json"
        os.utime(path, (number, number))
    names = sorted(p.name for p in claude_events.status_dir(state).iterdir())
    assert len(names) == claude_events.MAX_STATUS_FILES
    assert names[0] == "s0005.json"  # the oldest went


def test_a_session_id_is_never_a_path(tmp_path: Path) -> None:
    state = tmp_path / "state"
    data = dict(json.loads(payload("api-key")), session_id="../../escape")
    call(state, json.dumps(data).encode(), tmp_path / "config")
    (written,) = claude_events.status_dir(state).iterdir()
    assert written.name.startswith("h-") and not (tmp_path / "escape.json").exists()
    assert json.loads(written.read_text())["s"] == "../../escape"
