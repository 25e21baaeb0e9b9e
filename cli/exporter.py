"""`agentwatch exporter`: serve the spool merged on /metrics, the front page and /healthz."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from agentwatch.cli import common
from agentwatch.core import config
from agentwatch.sentinels import registry

if TYPE_CHECKING:  # every command builds the parser: the exporter loads only when it runs
    import argparse

    from agentwatch.exporter.collector import SpoolCollector
    from agentwatch.exporter.remote import Endpoints

log = logging.getLogger("agentwatch")


def add(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "exporter",
        help="serve /metrics (spool merged + sentinel health), the front page / and /healthz",
        description="Serve the spool files merged on /metrics, an overview page on / and "
        "/healthz. Binds 127.0.0.1 unless --listen says otherwise.",
    )
    common.add_dirs(parser, state=False)
    parser.add_argument("--listen", help="HOST:PORT to bind (default: exporter.listen)")


def spool_collector(cfg: config.Config, spool_dir: Path) -> SpoolCollector:
    """The exporter's view of the spool, as every command that reads it needs it."""
    from agentwatch.exporter.collector import SpoolCollector

    return SpoolCollector(
        spool_dir,
        expected=registry.enabled(cfg),
        stale_after_intervals=cfg["exporter"]["stale_after_intervals"],
        thresholds=cfg["thresholds"],
        filesystems={"state": cfg.state_dir, "spool": spool_dir},
    )


def endpoints(cfg: config.Config) -> Endpoints:
    """Where the front page reads alerts, the decision and spend history, and links to:
    the stack's Prometheus, the first Alertmanager the controller reads, the controller."""
    from agentwatch.core.webconfig import WebConfigError, load_for
    from agentwatch.exporter.remote import Endpoints

    try:
        web = load_for(cfg["controller"]["web_config_file"], "controller")
    except WebConfigError:
        web = None  # the controller refuses to start with it; the page shows it unreachable
    scheme = "https" if web is not None and web.tls is not None else "http"
    alertmanagers = cfg["controller"]["alertmanagers"]
    return Endpoints(
        prometheus=f"http://{cfg['stack']['prometheus_listen']}",
        alertmanager=alertmanagers[0].rstrip("/") if alertmanagers else None,
        controller=f"{scheme}://{cfg['controller']['listen']}",
    )


def run(args: argparse.Namespace, cfg: config.Config) -> int:
    from agentwatch.core import notify
    from agentwatch.core.http import ListenError
    from agentwatch.core.webconfig import WebConfigError, load_for
    from agentwatch.exporter.server import serve

    spool_dir, _ = common.dirs(args, cfg)
    listen = args.listen or cfg["exporter"]["listen"]
    try:
        web = load_for(cfg["exporter"]["web_config_file"], "exporter")
    except WebConfigError as err:
        log.error("exporter.web_config_file: %s", err)
        return 2
    try:
        server = serve(spool_collector(cfg, spool_dir), listen, web, endpoints(cfg))
    except ListenError as err:  # the one line says HOST:PORT and why
        log.error("exporter: %s", err)
        return 2
    except (OSError, ValueError) as err:
        log.error("cannot listen on %s: %s", listen, err)
        return 2
    log.info("serving %s on %s://%s/metrics", spool_dir, server.scheme, listen)
    notifier = notify.Notifier()
    notify.stop_on_sigterm(notifier)
    try:
        # Pings systemd's watchdog (if any) from the serving loop, after listing the spool.
        notify.serve_forever(server, notifier, lambda: notify.list_dir(spool_dir))
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
