"""The monitoring stack of `agentwatch up`: Prometheus and Alertmanager with this project's
rules and routing, configured under the state folder and pointed at the local exporter.

Only configuration is generated here; the binaries are Debian's (`prometheus`,
`prometheus-alertmanager`), run as supervised children like every other component.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from agentwatch.exporter import config

RULES_DIR = Path(__file__).resolve().parents[1] / "rules"
LOCAL_ALERTMANAGER = "alertmanager-local.yml"
JOB = "agentwatch"


@dataclass(frozen=True)
class StackFiles:
    prometheus_config: Path
    prometheus_data: Path
    alertmanager_config: Path
    alertmanager_data: Path
    alerts_log: Path


def rule_files(rules_dir: Path = RULES_DIR) -> list[Path]:
    """The rule groups Prometheus loads (everything in rules/ but Alertmanager's files)."""
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
    if not rule_files() or not (RULES_DIR / LOCAL_ALERTMANAGER).is_file():
        lacking.append(f"the rules in {RULES_DIR}")
    return lacking


def _seconds(value: float) -> str:
    return f"{max(int(value), 1)}s"


def prometheus_config(cfg: config.Config, exporter_listen: str, rules: list[Path]) -> dict:
    stack = cfg["stack"]
    return {
        "global": {
            "scrape_interval": _seconds(stack["scrape_interval"]),
            "evaluation_interval": _seconds(stack["evaluation_interval"]),
        },
        "rule_files": [str(path) for path in rules],
        "alerting": {
            "alertmanagers": [{"static_configs": [{"targets": [stack["alertmanager_listen"]]}]}]
        },
        "scrape_configs": [
            {"job_name": JOB, "static_configs": [{"targets": [exporter_listen]}]},
        ],
    }


def alertmanager_config(cfg: config.Config, rules_dir: Path = RULES_DIR) -> dict[str, Any]:
    """The shipped local routing, with this stack's webhook address and group wait."""
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
    prometheus = prometheus_config(cfg, exporter_listen, rule_files())
    files.prometheus_config.write_text(yaml.safe_dump(prometheus, sort_keys=False))
    alertmanager = alertmanager_config(cfg)
    files.alertmanager_config.write_text(yaml.safe_dump(alertmanager, sort_keys=False))
    files.alertmanager_config.chmod(0o600)  # chat secrets may live in an adapted copy
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
