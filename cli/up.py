"""`agentwatch up`: the whole set in the foreground, for a quick start and the demo.

Each component runs as its own child process (as under systemd), supervised here: a child
that dies is reported and restarted; Ctrl-C stops them all cleanly. The stack's webhook sink
alone is served by `up`'s own loop (cli/up_sink.py), not a process of its own.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentwatch.cli import (
    common,
    demo_story,
    forked,
    locate,
    loopback,
    remote_write,
    stack,
    up_sink,
)
from agentwatch.cli.exporter import spool_collector
from agentwatch.controller import report
from agentwatch.core import claude, config, paths, run_budget, single
from agentwatch.core.files import write_atomic
from agentwatch.core.process import die_with_parent
from agentwatch.sentinels import registry

if TYPE_CHECKING:  # every command builds the parser: these load when `up` runs
    from agentwatch.exporter.collector import SpoolCollector

CLAUDE_ENV = "AGENTWATCH_CLAUDE"
BERNSTEIN_ENV = "AGENTWATCH_BERNSTEIN"  # the real Bernstein 3.23.0 (scripts/setup's venv)
DEMO_TOKEN_ENV = "AGENTWATCH_DEMO_BERNSTEIN_TOKEN"  # the demo Bernstein's bearer token
DEMO_BERNSTEIN_AGENTS = 3  # Bernstein's max_agents in the demo: light on a 2-core machine
# The demo's pace: every loop of the seeds shows within a few minutes, not the hours of a
# real fleet. Each value applies only where the user's config leaves it unset.
DEMO_DEFAULTS: dict[str, Any] = {
    "thresholds": {"stall_seconds": 60},  # a stall is news after a minute, not five
    # group_wait below the evaluation interval: an alert's first message leaves Alertmanager
    # before Prometheus can have seen it resolve (the controller nudges a stalled pane within
    # seconds, and the stall would otherwise resolve unannounced within the default 10 s)
    "stack": {"scrape_interval": 5, "evaluation_interval": 5, "group_wait": 1},
    "controller": {
        "interval": 5,
        # the burner's two minutes reach 95 % of it; the steady sessions creep on to 100 %
        "budget_usd": 17.0,
        "burn": {"escalate_after": 30, "verify_after": 30},
    },
    "demo": {"burn_seconds": 120},  # two minutes of burn, then it calms
    # the 5-hour block the demo's sessions fill: 70 % (opus deferred) about 2 minutes in
    "sentinels": {"token-ledger": {"block_token_limit": 9_000_000}},
}
log = logging.getLogger("agentwatch.up")
STATUS_EVERY = 10.0
SIGNALS = ("AgentwatchWatchdog", "AgentwatchErrorRatioLow")  # firing is their normal state
STORY_EVERY = 2.0  # the demo's loop steps are looked for this often
RESTART_DELAY = 2.0
SINK = "webhook-sink"  # served in `up`'s own loop, named among the children it stands for
LOOP_EVERY = 1.0  # how often children are checked (and how long a stop request can wait)
LOCK_FILE = locate.UP_LOCK  # in the state folder: one `up` per state folder


def add(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "up",
        help="run the whole set in the foreground: exporter, sentinels, Prometheus, "
        "Alertmanager, controller (and a demo workload when there are no transcripts)",
        description="Start the exporter, every enabled sentinel, Prometheus (loading rules/), "
        "Alertmanager (routing to a local webhook receiver that prints each message) and the "
        "controller as supervised child processes, print where to look and a live status; "
        "Ctrl-C stops them all. State lives under one folder (--state-dir). With no "
        "transcripts on this machine (or --demo) a demo workload runs Claude Code sessions in "
        "tmux panes (one burns tokens, one stalls on an API error): the real Claude Code when "
        f"it is installed (${CLAUDE_ENV}; offline, against a scripted API), simulated ones "
        "otherwise or with --no-claude; with Codex, Gemini and OpenCode sessions and a demo "
        "orchestrator the controller steers.",
    )
    common.add_dirs(parser)
    parser.add_argument("--listen", help="HOST:PORT of the exporter (default: exporter.listen)")
    parser.add_argument(
        "--demo",
        action="store_true",
        help="run the demo workload even if real transcripts exist (the demo uses its own folder)",
    )
    parser.add_argument("--no-demo", action="store_true", help="never start the demo workload")
    parser.add_argument(
        "--no-claude",
        action="store_true",
        help="simulated demo sessions even when the real Claude Code is installed "
        f"(${CLAUDE_ENV}, which scripts/up sets after installing the pinned version)",
    )
    parser.add_argument(
        "--no-stack",
        action="store_true",
        help="no Prometheus, Alertmanager, webhook sink or controller (exporter and sentinels)",
    )
    parser.add_argument(
        "--for",
        dest="duration",
        type=float,
        metavar="SECONDS",
        help="stop by itself after this many seconds",
    )


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str]
    process: subprocess.Popen | forked.Forked | None = None
    restarts: int = 0
    next_start: float = 0.0
    log_path: Path | None = field(default=None)
    to_terminal: bool = False  # its stdout is what the person watching should read

    def start(self) -> None:
        assert self.log_path is not None
        entry = forked.entry_of(self.argv)
        if entry is not None and forked.can_fork():  # shares the modules `up` imported
            module, args = entry
            prepared = forked.prepare(module, args, self.env)
            self.process = forked.start(
                self.name, module, args, self.env, self.log_path, self.to_terminal, prepared
            )
            return
        handle = self.log_path.open("ab")
        self.process = subprocess.Popen(  # no shell: argv is a list
            self.argv, env=self.env, stdout=None if self.to_terminal else handle,
            stderr=handle if self.to_terminal else subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # in the child before exec: no component outlives `up`, even a killed one
            preexec_fn=functools.partial(die_with_parent, signal.SIGTERM, os.getpid()),
        )  # fmt: skip
        handle.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()


def _have_transcripts(cfg: config.Config) -> bool:
    return claude.has_transcripts(claude.projects_roots(configured=cfg.claude_config_dirs))


def _raw_config(path: Path | None) -> dict[str, Any]:
    """The user's config file as written (the derived config adds to it, never drops keys)."""
    path = path or paths.default_config_file()
    if not path.exists():
        return {}
    raw = config.read_raw(path)
    return raw if isinstance(raw, dict) else {}


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@dataclass(frozen=True)
class Layout:
    """Where the run keeps everything: one state folder."""

    state: Path
    spool: Path
    demo: bool
    stack: bool
    claude: str | None = None  # the real Claude Code the demo runs, when installed
    bernstein: str | None = None  # the real Bernstein the demo's controller steers, if any

    @property
    def claude_dir(self) -> Path:
        return self.state / "demo" / "claude"

    @property
    def other_agents_dir(self) -> Path:
        """Codex CLI, Gemini CLI and OpenCode sessions (demo.other_agents writes them)."""
        return self.state / "demo" / "agents"

    @property
    def tmux_socket(self) -> Path:
        return self.state / "demo" / "tmux.sock"

    @property
    def orchestrator_state(self) -> Path:
        return self.state / "demo" / "orchestrator.json"

    @property
    def config_file(self) -> Path:
        return self.state / locate.UP_CONFIG


def derived_config(
    args: argparse.Namespace, cfg: config.Config, layout: Layout
) -> tuple[Path, config.Config]:
    """The user's config plus what this run wires together (the demo's folders and tmux
    server, the stack's Alertmanager, the demo orchestrator, the demo's pace), validated and
    written once so every child reads the same file; returned loaded too, for the parent.
    The file is JSON (validated values are plain data), so no child loads a YAML parser."""
    import json

    raw = _raw_config(args.config)
    extra: dict[str, Any] = {}
    if layout.stack and "alertmanagers" not in (raw.get("controller") or {}):
        # the stack's own Alertmanager, wherever stack.alertmanager_listen put it
        extra["controller"] = {"alertmanagers": [f"http://{cfg['stack']['alertmanager_listen']}"]}
    if layout.demo:
        from agentwatch.demo import workload as demo_workload  # the demo's: not resident otherwise

        socket = str(layout.tmux_socket)
        agents = raw.get("agents") or {}
        extra = _merge(extra, {
            "claude": {"config_dirs": [str(layout.claude_dir)]},
            "agents": {"tmux_sockets": [*agents.get("tmux_sockets", []), socket]},
            "controller": {
                "orchestrator": {
                    "kind": "bernstein",
                    "url": f"http://{cfg['demo']['orchestrator_listen']}",
                    # the real one wants its token on every route (Prometheus' scrape too)
                    **({"token_env": DEMO_TOKEN_ENV} if layout.bernstein else {}),
                },
                "nudge": {
                    "enabled": True,
                    "allow_sessions": [demo_workload.SESSION],
                    "tmux_socket": socket,
                    # real sessions write under the slug of their pane's folder, as ever;
                    # simulated ones under an invented folder, so the whole tree counts
                    **({} if layout.claude else
                       {"transcript_dir": str(layout.claude_dir / "projects")}),
                },
            },
        })  # fmt: skip
        raw = _merge(DEMO_DEFAULTS, raw)  # what the user configured wins over the demo's pace
    merged = _merge(raw, extra)
    derived = registry.config_from_mapping(merged)  # the checks every child makes, once here
    write_atomic(layout.config_file, json.dumps(merged, indent=2) + "\n", 0o600)
    return layout.config_file, derived


def _base_argv(args: argparse.Namespace, config_file: Path) -> list[str]:
    argv = [sys.executable, "-m", "agentwatch.cli", "--config", str(config_file)]
    if args.log_level:
        argv += ["--log-level", args.log_level]
    return argv


def real_claude() -> str | None:
    """The real Claude Code for the demo (${CLAUDE_ENV}), or None after saying why not."""
    found = os.environ.get(CLAUDE_ENV, "")
    if found and os.path.isfile(found) and os.access(found, os.X_OK):
        return found
    print("demo: the real Claude Code is not installed (scripts/up installs it with npm), "
          "so the demo runs simulated sessions.")  # fmt: skip
    return None


def real_bernstein(claude: str | None) -> str | None:
    """The real Bernstein for the demo's orchestrator (${BERNSTEIN_ENV}); its agents are real
    Claude Code sessions, so it needs `claude` too. None after saying once why not."""
    if claude is None:
        return None
    found = os.environ.get(BERNSTEIN_ENV, "")
    if found and os.path.isfile(found) and os.access(found, os.X_OK):
        return found
    print("demo: Bernstein 3.23.0 is not installed (it needs a Python 3.12, e.g. `pyenv install "
          "3.12`; scripts/up then installs it), so the controller steers the demo's stand-in "
          "orchestrator.")  # fmt: skip
    return None


def _demo_orchestrator(cfg: config.Config, layout: Layout, env: dict[str, str]) -> Child:
    """The orchestrator the demo's controller steers: the real Bernstein, whose agents are
    Claude Code sessions against a scripted API, or else the stand-in."""
    demo = cfg["demo"]
    if layout.bernstein and layout.claude:
        port = demo["orchestrator_listen"].rsplit(":", 1)[1]
        agents = min(DEMO_BERNSTEIN_AGENTS, cfg["controller"]["max_agents"])
        return Child("demo-bernstein", [sys.executable, "-m", "agentwatch.demo.bernstein",
                                        str(layout.state / "demo" / "bernstein"),
                                        "--bernstein", layout.bernstein, "--claude", layout.claude,
                                        "--port", port, "--token-env", DEMO_TOKEN_ENV,
                                        "--max-agents", str(agents), *_otel_argv(cfg)],
                     env)  # fmt: skip
    return Child("demo-orchestrator", [sys.executable, "-m", "agentwatch.demo.orchestrator",
                                       "--listen", demo["orchestrator_listen"],
                                       "--state-file", str(layout.orchestrator_state),
                                       "--max-agents", str(cfg["controller"]["max_agents"])],
                 env)  # fmt: skip


def plan(args: argparse.Namespace, cfg: config.Config, layout: Layout) -> list[Child]:
    """The children to run: exporter, sentinels, the stack, the controller and the demo."""
    state, spool = layout.state, layout.spool
    config_file, cfg = derived_config(args, cfg, layout)
    base = _base_argv(args, config_file)
    env = dict(os.environ)
    if layout.demo:  # the demo's transcripts come from the derived config, not the caller's
        env.pop("CLAUDE_CONFIG_DIR", None)
        (layout.claude_dir / "projects").mkdir(parents=True, exist_ok=True)
        # ...and the other agents' sessions from the demo's folder, not the caller's home
        from agentwatch.demo import other_agents  # demo only: not on every command's path

        env.update(other_agents.env_for(layout.other_agents_dir))
    listen = args.listen or cfg["exporter"]["listen"]
    children = [
        Child("exporter", [*base, "exporter", "--spool-dir", str(spool), "--listen", listen], env)
    ]
    sentinel_state = state / "demo" if layout.demo else state
    for name in registry.enabled(cfg):
        argv = [*base, "sentinel", name, "--spool-dir", str(spool),
                "--state-dir", str(sentinel_state)]  # fmt: skip
        children.append(Child(name, argv, env))
    if layout.stack:
        found = stack.binaries()
        files = stack.write_configs(cfg, state, listen)
        children += [  # the webhook sink is served by `up` itself (cli/up_sink.py)
            Child("alertmanager", stack.alertmanager_argv(str(found["alertmanager"]), cfg, files),
                  env),
            Child("prometheus", stack.prometheus_argv(str(found["prometheus"]), cfg, files), env),
            Child("controller", [*base, "controller", "--spool-dir", str(spool),
                                 "--state-dir", str(sentinel_state)], env),
        ]  # fmt: skip
    if layout.demo:
        demo = cfg["demo"]
        # the tmux sessions (the stall loop's) follow the stand-in; beside Bernstein, whose
        # own agents the controller steers, they run their default number
        follow = [] if layout.bernstein else [
            "--orchestrator-state", str(layout.orchestrator_state),
            "--orchestrator-url", f"http://{demo['orchestrator_listen']}"]  # fmt: skip
        children += [
            _demo_orchestrator(cfg, layout, env),
            Child("demo", [sys.executable, "-m", "agentwatch.demo.workload",
                           str(layout.claude_dir), "--tmux-socket", str(layout.tmux_socket),
                           *follow,
                           "--seconds-per-turn", str(demo["seconds_per_turn"]),
                           "--burn-seconds", str(demo["burn_seconds"]),
                           "--stall-after", str(demo["stall_after_turns"]),
                           *(["--claude", layout.claude] if layout.claude else []),
                           *_otel_argv(cfg)], env),
            Child("demo-agents", [sys.executable, "-m", "agentwatch.demo.other_agents",
                                  str(layout.other_agents_dir),
                                  "--every", str(demo["other_agents_every"])], env),
        ]  # fmt: skip
    return children


def _otel_argv(cfg: config.Config) -> list[str]:
    """The demo's real sessions export their telemetry to the otel sentinel when it runs."""
    otel = cfg.sentinel("otel")
    return ["--otel-listen", otel["listen"]] if otel["enabled"] else []


def _status_line(collector: SpoolCollector) -> str:
    """Sentinels up out of those expected (the controller's file is health too, but it is
    said under its own name when it is not up), tokens and cost counted so far."""
    families, health = collector.snapshot()
    sentinels = [item for item in health if item.sentinel in collector.expected]
    up = sum(1 for item in sentinels if item.up)
    tokens = cost = 0.0
    for family in families:
        for sample in family.samples:
            if sample.name == "agentwatch_tokens_total":
                tokens += sample.value
            elif sample.name == "agentwatch_cost_usd_total":
                cost += sample.value
    down = [item.sentinel for item in health if not item.up]
    extra = f"; not up: {', '.join(down)}" if down else ""
    return (
        f"sentinels up {up}/{len(sentinels)}; tokens counted {tokens:,.0f}; cost ${cost:,.2f}"
        + extra
    )


def alert_state(alert: dict[str, Any]) -> str:
    """An alert's state as Alertmanager names it (active, suppressed, unprocessed), and for a
    suppressed one what suppresses it (silenced, inhibited)."""
    status = alert.get("status")
    if not isinstance(status, dict):
        status = {}
    state = str(status.get("state") or "unknown")
    if state != "suppressed":
        return state
    why = [word for word, key in (("silenced", "silencedBy"), ("inhibited", "inhibitedBy"))
           if status.get(key)]  # fmt: skip
    return f"suppressed: {' and '.join(why)}" if why else state


def alerts_line(alerts: Any) -> str:
    """Firing alerts by name: the active ones (and unprocessed ones, just received), counted;
    the suppressed ones (silenced or inhibited: no news, no action) said apart, not counted.
    The always-on signals (the dead man's switch, the permission to grow) are not listed."""
    if not isinstance(alerts, list):
        return "alerts: Alertmanager not answering yet"
    firing, suppressed = [], []
    for alert in alerts:
        if isinstance(alert, dict):
            labels = alert.get("labels")
            if not isinstance(labels, dict):
                labels = {}
            if labels.get("alertname") in SIGNALS:
                continue
            state = alert_state(alert)
            name = str(labels.get("alertname", "?"))
            if state.startswith("suppressed"):
                suppressed.append(f"{name} ({state.removeprefix('suppressed: ')})")
            else:
                firing.append(name if state == "active" else f"{name} ({state})")
    line = f"alerts firing {len(firing)}" + (f": {', '.join(sorted(firing))}" if firing else "")
    if suppressed:
        line += f"; suppressed {len(suppressed)}: {', '.join(sorted(suppressed))}"
    return line


def _fetch_alerts(alertmanager: str) -> Any:
    """Alertmanager's alert list, or None while it does not answer."""
    reply = loopback.get(f"http://{alertmanager}/api/v2/alerts")
    try:
        return reply.json() if reply is not None and reply.ok else None
    except ValueError:
        return None


def _burn_effect(prometheus_api: str) -> float | None:
    """The throttled burn's current rate over its pre-throttle rate (the verifier's number)."""
    reply = loopback.get(
        f"{prometheus_api}/api/v1/query",
        params={"query": "max(instance_session:agentwatch_burn_throttle_effect:ratio)"},
    )
    try:
        result = reply.json()["data"]["result"] if reply is not None and reply.ok else []
        return float(result[0]["value"][1]) if result else None
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def _samples(collector: SpoolCollector) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    families, _ = collector.snapshot()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in families
        for sample in family.samples
    }


def _decision_line(state_file: Path) -> str:
    decision = report.read_decision(state_file)
    if decision is None:
        return "controller: no decision yet"
    shown = [name for name in decision.get("reasons") or [] if name not in SIGNALS]
    reasons = ", ".join(shown) or "no actionable alerts"
    flags = [
        f"max_agents {decision.get('max_agents')}",
        f"breaker {decision.get('breaker')}",
    ]
    if decision.get("paused"):
        flags.append("paused")
    if decision.get("should_stop"):
        flags.append("stopping")
    if decision.get("deferred_tiers"):
        flags.append("deferred " + "/".join(decision["deferred_tiers"]))
    return f"controller: {', '.join(flags)} ({reasons})"


def run(args: argparse.Namespace, cfg: config.Config) -> int:
    spool = args.spool_dir or cfg.spool_dir
    state = args.state_dir or cfg.state_dir
    paths.ensure_dir(state)
    try:  # before anything is written or started: a second `up` touches nothing
        lock = single.hold(state / LOCK_FILE)
    except single.Held as held:
        who = f"PID {held.pid}" if held.pid is not None else "another process"
        print(f"agentwatch up: already running on {state} ({who} holds {held.path}); "
              "stop it first or use another --state-dir", file=sys.stderr)  # fmt: skip
        return 2
    except OSError as err:
        print(f"agentwatch up: cannot lock {state / LOCK_FILE}: {err}", file=sys.stderr)
        return 2
    try:
        return _run_locked(args, cfg, state, spool)
    finally:
        single.release(lock)


def _run_locked(args: argparse.Namespace, cfg: config.Config, state: Path, spool: Path) -> int:
    paths.ensure_dir(spool, mode=0o755)
    logs = paths.ensure_dir(state / "logs")
    lacking = [] if args.no_stack else stack.missing()
    with_stack = not args.no_stack and not lacking
    if lacking:
        print(f"Prometheus and Alertmanager not started: missing {', '.join(lacking)} "
              "(scripts/setup installs them).")  # fmt: skip
    demo = args.demo or (not args.no_demo and not _have_transcripts(cfg))
    claude_bin = real_claude() if demo and not args.no_claude else None
    layout = Layout(
        state=state,
        spool=spool,
        demo=demo,
        stack=with_stack,
        claude=claude_bin,
        bernstein=real_bernstein(claude_bin),
    )
    if layout.bernstein:  # one token for the demo's Bernstein, its controller and Prometheus
        os.environ.setdefault(DEMO_TOKEN_ENV, secrets.token_urlsafe(24))
    if layout.demo:  # the demo's spend counts from its run's start (the budget's `run` period)
        run, resumed = run_budget.resume_or_start(state / "demo", time.time())
        if resumed and run.started_at is not None:
            since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.started_at))
            print(f"demo: the run budget counts on from the run started {since} (a new run: "
                  f"agentwatch run-budget stop --state-dir {state / 'demo'})")  # fmt: skip
    try:
        children = plan(args, cfg, layout)
    except config.ConfigError as err:
        print(f"agentwatch up: the combined config is invalid: {err}", file=sys.stderr)
        return 2
    except remote_write.RemoteWriteError as err:
        print(f"agentwatch up: {err}", file=sys.stderr)
        return 2
    forked.preload(forked.modules_for([child.argv for child in children]))
    for child in children:
        child.log_path = logs / f"{child.name}.log"
        child.start()
    sink = SinkKeeper(cfg["stack"]["webhook_listen"], state / "stack" / "alerts.jsonl") \
        if layout.stack else None  # fmt: skip
    names = [child.name for child in children]
    if sink is not None:
        names.insert(names.index("alertmanager"), SINK)
    listen = args.listen or cfg["exporter"]["listen"]
    stack_cfg = cfg["stack"]
    sentinel_state = state / "demo" if layout.demo else state
    prometheus = stack.prometheus_ui(stack_cfg["prometheus_listen"]) if layout.stack else ""
    print(f"agentwatch is running ({', '.join(names)}).")
    print(f"  metrics:      http://{listen}/metrics   (overview: http://{listen}/)")
    if layout.stack:
        print(f"  prometheus:   {prometheus}alerts")
        print(f"  alertmanager: http://{stack_cfg['alertmanager_listen']}/api/v2/alerts")
        print(f"  throttle:     http://{cfg['controller']['listen']}/throttle")
        print(f"  alert log:    {state / 'stack' / 'alerts.jsonl'}   "
              "(messages also printed below)")  # fmt: skip
    if layout.demo:
        kind = "real Claude Code sessions" if layout.claude else "simulated sessions"
        print(f"  demo:         {kind} in tmux: tmux -S {layout.tmux_socket} attach")
        print(f"                transcripts under {layout.claude_dir}")
        if layout.bernstein:
            print(
                f"  orchestrator: Bernstein 3.23.0 on http://{cfg['demo']['orchestrator_listen']}"
                f" (its agents: Claude Code; repo {state / 'demo' / 'bernstein' / 'repo'})"
            )
    print(f"  state:        {state}   (logs in {logs}; config used: {layout.config_file})")
    print("Press Ctrl-C to stop.", flush=True)

    stopping = False

    def request_stop(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    collector = spool_collector(cfg, spool)
    story = demo_story.Story() if layout.demo and layout.stack else None
    prometheus_api = f"http://{stack_cfg['prometheus_listen']}"
    deadline = time.monotonic() + args.duration if args.duration else None
    next_status = time.monotonic() + 3.0
    next_story = time.monotonic() + STORY_EVERY
    try:
        while not stopping and (deadline is None or time.monotonic() < deadline):
            now = time.monotonic()
            for child in children:
                _supervise(child, now)
            if story is not None and now >= next_story:
                decision = report.read_decision(sentinel_state / "controller.json")
                alerts = _fetch_alerts(stack_cfg["alertmanager_listen"])
                effect = _burn_effect(prometheus_api)
                for line in story.observe(
                    alerts, decision, _samples(collector), time.time(), effect
                ):
                    print(time.strftime("%H:%M:%S"), "demo:", line, flush=True)
                next_story = now + STORY_EVERY
            if now >= next_status:
                parts = [_status_line(collector)]
                if layout.stack:
                    parts.append(alerts_line(_fetch_alerts(stack_cfg["alertmanager_listen"])))
                    parts.append(_decision_line(sentinel_state / "controller.json"))
                print(time.strftime("%H:%M:%S"), " | ".join(parts), flush=True)
                next_status = now + STATUS_EVERY
            if sink is not None:
                sink.wait(LOOP_EVERY)
            else:
                time.sleep(LOOP_EVERY)
    finally:
        _stop_all(children)
        if sink is not None:
            sink.close()
    print("agentwatch stopped.")
    return 0


class SinkKeeper:
    """The webhook sink in `up`'s loop: bound when it can be (a port in use is said once,
    then tried again every RESTART_DELAY seconds), else the loop just sleeps."""

    def __init__(self, listen: str, out: Path):
        self.listen, self.out = listen, out
        self.sink: up_sink.Sink | None = None
        self.failed = ""
        self.next_try = 0.0
        self._bind()

    def _bind(self) -> None:
        try:
            self.sink = up_sink.Sink(self.listen, self.out)
        except (OSError, ValueError) as err:
            if str(err) != self.failed:
                print(f"{SINK}: cannot listen on {self.listen}: {err}; trying again", flush=True)
            self.failed = str(err)
            self.next_try = time.monotonic() + RESTART_DELAY
            return
        if self.failed:
            print(f"{SINK}: listening on {self.listen}", flush=True)
        self.failed = ""

    def wait(self, timeout: float) -> None:
        if self.sink is None and time.monotonic() >= self.next_try:
            self._bind()
        if self.sink is None:
            time.sleep(timeout)
        else:
            self.sink.wait(timeout)

    def close(self) -> None:
        if self.sink is not None:
            self.sink.close()


def _supervise(child: Child, now: float) -> None:
    process = child.process
    if process is None:
        if now >= child.next_start:
            child.start()
        return
    code = process.poll()
    if code is None:
        return
    child.restarts += 1
    print(f"{child.name} exited with status {code}; restarting "
          f"(see {child.log_path})", flush=True)  # fmt: skip
    child.process = None
    child.next_start = now + RESTART_DELAY * min(child.restarts, 15)


def _stop_all(children: list[Child]) -> None:
    for child in children:
        child.stop()
    deadline = time.monotonic() + 10
    for child in children:
        if child.process is None:
            continue
        try:
            child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.process.kill()
            child.process.wait()
