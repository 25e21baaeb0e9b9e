"""The `agentwatch` console script. `agentwatch hook` and `agentwatch statusline` run on
Claude Code's hot path (every tool call, every render), so they are dispatched here before the
full command line (cli/main.py: argparse and every subcommand's imports) is loaded; everything
else, and `--help` on them, goes to cli/main.py."""

from __future__ import annotations

import gc
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # without importing typing (5 ms of every hook's start)
    from typing import NoReturn

FAST = ("hook", "statusline")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in FAST and not {"-h", "--help"} & set(args[1:]):
        if args[0] == "hook":
            from agentwatch.cli import hook

            return hook.main(args[1:])
        from agentwatch.cli import statusline

        return statusline.main(args[1:])
    # No cyclic garbage collection while the modules load and the command starts: imports
    # make no garbage worth it, and 25 passes of it are 3 ms of a `--once` run (issue 29).
    # The command turns it back on where its work begins (cli/main.py, core/loop.py).
    gc.disable()
    from agentwatch.core import lazy_prometheus

    lazy_prometheus.install()  # a sentinel or the controller never loads its HTTP parts
    lazy_prometheus.defer("inspect")  # dataclasses' import, for undocumented classes only
    lazy_prometheus.defer("ssl")  # http.client's import; a listener loads it for TLS only
    from agentwatch.cli.main import main as full

    return full(args)


def run() -> NoReturn:
    """The console script: the command, then the exit without the interpreter's last full
    garbage collection (everything still alive is frozen out of it): nothing is left that
    needs collecting, and walking every object took 40 of the 55 ms a one-second backfill
    spent exiting."""
    try:
        code = main()
    finally:  # also after argparse's exits (--help, --version, a usage error)
        gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
