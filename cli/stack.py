"""The monitoring stack of `agentwatch up`: Prometheus and Alertmanager with this project's
rules and routing, configured under the state folder and pointed at the local exporter.

Only configuration is generated here; the binaries are Debian's (`prometheus`,
`prometheus-alertmanager`), run as supervised children like every other component.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentwatch.cli import assets, remote_write
from agentwatch.core import config
from agentwatch.core.files import write_atomic

LOCAL_ALERTMANAGER = "alertmanager-local.yml"
JOB = "agentwatch"
BERNSTEIN_JOB = "bernstein"
BERNSTEIN_TOKEN = "bernstein.token"  # beside the Prometheus config, 0600, for a token_env


@dataclass(frozen=True)
class StackFiles:
    prometheus_config: Path
    prometheus_data: Path
    alertmanager_config: Path
    alertmanager_data: Path
    alerts_log: Path


def rule_files(rules_dir: Path | None = None) -> list[Path]:
    """The rule groups Prometheus loads (everything in rules/ but Alertmanager's files)."""
    rules_dir = rules_dir or assets.rules_dir()
    return sorted(
        path
        for path in rules_dir.glob("*.yml")
        if not path.name.startswith("alertmanager") and path.is_file()
    )


def binaries() -> dict[str, str | None]:
    return {
        "prometheus": shutil.which("prometheus"),
        "alertmanager": shutil.which("prometheus-alertmanager") or shutil.which("alertmanager"),
    }


def missing() -> list[str]:
    """What the stack lacks on this machine (empty: it can run)."""
    lacking = [name for name, path in binaries().items() if path is None]
    rules_dir = assets.rules_dir()
    if not rule_files(rules_dir) or not (rules_dir / LOCAL_ALERTMANAGER).is_file():
        lacking.append(f"the rules in {rules_dir}")
    return lacking


def prometheus_ui(listen: str, wait: float = 15.0) -> str:
    """The base URL of Prometheus' pages, ending in `/`. Upstream builds serve them at the
    root (/alerts, /rules, /targets); Debian's package only at /classic/..., and its root
    redirects there. Waits up to `wait` seconds for Prometheus to answer."""
    from agentwatch.cli import loopback

    root = f"http://{listen}/"
    deadline = time.monotonic() + wait
    while True:
        reply = loopback.get(root)
        if reply is None:
            if time.monotonic() >= deadline:
                return root
            time.sleep(0.2)
            continue
        if "/classic/" in reply.location:
            return root + "classic/"
        return root


def _seconds(value: float) -> str:
    return f"{max(int(value), 1)}s"


@dataclass(frozen=True)
class BernsteinScrape:
    """Prometheus' job for Bernstein's own `/metrics` (every route of it wants the bearer
    token), and the token to write to `token_path` when it comes from the environment."""

    job: dict[str, Any]
    token_path: Path | None
    token: str | None


def bernstein_scrape(
    cfg: config.Config, config_dir: Path, env: Mapping[str, str]
) -> BernsteinScrape | None:
    """The scrape of Bernstein's task server when it is the orchestrator, else None.

    A `token_file` is read by Prometheus in place (its `credentials_file`), so a rotated token
    is picked up; a `token_env` is copied into `<config_dir>/bernstein.token` (0600), since
    Prometheus reads no environment. An unset variable leaves the job without a token: the
    scrape then fails with Bernstein's 401 and AgentwatchBernsteinMetricsDown says so."""
    orchestrator = cfg["controller"]["orchestrator"]
    url = orchestrator["url"]
    if orchestrator["kind"] != "bernstein" or not url:
        return None
    parts = urlsplit(str(url))
    job: dict[str, Any] = {
        "job_name": BERNSTEIN_JOB,
        "scheme": parts.scheme,
        "metrics_path": parts.path.rstrip("/") + "/metrics",
        "static_configs": [{"targets": [parts.netloc]}],
    }
    token_path: Path | None = None
    token: str | None = None
    if orchestrator["token_file"] is not None:
        job["authorization"] = {"credentials_file": str(orchestrator["token_file"])}
    elif orchestrator["token_env"]:
        token = env.get(orchestrator["token_env"], "").strip() or None
        if token is not None:
            token_path = config_dir / BERNSTEIN_TOKEN
            job["authorization"] = {"credentials_file": str(token_path)}
    return BernsteinScrape(job, token_path, token)


def prometheus_config(
    cfg: config.Config,
    exporter_listen: str,
    rules: list[Path],
    bernstein: BernsteinScrape | None = None,
) -> dict:
    """The host Prometheus: local scrapes and rules, Bernstein's own metrics when it is the
    orchestrator, plus remote_write when configured (RemoteWriteError when those settings
    cannot be used)."""
    stack = cfg["stack"]
    extra = [bernstein.job] if bernstein is not None else []
    document = {
        "global": {
            "scrape_interval": _seconds(stack["scrape_interval"]),
            "evaluation_interval": _seconds(stack["evaluation_interval"]),
        },
        "rule_files": [str(path) for path in rules],
        "alerting": {
            "alertmanagers": [{"static_configs": [{"targets": [stack["alertmanager_listen"]]}]}]
        },
        # Prometheus and Alertmanager scrape themselves too: AgentwatchRuleEvaluationFailing
        # and AgentwatchAlertmanagerNotificationsFailing read their own metrics.
        "scrape_configs": [
            {"job_name": JOB, "static_configs": [{"targets": [exporter_listen]}]},
            {
                "job_name": "prometheus",
                "static_configs": [{"targets": [stack["prometheus_listen"]]}],
            },
            {
                "job_name": "alertmanager",
                "static_configs": [{"targets": [stack["alertmanager_listen"]]}],
            },
            *extra,
        ],
    }
    return remote_write.apply(cfg, document)


def alertmanager_config(cfg: config.Config, rules_dir: Path | None = None) -> dict[str, Any]:
    """The shipped local routing, with this stack's webhook address and group wait."""
    import yaml

    rules_dir = rules_dir or assets.rules_dir()
    raw = yaml.safe_load((rules_dir / LOCAL_ALERTMANAGER).read_text(encoding="utf-8"))
    stack = cfg["stack"]
    url = f"http://{stack['webhook_listen']}/alerts"
    for receiver in raw.get("receivers", []):
        for hook in receiver.get("webhook_configs", []):
            hook["url"] = url
    route = raw.setdefault("route", {})
    route["group_wait"] = _seconds(stack["group_wait"])
    route["group_interval"] = _seconds(stack["group_interval"])
    raw["templates"] = [
        pattern if Path(pattern).is_absolute() else str(rules_dir / pattern)
        for pattern in raw.get("templates", [])
    ]
    return raw


def write_configs(cfg: config.Config, state: Path, exporter_listen: str) -> StackFiles:
    """Write both configs into `<state>/stack/` and return where everything lives."""
    import yaml

    base = state / "stack"
    files = StackFiles(
        prometheus_config=base / "prometheus.yml",
        prometheus_data=base / "prometheus-data",
        alertmanager_config=base / "alertmanager.yml",
        alertmanager_data=base / "alertmanager-data",
        alerts_log=base / "alerts.jsonl",
    )
    for folder in (files.prometheus_data, files.alertmanager_data):
        folder.mkdir(parents=True, exist_ok=True)
    bernstein = bernstein_scrape(cfg, base, os.environ)
    if bernstein is not None and bernstein.token_path is not None and bernstein.token:
        write_atomic(bernstein.token_path, bernstein.token + "\n", 0o600)
    prometheus = prometheus_config(cfg, exporter_listen, rule_files(), bernstein)
    write_atomic(files.prometheus_config, yaml.safe_dump(prometheus, sort_keys=False))
    alertmanager = alertmanager_config(cfg)
    # chat secrets may live in an adapted copy: readable by the user only
    write_atomic(files.alertmanager_config, yaml.safe_dump(alertmanager, sort_keys=False), 0o600)
    return files


def prometheus_argv(binary: str, cfg: config.Config, files: StackFiles) -> list[str]:
    return [
        binary,
        f"--config.file={files.prometheus_config}",
        f"--storage.tsdb.path={files.prometheus_data}",
        f"--storage.tsdb.retention.time={cfg['stack']['retention']}",
        f"--web.listen-address={cfg['stack']['prometheus_listen']}",
    ]


def alertmanager_argv(binary: str, cfg: config.Config, files: StackFiles) -> list[str]:
    return [
        binary,
        f"--config.file={files.alertmanager_config}",
        f"--storage.path={files.alertmanager_data}",
        f"--web.listen-address={cfg['stack']['alertmanager_listen']}",
        "--cluster.listen-address=",  # a single local instance: no gossip port at all
    ]
