"""The whole stack for real: `agentwatch up --demo` with Debian's Prometheus and Alertmanager.

Intervals and thresholds are shortened through the config file only (the same code paths as
a workstation): the demo's burning session must page as a token burn, the session that stalls
on an API error must page as stalled, both must reach the webhook receiver with the
documented labels and resolve once the condition ends (the burn calms down; the controller
nudges the stalled pane and it resumes); a real alert (host memory below an impossible
threshold, action `shrink`) must lower the demo orchestrator's concurrency; and every
dashboard query must return data from the live Prometheus.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from agentwatch.cli import stack as cli_stack
from tests.conftest import CLI, local_config, samples
from tests.dashboards import dashboard_queries, may_be_empty

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

# A burning session pages per session; its project-level alert is inhibited by it.
BURNS = ("AgentwatchSessionTokenBurn", "AgentwatchProjectTokenBurn")
STALL = "AgentwatchSessionStalledOnError"
DEADLINE = 540.0  # seconds for the whole scenario; it needs about 6 minutes
DAILY_BUDGET = 6.0
STATUSLINE = Path(__file__).parent / "fixtures" / "hooks" / "statusline-subscription.json"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("stack")
    home = base / "home"
    home.mkdir()
    config_path = local_config(
        base,
        {
            "thresholds": {
                "stall_seconds": 15,
                "burn_floor_tokens_per_hour": 8e6,
                "host_memory_available_ratio": 0.9999,  # always "low": a real shrink alert
            },
            "stack": {
                "scrape_interval": 2,
                "evaluation_interval": 2,
                "group_wait": 1,
                "group_interval": 3,
            },
            "controller": {
                "interval": 2,
                "max_agents": 4,
                "min_agents": 3,
                "shrink_cooldown": 5,
                "grow_sustain": 3600,
                # a daily budget the demo's sessions pass within a minute or two
                "budget_usd": DAILY_BUDGET,
                "budget_period": "day",
                # the pause step (at 2 x escalate_after) comes after the test's ack, if ever
                "burn": {"escalate_after": 60, "verify_after": 20, "verify_fraction": 0.5},
            },
            "demo": {"burn_seconds": 90, "stall_after_turns": 3, "seconds_per_turn": 2},
            "sentinels": {
                # the 5-hour block never fills here: only the official reading may defer
                "token-ledger": {"interval": 5, "block_token_limit": 10**15},
                "resources": {"interval": 2},
                "footprint": {"interval": 5},
                "idle-error": {"interval": 2},
            },
        },
    )
    config = yaml.safe_load(config_path.read_text())
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    env.pop("AGENTWATCH_BERNSTEIN", None)  # the stand-in (test_demo_bernstein: the real one)
    env.pop("CLAUDE_CONFIG_DIR", None)
    state = base / "state"
    process = subprocess.Popen(
        [*CLI, "--config", str(config_path), "up", "--demo", "--state-dir", str(state),
         "--spool-dir", str(base / "spool")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    info = {
        "process": process,
        "state": state,
        "config": config,
        "started": time.monotonic(),
        "alerts_log": state / "stack" / "alerts.jsonl",
        "config_path": config_path,
        "prometheus": f"http://{config['stack']['prometheus_listen']}",
        "exporter": f"http://{config['exporter']['listen']}",
    }
    try:
        yield info
    finally:
        _stop(info)


def _stop(stack: dict[str, Any]) -> str:
    """Ctrl-C `agentwatch up` (once) and return everything it printed."""
    process = stack["process"]
    if "output" not in stack:
        process.send_signal(signal.SIGINT)
        try:
            stack["output"], _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            stack["output"], _ = process.communicate()
    return str(stack["output"])


def _messages(alerts_log: Path) -> list[dict[str, Any]]:
    """Every alert of every webhook message so far, with the message's receive time."""
    if not alerts_log.exists():
        return []
    out = []
    for line in alerts_log.read_text().splitlines():
        record = json.loads(line)
        for alert in record["payload"]["alerts"]:
            out.append({**alert, "received_at": record["received_at"]})
    return out


def _wait(stack: dict[str, Any], what: str, found: Callable[[], Any]) -> Any:
    while time.monotonic() - stack["started"] < DEADLINE:
        if stack["process"].poll() is not None:
            pytest.fail(f"agentwatch up exited early: {stack['process'].stdout.read()}")
        value = found()
        if value:
            return value
        time.sleep(2)
    pytest.fail(f"timed out waiting for {what}; webhook log: {_messages(stack['alerts_log'])}")


def _alert(stack: dict[str, Any], name: str, status: str, **labels: str) -> dict | None:
    for alert in _messages(stack["alerts_log"]):
        if alert["labels"].get("alertname") != name or alert["status"] != status:
            continue
        if all(alert["labels"].get(key) == value for key, value in labels.items()):
            return alert
    return None


def _decision(stack: dict[str, Any]) -> dict[str, Any]:
    try:
        return dict(json.loads((stack["state"] / "demo" / "controller.json").read_text()))
    except (OSError, ValueError):
        return {}


def _active(stack: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The alerts of that name Alertmanager holds as active right now."""
    url = f"http://{stack['config']['stack']['alertmanager_listen']}/api/v2/alerts"
    alerts = requests.get(url, timeout=5).json()
    return [a for a in alerts if a["labels"].get("alertname") == name
            and a["status"]["state"] == "active"]  # fmt: skip


def _throttled_for_burn(stack: dict[str, Any]) -> bool:
    actions = _decision(stack).get("actions") or {}
    return any(name in BURNS for step in ("shrink", "pause") for name in actions.get(step, []))


def test_an_unacknowledged_burn_is_throttled_acknowledged_and_judged(
    stack: dict[str, Any],
) -> None:
    """The burn alert stays unanswered for escalate_after: the controller shrinks for it and
    says so in chat (AgentwatchBurnThrottled). `agentwatch ack` then silences it: the throttle
    lifts and the pause step (at twice escalate_after) never comes. verify_after after the
    throttle began the verifier has its verdict all the same: the throttle's effect on the
    session's rate, and the ineffective alert exactly when that effect is not below
    verify_fraction (the demo's burner is an interactive session, which no orchestrator limit
    slows down)."""
    _wait(stack, "the controller to throttle the burn", lambda: _throttled_for_burn(stack))
    throttled_at = time.time()
    _wait(stack, "the throttle to reach chat",
          lambda: _alert(stack, "AgentwatchBurnThrottled", "firing"))  # fmt: skip
    am = f"http://{stack['config']['stack']['alertmanager_listen']}"
    for name in BURNS:  # the session's burn, and its project's (inhibited by it until now)
        acked = subprocess.run(
            [*CLI, "--config", str(stack["config_path"]), "ack", name, "--match",
             "project=data-pipeline", "--for", "1h", "--comment", "stack test: expected",
             "--alertmanager", am],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert acked.returncode == 0, acked.stdout + acked.stderr
    _wait(stack, "the acknowledged burn to lift its throttle",
          lambda: not _throttled_for_burn(stack))  # fmt: skip
    query = f"{stack['prometheus']}/api/v1/query"
    spool = stack["state"].parent / "spool" / "controller.prom"

    def due() -> float:
        found = samples(spool.read_text())
        return max((value for (name, _), value in found.items()
                    if name == "agentwatch_controller_burn_verify_due_timestamp_seconds"),
                   default=0.0)  # fmt: skip

    verify_at = _wait(stack, "the throttle to be recorded for the verifier", due)

    def judged() -> str | None:
        fired = _alert(stack, "AgentwatchBurnThrottleIneffective", "firing")
        if fired is not None:
            assert fired["labels"]["burn_alertname"] in BURNS
            assert fired["labels"]["project"] == "data-pipeline"
            return "ineffective"
        expr = "instance_session:agentwatch_burn_throttle_effect:ratio"
        effects = requests.get(query, params={"query": expr}, timeout=10).json()["data"]["result"]
        # past due, plus the rule's `for` and a few evaluations, the effect stays below half
        settled = time.time() > verify_at + 90
        # no effect series at all: the burn ended and its throttle record is gone (worked too)
        if settled and all(float(e["value"][1]) < 0.5 for e in effects):
            return "worked"
        return None

    assert _wait(stack, "the verifier's verdict", judged) in ("ineffective", "worked")
    escalate_after = stack["config"]["controller"]["burn"]["escalate_after"]
    assert time.time() > throttled_at + escalate_after + 10, "past the pause step's time"
    log = (stack["state"] / "logs" / "controller.log").read_text()
    assert "burn_shrink" in log and "burn_pause" not in log, "the ack prevented the escalation"


def test_stall_pages_with_the_documented_labels_then_resolves(stack: dict[str, Any]) -> None:
    firing = _wait(stack, "the stall alert", lambda: _alert(stack, STALL, "firing"))
    labels = firing["labels"]
    assert labels["tmux_session"] == "agentwatch-demo"
    assert labels["agentwatch_action"] == "nudge" and labels["severity"] == "warning"
    assert labels["pane"].startswith("%") and labels["state"] == "api_error"
    assert firing["annotations"]["runbook_url"].split("#")[0].endswith("docs/runbook.md")
    # The controller nudges the pane (allow-listed in the demo), the session resumes and the
    # condition ends: the same pane's alert resolves.
    resolved = _wait(
        stack,
        "the stall alert to resolve",
        lambda: _alert(stack, STALL, "resolved", pane=labels["pane"]),
    )
    assert resolved["received_at"] >= firing["received_at"]


def test_a_statusline_at_90_percent_of_the_5_hour_window_defers_opus(
    stack: dict[str, Any],
) -> None:
    """A subscription session's statusline (the binary's payload shape) says 90 % of the
    five-hour window is used: the official reading wins over everything the ledger knows, the
    critical bucket fires and the controller defers Sonnet and, with it, Opus."""
    payload = json.loads(STATUSLINE.read_text())
    now = time.time()
    payload["rate_limits"] = {
        "five_hour": {"used_percentage": 90, "resets_at": int(now + 7200)},
        "seven_day": {"used_percentage": 20, "resets_at": int(now + 5 * 86400)},
    }
    wrote = subprocess.run(
        [*CLI, "statusline", "--state-dir", str(stack["state"] / "demo")],
        input=json.dumps(payload), capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert wrote.returncode == 0, wrote.stderr

    def deferred() -> bool:
        decision = _decision(stack)
        return "opus" in (decision.get("deferred_tiers") or []) and "AgentwatchQuotaCritical" in (
            (decision.get("actions") or {}).get("defer_tier") or []
        )

    _wait(stack, "the quota to defer opus", deferred)
    assert set(_decision(stack)["deferred_tiers"]) >= {"opus", "sonnet"}
    critical = _active(stack, "AgentwatchQuotaCritical")
    assert [(a["labels"]["window"], a["labels"]["source"]) for a in critical] == [
        ("five_hour", "official")
    ]
    assert _active(stack, "AgentwatchQuotaShutdown") == []  # 90 % is below the 95 % bucket


def test_ledger_spend_past_95_percent_of_the_daily_budget_pauses(stack: dict[str, Any]) -> None:
    """No orchestrator budget here: the ledger's spend of the day against controller.budget_usd."""

    def paused() -> bool:
        decision = _decision(stack)
        return bool(decision.get("paused")) and "AgentwatchBudgetCritical" in (
            (decision.get("actions") or {}).get("pause") or []
        )

    _wait(stack, "the budget to pause spawning", paused)
    series = samples((stack["state"].parent / "spool" / "controller.prom").read_text())
    spent = series[("agentwatch_budget_spent_usd", (("period", "day"),))]
    assert spent >= 0.95 * DAILY_BUDGET
    assert series[("agentwatch_budget_limit_usd", (("source", "config"),))] == DAILY_BUDGET
    assert _alert(stack, "AgentwatchBudgetCritical", "firing") is not None


def _burn(stack: dict[str, Any], status: str) -> dict | None:
    for name in BURNS:
        alert = _alert(stack, name, status)
        if alert is not None:
            return alert
    return None


def test_burn_pages_then_resolves_when_the_burn_ends(stack: dict[str, Any]) -> None:
    """The burner spends ~41 M fresh tokens an hour for 90 s, then ~4 M; the steady sessions
    stay under 2 M; the floor is 8 M. The 5-minute rate needs the burn to leave its window
    before the alert resolves, which is what makes this the slowest part of the test."""
    firing = _wait(stack, "the burn alert", lambda: _burn(stack, "firing"))
    assert firing["labels"]["project"] == "data-pipeline"
    assert firing["labels"]["severity"] == "warning"
    assert "data-pipeline" in firing["annotations"]["description"]
    # Resolved as Prometheus sees it: the acknowledged (silenced) burn sends no message.
    burns = 'ALERTS{alertname=~"AgentwatchSessionTokenBurn|AgentwatchProjectTokenBurn"}'
    query = f"{stack['prometheus']}/api/v1/query"
    _wait(stack, "the burn alert to resolve",
          lambda: not requests.get(query, params={"query": burns}, timeout=10)
          .json()["data"]["result"])  # fmt: skip
    burning = {a["labels"]["project"] for a in _messages(stack["alerts_log"])
               if a["labels"].get("alertname") in BURNS}  # fmt: skip
    assert burning == {"data-pipeline"}  # the steady sessions never paged


def test_a_real_alert_lowers_the_demo_orchestrators_concurrency(stack: dict[str, Any]) -> None:
    state_file = stack["state"] / "demo" / "orchestrator.json"

    def lowered() -> bool:
        try:
            return json.loads(state_file.read_text())["max_agents"] == 3
        except (OSError, ValueError, KeyError):
            return False

    _wait(stack, "the controller to shrink the demo to min_agents", lowered)
    decision = json.loads((stack["state"] / "demo" / "controller.json").read_text())
    assert "AgentwatchHostMemoryLow" in decision["reasons"]


def test_status_shows_the_decision_and_its_reasons(stack: dict[str, Any]) -> None:
    _wait(stack, "a decision with reasons", lambda: _decision_reasons(stack))
    shown = subprocess.run(
        [*CLI, "--config", str(stack["config_path"]), "status", "--state-dir",
         str(stack["state"]), "--spool-dir", str(stack["state"].parent / "spool")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert "controller: " in shown.stdout, shown.stdout + shown.stderr
    assert "AgentwatchHostMemoryLow (shrink)" in shown.stdout, shown.stdout
    assert "s ago" in shown.stdout and "-0s ago" not in shown.stdout


def _decision_reasons(stack: dict[str, Any]) -> list[str]:
    try:
        return json.loads((stack["state"] / "demo" / "controller.json").read_text())["reasons"]
    except (OSError, ValueError, KeyError):
        return []


def test_the_printed_prometheus_pages_open(stack: dict[str, Any]) -> None:
    """Debian's Prometheus serves its pages only under /classic/; upstream at the root."""
    base = cli_stack.prometheus_ui(stack["config"]["stack"]["prometheus_listen"])
    for page in ("alerts", "rules", "targets"):
        assert requests.get(base + page, timeout=10).status_code == 200, base + page


def test_every_dashboard_query_returns_data(stack: dict[str, Any]) -> None:
    # After the scenario above, every sentinel has reported for minutes.
    empty = []
    for query in dashboard_queries():
        reply = requests.get(
            f"{stack['prometheus']}/api/v1/query", params={"query": query.expr}, timeout=10
        )
        assert reply.status_code == 200, (query, reply.text)
        if not reply.json()["data"]["result"] and not may_be_empty(query):
            empty.append(f"{query.dashboard} / {query.panel}: {query.expr}")
    assert empty == []


def test_the_spend_by_agent_panel_shows_all_four_agents(stack: dict[str, Any]) -> None:
    """Claude Code from the token ledger; Codex CLI, Gemini CLI and OpenCode from the agent
    ledger reading the demo's sessions of them: each with tokens and cost in the panel."""
    panel = [q for q in dashboard_queries() if q.panel == "Spend by agent"]
    assert len(panel) == 2  # tokens, cost
    for query in panel:
        reply = requests.get(
            f"{stack['prometheus']}/api/v1/query", params={"query": query.expr}, timeout=10
        )
        shown = {
            row["metric"]["agent"]: float(row["value"][1]) for row in reply.json()["data"]["result"]
        }
        assert set(shown) == {"claude-code", "codex", "gemini", "opencode"}, query.expr
        assert all(value > 0 for value in shown.values()), shown


def test_exporter_output_is_clean_for_promtool(stack: dict[str, Any]) -> None:
    text = requests.get(f"{stack['exporter']}/metrics", timeout=10).text
    checked = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for sentinel in ("token-ledger", "resources", "footprint", "idle-error", "release-readiness"):
        assert f'agentwatch_sentinel_up{{sentinel="{sentinel}"}} 1.0' in text


def _shown(text: str) -> tuple[list[str], dict[str, str], tuple[str, str]]:
    """From up's printout: the components, each link's label and path, the last
    `sentinels up a/b`."""
    running = re.search(r"^agentwatch is running \(([^)]*)\)\.$", text, re.M)
    assert running, text[:3000]
    links = dict(re.findall(r"^  (\w+): +https?://[^/\s]+(/\S*)", text, re.M))
    counts = re.findall(r"sentinels up (\d+)/(\d+)", text)
    assert counts, text[-3000:]
    return running.group(1).split(", "), links, counts[-1]


def test_the_readme_shows_what_up_prints(stack: dict[str, Any]) -> None:
    """Last in this module: it stops `agentwatch up` to read everything it printed."""
    output = _stop(stack)
    real = _shown(output)
    assert stack["process"].returncode == 0
    for loop in ("burn", "stall", "quota", "budget"):  # each loop's story, as it happened
        assert f" demo: {loop}: " in output, f"up never told the {loop} loop"
    said = _shown((Path(__file__).resolve().parents[1] / "README.md").read_text())
    # The README shows `scripts/up`'s run, whose orchestrator is the real Bernstein; this one
    # runs the stand-in (its state file is what the tests above read): the same slot.
    shown = ["demo-orchestrator" if name == "demo-bernstein" else name for name in said[0]]
    assert shown == real[0], "the README lists other components than up starts"
    assert said[1] == real[1], "the README's links differ from the ones up prints"
    assert real[2][0] == real[2][1], f"not every sentinel was up at the end: {real[2]}"
    assert said[2] == real[2], "the README's status line counts other sentinels"
