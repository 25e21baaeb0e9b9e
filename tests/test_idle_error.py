"""The idle-error sentinel: the classifier on fixture captures (through `classify-pane`), the
settle rule and memory, and the whole sentinel against a real tmux server whose panes run fake
agent CLIs printing those captures."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from agentwatch.cli import main as cli
from agentwatch.sentinels.idle_error import explain, memory, resets
from agentwatch.sentinels.idle_error.classify import (
    SUPPRESSION_REASONS,
    Observation,
    Settings,
    classify,
)
from agentwatch.sentinels.idle_error.main import Sentinel
from agentwatch.sentinels.idle_error.panes import AgentPane, Capturer, PaneFinder
from agentwatch.sentinels.idle_error.patterns import STATES, PatternError, parse, shipped
from tests.conftest import run_cli, samples

FIXTURES = Path(__file__).parent / "fixtures" / "panes"
NOW = 1_750_000_000.0  # 2025-06-15 15:06:40 UTC
PROMTOOL = shutil.which("promtool")
SETTLED = Settings(settle_time=0.0)


def _local(hour: int, minute: int = 0) -> float:
    """The next local `hour:minute` after NOW (messages without a zone use the local one)."""
    current = datetime.fromtimestamp(NOW)
    when = current.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if when <= current:
        when = datetime.fromtimestamp(when.timestamp() + 86400)
    return when.timestamp()


# fixture -> (state, pattern, line_from_end, suppressed reasons), classified as settled.
EXPECTED: dict[str, tuple[str, str, int | None, set[str]]] = {
    # the real pane lines quoted in the reference note
    "ref_usage_policy.txt": ("api_error", "usage_policy", 5, set()),
    "ref_server_throttle.txt": ("rate_limited", "server_throttle", 5, set()),
    "ref_repeated_529.txt": ("rate_limited", "server_throttle", 5, set()),
    "ref_usage_limit.txt": ("usage_limit", "usage_limit", 5, set()),
    "ref_retry_spinner.txt": ("working", "retry_spinner", 5, {"retry_spinner"}),
    # other stall signatures
    "api_error_500.txt": ("api_error", "server_error", 5, set()),
    "tier_b_request_timed_out.txt": ("api_error", "request_timed_out", 5, set()),
    "context_wedge.txt": ("context_wedge", "context_wedge", 7, set()),
    "policy_wedge.txt": ("context_wedge", "policy_wedge", 5, {"stale"}),
    "context_too_long.txt": ("context_too_long", "context_too_long", 5, set()),
    "context_too_long_compacted.txt": ("idle", "footer", 1, {"compaction"}),
    "approval_boxed.txt": ("approval_prompt", "approval_menu", 4, set()),
    "approval_ruled.txt": ("approval_prompt", "approval_menu", 4, set()),
    "usage_limit_epoch.txt": ("usage_limit", "usage_limit", 5, set()),
    "throttle_and_usage_limit.txt": ("usage_limit", "usage_limit", 5, {"usage_limit_veto"}),
    # layout: colours, wraps, frames, the window
    "ansi_overloaded.txt": ("rate_limited", "overloaded", 5, set()),
    "wrapped_prompt_too_long.txt": ("context_too_long", "context_too_long", 6, set()),
    "wrapped_throttle.txt": ("rate_limited", "server_throttle", 6, set()),
    "box_frame_error.txt": ("api_error", "server_error", 5, {"mid_line"}),
    "neg_box_frame_dialog.txt": ("approval_prompt", "approval_menu", 3, {"mid_line"}),
    "window_error_28_up.txt": ("idle", "footer", 1, {"outside_window"}),
    "window_error_28_rows_up_blank.txt": ("api_error", "server_error", 18, set()),
    # tokens that must not fire
    "neg_working_spinner.txt": ("working", "spinner", 5, {"working"}),
    "neg_mid_line_prose.txt": ("idle", "footer", 1, {"mid_line"}),
    "neg_quoted_log.txt": ("idle", "footer", 1, {"not_harness_line"}),
    "neg_source_literal.txt": ("idle", "footer", 1, {"mid_line"}),
    "neg_tool_econnrefused.txt": ("idle", "footer", 1, {"mid_line"}),
    "neg_stale_error.txt": ("idle", "footer", 1, {"stale"}),
    "neg_typed_prompt.txt": ("idle", "footer", 1, {"not_harness_line"}),
    "neg_numbered_prose.txt": ("idle", "footer", 1, set()),
    "neg_usage_limit_warning.txt": ("idle", "footer", 1, set()),
    "neg_column0_tier_b.txt": ("idle", "footer", 1, {"not_harness_line"}),
    # plain states
    "idle_boxed.txt": ("idle", "footer", 1, set()),
    "working_spinner.txt": ("working", "spinner", 5, set()),
}


def classify_pane(*args: str, capsys: pytest.CaptureFixture[str]) -> dict:
    """`agentwatch classify-pane ARGS` through the real CLI entry point, in process."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        assert cli.main(["classify-pane", *args]) == 0
    finally:  # main() points logging at this test's captured stderr: undo that
        root.handlers[:], root.level = handlers, level
    return json.loads(capsys.readouterr().out)


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(p.name for p in FIXTURES.glob("*.txt")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_through_classify_pane(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    state, pattern, from_end, reasons = EXPECTED[name]
    out = classify_pane(
        "--unchanged-for", "60", "--now", str(NOW), str(FIXTURES / name), capsys=capsys
    )
    assert (out["state"], out["pattern"], out["line_from_end"]) == (state, pattern, from_end)
    assert {item["reason"] for item in out["suppressed"]} == reasons
    if state not in ("working", "idle"):  # the deciding line is shown, clipped, for debugging
        text = (FIXTURES / name).read_text()
        assert out["line"] and len(out["line"]) <= 200
        assert explain.screen.strip_ansi(out["line"])[:30] in explain.screen.strip_ansi(text)


TRACKER = FIXTURES / "tracker"
QUOTED = {
    name: label
    for name, label in json.loads((TRACKER / "labels.json").read_text()).items()
    if "pattern" in label
}


@pytest.mark.parametrize("name", sorted(QUOTED))
def test_screens_quoted_in_issue_threads(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Screens of Claude Code versions quoted in public issue threads: each label names the
    thread, the version the reporter states and the text as shown, and the state and pattern
    class the classifier must give (as the thread shows it)."""
    label = QUOTED[name]
    assert label["source"].startswith("https://github.com/") and label["version"]
    text = (TRACKER / f"{name}.txt").read_text()
    for line in label["quoted"].splitlines():  # the quote is in the screen, glyphs aside
        assert line.strip().lstrip("●⎿ ").strip() in text, line
    out = classify_pane(
        "--unchanged-for", "60", "--now", str(NOW), str(TRACKER / f"{name}.txt"), capsys=capsys
    )
    assert (out["state"], out["pattern"]) == (label["state"], label["pattern"])


def test_billing_and_extra_usage_wordings() -> None:
    """The limit wordings Claude Code 2.1.328 itself lists as "cannot go on" messages (strings
    in its binary): billing and allocation stops are `usage_limit` with pattern `billing`
    (a nudge cannot help), an exhausted extra-usage budget is `extra_usage`."""

    def decided(line: str) -> tuple[str, str]:
        result = classify(line, None, NOW, SETTLED, shipped())
        return result.state, result.pattern

    for line in (
        "  ⎿  Credit balance too low · Add funds: https://platform.claude.com/settings/billing",
        "  ⎿  You're out of usage credits",
        "  ⎿  Your org is out of usage · add funds to continue",
        "  ⎿  Fable 5 requires usage credits",
        "● API Error: 400 Your credit balance is too low to access the Anthropic API.",
    ):
        assert decided(line) == ("usage_limit", "billing"), line
    assert decided("  ⎿  You're out of extra usage · resets 9am (UTC)") == (
        "usage_limit",
        "extra_usage",
    )
    # the same words quoted in prose or typed at the prompt never fire
    assert decided("⏺ The log says: credit balance too low") == ("working", "no_prompt")
    assert decided("❯ credit balance too low?")[0] == "idle"


def test_usage_limit_reset_times(capsys: pytest.CaptureFixture[str]) -> None:
    shown = {
        "ref_usage_limit.txt": 1_750_027_500.0,  # 3:45pm America/Los_Angeles = 22:45 UTC
        "usage_limit_epoch.txt": 1_750_003_200.0,
        "throttle_and_usage_limit.txt": _local(19),  # "resets 7pm": the local zone
        "tracker/out_of_extra_usage.txt": 1_750_075_200.0,  # 9am America/Cordoba = 12:00 UTC
        "tracker/usage_limit_reached_old.txt": 1_750_082_400.0,  # 9am America/Chicago
    }
    for name, expected in shown.items():
        out = classify_pane("--now", str(NOW), str(FIXTURES / name), capsys=capsys)
        assert out["usage_limit_reset_timestamp"] == expected, name
    out = classify_pane("--now", str(NOW), str(FIXTURES / "api_error_500.txt"), capsys=capsys)
    assert out["usage_limit_reset_timestamp"] is None


def test_reset_wordings() -> None:
    assert resets.reset_timestamp("resets 3pm (Europe/Berlin)", NOW) == 1_750_078_800.0
    assert resets.reset_timestamp("resets at 15:00 (UTC)", NOW) == 1_750_086_000.0
    assert resets.reset_timestamp("resets Jun 20, 5pm (UTC)", NOW) == 1_750_438_800.0
    assert resets.reset_timestamp("resets 9am (Not/AZone)", NOW) == _local(9)
    assert resets.reset_timestamp("limit reached|1750003200", NOW) == 1_750_003_200.0
    for nothing in ("resets soon", "resets 13pm", "resets 25:00", "no time at all"):
        assert resets.reset_timestamp(nothing, NOW) is None, nothing


def test_classify_pane_reads_stdin_and_rejects_bad_input(tmp_path: Path) -> None:
    text = (FIXTURES / "api_error_500.txt").read_bytes()
    result = subprocess.run(
        [*cli_command(), "classify-pane", "-"], input=text, capture_output=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["state"] == "api_error"
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00API Error: x\n" + bytes(range(256)))
    assert explain.run(str(binary), Settings(), stdin=io.BytesIO()) == 0  # decoded, not a crash
    missing = run_cli("classify-pane", str(tmp_path / "nope.txt"))
    assert missing.returncode == 2 and "No such file" in missing.stderr
    folder = run_cli("classify-pane", str(tmp_path))
    assert folder.returncode == 2 and "cannot read" in folder.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    refused = run_cli("classify-pane", str(fifo), timeout=30)  # refused at once, not read
    assert refused.returncode == 2 and "not a regular file (a FIFO)" in refused.stderr
    negative = run_cli("classify-pane", "--unchanged-for", "-1", str(binary))
    assert negative.returncode == 2


def cli_command() -> list[str]:
    from tests.conftest import CLI

    return CLI


def test_throttle_fires_only_once_settled_and_since_is_when_it_showed() -> None:
    text = (FIXTURES / "ref_server_throttle.txt").read_text()
    settings, patterns = Settings(settle_time=20.0), shipped()
    first = classify(text, None, NOW, settings, patterns)
    assert (first.state, first.fired) == ("idle", False)
    assert [s.reason for s in first.suppressed] == ["unsettled"]
    later = classify(text, first.observation, NOW + 10, settings, patterns)
    assert later.state == "idle" and not later.tail_changed
    settled = classify(text, later.observation, NOW + 20, settings, patterns)
    assert (settled.state, settled.pattern, settled.fired) == (
        "rate_limited",
        "server_throttle",
        True,
    )
    assert settled.observation.since == NOW  # on screen, unchanged, since the first capture
    again = classify(text, settled.observation, NOW + 30, settings, patterns)
    assert again.state == "rate_limited" and not again.fired and again.observation.since == NOW
    changed = classify(text + "x\n", again.observation, NOW + 40, settings, patterns)
    assert changed.state != "rate_limited" and changed.tail_changed  # a new tail starts over


def test_since_persists_within_a_state_and_resets_on_a_change() -> None:
    patterns = shipped()
    error = (FIXTURES / "api_error_500.txt").read_text()
    idle = (FIXTURES / "idle_boxed.txt").read_text()
    first = classify(error, None, NOW, SETTLED, patterns)
    assert first.fired and first.observation.since == NOW
    second = classify(error + "\n\n", first.observation, NOW + 10, SETTLED, patterns)
    assert not second.fired and second.observation.since == NOW  # trailing blanks: same tail
    third = classify(idle, second.observation, NOW + 20, SETTLED, patterns)
    assert (third.state, third.observation.since, third.fired) == ("idle", NOW + 20, False)


def test_window_is_counted_in_non_empty_lines() -> None:
    lines = ["⏺ Bash(ls)", "  ⎿  API Error: Request timed out."]
    lines += [f"     file_{i}" for i in range(18)]  # the error is the 19th non-empty line
    at_edge = classify("\n".join(lines), None, NOW, SETTLED, shipped())
    assert (at_edge.state, at_edge.line_from_end) == ("api_error", 19)
    narrow = classify("\n".join(lines), None, NOW, Settings(window_lines=18), shipped())
    assert narrow.state == "working" and [s.reason for s in narrow.suppressed] == ["outside_window"]
    spaced = "\n\n\n".join(lines)  # blank rows between do not push it out of the window
    tall = Settings(capture_rows=100, settle_time=0.0)
    assert classify(spaced, None, NOW, tall, shipped()).line_from_end == 19
    rows = classify("\n".join(lines), None, NOW, Settings(capture_rows=10), shipped())
    assert rows.state == "working" and rows.suppressed == ()  # beyond the capture: unseen


def test_precision_rules_on_single_lines() -> None:
    def state(text: str) -> str:
        return classify(text, None, NOW, SETTLED, shipped()).state

    assert state("API Error: Connection error.") == "api_error"  # column 0
    assert state("  ⎿  API Error: Connection error.") == "api_error"  # glyph-led
    assert state("    API Error: Connection error.") == "working"  # indented: quoted text
    assert state("  ⎿  ECONNREFUSED") == "api_error"  # tier B: glyph-led
    assert state("ECONNREFUSED") == "working"  # tier B never from column 0
    assert state("❯ API Error: typed by the user") == "idle"  # the prompt holds user text
    assert state('⏺ raise Exception("API Error: boom")') == "working"
    assert state("  ⎿  Error: connect ECONNREFUSED 127.0.0.1:5432") == "working"
    assert state("⏺ API Error: 429 rate_limit_error") == "rate_limited"
    assert state("⏺ API Error (Connection error.) · Retrying in 1 seconds… (attempt 1/10)") == (
        "working"
    )
    assert state("") == "working"


def test_shipped_patterns_have_bounded_class_names() -> None:
    patterns = shipped()
    assert all(name.replace("_", "").isalnum() and name.islower() for name in patterns.classes)
    assert len(patterns.classes) < 40
    assert "api_error_line" in patterns.classes and "approval_menu" in patterns.classes


def test_a_broken_pattern_file_names_the_entry() -> None:
    good = json.loads((FIXTURES.parents[2] / "sentinels/idle_error/patterns.json").read_text())
    broken = json.loads(json.dumps(good))
    broken["harness"][1]["start"] = "(unclosed"
    with pytest.raises(PatternError, match=r"harness\[1\]\.start: bad regex"):
        parse(broken)
    broken = json.loads(json.dumps(good))
    broken["refine"][0]["state"] = "exploded"
    with pytest.raises(PatternError, match=r"refine\[0\]: 'state' must be one of"):
        parse(broken)
    broken = json.loads(json.dumps(good))
    broken["harness"][0]["refine"] = ["no_such_class"]
    with pytest.raises(PatternError, match=r"harness\[0\]\.refine: no refinement of class"):
        parse(broken)
    broken["harness"][0]["refine"] = "yes"
    with pytest.raises(PatternError, match=r"harness\[0\]: 'refine' must be true, false or"):
        parse(broken)
    broken = json.loads(json.dumps(good))
    del broken["signals"]
    with pytest.raises(PatternError, match="signals"):
        parse(broken)
    assert parse(good).classes == shipped().classes


def test_memory_round_trip_and_corrupt_file_replaced(tmp_path: Path) -> None:
    store = memory.Store(tmp_path)
    assert store.load().panes == {}
    remembered = memory.Memory(panes={"|%1|42": Observation("ab", 1.0, "api_error", 2.0)})
    remembered.fired["api_error"] += 3
    remembered.suppressed["mid_line"] += 1
    store.save(remembered)
    loaded = memory.Store(tmp_path).load()
    assert loaded == remembered
    assert "API" not in store.path.read_text()  # digests and states, never pane text
    for corrupt in ("{not json", '{"version": 1, "panes": {"x": [1]}}', '{"version": 99}'):
        store.path.write_text(corrupt)
        rejected = memory.Memory(state_rejected=Counter({"corrupt": 1}))
        assert memory.Store(tmp_path).load() == rejected  # empty, and counts why
    fresh = memory.Store(tmp_path)
    fresh.load()
    fresh.save(remembered)
    assert memory.parse(store.path.read_text()) == remembered
    assert [p.name for p in tmp_path.iterdir()] == [memory.FILE_NAME]  # no temp file left


# --- a real tmux server ------------------------------------------------------------------

AGENT_SCRIPT = '#!/bin/sh\ncat "$1"\nwhile :; do sleep 60; done\n'


class TmuxServer:
    """A private tmux server (own socket, no config, no TMUX of the caller), killed at exit."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.sock = str(folder / "sock")
        self.env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        self.env["TMUX_TMPDIR"] = str(folder)  # the "default server" of every child is ours too
        self.base = ["tmux", "-f", "/dev/null", "-S", self.sock]

    def run(self, *args: str) -> str:
        result = subprocess.run(
            [*self.base, *args], env=self.env, capture_output=True, text=True, timeout=10
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def pane(self, session: str, program: Path, fixture: str, width: int = 160) -> str:
        """A new session whose pane runs `program FIXTURE`; returns the pane id."""
        self.run(
            "new-session", "-d", "-s", session, "-x", str(width), "-y", "50",
            str(program), str(FIXTURES / fixture),
        )  # fmt: skip
        pane = self.run("list-panes", "-t", session, "-F", "#{pane_id}").strip()
        deadline = time.monotonic() + 5
        wanted = next(line for line in (FIXTURES / fixture).read_text().splitlines() if line)
        while wanted[:10] not in self.run("capture-pane", "-p", "-t", pane):
            assert time.monotonic() < deadline, f"{fixture} never showed in {session}"
            time.sleep(0.05)
        return pane

    def write(self, pane: str, text: str) -> None:
        """Print more text into a pane, as its program would (through the pane's terminal)."""
        tty = self.run("display-message", "-p", "-t", pane, "#{pane_tty}").strip()
        with open(tty, "w", encoding="utf-8") as terminal:
            terminal.write(text.replace("\n", "\r\n"))

    def kill(self) -> None:
        subprocess.run([*self.base, "kill-server"], env=self.env, timeout=10, check=False)


@pytest.fixture
def tmux() -> Iterator[TmuxServer]:
    assert shutil.which("tmux"), "tmux is required (Debian package tmux)"
    folder = Path(tempfile.mkdtemp(prefix="aw-ie-"))  # short: socket paths are < 108 bytes
    server = TmuxServer(folder)
    try:
        yield server
    finally:
        server.kill()
        shutil.rmtree(folder, ignore_errors=True)


def program(folder: Path, name: str) -> Path:
    """An executable shell script; the kernel names the process after the script file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(AGENT_SCRIPT)
    path.chmod(0o755)
    return path


def run_once(tmux: TmuxServer, dirs: dict[str, Path], config: Path) -> dict:
    result = run_cli(
        "--config", str(config), "sentinel", "idle-error", "--once",
        "--spool-dir", str(dirs["spool"]), "--state-dir", str(dirs["state"]),
        env=tmux.env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = (dirs["spool"] / "idle-error.prom").read_text()
    if PROMTOOL:
        check = subprocess.run(
            [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
        )
        assert check.returncode == 0, check.stdout + check.stderr
    for secret in ("Internal server error", "API Error", "temporarily", "rm -rf", "3:45pm"):
        assert secret not in text and secret not in result.stderr  # no pane text leaks
    return {"text": text, "samples": samples(text), "log": result.stderr}


def states(scraped: dict) -> dict[tuple[str, str], str]:
    """(tmux session, agent) -> the state that is 1."""
    out = {}
    for (name, labels), value in scraped["samples"].items():
        label = dict(labels)
        if name == "agentwatch_pane_state" and value == 1:
            out[(label["tmux_session"], label["agent"])] = label["state"]
    return out


def value(scraped: dict, name: str, **labels: str) -> float | None:
    for (sample, sample_labels), number in scraped["samples"].items():
        if sample == name and all(dict(sample_labels).get(k) == v for k, v in labels.items()):
            return number
    return None


@pytest.mark.slow
def test_sentinel_on_a_real_tmux_server(
    tmux: TmuxServer, workdirs: dict[str, Path], tmp_path: Path
) -> None:
    assert PROMTOOL, "promtool is required (Debian package prometheus)"
    bindir = tmp_path / "bin"
    claude, plain = program(bindir, "claude"), program(bindir, "plainsh")
    err = tmux.pane("err", claude, "api_error_500.txt")
    tmux.pane("idle", claude, "idle_boxed.txt")
    tmux.pane("busy", claude, "working_spinner.txt")
    tmux.pane("ask", claude, "approval_boxed.txt")
    tmux.pane("quoted", claude, "neg_quoted_log.txt")
    tmux.pane("far", claude, "window_error_28_up.txt")
    tmux.pane("limit", claude, "ref_usage_limit.txt")
    tmux.pane("colour", claude, "ansi_overloaded.txt")
    tmux.pane("narrow", claude, "ref_server_throttle.txt", width=50)  # the error line wraps
    tmux.pane("notagent", plain, "api_error_500.txt")
    # an agent below the pane's shell is found through the process tree
    tmux.run("new-session", "-d", "-s", "nested", "-x", "160", "-y", "50",
             f"sh -c '{claude} {FIXTURES / 'context_too_long.txt'}; exit'")  # fmt: skip
    config = tmp_path / "config.yaml"
    config.write_text(
        f"agents: {{tmux_sockets: [{tmux.sock}], names: [claude]}}\n"
        "sentinels:\n  idle-error:\n    settle_time: 1\n"
    )
    time.sleep(0.3)  # let the nested pane print

    first = run_once(tmux, workdirs, config)
    assert states(first) == {
        ("err", "claude"): "api_error",
        ("idle", "claude"): "idle",
        ("busy", "claude"): "working",
        ("ask", "claude"): "approval_prompt",
        ("quoted", "claude"): "idle",
        ("far", "claude"): "idle",
        ("limit", "claude"): "usage_limit",
        ("colour", "claude"): "idle",  # a throttle is not settled on first sight
        ("narrow", "claude"): "idle",
        ("nested", "claude"): "context_too_long",
    }
    assert value(first, "agentwatch_pane_match_info", tmux_session="err") == 1
    assert value(first, "agentwatch_pane_match_info", tmux_session="err", pattern="server_error")
    assert value(first, "agentwatch_pane_match_info", tmux_session="idle") is None
    assert value(first, "agentwatch_pane_usage_limit_reset_timestamp_seconds", tmux_session="limit")
    assert value(first, "agentwatch_panes", state="idle") == 5
    assert value(first, "agentwatch_panes", state="rate_limited") == 0
    assert value(first, "agentwatch_pane_classifications_total", state="api_error") == 1
    assert value(first, "agentwatch_pane_suppressed_total", reason="unsettled") == 2
    assert value(first, "agentwatch_pane_suppressed_total", reason="outside_window") == 1
    assert value(first, "agentwatch_pane_suppressed_total", reason="not_harness_line") == 2
    assert value(first, "agentwatch_idle_error_tmux_failing") == 0
    pane_ids = {
        dict(labels)["pane"] for (n, labels) in first["samples"] if n == "agentwatch_pane_state"
    }
    assert all(pane.startswith("%") for pane in pane_ids) and len(pane_ids) == 10
    err_since = value(first, "agentwatch_pane_state_since_timestamp_seconds", tmux_session="err")

    time.sleep(1.1)  # past settle_time with unchanged tails
    second = run_once(tmux, workdirs, config)
    assert states(second)[("colour", "claude")] == "rate_limited"  # ANSI colours: still found
    assert states(second)[("narrow", "claude")] == "rate_limited"  # joined by capture-pane -J
    assert value(second, "agentwatch_pane_match_info", tmux_session="narrow", pattern=(
        "server_throttle")) == 1  # fmt: skip
    assert value(second, "agentwatch_pane_state_since_timestamp_seconds", tmux_session="err") == (
        err_since
    )  # kept across --once runs
    assert value(second, "agentwatch_pane_classifications_total", state="api_error") == 1
    assert value(second, "agentwatch_pane_classifications_total", state="rate_limited") == 2
    assert value(second, "agentwatch_pane_suppressed_total", reason="unsettled") == 2  # same tails

    # the session goes on after its error: the error is stale; a closed pane leaves no series
    tmux.write(err, "\n> please continue\n\n⏺ Continuing with the fix.\n")
    tmux.run("kill-session", "-t", "busy")
    time.sleep(0.2)
    third = run_once(tmux, workdirs, config)
    assert ("busy", "claude") not in states(third)
    assert states(third)[("err", "claude")] == "idle"
    assert value(third, "agentwatch_pane_suppressed_total", reason="stale") == 1
    assert value(third, "agentwatch_panes", state="working") == 0
    assert 'tmux_session="busy"' not in third["text"]


def test_capture_errors_are_counted_not_raised(
    tmux: TmuxServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.setenv("TMUX_TMPDIR", str(tmux.folder))  # the default server: ours too
    claude = program(tmp_path / "bin", "claude")
    tmux.pane("one", claude, "idle_boxed.txt")
    finder = PaneFinder([tmux.sock], ["claude"])
    panes, duplicates = finder.find()
    assert [(p.server, p.session) for p in panes] == [(tmux.sock, "one")] and duplicates == 0
    twice = PaneFinder([tmux.sock, tmux.sock], ["claude"]).find()  # one server listed twice
    assert len(twice[0]) == 1 and twice[1] == 0
    other = TmuxServer(Path(tempfile.mkdtemp(prefix="aw-ie2-")))
    try:  # the same session name and pane id (%0) on a second server: labels would clash
        other.pane("one", claude, "idle_boxed.txt")
        clash = PaneFinder([tmux.sock, other.sock], ["claude"]).find()
        assert len(clash[0]) == 1 and clash[1] == 1
    finally:
        other.kill()
        shutil.rmtree(other.folder, ignore_errors=True)
    gone = AgentPane(tmux.sock, "one", "%999", 1, "claude")
    capturer = Capturer(45)
    assert capturer.capture(gone) is None and capturer.errors["vanished"] == 1
    broken = Capturer(45, binary="/bin/false")
    assert broken.capture(panes[0]) is None and broken.errors["failed"] == 1
    broken = Capturer(45, binary="/bin/false")
    sentinel = Sentinel(SETTLED, finder, broken, memory.Memory(), shipped(), clock=lambda: NOW)
    cycle = sentinel.cycle()
    assert cycle.panes == [] and sentinel.memory.capture_errors["failed"] == 1
    assert set(SUPPRESSION_REASONS) >= {"mid_line", "outside_window", "unsettled"}
    assert "working" in STATES


def test_capture_joins_lines_tmux_wrapped(tmux: TmuxServer, tmp_path: Path) -> None:
    claude = program(tmp_path / "bin", "claude")
    pane_id = tmux.pane("narrow", claude, "ref_server_throttle.txt", width=40)
    pane = AgentPane(tmux.sock, "narrow", pane_id, 1, "claude")
    text = Capturer(45).capture(pane)
    assert text is not None
    joined = [line for line in text.splitlines() if "API Error:" in line]
    assert len(joined) == 1 and joined[0].rstrip().endswith("· Rate limited")
    screen_only = tmux.run("capture-pane", "-p", "-t", pane_id)  # what -J avoids
    assert not any(line.rstrip().endswith("Rate limited") and "API" in line for line in (
        screen_only.splitlines()))  # fmt: skip


def test_the_loop_rewrites_the_file_and_stops_on_sigterm(
    tmux: TmuxServer, workdirs: dict[str, Path], tmp_path: Path
) -> None:
    claude = program(tmp_path / "bin", "claude")
    pane = tmux.pane("loop", claude, "idle_boxed.txt")
    config = tmp_path / "config.yaml"
    config.write_text(
        f"agents: {{tmux_sockets: [{tmux.sock}]}}\nsentinels:\n  idle-error:\n    interval: 0.2s\n"
    )
    process = subprocess.Popen(
        [*cli_command(), "--config", str(config), "sentinel", "idle-error",
         "--spool-dir", str(workdirs["spool"]), "--state-dir", str(workdirs["state"])],
        env=tmux.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        spool_file = workdirs["spool"] / "idle-error.prom"

        def pane_state() -> str | None:
            scraped = {"samples": samples(spool_file.read_text()) if spool_file.exists() else {}}
            return states(scraped).get(("loop", "claude"))

        deadline = time.monotonic() + 20
        while pane_state() != "idle":
            assert time.monotonic() < deadline, "the loop never reported the idle pane"
            time.sleep(0.1)
        tmux.write(pane, "\n  ⎿  API Error: Request timed out.\n")  # the next cycle sees it
        while pane_state() != "api_error":
            assert time.monotonic() < deadline, "the loop never saw the new error"
            time.sleep(0.1)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
    assert process.returncode == 0, stderr
    assert "Request timed out" not in stderr
