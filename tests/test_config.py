"""The config file: defaults, rejection of unknown keys and wrong types, by key name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentwatch.core import config, paths
from agentwatch.sentinels import registry
from tests.conftest import run_cli


def test_no_file_means_all_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    loaded = registry.load_config()
    assert loaded.source is None
    assert loaded["exporter"]["listen"] == "127.0.0.1:9847"  # loopback by default
    assert loaded.sentinel("token-ledger")["interval"] == 60.0


def test_values_are_parsed(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "exporter: {listen: '127.0.0.1:9999'}\n"
        "sentinels:\n  token-ledger: {interval: 5m, session_ttl: 1h}\n"
        "claude: {config_dirs: '~/a, /b'}\n"
    )
    loaded = registry.load_config(path)
    settings = loaded.sentinel("token-ledger")
    assert settings["interval"] == 300.0
    assert settings["session_ttl"] == 3600.0
    assert loaded.claude_config_dirs == [Path.home() / "a", Path("/b")]
    assert loaded["exporter"]["listen"] == "127.0.0.1:9999"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("exporterr: {}\n", "exporterr: unknown key"),
        ("exporter: {listen: 9847}\n", "exporter.listen: expected a string"),
        ("exporter: {listen: 'nohost'}\n", "exporter.listen:"),
        ("sentinels: {token-ledger: {interval: fast}}\n", "sentinels.token-ledger.interval:"),
        ("sentinels: {token-ledger: {interval: -1}}\n", "sentinels.token-ledger.interval:"),
        ("sentinels: {token-ledger: {enabled: 'yes'}}\n", "sentinels.token-ledger.enabled:"),
        ("sentinels: {nope: {}}\n", "sentinels.nope: unknown key"),
        ("sentinels: {token-ledger: {prices: {m: {input: 1}}}}\n", "prices: m:"),
        ("log_level: loud\n", "log_level:"),
        ("- a list\n", "top level: expected a mapping"),
    ],
)
def test_bad_values_are_named(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(config.ConfigError) as caught:
        registry.load_config(path)
    assert any(named in problem for problem in caught.value.problems), caught.value.problems


@pytest.mark.slow
def test_config_check_command(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("log_level: debug\n")
    ok = run_cli("--config", str(good), "config", "check")
    assert ok.returncode == 0 and "config OK" in ok.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("exporter: {lissen: x}\n")
    failed = run_cli("--config", str(bad), "config", "check")
    assert failed.returncode == 1
    assert "exporter.lissen: unknown key" in failed.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [\n")
    assert "not valid YAML" in run_cli("--config", str(broken), "config", "check").stderr
    # Any other command refuses to start on a bad config, naming the key.
    refused = run_cli("--config", str(bad), "status")
    assert refused.returncode == 2 and "exporter.lissen" in refused.stderr


def test_a_json_config_is_read_as_json_with_the_same_checks(tmp_path: Path) -> None:
    """What `up` writes for its children: JSON, read without the YAML parser."""
    good = tmp_path / "good.json"
    good.write_text('{"log_level": "debug", "exporter": {"listen": "127.0.0.1:9"}}')
    assert config.load(good)["exporter"]["listen"] == "127.0.0.1:9"
    unknown = tmp_path / "unknown.json"
    unknown.write_text('{"exporter": {"lissen": "x"}}')
    failed = run_cli("--config", str(unknown), "config", "check")
    assert failed.returncode == 1 and "exporter.lissen: unknown key" in failed.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"exporter": ')
    assert "not valid JSON" in run_cli("--config", str(broken), "config", "check").stderr
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    refused = run_cli("--config", str(deep), "config", "check")
    assert refused.returncode == 1 and "refused: JSON nested too deep" in refused.stderr
    assert len(refused.stderr) < 2000  # one line, no traceback


def test_config_show_lists_every_key_and_round_trips() -> None:
    shown = run_cli("config", "show")
    assert shown.returncode == 0
    uncommented = "\n".join(
        line.replace("# ", "", 1).split("    #")[0] for line in shown.stdout.splitlines()[1:]
    )
    parsed = yaml.safe_load(uncommented)
    assert registry.config_from_mapping(parsed).values == registry.config_from_mapping({}).values


def test_xdg_locations(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert paths.default_state_dir() == tmp_path / "state" / "agentwatch"
    assert paths.default_spool_dir() == tmp_path / "agentwatch"
    monkeypatch.setenv("XDG_RUNTIME_DIR", "relative/ignored")
    assert paths.default_spool_dir() == tmp_path / "state" / "agentwatch" / "spool"


def test_durations() -> None:
    assert config.duration("1.5m") == 90
    assert config.duration(20) == 20
    for bad in ("", "5 weeks", True, 0):
        with pytest.raises(ValueError):
            config.duration(bad)


@pytest.mark.parametrize(
    ("values", "named"),
    [
        (
            {"controller": {"min_agents": 9, "max_agents": 4}},
            "controller.min_agents (9) is greater than controller.max_agents (4)",
        ),
        (
            {"exporter": {"listen": "127.0.0.1:9900"}, "controller": {"listen": "127.0.0.1:9900"}},
            "exporter.listen and controller.listen both listen on 127.0.0.1:9900",
        ),
        (
            {"stack": {"prometheus_listen": "127.0.0.1:9847"}},
            "exporter.listen and stack.prometheus_listen both listen on 127.0.0.1:9847",
        ),
        (
            {"demo": {"orchestrator_listen": "127.0.0.1:9853"}},
            "demo.orchestrator_listen and sentinels.otel.listen both listen on 127.0.0.1:9853",
        ),
    ],
)
def test_contradictions_are_refused_naming_both_keys(
    tmp_path: Path, values: dict, named: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(values))
    checked = run_cli("--config", str(path), "config", "check")
    assert checked.returncode == 1 and named in checked.stderr, checked.stderr
    assert "config OK" not in checked.stdout


def test_paths_that_do_not_exist_are_warnings_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    there = tmp_path / "there"
    there.mkdir()
    path.write_text(
        yaml.safe_dump(
            {
                "claude": {"config_dirs": [str(there), str(tmp_path / "typo")]},
                "sentinels": {
                    "footprint": {"signatures_file": str(tmp_path / "nope.json")},
                    "release-readiness": {"repositories": [{"path": str(tmp_path / "repo")}]},
                },
            }
        )
    )
    path.chmod(0o600)  # no warning about the config file itself
    checked = run_cli("--config", str(path), "config", "check")
    assert checked.returncode == 0 and "config OK" in checked.stdout  # warnings do not fail
    warnings = [line for line in checked.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        f"warning: claude.config_dirs: {tmp_path / 'typo'} does not exist",
        f"warning: sentinels.footprint.signatures_file: {tmp_path / 'nope.json'} does not exist",
        f"warning: sentinels.release-readiness.repositories: [0].path: {tmp_path / 'repo'} "
        "does not exist",
    ], checked.stderr
