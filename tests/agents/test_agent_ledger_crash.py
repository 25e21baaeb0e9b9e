"""SIGKILL during a backfill never counts twice: a real `agentwatch sentinel agent-ledger`
process is killed mid-backfill (while its database holds some of the files, not all) again and
again on a generated Gemini corpus, restarted each time, and finished with `--once`; its spool
file then equals that of one clean run on the same files, and its totals the reader's.

In process: a batch whose commit fails half-way is dropped whole and read again, and a file
that cannot be read for a while is read once it can, even when it did not change."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from agentwatch.sentinels.agent_ledger import gemini, readers
from agentwatch.sentinels.agent_ledger.base import TOKEN_TYPES, ReadResult, daily_totals
from agentwatch.sentinels.agent_ledger.ledger import REJECTED, TOKENS, Ledger
from agentwatch.sentinels.agent_ledger.store import DATABASE_FILE, Store
from bench.generators import gemini_corpus as corpus
from tests.agents import agent_ledger_fake as fake
from tests.agents.agent_ledger_run import Samples, Setup, gemini_entries, total

KILLS = 3


def committed(database: Path) -> tuple[int, float, float] | None:
    """(files committed, input tokens in the rows, input tokens in the counters), or None
    while the database cannot be read yet."""
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=0.05) as db:
            files = db.execute("SELECT count(*) FROM files").fetchone()[0]
            rows = db.execute("SELECT total(t_in) FROM responses").fetchone()[0]
            counted = db.execute(
                "SELECT total(value) FROM counters WHERE name = 'agentwatch_tokens' "
                "AND labels LIKE '%\"input\"]'"
            ).fetchone()[0]
    except sqlite3.Error:
        return None
    return files, rows, counted


def stored(database: Path) -> list[tuple]:
    """The responses rows in key order, and the names of the table's indexes."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT * FROM responses ORDER BY key").fetchall()
        indexes = db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'responses'"
            " ORDER BY name"
        ).fetchall()
    return [*indexes, *rows]


def kill_mid_backfill(setup: Setup, data: Path, files: int, after: int, jitter: float) -> int:
    """Start the sentinel (a loop, not --once) and SIGKILL it `jitter` seconds after more
    than `after` but fewer than all files are committed (somewhere in reading or committing
    the next batch); how many were (all of them when it was too quick)."""
    process = subprocess.Popen(
        [*setup.command(), "--spool-dir", str(setup.spool), "--state-dir", str(setup.state)],
        env=setup.env(data), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    database = setup.state / DATABASE_FILE
    seen = after
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = committed(database) if database.exists() else None
            if state is not None:
                seen = state[0]
                if after < seen < files or seen >= files:
                    time.sleep(jitter)
                    break
            time.sleep(0.002)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    return seen


def comparable(found: Samples) -> Samples:
    """Everything but the loop's own series (and spend, a sum over time: checked apart);
    the per-session series summed per type, as which sessions keep a series of their own
    past max_sessions depends on the order they became active (a restart: the newest)."""
    kept: Samples = {}
    for (name, labels), value in found.items():
        if name.startswith(("agentwatch_sentinel_", "agentwatch_spend_usd")):
            continue
        if name.startswith("agentwatch_session_") and name.endswith("_total"):
            labels = tuple(item for item in labels if item[0] in ("agent", "type"))
            kept[(name, labels)] = kept.get((name, labels), 0.0) + value
        elif name.startswith("agentwatch_session_") or name.endswith("_folded_series"):
            continue
        else:
            kept[(name, labels)] = value
    return kept


@pytest.mark.slow
def test_sigkill_mid_backfill_then_restart_equals_one_clean_run(tmp_path: Path) -> None:
    data = corpus.mixed(tmp_path / "corpus", seed=11, sessions=600).data_dir
    files = len(gemini.files(data))
    cleanly = Setup(tmp_path / "clean")
    clean = cleanly.once(data)

    crashed = Setup(tmp_path / "crashed")
    crashed.config()
    partial, seen = 0, 0
    rng = random.Random(17)
    for _ in range(KILLS):
        seen = kill_mid_backfill(crashed, data, files, seen, rng.uniform(0.0, 0.03))
        state = committed(crashed.state / DATABASE_FILE)
        assert state is not None
        assert state[1] == state[2], "rows and counters disagree after a SIGKILL"
        partial += 0 < state[0] < files
        seen = state[0]
        if seen >= files:
            break
    assert partial, "no kill landed mid-backfill: the corpus is read too fast to test this"
    again = crashed.once(data)
    assert comparable(again) == pytest.approx(comparable(clean), rel=1e-12)  # float sums
    assert crashed.once(data) == crashed.once(data)  # and a restart after all is quiet
    # the rows `agentwatch report` reads: one per key, as the clean run's (the kills left
    # the table without its indexes; the next open built them, keys unique)
    assert stored(crashed.state / DATABASE_FILE) == stored(cleanly.state / DATABASE_FILE)

    entries = gemini_entries(data)
    days = daily_totals(entries, "UTC", gemini.price).values()
    for kind in TOKEN_TYPES:
        assert total(again, "agentwatch_tokens_total", type=kind) == sum(d[kind] for d in days)
    month = total(again, "agentwatch_spend_usd", period="month")
    assert month == total(clean, "agentwatch_spend_usd", period="month")


class _FailingDb:
    """A connection that fails the Nth statement that writes sessions (mid-transaction)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)

    def executemany(self, sql: str, rows: object) -> sqlite3.Cursor:
        if sql.startswith("INSERT INTO sessions"):
            raise sqlite3.OperationalError("disk I/O error")
        return self.db.executemany(sql, rows)  # type: ignore[arg-type]


def test_a_batch_that_fails_mid_commit_is_dropped_whole_and_read_again(tmp_path: Path) -> None:
    data = corpus.mixed(tmp_path / "corpus", seed=5, sessions=5).data_dir
    plugs = {"gemini": (readers.Plug("gemini"), gemini)}
    env = {"GEMINI_DATA_DIR": str(data)}
    store = Store(tmp_path / DATABASE_FILE)
    ledger = Ledger(store, plugs, env=env, home=tmp_path)  # type: ignore[arg-type]
    real = store.db
    store.db = _FailingDb(real)  # type: ignore[assignment]
    ledger.scan()
    with pytest.raises(sqlite3.OperationalError):  # the loop logs it as a failed cycle
        ledger.step()  # the rows and the counters were written, then the sessions failed
    assert ledger.read_errors["gemini"] == 0 and ledger.commits == 0
    assert real.execute("SELECT count(*) FROM responses").fetchone()[0] == 0
    assert real.execute("SELECT count(*) FROM files").fetchone()[0] == 0
    assert ledger.counters == {}
    store.db = real
    ledger.scan()
    while ledger.step():
        pass
    store.close()
    found = Ledger(Store(tmp_path / DATABASE_FILE), plugs, env=env, home=tmp_path)  # type: ignore[arg-type]
    counted = sum(v for (name, labels), v in found.counters.items()
                  if name == "agentwatch_tokens" and labels[3] == "input")  # fmt: skip
    assert counted == sum(e.input for e in gemini_entries(data))


class _Flaky:
    """The fake reader, but the first read of each file fails: as unreadable (as a file with
    no read permission would, which root cannot make), or by raising (a reader's bug)."""

    AGENT = fake.AGENT

    def __init__(self, folder: Path, raises: bool):
        self.folder = folder
        self.raises = raises
        self.failed: set[Path] = set()
        self.files = fake.files
        self.price = fake.price

    def roots(self, env: object, home: Path) -> list[Path]:
        return [self.folder]

    def read_files(self, paths: Iterable[Path]) -> ReadResult:
        chosen = list(paths)
        if not set(chosen) <= self.failed:
            self.failed.update(chosen)
            if self.raises:
                raise KeyError("a reader's bug")
            result = ReadResult()
            result.reject("unreadable")
            return result
        return fake.read_files(chosen)


@pytest.mark.parametrize("raises", [False, True], ids=["unreadable", "reader_raises"])
def test_a_file_unreadable_for_a_while_is_read_when_it_can_be(tmp_path: Path, raises: bool) -> None:
    folder = tmp_path / "fake"
    folder.mkdir()
    (folder / "a.jsonl").write_text(fake.line("k1", 1e9, "s", "p", "m", (5, 1, 0, 0)))
    plugs = {fake.AGENT: (readers.Plug(fake.PLUG_MODULE, name=fake.AGENT), _Flaky(folder, raises))}
    ledger = Ledger(Store(tmp_path / DATABASE_FILE), plugs, home=tmp_path)  # type: ignore[arg-type]
    for _ in range(2):  # the file does not change in between
        ledger.scan()
        while ledger.step():
            pass
    assert ledger.read_errors[fake.AGENT] == 1
    counted = {labels[3]: v for (name, labels), v in ledger.counters.items() if name == TOKENS}
    assert counted == {"input": 5, "output": 1}
    assert not any(name == REJECTED for name, _labels in ledger.counters)


def _codex_home(base: Path) -> dict[str, str]:
    from tests.agents import codex_corpus

    home = base / "codex-home"
    for seed in range(8):  # several homes' worth of rollouts in one, for a longer read
        codex_corpus.generate(home / f"h{seed}", seed, sessions=30)
    return {"CODEX_HOME": ",".join(str(path) for path in sorted(home.iterdir()))}


def _opencode_dirs(base: Path) -> dict[str, str]:
    from bench.generators import opencode_corpus

    found = opencode_corpus.random_corpus(base / "opencode", seed=3, messages=4000)
    return {"OPENCODE_DATA_DIR": found.env["OPENCODE_DATA_DIR"]}


@pytest.mark.slow
@pytest.mark.parametrize("make", [_codex_home, _opencode_dirs], ids=["codex", "opencode"])
def test_sigkill_at_any_moment_of_a_read_across_files_counts_once(tmp_path: Path, make) -> None:
    """Codex's and OpenCode's files are read and committed together (their rules look across
    files), so a kill leaves all or nothing of a read: killed at random moments of the
    backfill, restarted, the ledger ends where one clean run ends."""
    env = make(tmp_path / "corpus")
    clean = Setup(tmp_path / "clean").once(None, env=env)
    assert any(name == "agentwatch_tokens_total" for name, _ in clean)
    crashed = Setup(tmp_path / "crashed")
    crashed.config()
    rng = random.Random(23)
    for _ in range(KILLS):
        process = subprocess.Popen(
            [*crashed.command(), "--spool-dir", str(crashed.spool),
             "--state-dir", str(crashed.state)],
            env=crashed.env(None, env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(rng.uniform(0.3, 1.5))  # somewhere in start-up, reading or committing
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        state = committed(crashed.state / DATABASE_FILE)
        assert state is None or state[1] == state[2], "rows and counters disagree"
    again = crashed.once(None, env=env)
    assert comparable(again) == pytest.approx(comparable(clean), rel=1e-12)
