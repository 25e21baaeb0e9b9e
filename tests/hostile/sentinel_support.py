"""Shared by the hostile sentinel tests: hostile names, a private tmux server, a real `--once`
run, and reading its spool file back the way the exporter does."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import yaml

from agentwatch.core import spool
from tests.conftest import run_cli

PROMTOOL = shutil.which("promtool")

# Every C0 control character but NUL (no path, argv or tmux name can hold one), the
# characters the exposition format escapes or ends a label on, and bytes that are not UTF-8.
# `/` is not in it (a path separator), nor `:` and `.` (tmux rewrites them in session names).
C0 = bytes(range(0x01, 0x20))
HOSTILE = b"aw" + C0 + b"\x7f\"'\\}{=,#" + b"\xff\xfe\xc3("
# Escaped, HOSTILE is longer than a label value may be (its end is cut, hashed): these two
# halves stay whole, so each character's escape can be seen in the label.
HOSTILE_HALVES = (b"aw\"'\\}{=,#\xff\xfe\xc3(\x7f" + C0[:16], b"aw" + C0[16:] + b'"}')
# The same without invalid UTF-8: for text that travels through the YAML config.
HOSTILE_TEXT = "aw" + C0.decode() + "\x7f\"'\\}{=,#é\u2028"


def once(
    sentinel: str,
    dirs: dict[str, Path],
    config: dict | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> tuple[subprocess.CompletedProcess, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    """`agentwatch sentinel NAME --once` for real; asserts it exited 0, that its spool file is
    UTF-8 that promtool passes and core.spool.parse_text reads; returns the run and samples."""
    config_file = dirs["state"].parent / f"{sentinel}-config.yaml"
    config_file.write_text(yaml.safe_dump(config or {}, allow_unicode=False))
    result = run_cli(
        "--config", str(config_file), "sentinel", sentinel, "--once",
        "--spool-dir", str(dirs["spool"]), "--state-dir", str(dirs["state"]),
        env=env, timeout=timeout,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result, read_spool(dirs["spool"] / f"{sentinel}.prom")


def read_spool(path: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    data = path.read_bytes()
    text = data.decode("utf-8")  # strict: a label value that is not UTF-8 fails here
    assert PROMTOOL, "promtool is required (Debian package prometheus)"
    check = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=data, capture_output=True, timeout=30
    )
    assert check.returncode == 0, check.stdout + check.stderr
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in spool.parse_text(text)
        for sample in family.samples
    }


def series(
    values: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str
) -> list[tuple[dict[str, str], float]]:
    return [(dict(labels), value) for (sample, labels), value in values.items() if sample == name]


def warnings(log: str) -> list[str]:
    return [line for line in log.splitlines() if " WARNING " in line]


class TmuxServer:
    """A private tmux server: its own socket and TMUX_TMPDIR (so the "default server" a
    sentinel also asks is ours too), no config file; killed at the end."""

    def __init__(self, folder: Path):
        self.sock = str(folder / "sock")
        self.env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        self.env["TMUX_TMPDIR"] = str(folder)
        self.base: list[str | bytes] = ["tmux", "-f", "/dev/null", "-S", self.sock]

    def run(self, *args: str | bytes) -> bytes:
        result = subprocess.run(
            [*self.base, *args], env=self.env, capture_output=True, timeout=10, check=False
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def kill(self) -> None:
        subprocess.run(
            [*self.base, "kill-server"], env=self.env, capture_output=True, timeout=10, check=False
        )


def private_tmux() -> Iterator[TmuxServer]:
    """For a fixture: `yield from private_tmux()`."""
    assert shutil.which("tmux"), "tmux is required (Debian package tmux)"
    folder = Path(tempfile.mkdtemp(prefix="aw-h-"))  # short: socket paths are < 108 bytes
    server = TmuxServer(folder)
    try:
        yield server
    finally:
        server.kill()
        shutil.rmtree(folder, ignore_errors=True)
