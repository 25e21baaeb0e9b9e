"""The real Claude Code 2.1.328, offline against the scripted API, exporting its telemetry to
the otel sentinel through settings.json's `env` (what `agentwatch install` writes): tokens
from OTel equal the served usage and the ledger's, a 529 and a 429 show as errors by status
code, the latency histograms fill, tool results arrive, and a `--no-session-persistence` run
(no transcript) is counted in the shared families and the budget's spend exactly once."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agentwatch.cli import claude_settings as cs
from agentwatch.controller.spend import SpendReader
from agentwatch.core.spool import render
from agentwatch.demo.anthropic_api.script import parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn
from tests.claude_cli import claude_command, environment, prepare_home
from tests.conftest import run_cli, samples
from tests.otel_support import port, receiver, wait_for

pytestmark = pytest.mark.slow
MODEL = "claude-sonnet-4-5"
USAGE = {"input_tokens": 1500, "output_tokens": 40, "cache_read_input_tokens": 300}
TYPES = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_input_tokens",
}
SCRIPT = {
    "default": [{"answer": {"text": "done", "usage": USAGE}}],
    "sessions": [
        {
            "prompt_contains": "run a tool",
            "steps": [
                {"tool_use": {"name": "Bash", "input": {"command": "true", "description": "ok"},
                              "usage": USAGE}},
                {"tool_use": {"name": "Bash", "input": {"command": "exit 3",
                                                        "description": "fails"}, "usage": USAGE}},
                {"answer": {"text": "ran them", "usage": USAGE}},
            ],
        },
        {"prompt_contains": "overloaded",
         "steps": [{"error": {"status": 529, "type": "overloaded_error",
                              "message": "Overloaded"}}]},
        {"prompt_contains": "limited",
         "steps": [{"error": {"status": 429, "type": "rate_limit_error",
                              "message": "slow down"}}]},
        {"prompt_contains": "headless", "steps": [{"answer": {"text": "ok", "usage": USAGE}}]},
    ],
}  # fmt: skip


def claude(home: Path, api_url: str, cwd: Path, prompt: str, *extra: str) -> int:
    env = environment(home, api_url)
    env.pop("DISABLE_TELEMETRY")  # Claude Code's own usage telemetry; OTel is another switch
    done = subprocess.run(
        [claude_command(), "-p", prompt, "--model", MODEL, *extra],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    return done.returncode


def value(text: str, name: str, **labels: str) -> float:
    return sum(
        found
        for (sample, pairs), found in samples(text).items()
        if sample == name and labels.items() <= dict(pairs).items()
    )


def test_real_claude_telemetry_counted_once_with_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project = tmp_path / "home", tmp_path / "work" / "otel-project"
    project.mkdir(parents=True)
    prepare_home(home, [project])
    config = home / ".claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))  # where the receiver looks
    served = ServedLog(tmp_path / "served.jsonl")
    with receiver(tmp_path, grace=1.0) as work:
        listen = f"127.0.0.1:{port(work)}"
        variables = {
            **cs.telemetry(listen),
            "OTEL_METRIC_EXPORT_INTERVAL": "1000",
            "OTEL_LOGS_EXPORT_INTERVAL": "1000",
        }
        config.mkdir(parents=True, exist_ok=True)
        (config / "settings.json").write_text(json.dumps({"env": variables}))
        with StandIn(parse(SCRIPT), served) as api:
            assert claude(home, api.url, project, "please run a tool", "--allowedTools",
                          "Bash") == 0  # fmt: skip
            assert claude(home, api.url, project, "you are overloaded") != 0
            assert claude(home, api.url, project, "you are limited") != 0
            assert claude(home, api.url, project, "headless please",
                          "--no-session-persistence") == 0  # fmt: skip
        answers = [r for r in served.records if r["status"] == 200]
        headless = {r["session"] for r in served.records if r.get("main_loop")} - {
            path.stem for path in config.rglob("*.jsonl")
        }
        assert len(headless) == 1, headless  # only the --no-session-persistence run
        expected = {kind: sum(r["usage"][key] for r in answers) for kind, key in TYPES.items()}
        headless_expected = {
            kind: sum(r["usage"][key] for r in answers if r["session"] in headless)
            for kind, key in TYPES.items()
        }

        def arrived() -> bool:
            work.cycle(True)
            text = render(work.families())
            got = {k: value(text, "agentwatch_otel_tokens_total", type=k) for k in TYPES}
            errors = value(text, "agentwatch_otel_api_errors_total")
            return got == expected and errors >= 2

        wait_for(arrived, 120, "Claude Code's export of every run")
        ledger = run_cli(
            "sentinel", "token-ledger", "--once", "--spool-dir", str(tmp_path / "spool"),
            "--state-dir", str(tmp_path / "ledger-state"),
            env={"CLAUDE_CONFIG_DIR": str(config)},
        )  # fmt: skip
        assert ledger.returncode == 0, ledger.stderr

        def classified() -> bool:
            work.cycle(True)
            return work.fold.states().get("pending", 0) == 0

        wait_for(classified, 60, "every session classified after the grace")
        work.cycle(True)  # reconciles with the ledger's spool file
        text = render(work.families())
        (tmp_path / "spool" / "otel.prom").write_text(text)
    ledger_text = (tmp_path / "spool" / "token-ledger.prom").read_text()

    # OTel saw every served token; the ledger the persisted sessions; the shared family the
    # rest: together exactly the served usage, each session once.
    for kind in TYPES:
        mine = value(text, "agentwatch_tokens_total", type=kind, source="otel")
        theirs = value(ledger_text, "agentwatch_tokens_total", type=kind)
        assert mine == headless_expected[kind] > 0
        assert mine + theirs == expected[kind]
    assert value(text, "agentwatch_otel_sessions", state="no_transcript") == 1
    # errors by status code, each the one attempt Claude Code made (CLAUDE_CODE_MAX_RETRIES=0)
    assert value(text, "agentwatch_otel_api_errors_total", status_code="529", attempt="1") == 1
    assert value(text, "agentwatch_otel_api_errors_total", status_code="429", attempt="1") == 1
    # latency: every answered request and both errors timed; time to first token of answers
    requests = value(text, "agentwatch_otel_api_requests_total", model=MODEL)
    assert requests == len(answers) >= 4
    assert value(text, "agentwatch_otel_api_duration_seconds_count", model=MODEL) == requests + 2
    assert value(text, "agentwatch_otel_api_ttft_seconds_count", model=MODEL) == requests
    assert value(text, "agentwatch_otel_api_duration_seconds_bucket", le="+Inf") == requests + 2
    # tools: one Bash run succeeded, one failed
    assert value(text, "agentwatch_otel_tool_results_total", tool="Bash", success="true") == 1
    assert value(text, "agentwatch_otel_tool_results_total", tool="Bash", success="false") == 1
    # reconciliation: the sessions with a transcript agree with the ledger exactly
    ratios = {
        dict(labels)["session"]: found
        for (name, labels), found in samples(text).items()
        if name == "agentwatch_otel_ledger_disagreement_ratio"
    }
    assert ratios and set(ratios.values()) == {0.0}
    assert not headless & set(ratios)
    # the budget's spend: the ledger's plus the headless session's, once
    spend = SpendReader(tmp_path / "spool", tmp_path / "state", "day").read(None)
    ledger_day = value(ledger_text, "agentwatch_spend_usd", period="day")
    otel_day = value(text, "agentwatch_spend_usd", period="day", source="otel")
    assert spend is not None and otel_day > 0
    assert spend.usd == pytest.approx(ledger_day + otel_day)
    assert otel_day == pytest.approx(value(text, "agentwatch_cost_usd_total", source="otel"))
    assert "REDACTED" not in text and "user_id" not in text and str(home) not in text
    assert os.environ.get("CLAUDE_CONFIG_DIR") == str(config)
