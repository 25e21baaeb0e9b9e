"""The `agentwatch` console script. `agentwatch hook` and `agentwatch statusline` run on
Claude Code's hot path (every tool call, every render), so they are dispatched here before the
full command line (cli/main.py: argparse and every subcommand's imports) is loaded; everything
else, and `--help` on them, goes to cli/main.py."""

from __future__ import annotations

import sys

FAST = ("hook", "statusline")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in FAST and not {"-h", "--help"} & set(args[1:]):
        if args[0] == "hook":
            from agentwatch.cli import hook

            return hook.main(args[1:])
        from agentwatch.cli import statusline

        return statusline.main(args[1:])
    from agentwatch.cli.main import main as full

    return full(args)


if __name__ == "__main__":
    sys.exit(main())
