"""Config bombs: a huge file, a huge value, a billion laughs, YAML nested 100k deep, a FIFO —
in the config or the web config. Each is one clean problem line from `config check` (exit 1)
and from every other command (exit 2), within seconds, quoting at most a short preview."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentwatch.core.bounded import CONFIG_LIMIT
from agentwatch.core.config import MAX_PROBLEM
from agentwatch.core.yamlsafe import MAX_DEPTH, MAX_EXPANDED
from tests.conftest import run_cli


def billion_laughs(value_of: str) -> str:
    """Nine levels of nine aliases (9**10 "lol"s expanded), the last one used as `value_of`."""
    text = "a0: &a0 [" + ", ".join(['"lol"'] * 9) + "]\n"
    for level in range(1, 10):
        text += f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]\n"
    section, key = value_of.split(".")
    return text + f"{section}:\n  {key}: *a9\n"


def huge_file(path: Path) -> None:
    with path.open("wb") as handle:  # 100 MB, sparse: no disk used
        handle.write(b"log_level: '")
        handle.truncate(100 * 2**20)


BOMBS: dict[str, tuple[Callable[[Path], object], str]] = {
    "100MB-file": (huge_file, f"cannot read: {100 * 2**20} bytes, over the cap of {CONFIG_LIMIT}"),
    "fifo": (os.mkfifo, "cannot read: not a regular file (a FIFO)"),
    "dev-zero": (
        lambda path: path.symlink_to("/dev/zero"),
        "cannot read: not a regular file (a character device)",
    ),
    "nested-100k": (
        lambda path: path.write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n"),
        f"refused: YAML nested deeper than {MAX_DEPTH} levels",
    ),
    "billion-laughs-as-duration": (
        lambda path: path.write_text(billion_laughs("controller.interval")),
        f"refused: YAML expands to more than {MAX_EXPANDED} characters through aliases",
    ),
    "not-utf8": (
        lambda path: path.write_bytes(b"log_level: \xff\n"),
        "cannot read: not UTF-8 (byte 11)",
    ),
}


def problems(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "problem" in line]


@pytest.mark.parametrize("case", sorted(BOMBS))
def test_a_config_bomb_is_one_clean_problem(tmp_path: Path, case: str) -> None:
    make, says = BOMBS[case]
    config = tmp_path / "config.yaml"
    make(config)
    started = time.monotonic()
    checked = run_cli("--config", str(config), "config", "check", timeout=60)
    took = time.monotonic() - started
    assert checked.returncode == 1, checked.stderr
    assert took < 15, f"config check took {took:.1f}s"
    assert problems(checked.stderr) == [f"problem: {config}: {says}"], checked.stderr[:2000]
    assert "Traceback" not in checked.stderr and len(checked.stderr) < 1000
    # Every other command refuses to start the same way, with exit 2.
    refused = run_cli("--config", str(config), "controller", "--once", timeout=60)
    assert refused.returncode == 2
    assert problems(refused.stderr) == [f"agentwatch: config problem: {config}: {says}"]


HUGE = 900_000  # a value just under the file cap


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (f"controller: {{interval: '{'9' * HUGE}s'}}\n", "controller.interval: '999999999"),
        (f"log_level: '{'l' * HUGE}'\n", "log_level: 'lllllllll"),
        (f"exporter:\n  ? '{'k' * HUGE}'\n  : 1\n", "exporter.'kkkkkkkk"),
        (f"controller: {{nudge: {{enabled: '{'y' * HUGE}'}}}}\n", "controller.nudge.enabled:"),
    ],
    ids=["duration", "choice", "unknown-key", "boolean"],
)
def test_a_huge_value_is_quoted_by_its_preview_only(tmp_path: Path, text: str, named: str) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    checked = run_cli("--config", str(config), "config", "check", timeout=60)
    assert checked.returncode == 1
    [line] = problems(checked.stderr)
    assert line.startswith(f"problem: {config}: {named}"), line[:300]
    assert f"({HUGE + (1 if 'interval' in text else 0)} characters)" in line
    assert len(line) < MAX_PROBLEM + len(str(config)) + 50


WEB_BOMBS: dict[str, tuple[Callable[[Path], object], str]] = {
    "fifo": (os.mkfifo, "cannot read the web config file: not a regular file (a FIFO)"),
    "nested-100k": (
        lambda path: path.write_text("[" * 100_000 + "]" * 100_000),
        f"refused: YAML nested deeper than {MAX_DEPTH} levels",
    ),
    "billion-laughs": (
        lambda path: path.write_text(billion_laughs("basic_auth_users.ana")),
        f"refused: YAML expands to more than {MAX_EXPANDED} characters through aliases",
    ),
    "huge": (
        huge_file,
        f"cannot read the web config file: {100 * 2**20} bytes, over the cap of {CONFIG_LIMIT}",
    ),
}


@pytest.mark.parametrize("case", sorted(WEB_BOMBS))
def test_a_web_config_bomb_is_one_clean_problem(tmp_path: Path, case: str) -> None:
    make, says = WEB_BOMBS[case]
    web = tmp_path / "web.yml"
    make(web)
    config = tmp_path / "config.yaml"
    config.write_text(f"controller: {{web_config_file: '{web}'}}\n")
    started = time.monotonic()
    checked = run_cli("--config", str(config), "config", "check", timeout=60)
    assert time.monotonic() - started < 15
    assert checked.returncode == 1, checked.stderr
    assert problems(checked.stderr) == [f"problem: controller.web_config_file: {web}: {says}"]
    assert "Traceback" not in checked.stderr


def test_a_tls_key_that_is_a_fifo_is_refused_unopened(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    os.mkfifo(key)
    os.chmod(key, 0o600)
    cert = tmp_path / "cert.pem"
    cert.write_text("-----BEGIN CERTIFICATE-----\n")
    web = tmp_path / "web.yml"
    web.write_text(f"tls_server_config: {{cert_file: '{cert}', key_file: '{key}'}}\n")
    web.chmod(0o600)
    config = tmp_path / "config.yaml"
    config.write_text(f"controller: {{web_config_file: '{web}'}}\n")
    checked = run_cli("--config", str(config), "config", "check", timeout=30)
    assert checked.returncode == 1
    assert problems(checked.stderr) == [
        f"problem: controller.web_config_file: {web}: tls_server_config.key_file: "
        f"refusing {key}: not a regular file (a FIFO)"
    ]
