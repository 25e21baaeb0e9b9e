"""Bounded cardinality: many distinct project, model and session names are folded into
"other" in the exposition, the totals stay exact and every exposed counter monotonic."""

from __future__ import annotations

from pathlib import Path

from agentwatch.sentinels.token_ledger.ledger import Ledger
from agentwatch.sentinels.token_ledger.pricing import PriceBook
from agentwatch.sentinels.token_ledger.store import Store
from tests.conftest import run_cli, samples, token_totals
from tests.hostile.ledger_support import SPOOL_FILE, promtool_clean, spool_text, value
from tests.transcripts import append, assistant, encode, transcript

CAPS = {"max_projects": 5, "max_models": 3, "max_sessions": 4}


def _once(dirs: dict[str, Path], caps: dict[str, int] = CAPS) -> str:
    config = dirs["state"].parent / "config.yaml"
    settings = ", ".join(f"{key}: {number}" for key, number in caps.items())
    config.write_text(f"sentinels:\n  token-ledger: {{{settings}}}\n")
    result = run_cli(
        "--config", str(config), "sentinel", "token-ledger", "--once",
        "--spool-dir", str(dirs["spool"]), "--state-dir", str(dirs["state"]),
        env={"CLAUDE_CONFIG_DIR": str(dirs["claude"])},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return spool_text(dirs)


def _names(text: str, family: str, label: str) -> set[str]:
    return {dict(labels)[label] for (name, labels), _ in samples(text).items() if name == family}


def _many(root: Path, sessions: int, per_session: int, start: int = 0) -> int:
    """Lines with a distinct project and model each, over `sessions` transcripts."""
    tokens = 0
    for number in range(start, start + sessions):
        lines = [
            assistant(input_tokens=number + 1, cwd=f"/w/p{number}-{k}", model=f"m-{number}-{k}")
            for k in range(per_session)
        ]
        tokens += (number + 1) * per_session
        transcript(root, slug=f"-w-s{number}", session=f"s{number}").write_bytes(encode(*lines))
    return tokens


def test_many_names_are_folded_with_exact_totals(workdirs: dict[str, Path]) -> None:
    tokens = _many(workdirs["claude"], sessions=30, per_session=10)
    text = _once(workdirs)
    promtool_clean(workdirs["spool"] / SPOOL_FILE)
    assert token_totals(text)["input"] == tokens  # the fold loses no token
    projects = _names(text, "agentwatch_tokens_total", "project")
    models = _names(text, "agentwatch_tokens_total", "model")
    assert len(projects) == 5 + 1 and "other" in projects
    assert len(models) == 3 + 1 and "other" in models
    assert value(text, "agentwatch_ledger_folded_series", label="project") == 300 - 5
    assert value(text, "agentwatch_ledger_folded_series", label="model") == 300 - 3
    assert _names(text, "agentwatch_api_responses_total", "project") == projects


def test_folded_counters_stay_monotonic(workdirs: dict[str, Path]) -> None:
    root = workdirs["claude"]
    _many(root, sessions=8, per_session=2)
    before = samples(_once(workdirs))
    # New names (folded: the slots are taken), and more tokens for kept and folded names.
    tokens = _many(root, sessions=8, per_session=2, start=8)
    append(transcript(root, slug="-w-s0", session="s0"), encode(assistant(cwd="/w/p0-0")))
    after_text = _once(workdirs, {**CAPS, "max_projects": 7})  # a raised cap
    after = samples(after_text)
    for key, number in before.items():
        if key[0].endswith("_total"):
            assert key in after, f"{key} vanished"
            assert after[key] >= number, f"{key} went down"
    # The raised cap gives its two new slots to names never seen before.
    assert len(_names(after_text, "agentwatch_tokens_total", "project")) == 7 + 1
    assert token_totals(after_text)["input"] == sum((n + 1) * 2 for n in range(8)) + tokens + 100


def test_a_session_from_the_future_expires_with_the_others(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    now = 1_795_000_000.0
    transcript(root, session="today").write_bytes(
        encode(assistant(timestamp="2026-11-18T11:06:40.000Z"))  # = now
    )
    transcript(root, session="future").write_bytes(
        encode(assistant(timestamp="2099-01-01T00:00:00.000Z"))
    )
    prices = PriceBook.load()
    ledger = Ledger(Store(tmp_path / "l.sqlite"), prices, [root / "projects"], clock=lambda: now)
    ledger.catch_up()
    assert set(ledger.sessions) == {"today", "future"}
    ledger.store.close()
    later = now + 7200 + 1
    again = Ledger(Store(tmp_path / "l.sqlite"), prices, [root / "projects"], clock=lambda: later)
    again.expire_sessions()
    assert again.sessions == {}
    again.store.close()


def test_sessions_past_the_cap_show_as_other(tmp_path: Path) -> None:
    from agentwatch.core import spool
    from agentwatch.sentinels.token_ledger.metrics import CounterText, families

    root = tmp_path / "claude"
    now = 1_795_000_000.0
    for number in range(10):
        transcript(root, session=f"s{number}").write_bytes(
            encode(assistant(input_tokens=10, timestamp="2026-11-18T11:06:40.000Z"))
        )
    ledger = Ledger(
        Store(tmp_path / "l.sqlite"), PriceBook.load(), [root / "projects"],
        clock=lambda: now, max_sessions=4,
    )  # fmt: skip
    ledger.catch_up()
    text = spool.render(list(families(ledger, 0, CounterText())))
    sessions = _names(text, "agentwatch_session_tokens_total", "session")
    assert len(sessions) == 4 + 1 and "other" in sessions
    got = value(text, "agentwatch_session_tokens_total", agent="claude-code", project="other",
                session="other", type="input")  # fmt: skip
    assert got == 60
    assert value(text, "agentwatch_ledger_folded_series", label="session") == 6
    ledger.store.close()
