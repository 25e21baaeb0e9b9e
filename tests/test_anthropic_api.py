"""The scripted API stand-in, seen through the real Claude Code CLI (what it must convince)
and through plain HTTP (the shapes and the served log), plus the script's own errors."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agentwatch.demo.anthropic_api.script import ScriptError, parse
from agentwatch.demo.anthropic_api.served import ServedLog, read
from agentwatch.demo.anthropic_api.server import StandIn
from tests.claude_cli import prepare_home, run_print


def post(
    url: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, Any, dict]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, reply.read().decode(), dict(reply.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(), dict(err.headers)


@pytest.mark.parametrize(
    ("script", "fragment"),
    [
        ([], "expected a mapping"),
        ({"default": []}, "non-empty list of steps"),
        ({"default": [{"answer": {}, "error": {}}]}, "exactly one of"),
        ({"default": [{"error": {"status": 200}}]}, "an HTTP error status"),
        ({"default": [{"answer": {"usage": {"input_tokens": -1}}}]}, "whole number of tokens"),
        ({"sessions": [{"steps": [{"answer": {}}]}]}, "needs `session_id` or `prompt_contains`"),
        ({"default": [{"tool_use": {"input": {}}}]}, "needs `name`"),
        ({"default": [{"answer": {}, "delay": "soon"}]}, "a number >= 0"),
    ],
)
def test_a_bad_script_names_the_place_and_the_fix(script: Any, fragment: str) -> None:
    with pytest.raises(ScriptError, match=fragment):
        parse(script)


def test_plain_http_shapes_and_the_served_log(tmp_path: Path) -> None:
    script = parse(
        {
            "headers": {"anthropic-ratelimit-unified-5h-utilization": "0.25"},
            "default": [
                {"answer": {"text": "hi", "usage": {"input_tokens": 7, "output_tokens": 2}}},
                {"error": {"status": 429, "type": "rate_limit_error", "message": "slow down",
                           "headers": {"retry-after": "30"}}},
            ],
        }
    )  # fmt: skip
    served = ServedLog(tmp_path / "served.jsonl")
    body = {"model": "claude-haiku-4-5", "tools": [{"name": "Bash"}], "messages": []}
    with StandIn(script, served) as api:
        status, text, headers = post(
            api.url + "/v1/messages", body, {"X-Claude-Code-Session-Id": "s1"}
        )
        assert status == 200 and headers["anthropic-ratelimit-unified-5h-utilization"] == "0.25"
        answer = json.loads(text)
        assert answer["id"].startswith("msg_01") and answer["content"][0]["text"] == "hi"
        assert headers["request-id"].startswith("req_011")
        status, text, headers = post(
            api.url + "/v1/messages", body, {"X-Claude-Code-Session-Id": "s1"}
        )
        assert status == 429 and headers["retry-after"] == "30"
        assert json.loads(text) == {
            "type": "error",
            "error": {"type": "rate_limit_error", "message": "slow down"},
        }
        status, text, _ = post(api.url + "/v1/messages/count_tokens", body)
        assert status == 200 and json.loads(text)["input_tokens"] > 0
    records = read(tmp_path / "served.jsonl")
    assert [(r["session"], r["status"]) for r in records] == [("s1", 200), ("s1", 429)]
    assert records[0]["usage"]["input_tokens"] == 7 and "hi" not in json.dumps(records)


@pytest.mark.parametrize(
    ("step", "shown"),
    [
        ({"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded"}},
         "API Error: 529"),
        ({"error": {"status": 500, "type": "api_error", "message": "Internal server error"}},
         "API Error: 500"),
        ({"error": {"status": 401, "type": "authentication_error", "message": "invalid x-api-key"}},
         "Invalid API key"),
        ({"drop": True}, "API Error"),
        ({"cut": {"after_events": 2}}, "API Error"),
    ],
)  # fmt: skip
def test_the_real_cli_shows_a_scripted_failure(tmp_path: Path, step: dict, shown: str) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    prepare_home(home, [project])
    served = ServedLog(None)
    with StandIn(parse({"default": [step]}), served) as api:
        done = run_print(home, api.url, project, "hello", "--model", "claude-sonnet-4-5")
    assert done.returncode != 0
    assert shown in done.stdout + done.stderr
    assert served.records and served.records[0]["main_loop"]


def test_the_module_runs_as_a_program_and_refuses_a_bad_script(tmp_path: Path) -> None:
    bad = tmp_path / "script.yaml"
    bad.write_text("default: 5\n")
    done = subprocess.run(
        [sys.executable, "-m", "agentwatch.demo.anthropic_api", "--script", str(bad)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert (
        done.returncode == 2
        and "script.yaml.default: expected a non-empty list of steps" in done.stderr
    )
