"""`agentwatch run-budget start|stop|show`: mark the start of a run for the budget guard.

While a run is started, the budget's `auto` period counts the ledger's spend since the start
(`agentwatch_spend_usd{period="run"}`) instead of since local midnight; no orchestrator needed.
"""

from __future__ import annotations

import argparse
import time

from agentwatch.cli import common
from agentwatch.core import config, run_budget


def add(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "run-budget",
        help="start, stop or show the run the budget guard counts spend from",
        description="A started run makes the budget guard (period `auto`, the default) count "
        "the token ledger's spend since the start, against the resolved cap "
        "(AGENTWATCH_MAX_COST_USD, the orchestrator's run config, bernstein.yaml, or "
        "controller.budget_usd). Without a run the period is the local day.",
    )
    parser.add_argument("action", choices=("start", "stop", "show"), help="what to do")
    common.add_dirs(parser)


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(seconds))


def run(args: argparse.Namespace, cfg: config.Config) -> int:
    _, state_dir = common.dirs(args, cfg)
    if args.action == "start":
        started = run_budget.start(state_dir, time.time())
        assert started.started_at is not None
        print(f"run started at {_when(started.started_at)}: spend counts from now")
        return 0
    if args.action == "stop":
        if run_budget.stop(state_dir):
            print("run stopped: the budget period is the day again (controller.budget_period auto)")
        else:
            print("no run was started")
        return 0
    current = run_budget.read(state_dir)
    if current.started_at is not None:
        print(f"run started at {_when(current.started_at)}")
    elif current.problem:
        print(f"no usable run: {run_budget.path(state_dir)}: {current.problem}")
        return 1
    else:
        print("no run started (the budget period is the day)")
    return 0
