"""The Alertmanager configs and message templates in rules/, checked with the real amtool and a
real Alertmanager 0.25: valid configs, routing by severity, messages that say what, where, since
when, what the controller does and how to acknowledge, and escalation shown as one message."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tests.conftest import free_port
from tests.test_rules import parse_duration

ROOT = Path(__file__).resolve().parent.parent
RULES_DIR = ROOT / "rules"
MAIN_CONFIG = RULES_DIR / "alertmanager.yml"
LOCAL_CONFIG = RULES_DIR / "alertmanager-local.yml"
TEMPLATES = str(RULES_DIR / "templates" / "*.tmpl")
PROMTOOL_TESTS = sorted((RULES_DIR / "tests").glob("*_test.yml"))
ALERTMANAGER = shutil.which("prometheus-alertmanager") or "/usr/bin/prometheus-alertmanager"
LOCAL_PRINTER = "http://127.0.0.1:9849/alerts"

# What the message must say the controller does, per agentwatch_action.
ACTION_WORDS = {
    "pause": "pauses new agents",
    "shrink": "one agent fewer",
    "stop": "stops it",
    "defer_tier": "-tier work",
    "breaker": "circuit breaker open",
    "nudge": "nudges the agent in pane",
    "fail_task": "marks task",
    "burn": "the controller shrinks, after twice that it pauses",
    "grow": "one agent more",
    None: "this one needs you",
}
# Labels that say where an alert happens; the message must name each one's value.
WHERE_LABELS = (
    "instance",
    "project",
    "session",
    "pid",
    "tmux_session",
    "pane",
    "repo",
    "task",
    "sentinel",
    "window",
    "alertmanager",
)


@pytest.fixture(scope="module")
def amtool() -> str:
    path = shutil.which("amtool")
    assert path, "amtool is required (Debian package prometheus-alertmanager)"
    return path


def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False, **kwargs)


# --- configs and routing --------------------------------------------------------------------


@pytest.mark.parametrize("config", [MAIN_CONFIG, LOCAL_CONFIG], ids=lambda p: p.name)
def test_config_passes_amtool_check(amtool: str, config: Path) -> None:
    result = run([amtool, "check-config", str(config)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
    assert "1 templates" in result.stdout


def test_a_broken_config_fails_the_check(amtool: str, tmp_path: Path) -> None:
    broken = tmp_path / "alertmanager.yml"
    broken.write_text(MAIN_CONFIG.read_text().replace("receiver: slack", "receiver: nowhere"))
    assert run([amtool, "check-config", str(broken)]).returncode != 0


@pytest.mark.parametrize(
    ("severity", "receivers"),
    [
        ("critical", "webhook,telegram,slack"),
        ("warning", "webhook,slack"),
        ("info", "webhook,discord"),
    ],
)
def test_routes_by_severity(amtool: str, severity: str, receivers: str) -> None:
    labels = ["alertname=AgentwatchReleaseStalled", "repo=shop", f"severity={severity}"]
    base = [amtool, "config", "routes", "test", f"--config.file={MAIN_CONFIG}"]
    result = run([*base, f"--verify.receivers={receivers}", *labels])
    assert result.returncode == 0, result.stdout + result.stderr
    wrong = run([*base, "--verify.receivers=webhook", *labels])
    assert wrong.returncode != 0, "verify.receivers must reject a wrong receiver list"


# (labels, the receivers of alertmanager.yml, the receivers of alertmanager-local.yml)
ROUTES = [
    # the watchdog: only its dead man's switch, never a chat
    (["alertname=AgentwatchWatchdog", "severity=none"], "deadmansswitch", "deadmansswitch"),
    # grow is for the controller only
    (
        ["alertname=AgentwatchErrorRatioLow", "severity=info", "agentwatch_action=grow"],
        "null",
        "null",
    ),
    # the new messages a person must see reach chat like any other of their severity
    (
        ["alertname=AgentwatchBurnThrottled", "severity=warning", "step=shrink"],
        "webhook,slack",
        "local-webhook",
    ),
    (
        ["alertname=AgentwatchNudgeEscalated", "severity=warning"],
        "webhook,slack",
        "local-webhook",
    ),
    (
        ["alertname=AgentwatchBurnThrottleIneffective", "severity=critical"],
        "webhook,telegram,slack",
        "local-webhook",
    ),
    (
        ["alertname=AgentwatchSessionTokenBurn", "severity=critical", "agentwatch_action=burn"],
        "webhook,telegram,slack",
        "local-webhook",
    ),
]


@pytest.mark.parametrize(("labels", "main", "local"), ROUTES, ids=lambda v: str(v)[:40])
def test_watchdog_grow_and_new_chat_alerts_route(
    amtool: str, labels: list[str], main: str, local: str
) -> None:
    for config, receivers in ((MAIN_CONFIG, main), (LOCAL_CONFIG, local)):
        base = [amtool, "config", "routes", "test", f"--config.file={config}"]
        result = run([*base, f"--verify.receivers={receivers}", *labels])
        assert result.returncode == 0, f"{config.name}: {result.stdout}{result.stderr}"


def test_the_dead_mans_switch_is_pinged_often_and_the_null_receiver_sends_nothing() -> None:
    main = yaml.safe_load(MAIN_CONFIG.read_text())
    [route] = [r for r in main["route"]["routes"] if r["receiver"] == "deadmansswitch"]
    assert route["matchers"] == ['alertname="AgentwatchWatchdog"']
    assert (
        parse_duration(route["repeat_interval"])
        <= 600
        < parse_duration(main["route"]["repeat_interval"])
    )
    receivers = {r["name"]: r for r in main["receivers"]}
    assert receivers["deadmansswitch"]["webhook_configs"][0]["url"].endswith("DEADMANSSWITCH_URL")
    assert set(receivers["null"]) == {"name"}
    local = {r["name"]: r for r in yaml.safe_load(LOCAL_CONFIG.read_text())["receivers"]}
    assert set(local["deadmansswitch"]) == set(local["null"]) == {"name"}


@pytest.mark.parametrize("severity", ["critical", "warning", "info"])
def test_local_config_sends_everything_to_the_local_printer(amtool: str, severity: str) -> None:
    result = run(
        [
            amtool,
            "config",
            "routes",
            "test",
            f"--config.file={LOCAL_CONFIG}",
            "--verify.receivers=local-webhook",
            "alertname=AgentwatchSessionStalledOnError",
            f"severity={severity}",
        ]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    local = yaml.safe_load(LOCAL_CONFIG.read_text())
    [receiver] = [r for r in local["receivers"] if r.get("webhook_configs")]
    assert [hook["url"] for hook in receiver["webhook_configs"]] == [LOCAL_PRINTER]
    assert local["route"]["group_wait"] == "5s"


def test_local_and_main_configs_group_and_inhibit_alike() -> None:
    main, local = (yaml.safe_load(path.read_text()) for path in (MAIN_CONFIG, LOCAL_CONFIG))
    assert main["inhibit_rules"] == local["inhibit_rules"]
    assert main["route"]["group_by"] == local["route"]["group_by"]
    assert "severity" not in main["route"]["group_by"], "an escalating alert must stay one group"
    assert {"alertname", "instance", "repo"} <= set(main["route"]["group_by"])


def test_one_hosts_alert_never_inhibits_another_hosts() -> None:
    """One Prometheus may watch several workstations: inhibition stays within one instance."""
    for rule in yaml.safe_load(MAIN_CONFIG.read_text())["inhibit_rules"]:
        assert "instance" in rule.get("equal", []), rule


def test_main_config_holds_placeholders_not_secrets() -> None:
    text = MAIN_CONFIG.read_text()
    for placeholder in (
        "TELEGRAM_BOT_TOKEN",
        "TELEGRAM_CHAT_ID",
        "SLACK_WEBHOOK_URL_FILE",
        "DISCORD_WEBHOOK_URL",
        "WEBHOOK_URL",
        "DEADMANSSWITCH_URL",
    ):
        assert placeholder in text
    assert "mode 0600" in text, "the file must say it needs mode 0600 once filled in"
    config = yaml.safe_load(text)
    receivers = {receiver["name"]: receiver for receiver in config["receivers"]}
    assert set(receivers) == {"webhook", "telegram", "slack", "discord", "deadmansswitch", "null"}
    assert receivers["slack"]["slack_configs"][0]["api_url_file"]
    assert "api_url" not in receivers["slack"]["slack_configs"][0]
    assert receivers["telegram"]["telegram_configs"][0]["parse_mode"] == ""


def test_escalating_alert_is_inhibited_by_its_higher_severity() -> None:
    rules = yaml.safe_load(MAIN_CONFIG.read_text())["inhibit_rules"]
    critical = next(r for r in rules if r["source_matchers"] == ['severity="critical"'])
    assert critical["equal"] == ["alertname", "instance", "repo"]
    assert critical["target_matchers"] == ['severity=~"warning|info"']


# --- message templates ----------------------------------------------------------------------


def example_alerts() -> Iterator[dict[str, Any]]:
    """One firing example per alert rule and label set: the expanded labels and annotations
    the promtool tests expect, so the messages are checked against what the rules produce."""
    seen = set()
    for path in PROMTOOL_TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                for alert in check.get("exp_alerts") or []:
                    labels = {"alertname": check["alertname"], **alert["exp_labels"]}
                    key = (labels["alertname"], labels["severity"])
                    if key not in seen:
                        seen.add(key)
                        yield {"labels": labels, "annotations": alert["exp_annotations"]}


def notification(alerts: list[dict[str, Any]], status: str = "firing") -> dict[str, Any]:
    """Alertmanager's template data (template.Data) for one notification."""
    starts = datetime(2026, 3, 1, 10, 15, tzinfo=UTC)
    ends = starts + timedelta(minutes=20) if status == "resolved" else datetime(1, 1, 1, tzinfo=UTC)
    items = [
        {
            "status": status,
            "labels": alert["labels"],
            "annotations": alert["annotations"],
            "startsAt": starts.isoformat(),
            "endsAt": ends.isoformat(),
            "generatorURL": "http://127.0.0.1:9090/graph",
            "fingerprint": f"{index:016x}",
        }
        for index, alert in enumerate(alerts)
    ]
    common = dict.fromkeys(alerts[0]["labels"])
    common = {
        key: alerts[0]["labels"][key]
        for key in common
        if all(alert["labels"].get(key) == alerts[0]["labels"][key] for alert in alerts)
    }
    return {
        "receiver": "telegram",
        "status": status,
        "alerts": items,
        "groupLabels": {"alertname": alerts[0]["labels"]["alertname"]},
        "commonLabels": common,
        "commonAnnotations": {},
        "externalURL": "http://127.0.0.1:9093",
    }


def render(amtool: str, tmp_path: Path, data: dict[str, Any], template: str) -> str:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(data))
    result = run(
        [
            amtool,
            "template",
            "render",
            f"--template.glob={TEMPLATES}",
            f"--template.data={path}",
            f"--template.text={template}",
        ]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def assert_no_raw_labels(text: str) -> None:
    assert "map[" not in text
    assert "<no value>" not in text
    assert "{{" not in text
    assert not re.search(r'\w+="', text), "a raw label pair leaked into the message"
    assert "agentwatch_action" not in text and "severity=" not in text


EXAMPLES = list(example_alerts())


def test_every_alert_has_an_example_to_render() -> None:
    names = {example["labels"]["alertname"] for example in EXAMPLES}
    assert len(names) >= 25


@pytest.mark.parametrize(
    "alert",
    EXAMPLES,
    ids=[f"{a['labels']['alertname']}-{a['labels']['severity']}" for a in EXAMPLES],
)
def test_message_says_what_where_since_action_and_ack(
    amtool: str, tmp_path: Path, alert: dict[str, Any]
) -> None:
    text = render(
        amtool, tmp_path, notification([alert]), '{{ template "agentwatch.telegram.message" . }}'
    )
    labels, name = alert["labels"], alert["labels"]["alertname"]
    first_line = text.splitlines()[0]
    assert first_line == f"[{labels['severity'].upper()}] {name}"
    assert alert["annotations"]["summary"] in text
    assert f"What happened: {alert['annotations']['description']}" in text
    where = re.search(r"^Where: (.+)$", text, flags=re.MULTILINE)
    assert where, text
    for label in WHERE_LABELS:
        if labels.get(label):
            assert labels[label] in where.group(1), f"{label} missing from {where.group(1)!r}"
    assert "Since: Sun 1 Mar" in text
    controller = re.search(r"^Controller: (.+)$", text, flags=re.MULTILINE)
    assert controller and ACTION_WORDS[labels.get("agentwatch_action")] in controller.group(1)
    if labels.get("agentwatch_action") == "defer_tier":
        assert f"{labels['agentwatch_tier']}-tier" in controller.group(1)
    assert f"Acknowledge: agentwatch ack {name} --for 1h" in text
    lifts = "the controller stops acting on it too" in text
    assert lifts == bool(labels.get("agentwatch_action")), "acking an action lifts it: say so"
    assert alert["annotations"]["runbook_url"] in text
    assert_no_raw_labels(text)


def test_resolved_message_says_the_measure_is_lifted(amtool: str, tmp_path: Path) -> None:
    alert = next(a for a in EXAMPLES if a["labels"].get("agentwatch_action") == "pause")
    text = render(
        amtool,
        tmp_path,
        notification([alert], status="resolved"),
        '{{ template "agentwatch.telegram.message" . }}',
    )
    assert text.startswith(f"[RESOLVED] {alert['labels']['alertname']}")
    assert "Resolved: " in text and "over at 10:35" in text
    assert "lifts its measure (pause)" in text
    assert "Acknowledge" not in text
    assert_no_raw_labels(text)


TITLE_AND_TEXT = '{{ template "agentwatch.title" . }}\n---\n{{ template "agentwatch.text" . }}'


def test_slack_and_discord_title_and_text_count_a_group(amtool: str, tmp_path: Path) -> None:
    stalled = [a for a in EXAMPLES if a["labels"]["alertname"] == "AgentwatchReleaseStalled"]
    assert len(stalled) == 3
    text = render(amtool, tmp_path, notification(stalled), TITLE_AND_TEXT)
    title, body = text.split("\n---\n")
    assert title == "AgentwatchReleaseStalled (3 firing, 0 resolved)"
    assert body.count("Acknowledge: agentwatch ack AgentwatchReleaseStalled") == 3
    assert_no_raw_labels(body)


# --- a real Alertmanager: escalation shows as one message -----------------------------------


class _Collector(BaseHTTPRequestHandler):
    received: list[dict[str, Any]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []
    handler = type("Collector", (_Collector,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/alerts", received
    server.shutdown()
    server.server_close()


def wait_for(condition: Any, timeout: float = 15) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def local_alertmanager(tmp_path: Path, processes: list[subprocess.Popen], url: str) -> str:
    """A real Alertmanager on the shipped local config (1 s group wait) sending to the webhook
    `url`; its listen address once it is ready."""
    config = yaml.safe_load(LOCAL_CONFIG.read_text())
    config["receivers"][0]["webhook_configs"][0]["url"] = url
    config["route"]["group_wait"] = "1s"
    config["templates"] = [TEMPLATES]
    (tmp_path / "alertmanager.yml").write_text(yaml.safe_dump(config))
    web = f"127.0.0.1:{free_port()}"
    processes.append(
        subprocess.Popen(
            [
                ALERTMANAGER,
                f"--config.file={tmp_path / 'alertmanager.yml'}",
                f"--storage.path={tmp_path / 'data'}",
                f"--web.listen-address={web}",
                "--cluster.listen-address=",
                "--log.level=warn",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )

    def ready() -> bool:
        try:
            return requests.get(f"http://{web}/-/ready", timeout=1).ok
        except requests.ConnectionError:
            return False

    wait_for(ready)
    return web


@pytest.mark.slow
def test_real_alertmanager_sends_one_escalated_message(
    tmp_path: Path,
    processes: list[subprocess.Popen],
    webhook: tuple[str, list[dict[str, Any]]],
) -> None:
    url, received = webhook
    web = local_alertmanager(tmp_path, processes, url)
    api = f"http://{web}/api/v2"
    ends = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    base = {
        "alertname": "AgentwatchReleaseStalled",
        "repo": "shop",
        "job": "agentwatch",
        "instance": "alpha",
    }
    alerts = [
        {
            "labels": {**base, "severity": s},
            "annotations": {"summary": f"stalled ({s})"},
            "endsAt": ends,
        }
        for s in ("info", "warning", "critical")
    ]
    other = {"labels": {**base, "repo": "blog", "severity": "info"}, "endsAt": ends}
    # The same repository stalled on another workstation: its own incident, never inhibited
    # by alpha's critical.
    beta = {"labels": {**base, "instance": "beta", "severity": "info"}, "endsAt": ends}
    requests.post(f"{api}/alerts", json=[*alerts, other, beta], timeout=5).raise_for_status()

    wait_for(lambda: len(received) >= 3)
    time.sleep(1.5)  # a second message for the same incident would arrive by now
    by_incident = {
        (message["groupLabels"]["instance"], message["groupLabels"]["repo"]): message
        for message in received
    }
    assert len(received) == 3, [m["groupLabels"] for m in received]
    shop = by_incident["alpha", "shop"]
    assert [a["labels"]["severity"] for a in shop["alerts"]] == ["critical"]
    assert [a["labels"]["severity"] for a in by_incident["alpha", "blog"]["alerts"]] == ["info"]
    assert [a["labels"]["severity"] for a in by_incident["beta", "shop"]["alerts"]] == ["info"]

    state = requests.get(
        f"{api}/alerts", params={"filter": ['repo="shop"', 'instance="alpha"']}, timeout=5
    ).json()
    status = {a["labels"]["severity"]: a["status"] for a in state}
    other_host = requests.get(
        f"{api}/alerts", params={"filter": ['repo="shop"', 'instance="beta"']}, timeout=5
    ).json()
    assert [a["status"]["state"] for a in other_host] == ["active"]
    assert status["critical"]["state"] == "active"
    for lower in ("info", "warning"):
        assert status[lower]["state"] == "suppressed"
        assert status[lower]["inhibitedBy"], f"{lower} must be inhibited, not silenced"


@pytest.mark.slow
def test_a_burn_pattern_is_one_message_and_the_burns_still_escalate(
    tmp_path: Path,
    processes: list[subprocess.Popen],
    webhook: tuple[str, list[dict[str, Any]]],
) -> None:
    """The three-burns case on a real Alertmanager with the shipped inhibit rules: the pattern
    of shop's heavy-work burns is the one message of them (a burn of blog still gets its
    own), while the controller's reader keeps each burn actionable — the pattern holds back
    messages, not the escalation — and the project burn a session burn explains stays
    inhibited. (A critical burn would hold back every warning burn of its host by the
    severity rule; none is sent here.)"""
    url, received = webhook
    web = local_alertmanager(tmp_path, processes, url)
    ends = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    host = {"job": "agentwatch", "instance": "alpha"}
    burn = {**host, "alertname": "AgentwatchSessionTokenBurn", "severity": "warning",
            "agentwatch_action": "burn", "burn_kind": "heavy_work"}  # fmt: skip
    heavy = [{**burn, "project": "shop", "session": f"s-{n}"} for n in (1, 2, 3)]
    other = {**burn, "project": "blog", "session": "b-1"}
    project = {**burn, "alertname": "AgentwatchProjectTokenBurn", "project": "blog"}
    pattern = {**host, "alertname": "AgentwatchBurnPattern", "severity": "warning",
               "project": "shop", "burn_kind": "heavy_work"}  # fmt: skip
    body = [{"labels": labels, "annotations": {"summary": labels["alertname"]}, "endsAt": ends}
            for labels in (pattern, *heavy, other, project)]  # fmt: skip
    requests.post(f"http://{web}/api/v2/alerts", json=body, timeout=5).raise_for_status()

    def sent() -> set[tuple[str, str]]:
        return {(a["labels"]["alertname"], a["labels"].get("session", "")) for m in received
                for a in m["alerts"]}  # fmt: skip

    wanted = {("AgentwatchBurnPattern", ""), ("AgentwatchSessionTokenBurn", "b-1")}
    wait_for(lambda: sent() >= wanted)
    time.sleep(1.5)  # a message for a held-back burn would arrive by now
    assert sent() == wanted

    from agentwatch.controller.alerts import AlertReader

    alerts = AlertReader([f"http://{web}"], 5.0).read().alerts or []
    by_session = {(a.name, a.labels.get("session", "")): a for a in alerts}
    for n in (1, 2, 3):
        assert by_session["AgentwatchSessionTokenBurn", f"s-{n}"].actionable
    assert not by_session["AgentwatchProjectTokenBurn", ""].actionable
