"""`python -m agentwatch.demo.anthropic_api --script FILE`: run the stand-in until stopped."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from agentwatch.demo.anthropic_api.script import ScriptError, load, parse
from agentwatch.demo.anthropic_api.served import ServedLog
from agentwatch.demo.anthropic_api.server import StandIn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentwatch.demo.anthropic_api",
        description="A scripted stand-in for the Anthropic Messages API, for the real Claude "
        "Code CLI (ANTHROPIC_BASE_URL=the printed URL). Prints the URL, then serves until "
        "interrupted.",
    )
    parser.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (port 0: any free)")
    parser.add_argument("--script", type=Path, help="YAML or JSON script (default: answer all)")
    parser.add_argument("--served", type=Path, help="append one JSONL line per served request")
    args = parser.parse_args(argv)
    try:
        script = load(args.script) if args.script else parse(None)
        api = StandIn(script, ServedLog(args.served), args.listen)
    except ScriptError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as err:
        print(f"error: cannot listen on {args.listen}: {err}", file=sys.stderr)
        return 2
    print(api.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        api.server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
