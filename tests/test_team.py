"""A team of workstations sharing one subscription, with real engines end to end.

Two hosts, "alpha" and "beta", each run what `agentwatch up` runs for the stack: a real
exporter, the real token-ledger sentinel reading that host's Claude Code transcripts, and a
real Prometheus whose config is the one `up` writes (stack.write_configs): the local rules
evaluated locally, plus stack.remote_write to the centre with the external labels `host` and
`account: team`. Both hosts configure the subscription's 5-hour cap (thresholds.quota_5h_tokens
= 10 000 fresh tokens). Alpha's sessions spend 6 000 fresh tokens, beta's 4 500: each host alone
stays under even the elevated 70 % (its own Prometheus raises no quota alert), together they
are at about 105 %, past the shutdown 95 %.

- Central Prometheus 2.42 (`--web.enable-remote-write-receiver`) loads the shipped
  rules/central/account.rules.yml unchanged and sends to a real central Alertmanager:
  AgentwatchAccountQuotaShutdown becomes active for both hosts only after beta's tokens arrive,
  AgentwatchAccountQuotaCritical for alpha only (the host spending more than its even share),
  both fire after their 1-minute `for:`, and two real `agentwatch controller --once`, one per
  host, reading that one central Alertmanager with their hosts' configs: alpha pauses and
  shrinks by one agent, beta pauses only.
- VictoriaMetrics 1.79 (Debian) receives the same remote_write at /api/v1/write; it evaluates
  no rules, so the central rules' own expressions (the account's window, the hosts' shares)
  are queried through its Prometheus-compatible /api/v1/query: the sum passes the shutdown
  ratio only with beta's tokens in.

Each test prints the end-to-end delay from the moment beta's transcript line is written to
the moment the centre shows the sum past the limit (and, on Prometheus, the alert active, then
firing, then in the central Alertmanager).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from agentwatch.cli import stack
from agentwatch.sentinels import registry
from tests.conftest import CLI, free_port, run_cli
from tests.test_multihost import query, ready, start, wait_for
from tests.transcripts import append, assistant, encode, transcript

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

PROMETHEUS = shutil.which("prometheus")
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
VICTORIA = shutil.which("victoria-metrics")
ROOT = Path(__file__).resolve().parent.parent
CENTRAL_RULES = ROOT / "rules" / "central" / "account.rules.yml"
ACCOUNT = "team"
CAP = 10_000  # thresholds.quota_5h_tokens on both hosts: the subscription's 5-hour window
FIRST = (100, 10)  # (input, output) of each host's first reply: its series exist from then
SPEND = {"alpha": (5_500, 500), "beta": (4_000, 500)}  # then: 6 000 and 4 500 fresh tokens
SHUTDOWN, ELEVATED = 0.95, 0.70  # the default thresholds.quota_*_ratio
HISTORY = 20  # samples (1 s apart) of every host's counters at the centre before it spends
SLOW = 90.0  # generous: a busy machine, remote_write's 5 s batch deadline, a 1 m `for:`


def central_expr(window: str, what: str) -> str:
    """The central rule's own expression for the account's window (`what` = "used") or the
    hosts' shares ("share"), as the rules file ships it."""
    record = {
        "used": "account_window:agentwatch_quota_used:ratio",
        "share": "account_host_window:agentwatch_quota_window_share:ratio",
    }[what]
    for group in yaml.safe_load(CENTRAL_RULES.read_text())["groups"]:
        for rule in group["rules"]:
            if rule.get("record") == record and rule["labels"]["window"] == window:
                return str(rule["expr"])
    raise AssertionError(f"no {record} for {window} in {CENTRAL_RULES}")


@dataclass
class Host:
    name: str
    config: Path
    claude: Path
    prometheus: str  # URL of the host's own Prometheus

    def spend(self, tokens: tuple[int, int]) -> None:
        """One more Claude Code reply in this host's session transcript."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        line = assistant(input_tokens=tokens[0], output_tokens=tokens[1], timestamp=now)
        append(transcript(self.claude, session=f"{self.name}-s1"), encode(line))


def host_values(name: str, remote: str, controller: dict[str, Any]) -> dict[str, Any]:
    others = [item for item in registry.sentinels() if item != "token-ledger"]
    return {
        "exporter": {"listen": f"127.0.0.1:{free_port()}"},
        "thresholds": {"quota_5h_tokens": CAP},
        "claude": {"config_dirs": []},  # set by start_host
        "sentinels": {
            "token-ledger": {"interval": "1s"},
            **{item: {"enabled": False} for item in others},
        },
        "controller": {"listen": f"127.0.0.1:{free_port()}", **controller},
        "demo": {"orchestrator_listen": f"127.0.0.1:{free_port()}"},
        "stack": {
            **{key: f"127.0.0.1:{free_port()}"
               for key in ("prometheus_listen", "alertmanager_listen", "webhook_listen")},
            "scrape_interval": "1s",
            "evaluation_interval": "1s",
            "remote_write": {"url": remote, "host": name, "account": ACCOUNT},
        },
    }  # fmt: skip


def start_host(
    tmp_path: Path,
    name: str,
    remote: str,
    processes: list[subprocess.Popen],
    controller: dict[str, Any] | None = None,
) -> Host:
    """One workstation: exporter, token ledger, and the Prometheus `agentwatch up` writes."""
    assert PROMETHEUS is not None
    folder = tmp_path / name
    claude, spool, state = folder / "claude", folder / "spool", folder / "state"
    for path in (claude, spool, state):
        path.mkdir(parents=True)
    values = host_values(name, remote, controller or {})
    values["claude"]["config_dirs"] = [str(claude)]
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump(values))
    host = Host(name, config, claude, f"http://{values['stack']['prometheus_listen']}")
    host.spend(FIRST)

    cfg = registry.load_config(config)
    listen = cfg["exporter"]["listen"]
    files = stack.write_configs(cfg, state, listen)  # exactly what `up` writes
    written = yaml.safe_load(files.prometheus_config.read_text())
    assert written["remote_write"] == [{"url": remote}]
    assert written["global"]["external_labels"] == {"host": name, "account": ACCOUNT}
    assert written["rule_files"], "the host still evaluates its own rules"

    base = [*CLI, "--config", str(config)]
    start([*base, "exporter", "--spool-dir", str(spool)], folder / "exporter.log", processes)
    start([*base, "sentinel", "token-ledger", "--spool-dir", str(spool), "--state-dir",
           str(state)], folder / "ledger.log", processes)  # fmt: skip
    argv = [*stack.prometheus_argv(PROMETHEUS, cfg, files), "--log.level=warn"]
    start(argv, folder / "prometheus.log", processes)
    log = folder / "prometheus.log"
    wait_for(lambda: ready(host.prometheus), 60, lambda: f"{name}: {log.read_text()[-2000:]}")
    return host


def value_by(url: str, expr: str, label: str) -> dict[str, float]:
    return {item["metric"].get(label, ""): float(item["value"][1]) for item in query(url, expr)}


def alerts_by_host(url: str, name: str) -> dict[str, str]:
    """host -> state (pending or firing) of every active alert called `name`."""
    alerts = requests.get(f"{url}/api/v1/alerts", timeout=10).json()["data"]["alerts"]
    named = [a for a in alerts if a["labels"]["alertname"] == name]
    return {a["labels"].get("host", ""): a["state"] for a in named}


BUCKETS = ("AgentwatchQuotaElevated", "AgentwatchQuotaCritical", "AgentwatchQuotaShutdown")


def local_quota_alerts(host: Host) -> list[str]:
    """The host's own quota bucket alerts (its forecast may well warn of a fast pace)."""
    alerts = requests.get(f"{host.prometheus}/api/v1/alerts", timeout=10).json()["data"]["alerts"]
    return [a["labels"]["alertname"] for a in alerts if a["labels"]["alertname"] in BUCKETS]


def spend_and_check_alone(hosts: dict[str, Host], central: str) -> None:
    """Both hosts visible at the centre; alpha's 6 000 tokens arrive; alone they stay under
    every local quota bucket, and the account's sum under the shutdown ratio."""
    used = central_expr("five_hour", "used")
    # 20 s of history first: increase() extrapolates a counter's jump over its sampled span,
    # by up to half a scrape interval each side, which a span of a few seconds inflates.
    series = f'agentwatch_tokens_total{{account="{ACCOUNT}"}}'
    tokens = f"min by (host) (count_over_time({series}[5m])) >= {HISTORY}"
    wait_for(lambda: len(value_by(central, tokens, "host")) == 2, SLOW,
             lambda: f"not both hosts' tokens at the centre: {query(central, tokens)}")  # fmt: skip
    hosts["alpha"].spend(SPEND["alpha"])
    alone = wait_for(
        lambda: (v := value_by(central, used, "account").get(ACCOUNT, 0.0)) > 0.5 and v, SLOW,
        lambda: f"alpha's tokens never reached the centre: {query(central, used)}",
    )  # fmt: skip
    assert alone < SHUTDOWN, alone
    local = "instance_window:agentwatch_quota_used:ratio"
    alpha_alone = wait_for(
        lambda: (
            value_by(hosts["alpha"].prometheus, local, "source").get("cap", 0.0) > 0.5
            and value_by(hosts["alpha"].prometheus, local, "source")
        ),
        SLOW,
        lambda: f"alpha's own quota never recorded: {query(hosts['alpha'].prometheus, local)}",
    )
    assert alpha_alone["cap"] < ELEVATED, alpha_alone


def beta_passes_the_limit(hosts: dict[str, Host], central: str) -> tuple[float, float]:
    """Beta's 4 500 tokens written now; returns (when written, the account's sum at the
    centre once it passes the shutdown ratio) and the moment it was seen."""
    used = central_expr("five_hour", "used")
    written = time.monotonic()
    hosts["beta"].spend(SPEND["beta"])
    total = wait_for(
        lambda: (v := value_by(central, used, "account").get(ACCOUNT, 0.0)) >= SHUTDOWN and v,
        SLOW,
        lambda: f"the account's sum never passed {SHUTDOWN}: {query(central, used)}",
    )
    seen = time.monotonic()
    print(f"\n[team] token written -> account sum {total:.3f} visible at the centre: "
          f"{seen - written:.2f} s")  # fmt: skip
    return written, total


def check_each_host_alone_under(hosts: dict[str, Host]) -> None:
    local = "instance_window:agentwatch_quota_used:ratio"
    for host in hosts.values():
        mine = value_by(host.prometheus, local, "source")
        assert mine.get("cap", 0.0) < ELEVATED, (host.name, mine)
        assert local_quota_alerts(host) == [], (host.name, local_quota_alerts(host))


AM_CONFIG = {
    "route": {"receiver": "null", "group_wait": "1s", "group_interval": "1s"},
    "receivers": [{"name": "null"}],
}


def start_central_alertmanager(tmp_path: Path, processes: list[subprocess.Popen]) -> str:
    assert ALERTMANAGER is not None
    folder = tmp_path / "central-alertmanager"
    folder.mkdir()
    config = folder / "alertmanager.yml"
    config.write_text(yaml.safe_dump(AM_CONFIG))
    listen = f"127.0.0.1:{free_port()}"
    start([ALERTMANAGER, f"--config.file={config}", f"--storage.path={folder / 'data'}",
           f"--web.listen-address={listen}", "--cluster.listen-address=", "--log.level=warn"],
          folder / "alertmanager.log", processes)  # fmt: skip
    url = f"http://{listen}"
    wait_for(lambda: ready(url), 30, lambda: "the central Alertmanager is not ready")
    return url


def start_central_prometheus(
    tmp_path: Path, alertmanager: str, processes: list[subprocess.Popen]
) -> str:
    assert PROMETHEUS is not None
    folder = tmp_path / "central"
    folder.mkdir()
    config = folder / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"evaluation_interval": "1s"},
        "rule_files": [str(CENTRAL_RULES)],  # the shipped file, unchanged
        "alerting": {"alertmanagers": [
            {"static_configs": [{"targets": [alertmanager.removeprefix("http://")]}]}]},
    }))  # fmt: skip
    listen = f"127.0.0.1:{free_port()}"
    log = folder / "prometheus.log"
    start([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}",
           f"--web.listen-address={listen}", "--web.enable-remote-write-receiver",
           "--log.level=warn"], log, processes)  # fmt: skip
    url = f"http://{listen}"
    wait_for(lambda: ready(url), 60, lambda: f"central: {log.read_text()[-2000:]}")
    return url


def alertmanager_alerts(url: str) -> dict[tuple[str, str], dict[str, str]]:
    alerts = requests.get(f"{url}/api/v2/alerts", timeout=10).json()
    return {(a["labels"]["alertname"], a["labels"].get("host", "")): a["labels"] for a in alerts}


def controller_once(host: Host, spool: Path) -> dict[str, Any]:
    ran = run_cli("--config", str(host.config), "controller", "--once", "--spool-dir",
                  str(spool), timeout=60)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    values = yaml.safe_load(host.config.read_text())
    return json.loads(Path(values["controller"]["state_file"]).read_text())


@pytest.mark.skipif(PROMETHEUS is None or ALERTMANAGER is None, reason="Debian's prometheus")
def test_two_hosts_one_subscription_central_prometheus_alerts_and_controllers_act(
    tmp_path: Path, processes: list[subprocess.Popen]
) -> None:
    alertmanager = start_central_alertmanager(tmp_path, processes)
    central = start_central_prometheus(tmp_path, alertmanager, processes)
    hosts = {
        name: start_host(tmp_path, name, f"{central}/api/v1/write", processes, {
            "alertmanagers": [alertmanager], "state_file": str(tmp_path / f"{name}.json"),
            "max_agents": 4, "min_agents": 1})
        for name in ("alpha", "beta")
    }  # fmt: skip
    spend_and_check_alone(hosts, central)
    time.sleep(3)  # a few more central evaluations with alpha alone: nothing may fire
    for name in ("AgentwatchAccountQuotaShutdown", "AgentwatchAccountQuotaCritical"):
        assert alerts_by_host(central, name) == {}, name

    written, total = beta_passes_the_limit(hosts, central)
    assert total < 1.2, total
    shutdown = wait_for(
        lambda: len(s := alerts_by_host(central, "AgentwatchAccountQuotaShutdown")) == 2 and s,
        SLOW, lambda: f"no account alert: {requests.get(f'{central}/api/v1/rules').text[-3000:]}",
    )  # fmt: skip
    active = time.monotonic()
    assert set(shutdown) == {"alpha", "beta"}
    critical = wait_for(lambda: alerts_by_host(central, "AgentwatchAccountQuotaCritical"), 30,
                        lambda: "no critical alert")  # fmt: skip
    assert set(critical) == {"alpha"}, "only the host above its even share shrinks"
    shares = value_by(central, central_expr("five_hour", "share"), "host")
    assert shares["alpha"] > 0.5 > shares["beta"], shares
    check_each_host_alone_under(hosts)  # no host's own rules saw it

    wanted = {
        ("AgentwatchAccountQuotaShutdown", "alpha"),
        ("AgentwatchAccountQuotaShutdown", "beta"),
        ("AgentwatchAccountQuotaCritical", "alpha"),
    }
    received = wait_for(
        lambda: wanted <= set(got := alertmanager_alerts(alertmanager)) and got,
        SLOW + 60,
        lambda: f"not in the central Alertmanager: {alertmanager_alerts(alertmanager)}",
    )
    delivered = time.monotonic()
    print(
        f"[team] token written -> central alert active (pending): {active - written:.2f} s; "
        f"-> in the central Alertmanager (after the 1m for:): {delivered - written:.2f} s"
    )
    assert received[("AgentwatchAccountQuotaCritical", "alpha")]["account"] == ACCOUNT
    assert ("AgentwatchAccountQuotaCritical", "beta") not in received

    # Two controllers, one central Alertmanager: each takes its own host's alerts (the
    # default match once a host writes to a centre: {host: <its name>}).
    alpha = controller_once(hosts["alpha"], tmp_path / "alpha" / "controller-spool")
    beta = controller_once(hosts["beta"], tmp_path / "beta" / "controller-spool")
    assert alpha["paused"] is True and alpha["max_agents"] == 3, alpha
    assert alpha["reasons"] == ["AgentwatchAccountQuotaCritical", "AgentwatchAccountQuotaShutdown"]
    assert beta["paused"] is True and beta["max_agents"] == 4, beta
    assert beta["reasons"] == ["AgentwatchAccountQuotaShutdown"]


@pytest.mark.skipif(VICTORIA is None, reason="Debian's victoria-metrics (scripts/setup --test)")
@pytest.mark.skipif(PROMETHEUS is None, reason="Debian's prometheus")
def test_two_hosts_one_subscription_victoria_metrics_sums_the_account(
    tmp_path: Path, processes: list[subprocess.Popen]
) -> None:
    assert VICTORIA is not None
    folder = tmp_path / "victoria"
    folder.mkdir()
    listen = f"127.0.0.1:{free_port()}"
    start([VICTORIA, f"-storageDataPath={folder / 'data'}", f"-httpListenAddr={listen}",
           "-retentionPeriod=1d", "-search.latencyOffset=0s", "-search.disableCache",
           "-loggerLevel=WARN"], folder / "victoria.log", processes)  # fmt: skip
    central = f"http://{listen}"
    wait_for(lambda: _vm_ready(central), 60, lambda: (folder / "victoria.log").read_text())
    hosts = {
        name: start_host(tmp_path, name, f"{central}/api/v1/write", processes)
        for name in ("alpha", "beta")
    }
    spend_and_check_alone(hosts, central)
    _, total = beta_passes_the_limit(hosts, central)
    assert total < 1.2, total
    shares = value_by(central, central_expr("five_hour", "share"), "host")
    assert shares["alpha"] > 0.5 > shares["beta"], shares
    assert abs(sum(shares.values()) - 1) < 1e-9
    check_each_host_alone_under(hosts)


def _vm_ready(url: str) -> bool:
    try:
        return requests.get(f"{url}/health", timeout=1).status_code == 200
    except requests.ConnectionError:
        return False
