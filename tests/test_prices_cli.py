"""`agentwatch prices`: every model of a real ledger database (written by the real sentinel),
with its price entries or "unpriced", and the tokens and cost counted for it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from tests.conftest import run_cli
from tests.transcripts import assistant, encode, transcript

SONNET = "claude-sonnet-4-5-20250929"
UNKNOWN = "claude-opus-4-9"  # an unknown minor version: never guessed


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A state folder after one run of the sentinel on a small tree."""
    root = tmp_path_factory.mktemp("prices")
    claude, spool, state = root / "claude", root / "spool", root / "state"
    lines = [
        assistant(model=SONNET, input_tokens=300_000, output_tokens=0),  # long context: $1.80
        assistant(model=SONNET, input_tokens=1000, output_tokens=100),
        assistant(model="claude-sonnet-5-5", cache_read=1_000_000, input_tokens=0,
                  output_tokens=0, timestamp="2026-10-06T23:59:59.000Z"),  # $0.20 a MTok
        assistant(model="claude-sonnet-5-5", cache_read=1_000_000, input_tokens=0,
                  output_tokens=0, timestamp="2026-10-07T00:00:00.000Z"),  # $0.10 since
        assistant(model=UNKNOWN, input_tokens=700, output_tokens=7),
    ]  # fmt: skip
    transcript(claude).write_bytes(encode(*lines))
    env = {"CLAUDE_CONFIG_DIR": str(claude), "XDG_CONFIG_HOME": str(root / "xdg")}
    ran = run_cli("sentinel", "token-ledger", "--once", "--spool-dir", str(spool),
                  "--state-dir", str(state), env=env)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return {"state": state, "xdg": root / "xdg", "root": root}


def _prices(ledger: dict[str, Path], *args: str) -> tuple[int, str]:
    env = {"XDG_CONFIG_HOME": str(ledger["xdg"])}
    result = run_cli(*args, "prices", "--state-dir", str(ledger["state"]), env=env)
    return result.returncode, result.stdout + result.stderr


def test_json_lists_every_model_with_its_entries_and_counts(ledger: dict[str, Path]) -> None:
    out = run_json(ledger)
    models = {row["model"]: row for row in out["models"]}
    assert set(models) == {SONNET, "claude-sonnet-5-5", UNKNOWN}
    sonnet = models[SONNET]
    assert sonnet["status"] == "priced" and sonnet["priced_as"] == "claude-sonnet-4-5"
    assert sonnet["tokens"] == {"input": 301_000, "output": 100, "cache_read": 0,
                                "cache_creation": 0}  # fmt: skip
    assert sonnet["cost_usd"] == pytest.approx(1.80 + 1000 * 3e-6 + 100 * 15e-6)
    (entry,) = sonnet["entries"]
    assert entry["long_context"]["above_input_tokens"] == 200_000
    assert entry["long_context"]["input"] == 6 and entry["source"].startswith("https://")
    dated = models["claude-sonnet-5-5"]
    assert [e["cache_read"] for e in dated["entries"]] == [0.2, 0.1]
    assert [e["until"] for e in dated["entries"]] == ["2026-10-07", None]
    assert dated["cost_usd"] == pytest.approx(0.2 + 0.1)  # each line by its own day
    unknown = models[UNKNOWN]
    assert unknown["status"] == "unpriced" and unknown["entries"] == []
    assert unknown["total_tokens"] == 707 and unknown["cost_usd"] == 0
    assert out["models"][0]["model"] == UNKNOWN  # what is counted at $0 comes first


def run_json(ledger: dict[str, Path]) -> dict:
    env = {"XDG_CONFIG_HOME": str(ledger["xdg"])}
    result = run_cli("prices", "--json", "--state-dir", str(ledger["state"]), env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_table_shows_unpriced_models_and_their_tokens(ledger: dict[str, Path]) -> None:
    code, out = _prices(ledger)
    assert code == 0, out
    first_row = out.splitlines()[1].split()
    assert first_row[:3] == [UNKNOWN, "unpriced", "-"]
    assert "1 unpriced model(s): 707 tokens counted at $0" in out
    assert "2026-10-07" in out and "claude-sonnet-4-5" in out


def test_config_override_prices_a_model_the_table_lacks(ledger: dict[str, Path]) -> None:
    config = ledger["root"] / "override.yaml"
    prices = {UNKNOWN: {"input": 5, "output": 25}}
    config.write_text(yaml.safe_dump({"sentinels": {"token-ledger": {"prices": prices}}}))
    env = {"XDG_CONFIG_HOME": str(ledger["xdg"])}
    result = run_cli("--config", str(config), "prices", "--json", "--state-dir",
                     str(ledger["state"]), env=env)  # fmt: skip
    models = {row["model"]: row for row in json.loads(result.stdout)["models"]}
    assert models[UNKNOWN]["status"] == "priced" and models[UNKNOWN]["priced_as"] == UNKNOWN
    assert models[UNKNOWN]["entries"][0]["input"] == 5


def test_reads_without_writing_and_explains_a_missing_database(
    ledger: dict[str, Path], tmp_path: Path
) -> None:
    database = ledger["state"] / "token-ledger.sqlite"
    before = database.stat().st_mtime_ns
    assert _prices(ledger)[0] == 0
    assert database.stat().st_mtime_ns == before
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)  # where the models come from
    assert db.execute("SELECT COUNT(DISTINCT model) FROM labelsets").fetchone() == (3,)
    db.close()
    env = {"XDG_CONFIG_HOME": str(ledger["xdg"])}
    missing = run_cli("prices", "--state-dir", str(tmp_path / "none"), env=env)
    assert missing.returncode == 1 and "no token-ledger database" in missing.stdout


def test_a_backfill_under_way_is_read_from_its_staged_rows(
    ledger: dict[str, Path], tmp_path: Path
) -> None:
    """While a cold backfill runs, its responses wait in responses_staged, the latest copy
    of a key being its row: the models read from such a database (the real sentinel's rows
    moved there, each after an older copy that counted nothing) equal the merged ones."""
    from agentwatch.cli.prices import read_models
    from agentwatch.sentinels.token_ledger.pricing import PriceBook

    database = ledger["state"] / "token-ledger.sqlite"
    want = read_models(database, PriceBook.load())
    assert want
    staged = tmp_path / "token-ledger.sqlite"
    source, copy = sqlite3.connect(database), sqlite3.connect(staged)
    source.backup(copy)
    source.close()
    columns = "msg, req, side, total, speed, cost, c_in, c_out, c_cr, c_cc, c_cost, labels"
    copy.execute(f"INSERT INTO responses_staged ({columns}) SELECT msg, req, side, total, "
                 "speed, cost, 0, 0, 0, 0, 0.0, labels FROM responses")  # fmt: skip
    copy.execute(f"INSERT INTO responses_staged ({columns}) SELECT * FROM responses")
    copy.execute("DELETE FROM responses")
    copy.commit()
    copy.close()
    assert read_models(staged, PriceBook.load()) == want
