"""`agentwatch install` / `uninstall` into temp dirs: what is written, that the configs load in
the real promtool / amtool, that user files and edits survive, and --dry-run writes nothing."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentwatch.cli import assets, install
from agentwatch.cli import main as cli
from agentwatch.sentinels import registry
from tests.conftest import local_config

ALERTMANAGER_YML = """\
route:
  receiver: chat
receivers:
  - name: chat
    webhook_configs:
      - url: http://127.0.0.1:9/alerts
templates:
  - templates/*.tmpl
"""


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped rules plus an alertmanager.yml (rules/ may not have one yet)."""
    rules = tmp_path / "rules-src"
    rules.mkdir()
    for path in assets.rules_dir().glob("*.rules.yml"):
        shutil.copy(path, rules)
    (rules / "alertmanager.yml").write_text(ALERTMANAGER_YML)
    (rules / "templates").mkdir()
    (rules / "templates" / "agentwatch.tmpl").write_text('{{ define "x" }}x{{ end }}\n')
    monkeypatch.setattr(assets, "rules_dir", lambda: rules)
    return rules


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home = {
        "config_home": tmp_path / "xdg-config",
        "units": tmp_path / "xdg-config" / "systemd" / "user",
        "data": tmp_path / "xdg-data" / "agentwatch",
    }
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home["config_home"]))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.delenv("AGENTWATCH_PREFIX", raising=False)
    monkeypatch.delenv("AGENTWATCH_UNIT_DIR", raising=False)
    # install also edits Claude Code's settings: never the real ones of whoever runs the tests
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    home["config"] = home["config_home"] / "agentwatch" / "config.yaml"
    home["claude_settings"] = tmp_path / "claude" / "settings.json"
    return home


def tree(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_install_writes_units_configs_and_example_config(
    layout: dict[str, Path], sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["install"]) == 0
    out = capsys.readouterr().out
    units, data = layout["units"], layout["data"]
    for name in (
        "agentwatch-exporter.service",
        "agentwatch-sentinel@.service",
        "agentwatch-controller.service",
        "agentwatch-release-readiness.service",
        "agentwatch-release-readiness.timer",
    ):
        assert (units / name).is_file(), name
    exporter = (units / "agentwatch-exporter.service").read_text()
    command = " ".join(install.agentwatch_command())
    assert f"ExecStart={command} exporter\n" in exporter
    assert Path(install.agentwatch_command()[0]).is_file()
    assert "%h/.local/bin" not in "".join(p.read_text() for p in units.iterdir())
    sentinel = (units / "agentwatch-sentinel@.service").read_text()
    assert f"ReadWritePaths={layout['config_home'].parent / 'xdg-state' / 'agentwatch'}" in sentinel

    # The example config: every key commented, private, and a valid (empty) config.
    assert layout["config"].read_text() == registry.defaults_as_yaml()
    assert stat.S_IMODE(layout["config"].stat().st_mode) == 0o600
    assert registry.load_config(layout["config"]).source == layout["config"]

    # Alertmanager config copied verbatim, readable by the user only.
    alertmanager = data / "alertmanager" / "alertmanager.yml"
    assert alertmanager.read_text() == ALERTMANAGER_YML
    assert stat.S_IMODE(alertmanager.stat().st_mode) == 0o600

    # Grafana provisioning points at the installed dashboards.
    provisioning = (data / "grafana" / "provisioning" / "dashboards" / "agentwatch.yml").read_text()
    assert install.DASHBOARDS_PLACEHOLDER not in provisioning
    path = yaml.safe_load(provisioning)["providers"][0]["options"]["path"]
    assert Path(path) == data / "grafana" / "dashboards"
    assert sorted(p.name for p in Path(path).glob("*.json")) == sorted(
        p.name for p in (assets.grafana_dir() / "dashboards").glob("*.json")
    )

    assert "systemctl --user daemon-reload" in out
    assert "systemctl --user enable --now agentwatch-exporter.service" in out
    assert "agentwatch-sentinel@token-ledger.service" in out
    assert "loginctl enable-linger" in out
    manifest = json.loads((data / install.MANIFEST).read_text())
    assert str(layout["config"]) not in manifest["files"]  # the user's, from now on
    assert str(units / "agentwatch-exporter.service") in manifest["files"]


def test_installed_prometheus_config_loads_installed_rules(
    layout: dict[str, Path], sources: Path, tmp_path: Path
) -> None:
    cfg_path = local_config(tmp_path)
    assert cli.main(["--config", str(cfg_path), "install"]) == 0
    prometheus = layout["data"] / "prometheus" / "prometheus.yml"
    document = yaml.safe_load(prometheus.read_text())
    rule_files = [Path(p) for p in document["rule_files"]]
    assert rule_files and all(p.parent == layout["data"] / "rules" for p in rule_files)
    listen = yaml.safe_load(cfg_path.read_text())["exporter"]["listen"]
    assert document["scrape_configs"][0]["static_configs"][0]["targets"] == [listen]
    checked = subprocess.run(
        ["promtool", "check", "config", str(prometheus)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    unit = (layout["units"] / "agentwatch-prometheus.service").read_text()
    assert f"--config.file={prometheus}" in unit
    # --config is passed on to every agentwatch unit, since it is not the default file
    assert (
        f"--config {cfg_path} exporter"
        in (layout["units"] / "agentwatch-exporter.service").read_text()
    )


def test_installed_alertmanager_config_passes_amtool(
    layout: dict[str, Path], sources: Path
) -> None:
    assert cli.main(["install"]) == 0
    checked = subprocess.run(
        ["amtool", "check-config", str(layout["data"] / "alertmanager" / "alertmanager.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_dry_run_writes_nothing(
    layout: dict[str, Path], sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree(tmp_path)
    assert cli.main(["install", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert tree(tmp_path) == before
    assert f"would create  {layout['units'] / 'agentwatch-exporter.service'}" in out
    assert "Nothing was written" in out


def test_existing_config_is_never_replaced(layout: dict[str, Path], sources: Path) -> None:
    layout["config"].parent.mkdir(parents=True)
    layout["config"].write_text("log_level: debug\n")
    assert cli.main(["install"]) == 0
    assert layout["config"].read_text() == "log_level: debug\n"
    assert cli.main(["uninstall"]) == 0
    assert layout["config"].read_text() == "log_level: debug\n"


def test_reinstall_is_idempotent_and_keeps_user_edits(
    layout: dict[str, Path], sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["install"]) == 0
    first = tree(layout["units"])
    capsys.readouterr()
    assert cli.main(["install"]) == 0
    assert tree(layout["units"]) == first
    assert "create" not in capsys.readouterr().out

    edited = layout["data"] / "alertmanager" / "alertmanager.yml"
    edited.write_text(ALERTMANAGER_YML.replace("127.0.0.1:9", "chat.example:443"))
    assert cli.main(["install"]) == 1  # kept, and says so
    assert "chat.example" in edited.read_text()
    assert "changed since install" in capsys.readouterr().out
    assert cli.main(["install", "--force"]) == 0
    assert edited.read_text() == ALERTMANAGER_YML


def test_uninstall_removes_only_what_install_wrote(
    layout: dict[str, Path], sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    units = layout["units"]
    units.mkdir(parents=True)
    foreign = units / "someone-else.service"
    foreign.write_text("[Service]\nExecStart=/bin/true\n")
    state = layout["config_home"].parent / "xdg-state" / "agentwatch"
    state.mkdir(parents=True)
    (state / "token-ledger.sqlite").write_text("state")
    assert cli.main(["install"]) == 0
    timer = units / "agentwatch-release-readiness.timer"
    timer.write_text(timer.read_text() + "# my change\n")
    capsys.readouterr()

    assert cli.main(["uninstall", "--dry-run"]) == 0
    assert (units / "agentwatch-exporter.service").is_file()
    assert cli.main(["uninstall"]) == 0
    out = capsys.readouterr().out
    assert "systemctl --user disable --now" in out
    assert sorted(p.name for p in units.iterdir()) == [timer.name, foreign.name]
    assert layout["config"].is_file() and (state / "token-ledger.sqlite").is_file()
    leftover = tree(layout["data"])
    assert list(leftover) == [install.MANIFEST]  # remembers the kept timer only
    assert json.loads(leftover[install.MANIFEST])["files"] == {
        str(timer): install._digest(timer.read_bytes().replace(b"# my change\n", b""))
    }
    timer.unlink()
    assert cli.main(["uninstall"]) == 0
    assert not layout["data"].exists()


def test_targets_from_environment(
    tmp_path: Path, layout: dict[str, Path], sources: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTWATCH_PREFIX", str(tmp_path / "env-data"))
    monkeypatch.setenv("AGENTWATCH_UNIT_DIR", str(tmp_path / "env-units"))
    assert cli.main(["install"]) == 0
    assert (tmp_path / "env-units" / "agentwatch-exporter.service").is_file()
    assert (tmp_path / "env-data" / install.MANIFEST).is_file()
    assert not layout["units"].exists()


def test_unit_unsafe_paths_get_a_clear_error(
    tmp_path: Path, layout: dict[str, Path], sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["install", "--prefix", str(tmp_path / "my data")]) == 2
    assert "without them" in capsys.readouterr().err
    assert not (tmp_path / "my data").exists()


def test_broken_manifest_is_refused_not_guessed(
    layout: dict[str, Path], sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["install"]) == 0
    (layout["data"] / install.MANIFEST).write_text("{not json")
    assert cli.main(["uninstall"]) == 2
    assert "manifest" in capsys.readouterr().err
    assert (layout["units"] / "agentwatch-exporter.service").is_file()


def test_console_script_or_module_command() -> None:
    command = install.agentwatch_command()
    assert command[0].startswith(str(Path(sys.executable).parent))
    assert command == (str(Path(sys.executable).parent / "agentwatch"),) or command[1:] == (
        "-m",
        "agentwatch.cli",
    )


def test_installed_comments_say_what_the_templates_say(
    layout: dict[str, Path], sources: Path
) -> None:
    """Paths are put in place outside comments only: a comment naming the shipped template's
    path or placeholder is not garbled into "which replaces /…/bin/agentwatch with …"."""
    assert cli.main(["install"]) == 0
    pairs = [(layout["units"] / path.name, path)
             for path in assets.systemd_dir().glob("agentwatch*.*")]  # fmt: skip
    pairs += [(layout["data"] / "grafana" / "provisioning" / path.parent.name / path.name, path)
              for path in (assets.grafana_dir() / "provisioning").glob("*/*.yml")]  # fmt: skip
    checked = 0
    for installed, template in pairs:
        if not installed.is_file():  # a unit left out: its binary is missing here
            continue

        def comments(path: Path) -> list[str]:
            return [line for line in path.read_text().splitlines() if line.startswith("#")]

        assert comments(installed) == comments(template), installed.name
        checked += 1
    assert checked >= 6
    command = " ".join(install.agentwatch_command())
    for installed, _ in pairs:
        if installed.is_file():
            assert command not in "".join(
                line for line in installed.read_text().splitlines() if line.startswith("#")
            )
