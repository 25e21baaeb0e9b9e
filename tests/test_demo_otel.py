"""The demo's real Claude Code sessions export their telemetry to the otel sentinel: `up` hands
the demo workload the sentinel's address, and each session's environment carries the variables
(the same ones `agentwatch install` writes), so the demo's dashboards show API latency."""

from __future__ import annotations

from pathlib import Path

from agentwatch.cli import up
from agentwatch.core.claude import telemetry_env
from agentwatch.demo.claude_sessions import REAL_ROSTER, RealSessions
from agentwatch.sentinels import registry


def session_env(tmp_path: Path, otel_listen: str | None) -> dict[str, str]:
    real = RealSessions("/usr/bin/claude", tmp_path / "claude", tmp_path / "work",
                        tmp_path / "served.jsonl", 900.0, 8, otel_listen)  # fmt: skip
    argv = real.argv(REAL_ROSTER[0])
    assert argv[:2] == ["env", "-i"]
    return dict(word.split("=", 1) for word in argv[4:] if "=" in word and "/" not in word[:1])


def test_real_demo_sessions_export_to_the_receiver(tmp_path: Path) -> None:
    env = session_env(tmp_path, "127.0.0.1:19853")
    assert telemetry_env("127.0.0.1:19853").items() <= env.items()
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:19853"
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in session_env(tmp_path, None)


def test_up_gives_the_demo_the_receivers_address_when_the_sentinel_runs() -> None:
    default = registry.config_from_mapping({})
    assert up._otel_argv(default) == ["--otel-listen", "127.0.0.1:9853"]
    off = registry.config_from_mapping({"sentinels": {"otel": {"enabled": False}}})
    assert up._otel_argv(off) == []
