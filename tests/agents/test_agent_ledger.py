"""The agent-ledger sentinel, run for real (`agentwatch sentinel agent-ledger --once`) on real
Gemini CLI files and generated ones, its spool file parsed with prometheus_client's parser.

Its totals are the reader's (base.daily_totals, which the conformance tests hold equal to
ccusage's) and ccusage's itself; appending, a response rewritten with more tokens, a
truncation, a replaced file, a vanished file and a restart never count anything twice (the
model in agent_ledger_run.py: per key, the most any read showed). A fake reader plugged in
beside Gemini's shows the agent label, the caps, unpriced tokens and rejects.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from agentwatch.core import run_budget
from agentwatch.core.spend import period_starts
from agentwatch.exporter.collector import SpoolCollector
from agentwatch.sentinels import registry
from agentwatch.sentinels.agent_ledger import gemini
from agentwatch.sentinels.agent_ledger.base import TOKEN_TYPES, daily_totals
from agentwatch.sentinels.agent_ledger.readers import plugged
from bench.generators import gemini_corpus as corpus
from tests.agents import agent_ledger_fake as fake
from tests.agents.agent_ledger_run import (
    Model,
    Setup,
    assert_matches,
    gemini_entries,
    series,
    total,
)
from tests.agents.test_gemini_conformance import ccusage_rows
from tests.conftest import run_ledger_once, samples
from tests.test_metrics_doc import LOOP_FAMILIES, families_of
from tests.transcripts import assistant, encode, transcript

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "gemini" / "tmp"
TOKENS = "agentwatch_tokens_total"


def iso(seconds: float) -> str:
    """A timestamp as Gemini CLI writes it (UTC, milliseconds)."""
    stamp = dt.datetime.fromtimestamp(seconds, dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def session_file(data_dir: Path, name: str, messages: list[dict], session: str = "s1") -> Path:
    path = data_dir / "proj" / "chats" / f"session-{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    (data_dir / "proj" / ".project_root").write_text("/work/projects/my-project")
    lines = [corpus.header(session), *messages]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def msg(ident: str, stamp: str, input: int, output: int, cached: int = 0) -> dict:
    return corpus.message(ident, stamp, "gemini-2.5-flash", corpus.tokens(input, output, cached))


# ----------------------------------------------------------------------------- totals


def test_totals_equal_the_readers_and_ccusage(tmp_path: Path) -> None:
    data = corpus.mixed(tmp_path / "mix", seed=7, sessions=30).data_dir
    shutil.copytree(FIXTURES, data, dirs_exist_ok=True)  # the real CLI's files too
    found = Setup(tmp_path).once(data)
    entries = gemini_entries(data)
    days = daily_totals(entries, "UTC", gemini.price).values()
    for kind in TOKEN_TYPES:
        assert total(found, TOKENS, agent="gemini", type=kind) == sum(d[kind] for d in days)
    cost = sum(d["cost_usd"] for d in days)
    assert total(found, "agentwatch_cost_usd_total", agent="gemini") == pytest.approx(cost, 1e-9)
    assert total(found, "agentwatch_api_responses_total", agent="gemini") == len(entries)
    theirs = ccusage_rows(data, tmp_path)
    for kind in TOKEN_TYPES:
        assert total(found, TOKENS, type=kind) == sum(row.get(kind, 0) for row in theirs.values())
    projects = {labels["project"] for labels in series(found, TOKENS)}
    assert projects == {"scripted-project", "unknown"}  # mixed has no .project_root
    tracked = total(found, "agentwatch_agent_ledger_files_tracked", agent="gemini")
    assert tracked == len(gemini.files(data))


def test_the_spool_file_names_only_what_it_declares(tmp_path: Path) -> None:
    found = Setup(tmp_path).once(FIXTURES)
    text = (tmp_path / "spool" / "agent-ledger.prom").read_text()
    declared = set(registry.get("agent-ledger").metrics)
    assert set(families_of(text)) - LOOP_FAMILIES == declared
    for sample, labels in found:
        if sample.startswith("agentwatch_sentinel_"):
            continue
        agent = dict(labels).get("agent")
        if sample.startswith("agentwatch_agent_ledger_"):  # health: every plugged agent
            assert agent in plugged(), sample
        else:  # what was counted: the fixtures are Gemini CLI's
            assert agent == "gemini", sample
    # No text of a prompt or a reply anywhere: not in the spool, not in the database.
    raw = b"".join(p.read_bytes() for p in FIXTURES.rglob("*.jsonl"))
    state = b"".join(p.read_bytes() for p in (tmp_path / "state").iterdir() if p.is_file())
    for needle in (b"What is in this folder", b"And now?", b"Listing the folder first"):
        assert needle in raw
        assert needle not in text.encode() and needle not in state


# ----------------------------------------------------------------------------- never twice


@pytest.mark.slow
def test_appends_rewrites_truncation_replacement_vanishing_and_restarts(tmp_path: Path) -> None:
    setup, model = Setup(tmp_path), Model()
    data = tmp_path / "gemini"
    stamp = corpus.at(5)
    first = [msg(f"m{n}", stamp, 1000 + n, 10 + n, 100) for n in range(6)]
    path = session_file(data, "a", first)
    other = session_file(data, "b", [msg("x1", stamp, 5000, 50)], session="s2")

    def check() -> None:
        model.read(data)
        assert_matches(setup.once(data), model)

    check()
    assert model.tokens("input") > 0
    with path.open("a") as out:  # appended: a new response, and one written again, grown
        out.write(json.dumps(msg("m6", stamp, 2000, 20)) + "\n")
        out.write(json.dumps(msg("m2", stamp, 1500, 99, 100)) + "\n")
    check()
    assert 1400 in {best[0] for best in model.best.values()}  # m2 grew (cached is inside)
    full = path.read_bytes()
    path.write_bytes(full[: len(full) // 2])  # truncated: nothing goes down
    check()
    path.write_bytes(full)  # grown back: nothing counts again
    check()
    replaced = path.with_suffix(".tmp")  # replaced (a new inode), one response smaller
    replaced.write_text(full.decode().replace('"input": 1003', '"input": 3'))
    os.replace(replaced, path)
    check()
    other.unlink()  # vanished: what it counted stays
    found = setup.once(data)
    assert_matches(found, model)
    assert total(found, "agentwatch_agent_ledger_files_tracked", agent="gemini") == 1
    for _ in range(2):  # restarts with nothing changed, then the same file touched
        check()
        os.utime(path)
    before = dict(setup.once(data))
    assert before == setup.once(data)


def test_a_shrunk_response_never_lowers_a_counter_and_a_bad_line_counts_once(
    tmp_path: Path,
) -> None:
    setup, data = Setup(tmp_path), tmp_path / "gemini"
    path = session_file(data, "a", [msg("m1", corpus.at(5), 900, 90)])
    with path.open("a") as out:
        out.write('{"type": "gemini", "tokens": \n')  # a torn line: bad JSON
    found = setup.once(data)
    rejected = "agentwatch_agent_ledger_records_rejected_total"
    assert total(found, rejected, agent="gemini", reason="bad_line") == 1
    path.write_text(path.read_text().replace('"input": 900', '"input": 10') + '{"type": "gemini"\n')
    found = setup.once(data)
    assert total(found, TOKENS, type="input") == 900
    assert total(found, rejected, reason="bad_line") == 2  # a second bad line, not the first
    os.utime(path, (time.time() + 5, time.time() + 5))
    assert total(setup.once(data), rejected, reason="bad_line") == 2


# ----------------------------------------------------------------------------- sessions, spend


def test_sessions_expire_and_spend_follows_the_periods_and_the_run(tmp_path: Path) -> None:
    now = time.time()
    day_start = period_starts(now)["day"]
    data = tmp_path / "gemini"
    recent = [msg("r1", iso(now - 600), 10_000, 100), msg("r2", iso(now - 30), 20_000, 200)]
    session_file(data, "recent", recent, session="recent-session")
    old = now - 40 * 86400  # before this month and beyond session_ttl
    session_file(data, "old", [msg("o1", iso(old), 50_000, 500)], session="old-session")
    setup = Setup(tmp_path)
    setup.config(session_ttl=3600)
    run_budget.start(setup.state, now - 300)  # r2 is in the run, r1 is not
    found = setup.once(data)
    sessions = {s["session"] for s in series(found, "agentwatch_session_tokens_total")}
    assert sessions == {"recent-session"}
    entries = {e.key: e for e in gemini_entries(data)}
    cost = {e.session: 0.0 for e in entries.values()}
    by_ident = {}
    for entry in entries.values():
        cost[entry.session] += gemini.price(entry) or 0.0
        by_ident[entry.input] = gemini.price(entry) or 0.0
    spend = "agentwatch_spend_usd"
    if now - 600 > day_start:  # r1 is today (not right after midnight)
        assert total(found, spend, agent="gemini", period="day") == pytest.approx(
            cost["recent-session"]
        )
    assert total(found, spend, agent="gemini", period="run") == pytest.approx(by_ident[20_000])
    assert total(found, spend, agent="gemini", period="month") >= by_ident[20_000]
    assert total(found, spend, agent="gemini", period="month") < sum(cost.values())
    session_cost = total(found, "agentwatch_session_cost_usd_total", session="recent-session")
    assert session_cost == pytest.approx(cost["recent-session"])
    last = total(found, "agentwatch_session_last_activity_timestamp_seconds")
    assert last == pytest.approx(now - 30, abs=0.01)
    run_budget.stop(setup.state)
    setup.config(session_ttl=60)  # r2 was 30 s ago: still recent; r1 is not, but same session
    found = setup.once(data)
    assert {s["period"] for s in series(found, spend)} == {"day", "week", "month"}
    setup.config(session_ttl=1)
    assert series(setup.once(data), "agentwatch_session_tokens_total") == []


# ----------------------------------------------------------------------------- a fake agent


def test_a_fake_agent_gets_its_label_the_caps_and_unpriced_tokens(tmp_path: Path) -> None:
    setup, folder = Setup(tmp_path), tmp_path / "fake"
    folder.mkdir()
    now = time.time()
    lines = [
        fake.line(f"k{n}", now - 100 + n, f"sess-{n % 3}", f"proj-{n % 4}", f"model-{n % 2}",
                  (100 * (n + 1), 10, 5, 1))
        for n in range(12)
    ]  # fmt: skip
    lines.append(fake.line("free", now, "sess-0", "proj-0", "free-model", (7, 3, 0, 0)))
    lines.append(fake.line("stated", now, "sess-0", "proj-0", "model-0", (1, 1, 0, 0), 0.25))
    (folder / "a.jsonl").write_text("".join(lines[:8]) + "not json\n")
    (folder / "b.jsonl").write_text("".join(lines[8:]))
    setup.config(agents=["gemini", "fake"], max_projects=2, max_models=1, max_sessions=1)
    env = {fake.DIR_ENV: str(folder)}
    found = setup.once(tmp_path / "no-gemini", fake=True, env=env)
    entries = fake.read_files(sorted(folder.glob("*.jsonl"))).entries
    assert {s["agent"] for s in series(found, TOKENS)} == {"fake"}
    for kind in TOKEN_TYPES:
        expected = sum(getattr(e, kind) for e in entries)
        assert total(found, TOKENS, agent="fake", type=kind) == expected
        sessions = total(found, "agentwatch_session_tokens_total", agent="fake", type=kind)
        assert sessions == expected
    projects = {s["project"] for s in series(found, TOKENS)}
    models = {s["model"] for s in series(found, TOKENS)}
    assert len(projects - {"other"}) == 2 and "other" in projects
    assert len(models - {"other"}) == 1 and "other" in models
    shown = {s["session"] for s in series(found, "agentwatch_session_tokens_total")}
    assert len(shown - {"other"}) == 1 and "other" in shown
    cost = sum(fake.price(e) or 0.0 for e in entries if e.cost_usd is None) + 0.25
    assert total(found, "agentwatch_cost_usd_total", agent="fake") == pytest.approx(cost)
    assert total(found, "agentwatch_agent_ledger_unpriced_tokens_total", agent="fake") == 10
    rejected = "agentwatch_agent_ledger_records_rejected_total"
    assert total(found, rejected, agent="fake", reason="bad_line") == 1
    folded = "agentwatch_agent_ledger_folded_series"
    assert total(found, folded, agent="fake", label="project") == 2
    assert total(found, "agentwatch_agent_ledger_files_tracked", agent="gemini") == 0
    # The same key moved to the other file and grown: only the growth counts.
    (folder / "b.jsonl").write_text(
        "".join(lines[8:]) + fake.line("k0", now, "sess-0", "proj-0", "model-0", (150, 10, 5, 1))
    )
    again = setup.once(tmp_path / "no-gemini", fake=True, env=env)
    assert (
        total(again, TOKENS, agent="fake", type="input")
        == total(found, TOKENS, agent="fake", type="input") + 50
    )
    assert total(again, rejected, agent="fake") == 1


def test_an_unknown_agent_is_a_config_problem(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.config(agents=["gemini", "nosuch"])
    with pytest.raises(AssertionError, match="no reader for nosuch"):
        setup.once(FIXTURES)


# ----------------------------------------------------------------------------- with Claude's


def test_the_exporter_merges_it_with_the_token_ledger(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    claude = tmp_path / "claude"
    transcript(claude).write_bytes(encode(assistant(input_tokens=123)))
    run_ledger_once({"claude": claude, "spool": setup.spool, "state": setup.state})
    ours = setup.once(FIXTURES)
    metrics = CollectorRegistry(auto_describe=False)
    thresholds = registry.config_from_mapping({})["thresholds"]
    collector = SpoolCollector(setup.spool, ["token-ledger", "agent-ledger"], thresholds=thresholds)
    metrics.register(collector)  # type: ignore[arg-type]
    served = samples(generate_latest(metrics).decode())
    for name in ("token-ledger", "agent-ledger"):
        up = served[("agentwatch_sentinel_up", (("sentinel", name),))]
        assert up == 1, name  # both files served: no clash between them
    assert total(served, TOKENS, type="input") == 123 + total(ours, TOKENS, type="input")
    assert total(served, TOKENS, agent="gemini") == total(ours, TOKENS)
    spend = [labels for labels in series(served, "agentwatch_spend_usd")]
    assert {"agent": "claude-code", "period": "day"} in spend
    assert {"agent": "gemini", "period": "day"} in spend


# ----------------------------------------------------------------------------- as a loop


def test_the_loop_follows_new_files_and_stops_on_sigterm(tmp_path: Path) -> None:
    setup, model, data = Setup(tmp_path), Model(), tmp_path / "gemini"
    path = session_file(data, "a", [msg("m1", corpus.at(5), 1000, 10)])
    setup.config(interval=0.2)
    command = [*setup.command(), "--spool-dir", str(setup.spool), "--state-dir", str(setup.state)]
    process = subprocess.Popen(
        command, env=setup.env(data), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    spool = setup.spool / "agent-ledger.prom"

    def wait_for(expected: Model) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                assert_matches(samples(spool.read_text()), expected)
                return
            except (AssertionError, OSError):
                time.sleep(0.05)
        assert_matches(samples(spool.read_text()), expected)

    try:
        model.read(data)
        wait_for(model)
        with path.open("a") as out:
            out.write(json.dumps(msg("m2", corpus.at(5), 2000, 20)) + "\n")
        session_file(data, "b", [msg("n1", corpus.at(6), 3000, 30)], session="s2")
        model.read(data)
        wait_for(model)
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
