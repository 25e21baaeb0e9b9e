"""`agentwatch install` and Claude Code's telemetry variables in settings.json's `env`: shown by
--dry-run, pointing at the otel sentinel's address, merged like the hooks, never replacing a
telemetry setting of the user's (who is told how to send to both), and taken out again by
uninstall only where they still hold agentwatch's values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentwatch.cli import claude_settings as cs
from agentwatch.cli import main as cli

from .test_install import layout, sources, tree  # noqa: F401  (fixtures)

OURS = cs.telemetry("127.0.0.1:9853")


@pytest.fixture(autouse=True)
def no_endpoint_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in cs.ENDPOINTS:
        monkeypatch.delenv(key, raising=False)


def test_dry_run_shows_the_variables_and_writes_nothing(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = layout["claude_settings"]
    assert cli.main(["install", "--dry-run"]) == 0
    shown = capsys.readouterr().out
    assert '+    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9853"' in shown
    assert '+    "CLAUDE_CODE_ENABLE_TELEMETRY": "1"' in shown
    assert '+    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"' in shown
    assert not settings.exists()


def test_install_merges_them_and_uninstall_takes_out_only_ours(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
) -> None:
    settings = layout["claude_settings"]
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"env": {"ANTHROPIC_MODEL": "claude-sonnet-4-5"}}))
    assert cli.main(["install"]) == 0
    model = {"ANTHROPIC_MODEL": "claude-sonnet-4-5"}
    assert json.loads(settings.read_text())["env"] == {**model, **OURS}
    assert cli.main(["install"]) == 0  # a second install changes nothing
    # the user changes one of ours after install: theirs now, kept by uninstall
    document = json.loads(settings.read_text())
    document["env"]["OTEL_LOGS_EXPORTER"] = "none"
    settings.write_text(json.dumps(document))
    assert cli.main(["uninstall"]) == 0
    assert json.loads(settings.read_text())["env"] == {
        "ANTHROPIC_MODEL": "claude-sonnet-4-5",
        "OTEL_LOGS_EXPORTER": "none",
    }


@pytest.mark.parametrize(
    "theirs",
    [
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector.internal:4318"},
        {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://collector.internal:4318/v1/metrics"},
        {"CLAUDE_CODE_ENABLE_TELEMETRY": "0"},
    ],
)
def test_a_users_own_telemetry_settings_are_left_alone(
    theirs: dict[str, str],
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = layout["claude_settings"]
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"env": theirs}))
    assert cli.main(["install"]) == 0
    assert json.loads(settings.read_text())["env"] == theirs
    said = capsys.readouterr().out
    assert "otlphttp exporter with endpoint http://127.0.0.1:9853" in said
    assert cli.main(["uninstall"]) == 0
    assert json.loads(settings.read_text()) == {"env": theirs}


def test_an_endpoint_in_the_environment_is_the_users_too(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example:4318")
    settings = layout["claude_settings"]
    assert cli.main(["install"]) == 0
    assert "env" not in json.loads(settings.read_text())
    assert "https://otel.example:4318" in capsys.readouterr().out


def test_the_configured_address_is_the_endpoint_and_a_disabled_sentinel_sets_none(
    layout: dict[str, Path],  # noqa: F811
    sources: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = layout["config"]  # the default config install reads
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("sentinels:\n  otel:\n    listen: 127.0.0.1:19853\n")
    assert cli.main(["install", "--dry-run"]) == 0
    assert '"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:19853"' in capsys.readouterr().out
    config.write_text("sentinels:\n  otel:\n    enabled: false\n")
    assert cli.main(["install", "--dry-run"]) == 0
    assert "OTEL_" not in capsys.readouterr().out
