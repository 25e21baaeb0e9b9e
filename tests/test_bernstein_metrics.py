"""Bernstein's own /metrics, scraped by the stack's real Prometheus from the real Bernstein 3.23.0.

The Prometheus config is the one `up` writes (`stack.write_configs`) and `install` plans, for
`controller.orchestrator.kind: bernstein`; Bernstein answers every route, /metrics too, only
with the bearer token, so a scrape with the right token sees its queue and one with a wrong
token is `up == 0` (what AgentwatchBernsteinMetricsDown alerts on).
"""

from __future__ import annotations

import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from agentwatch.cli import install, stack
from agentwatch.sentinels import registry
from tests.bernstein_support import TOKEN, Server, project
from tests.conftest import free_port
from tests.test_multihost import PROMETHEUS, query, start, wait_for

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

TOKEN_ENV = "AGENTWATCH_TEST_BERNSTEIN_TOKEN"


@pytest.fixture(scope="module")
def bernstein(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("bernstein")
    server = Server(project(root), root / "serve.log")
    try:
        server.start()
        server.create_task("queued")  # no `bernstein run`: it stays open, queue depth 1
        yield server
    finally:
        server.stop()


def config(server: Server, tmp_path: Path, **orchestrator: Any) -> Any:
    return registry.config_from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "stack": {
                "prometheus_listen": f"127.0.0.1:{free_port()}",
                "alertmanager_listen": f"127.0.0.1:{free_port()}",
                "scrape_interval": "1s",
                "evaluation_interval": "1s",
            },
            "controller": {
                "orchestrator": {"kind": "bernstein", "url": server.url, **orchestrator}
            },
        }
    )


def run_prometheus(cfg: Any, files: stack.StackFiles, processes: list) -> str:
    assert PROMETHEUS is not None
    argv = [*stack.prometheus_argv(PROMETHEUS, cfg, files), "--log.level=warn"]
    start(argv, files.prometheus_config.parent / "prometheus.log", processes)
    url = f"http://{cfg['stack']['prometheus_listen']}"

    def ready() -> bool:
        try:
            return requests.get(f"{url}/-/ready", timeout=1).status_code == 200
        except requests.ConnectionError:
            return False

    wait_for(ready, 60, lambda: "prometheus not ready")
    return url


def bernstein_up(url: str) -> float | None:
    found = query(url, 'up{job="bernstein"}')
    return float(found[0]["value"][1]) if found else None


def test_the_stack_scrapes_bernstein_with_a_token_from_the_environment(
    bernstein: Server, tmp_path: Path, processes: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    cfg = config(bernstein, tmp_path, token_env=TOKEN_ENV)
    files = stack.write_configs(cfg, tmp_path / "state", f"127.0.0.1:{free_port()}")
    token_file = files.prometheus_config.parent / stack.BERNSTEIN_TOKEN
    assert token_file.read_text() == TOKEN + "\n"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    url = run_prometheus(cfg, files, processes)
    wait_for(lambda: bernstein_up(url) == 1, 90, lambda: f"up: {bernstein_up(url)}")
    depth = wait_for(
        lambda: query(url, 'bernstein_task_queue_depth{job="bernstein"}'), 30, lambda: "no depth"
    )
    assert float(depth[0]["value"][1]) == 1.0
    assert depth[0]["metric"]["instance"] == bernstein.url.removeprefix("http://")


def test_a_wrong_token_file_is_a_failing_scrape(
    bernstein: Server, tmp_path: Path, processes: list
) -> None:
    wrong = tmp_path / "token"
    wrong.write_text("not-the-token\n")
    wrong.chmod(0o600)
    cfg = config(bernstein, tmp_path, token_file=str(wrong))
    files = stack.write_configs(cfg, tmp_path / "state", f"127.0.0.1:{free_port()}")
    written = yaml.safe_load(files.prometheus_config.read_text())
    job = next(j for j in written["scrape_configs"] if j["job_name"] == "bernstein")
    assert job["authorization"] == {"credentials_file": str(wrong)}  # read in place, no copy
    assert not (files.prometheus_config.parent / stack.BERNSTEIN_TOKEN).exists()
    url = run_prometheus(cfg, files, processes)
    wait_for(lambda: bernstein_up(url) == 0, 90, lambda: f"up: {bernstein_up(url)}")
    assert bernstein.get("/metrics", token="not-the-token").status_code == 401


def test_no_bernstein_job_without_bernstein(tmp_path: Path) -> None:
    cfg = registry.config_from_mapping(
        {"controller": {"orchestrator": {"kind": "webhook", "url": "http://127.0.0.1:1/x"}}}
    )
    assert stack.bernstein_scrape(cfg, tmp_path, {}) is None
    document = stack.prometheus_config(cfg, "127.0.0.1:1", [])
    jobs = [job["job_name"] for job in document["scrape_configs"]]
    assert "bernstein" not in jobs


def test_a_url_with_a_path_and_https_keeps_both(tmp_path: Path) -> None:
    cfg = registry.config_from_mapping(
        {
            "controller": {
                "orchestrator": {"kind": "bernstein", "url": "https://orch.example:8443/api/"}
            }
        }
    )
    scrape = stack.bernstein_scrape(cfg, tmp_path, {})
    assert scrape is not None
    assert scrape.job["scheme"] == "https"
    assert scrape.job["metrics_path"] == "/api/metrics"
    assert scrape.job["static_configs"] == [{"targets": ["orch.example:8443"]}]
    assert "authorization" not in scrape.job  # no token configured: Bernstein's 401 will say so


def test_an_unset_token_variable_writes_no_token(tmp_path: Path) -> None:
    cfg = registry.config_from_mapping(
        {
            "controller": {
                "orchestrator": {
                    "kind": "bernstein",
                    "url": "http://127.0.0.1:8052",
                    "token_env": TOKEN_ENV,
                }
            }
        }
    )
    scrape = stack.bernstein_scrape(cfg, tmp_path, {})
    assert scrape is not None and scrape.token is None and "authorization" not in scrape.job


def test_install_plans_the_scrape_and_a_private_token_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is required (Debian package prometheus)"
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    cfg = registry.config_from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "controller": {
                "orchestrator": {
                    "kind": "bernstein",
                    "url": "http://127.0.0.1:8052",
                    "token_env": TOKEN_ENV,
                }
            },
        }
    )
    target = install.Target(
        unit_dir=tmp_path / "units",
        prefix=tmp_path / "prefix",
        config_file=tmp_path / "config.yaml",
        command=("agentwatch",),
    )
    plan = install.Plan()
    install.plan_monitoring(cfg, target, plan)
    files = install.stack_files(target, cfg.state_dir)
    token_path = files.prometheus_config.parent / stack.BERNSTEIN_TOKEN
    planned = {item.path: item for item in plan.files}
    assert planned[token_path].mode == 0o600
    assert planned[token_path].content == (TOKEN + "\n").encode()
    written = yaml.safe_load(planned[files.prometheus_config].content)
    job = next(j for j in written["scrape_configs"] if j["job_name"] == "bernstein")
    assert job["authorization"] == {"credentials_file": str(token_path)}
    path = tmp_path / "prometheus.yml"
    path.write_bytes(planned[files.prometheus_config].content)
    checked = subprocess.run(
        [promtool, "check", "config", "--syntax-only", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
