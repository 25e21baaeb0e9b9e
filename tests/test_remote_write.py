"""The team layout's host side: `agentwatch install --remote-write URL` and the
stack.remote_write keys write a host Prometheus that still evaluates its rules locally and
forwards to a central store with its `host` and `account` labels; promtool accepts the result;
bad settings are refused by name. The real engines are tests/test_team.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from agentwatch.cli import main as cli
from agentwatch.cli import remote_write, stack
from agentwatch.core import secretfiles, team
from agentwatch.sentinels import registry

PROMTOOL = shutil.which("promtool")
STORE = "https://store.example.internal/api/v1/write"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, sub in (("XDG_CONFIG_HOME", "cfg"), ("XDG_DATA_HOME", "data"),
                      ("XDG_STATE_HOME", "state"), ("CLAUDE_CONFIG_DIR", "claude")):  # fmt: skip
        monkeypatch.setenv(name, str(tmp_path / sub))
    monkeypatch.delenv("AGENTWATCH_PREFIX", raising=False)
    monkeypatch.delenv("AGENTWATCH_UNIT_DIR", raising=False)
    return tmp_path


def installed_prometheus(home: Path) -> dict:
    path = home / "data" / "agentwatch" / "prometheus" / "prometheus.yml"
    return yaml.safe_load(path.read_text())


def promtool_accepts(document: dict, folder: Path) -> None:
    assert PROMTOOL, "promtool is required (Debian package prometheus)"
    path = folder / "checked.yml"
    path.write_text(yaml.safe_dump(document))
    checked = subprocess.run([PROMTOOL, "check", "config", str(path)], capture_output=True,
                             text=True, timeout=60, check=False)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_install_remote_write_forwards_with_host_label_and_keeps_local_rules(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = home / "config.yaml"
    config.write_text(yaml.safe_dump({"stack": {"remote_write": {"account": "team-max"}}}))
    assert cli.main(["--config", str(config), "install", "--no-claude-hooks",
                     "--remote-write", STORE]) == 0  # fmt: skip
    document = installed_prometheus(home)
    assert document["remote_write"] == [{"url": STORE}]
    assert document["global"]["external_labels"] == {
        "host": team.host_name(),
        "account": "team-max",
    }
    local_rules = {Path(path).name for path in document["rule_files"]}
    assert "quota.rules.yml" in local_rules and "alerts-spend.rules.yml" in local_rules
    assert not any("central" in path for path in document["rule_files"]), "centre only"
    assert document["alerting"]["alertmanagers"], "local alerts still go to the local stack"
    promtool_accepts(document, home)
    capsys.readouterr()


def test_install_without_remote_write_adds_no_labels(home: Path) -> None:
    assert cli.main(["install", "--no-claude-hooks"]) == 0
    document = installed_prometheus(home)
    assert "remote_write" not in document
    assert "external_labels" not in document["global"]


def test_install_refuses_a_remote_write_that_is_not_a_url(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["install", "--no-claude-hooks", "--remote-write", "store:9090"]) == 2
    err = capsys.readouterr().err
    assert "--remote-write" in err and "http" in err
    assert not (home / "data" / "agentwatch" / "prometheus").exists(), "nothing written"


def cfg_with(tmp_path: Path, **settings: object) -> object:
    return registry.config_from_mapping({"stack": {"remote_write": {"url": STORE, **settings}}})


def test_basic_auth_reads_a_private_password_file(tmp_path: Path) -> None:
    secret = tmp_path / "store.pass"
    secret.write_text("hunter2\n")
    os.chmod(secret, 0o600)
    cfg = cfg_with(tmp_path, username="laptop-ana", password_file=str(secret), host="laptop-ana")
    document = stack.prometheus_config(cfg, "127.0.0.1:9847", [])  # type: ignore[arg-type]
    assert document["remote_write"] == [
        {"url": STORE, "basic_auth": {"username": "laptop-ana", "password_file": str(secret)}}
    ]
    assert document["global"]["external_labels"] == {"host": "laptop-ana"}
    assert "hunter2" not in yaml.safe_dump(document), "the password stays in its file"
    promtool_accepts(document, tmp_path)
    assert secretfiles.audit(registry.secret_files(cfg)) == []  # type: ignore[arg-type]


def test_password_file_others_can_read_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "store.pass"
    secret.write_text("hunter2\n")
    os.chmod(secret, 0o644)
    cfg = cfg_with(tmp_path, username="ana", password_file=str(secret))
    with pytest.raises(remote_write.RemoteWriteError, match="chmod 600"):
        stack.prometheus_config(cfg, "127.0.0.1:9847", [])  # type: ignore[arg-type]
    warned = secretfiles.audit(registry.secret_files(cfg))  # type: ignore[arg-type]
    assert len(warned) == 1 and "stack.remote_write.password_file" in warned[0]


def test_username_without_password_file_is_refused(tmp_path: Path) -> None:
    cfg = cfg_with(tmp_path, username="ana")
    with pytest.raises(remote_write.RemoteWriteError, match="go together"):
        stack.prometheus_config(cfg, "127.0.0.1:9847", [])  # type: ignore[arg-type]


def test_bad_keys_are_config_errors_by_name() -> None:
    from agentwatch.core.config import ConfigError

    with pytest.raises(ConfigError) as err:
        registry.config_from_mapping(
            {"stack": {"remote_write": {"url": "ftp://x", "account": "a\nb", "bogus": 1}}}
        )
    text = "; ".join(err.value.problems)
    for key in ("stack.remote_write.url", "stack.remote_write.account",
                "stack.remote_write.bogus"):  # fmt: skip
        assert key in text, text


def test_controller_acts_on_its_own_host_once_it_writes_to_a_centre() -> None:
    """A host that writes to a centre tags its alerts `host`; its controller, reading the
    central Alertmanager too, by default takes only its own (an explicit match wins)."""
    plain = registry.config_from_mapping({})
    assert team.controller_match(plain) == {}
    writing = registry.config_from_mapping(
        {"stack": {"remote_write": {"url": STORE, "host": "laptop-ana"}}}
    )
    assert team.controller_match(writing) == {"host": "laptop-ana"}
    explicit = registry.config_from_mapping(
        {
            "stack": {"remote_write": {"url": STORE, "host": "laptop-ana"}},
            "controller": {"match_labels": {"account": "team-max"}},
        }
    )
    assert team.controller_match(explicit) == {"account": "team-max"}
