"""The burn runbook against a real Alertmanager 0.25: an unacknowledged burn that has fired for
longer than `burn.escalate_after` makes the real `controller --once` shrink and record the
throttle for the verifier; `agentwatch ack` on one burn (a silence) keeps that one from ever
escalating while the other still does. Alertmanager's `startsAt` is the timer, so the age
survives any restart of the controller."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests

from tests.conftest import run_cli, samples
from tests.test_controller_alertmanager import env, start_alertmanager  # noqa: F401

BURN = "AgentwatchSessionTokenBurn"


def _post_burn(url: str, session: str, minutes_ago: float, rate: float) -> None:
    now = datetime.now(UTC)
    labels = {"alertname": BURN, "agentwatch_action": "burn", "severity": "warning",
              "project": "data-pipeline", "session": session,
              "burn_kind": "heavy_work"}  # fmt: skip
    body = [{
        "labels": labels,
        "annotations": {"rate": str(rate), "summary": "burning"},
        "startsAt": (now - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "endsAt": (now + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }]  # fmt: skip
    requests.post(f"{url}/api/v2/alerts", json=body, timeout=5).raise_for_status()


def test_an_unacknowledged_burn_shrinks_and_an_acknowledged_one_does_not(
    tmp_path: Path,
    env: dict[str, str],  # noqa: F811
    processes: list[subprocess.Popen],
) -> None:
    am = start_alertmanager(tmp_path, "am", processes)
    state_file, spool = tmp_path / "controller.json", tmp_path / "spool"
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"controller": {
        "state_file": str(state_file), "max_agents": 4, "min_agents": 1,
        "burn": {"escalate_after": 600, "verify_after": 300, "verify_fraction": 0.5},
    }}))  # fmt: skip
    _post_burn(am.url, "s-acked", minutes_ago=12, rate=4.0e7)
    _post_burn(am.url, "s-unanswered", minutes_ago=12, rate=3.0e7)
    acked = run_cli("--config", str(config), "ack", BURN, "--match", "session=s-acked",
                    "--comment", "expected: the nightly backfill", "--alertmanager", am.url,
                    env=env)  # fmt: skip
    assert acked.returncode == 0, acked.stderr

    ran = run_cli("--config", str(config), "controller", "--once", "--spool-dir", str(spool),
                  "--alertmanager", am.url, env=env, timeout=60)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    decision = json.loads(state_file.read_text())
    assert decision["max_agents"] == 3 and not decision["paused"]
    assert decision["actions"] == {"shrink": [BURN]}
    assert "session=s-unanswered unacknowledged for 12m: shrink to 3" in ran.stderr
    assert "s-acked" not in ran.stderr
    series = samples((spool / "controller.prom").read_text())
    where = (("alertname", BURN), ("project", "data-pipeline"), ("session", "s-unanswered"))
    assert series[("agentwatch_controller_burn_escalation", (*where, ("step", "shrink")))] == 1
    assert series[("agentwatch_controller_burn_pre_throttle_rate", where)] == 3.0e7
    assert series[("agentwatch_controller_burn_target_rate", where)] == 1.5e7
    due = series[("agentwatch_controller_burn_verify_due_timestamp_seconds", where)]
    assert abs(due - (datetime.now(UTC).timestamp() + 300)) < 60
    acked_where = (("alertname", BURN), ("project", "data-pipeline"), ("session", "s-acked"))
    assert not any(labels[:3] == acked_where for _, labels in series)
