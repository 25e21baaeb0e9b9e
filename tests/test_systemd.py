"""The unit files: `systemd-analyze verify --user` clean and `security --user --offline` exposure
within bounds, for the files in systemd/ and for the units `agentwatch install` writes.

Thresholds (systemd 252's 0-10 scale; lower is safer): every agentwatch unit scores about 2.0-2.4
after hardening, so the tests demand <= 3.0 — a lost hardening line shows up as a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import local_config, run_cli

SYSTEMD_DIR = Path(__file__).resolve().parents[1] / "systemd"
EXPOSURE_MAX = 3.0
SENTINEL_INSTANCE = "agentwatch-sentinel@token-ledger.service"


def analyze(*args: str, cwd: Path, home: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, XDG_RUNTIME_DIR=str(cwd / ".runtime"))
    (cwd / ".runtime").mkdir(exist_ok=True)
    if home is not None:
        env["HOME"] = str(home)
    return subprocess.run(
        ["systemd-analyze", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def unit_names(folder: Path) -> list[str]:
    """Every unit, with the sentinel template checked through one instance of it."""
    names = sorted(path.name for path in folder.glob("agentwatch*.*") if path.is_file())
    return [SENTINEL_INSTANCE if name == "agentwatch-sentinel@.service" else name for name in names]


@pytest.fixture
def pipx_home(tmp_path: Path) -> Path:
    """A home where `agentwatch` sits in ~/.local/bin, as the files in systemd/ expect."""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    real = shutil.which("agentwatch") or str(Path(sys.executable).parent / "agentwatch")
    (home / ".local" / "bin" / "agentwatch").symlink_to(real)
    return home


def exposure(output: str) -> float:
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", output)
    assert found, output
    return float(found.group(1))


def check_folder(folder: Path, home: Path | None) -> None:
    for name in unit_names(folder):
        verify = analyze("verify", "--user", f"./{name}", cwd=folder, home=home)
        assert verify.returncode == 0 and verify.stderr == "", f"{name}: {verify.stderr}"
        if name.endswith(".service"):
            result = analyze(
                "security", "--user", "--offline=true", f"./{name}", cwd=folder, home=home
            )
            assert result.returncode == 0, result.stderr
            assert exposure(result.stdout + result.stderr) <= EXPOSURE_MAX, (name, result.stdout)


@pytest.mark.slow
def test_shipped_unit_files_verify_and_are_hardened(tmp_path: Path, pipx_home: Path) -> None:
    folder = tmp_path / "units"
    shutil.copytree(SYSTEMD_DIR, folder)
    check_folder(folder, pipx_home)


@pytest.mark.slow
def test_installed_units_verify_and_are_hardened(tmp_path: Path) -> None:
    config = local_config(tmp_path)
    units = tmp_path / "units"
    result = run_cli(
        "--config",
        str(config),
        "install",
        "--unit-dir",
        str(units),
        "--prefix",
        str(tmp_path / "data"),
        "--no-claude-hooks",  # never the real ~/.claude/settings.json of whoever runs this
    )
    assert result.returncode == 0, result.stderr
    assert (units / "agentwatch-exporter.service").is_file()
    check_folder(units, None)


def test_verify_catches_a_broken_unit(tmp_path: Path, pipx_home: Path) -> None:
    """The check itself can fail: a typo'd key and a missing command are reported."""
    folder = tmp_path / "units"
    shutil.copytree(SYSTEMD_DIR, folder)
    unit = folder / "agentwatch-exporter.service"
    unit.write_text(unit.read_text().replace("WatchdogSec=", "WatchdogSecs="))
    verify = analyze(
        "verify", "--user", "./agentwatch-exporter.service", cwd=folder, home=pipx_home
    )
    assert "WatchdogSecs" in verify.stderr
    verify = analyze("verify", "--user", "./agentwatch-exporter.service", cwd=folder, home=tmp_path)
    assert "is not executable" in verify.stderr


def test_units_keep_transcripts_and_tmux_visible() -> None:
    """Hardening must not hide ~/.claude (ProtectHome=yes) or /tmp/tmux-UID (PrivateTmp)."""
    for name in ("agentwatch-sentinel@.service", "agentwatch-controller.service"):
        text = (SYSTEMD_DIR / name).read_text()
        settings = [line for line in text.splitlines() if not line.startswith("#")]
        assert "PrivateTmp=yes" not in settings
        assert "ProtectHome=read-only" in settings
        assert "Type=notify" in settings and "Restart=on-failure" in settings
        assert any(line.startswith("WatchdogSec=") for line in settings)
        assert any(line.startswith("MemoryMax=") for line in settings)
        assert any(line.startswith("CPUQuota=") for line in settings)
