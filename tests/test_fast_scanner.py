"""The ledger says whether its C scanner is loaded: a real `sentinel token-ledger --once`
serves `agentwatch_ledger_fast_scanner_available` 1 with the extension, and 0 (with one
warning naming why) when the import of `_fastline` fails, while counting the same tokens
through the Python references. The failing import is made by the one thing a test can do to
a shared installation without touching it: a `sitecustomize` that blocks the module
(`sys.modules[name] = None` makes every import of it raise ImportError, as a missing or
broken `.so` does)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentwatch.sentinels.token_ledger import scanner
from tests.conftest import run_cli, samples, token_totals
from tests.transcripts import assistant, encode, transcript, user_line

FASTLINE = "agentwatch.sentinels.token_ledger._fastline"
BLOCK = f"import sys\nsys.modules[{FASTLINE!r}] = None\n"


def _history(claude: Path) -> None:
    """One session: a prompt, a response streamed in two copies, and two more responses."""
    streamed = assistant("msg_stream", output_tokens=5)
    final = assistant("msg_stream", output_tokens=40)
    lines = [user_line(), streamed, final, assistant(), assistant(cache_read=300)]
    transcript(claude).write_bytes(encode(*lines))


def _run(tmp_path: Path, name: str, env: dict[str, str]) -> tuple[str, str]:
    """(the spool file, stderr) of one `--once` run on its own state over the same history."""
    spool, state = tmp_path / name / "spool", tmp_path / name / "state"
    spool.mkdir(parents=True)
    state.mkdir()
    ran = run_cli(
        "sentinel", "token-ledger", "--once", "--spool-dir", str(spool), "--state-dir",
        str(state), env={"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), **env},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return (spool / "token-ledger.prom").read_text(), ran.stderr


def _available(text: str) -> float:
    return samples(text)[(scanner.NAME, ())]


@pytest.fixture
def blocked(tmp_path: Path) -> dict[str, str]:
    """The environment of a process in which importing the C scanner fails."""
    site = tmp_path / "block-fastline"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK)
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {"PYTHONPATH": path}


def test_the_metric_is_1_with_the_scanner_and_0_without_it(
    tmp_path: Path, blocked: dict[str, str]
) -> None:
    _history(tmp_path / "claude")
    fast, fast_log = _run(tmp_path, "fast", {})
    slow, slow_log = _run(tmp_path, "slow", blocked)
    assert _available(fast) == 1
    assert "C scanner" not in fast_log
    assert _available(slow) == 0
    assert slow_log.count("C scanner (_fastline) is not loaded") == 1
    assert FASTLINE in slow_log  # the reason: the import error names the module
    assert token_totals(slow) == token_totals(fast)
    assert token_totals(fast)["output"] == 40 + 10 + 10  # the streamed copy counted once


def test_without_the_scanner_every_caller_takes_its_python_reference(
    blocked: dict[str, str],
) -> None:
    """The gauge's 0 is true of the callers too: in a process where the import fails, each of
    the four modules that use the scanner runs its Python reference, and says so."""
    probe = (
        "from agentwatch.sentinels.token_ledger import reader, records, scanner, store, tailer\n"
        "print(scanner.AVAILABLE, records._scan is None, reader.fast_absorb is None,\n"
        "      store.new_filter is store.MessageFilter, tailer.find is tailer.find_in_python)\n"
    )
    fallen = _python(probe, blocked)
    assert fallen == "False True True True True", fallen
    assert _python(probe, {}) == "True False False False False"


def _python(code: str, env: dict[str, str]) -> str:
    ran = subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ, **env), capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip()
