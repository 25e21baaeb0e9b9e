"""Write agentwatch's Grafana dashboards from one description, so the five stay consistent.

The dashboards are built with grafana-foundation-sdk, Grafana Labs' typed builders (the build
for Grafana 11.6, so its JSON model, schemaVersion 41), rather than by hand: the SDK owns the
shape of the model and fills in what Grafana would. The description is split the way the
mixins split theirs: `queries` writes the PromQL (its docstring lists the query conventions
tests/test_dashboards.py lints), `panels` holds one helper per panel kind and the dashboard
frame, and `boards/` has one module per dashboard listing its panels. This module only
assembles them: it adds the one field the SDK has no place for, a query variable's
`definition` (_with_definitions), and writes the JSON. `python grafana/build.py` rewrites
grafana/dashboards/*.json; `--check` exits 1 when the committed files differ
(tests/test_dashboards.py does the same).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.cog.encoder import JSONEncoder

from agentwatch.grafana.boards.agentwatch_self import agentwatch_self
from agentwatch.grafana.boards.host import host
from agentwatch.grafana.boards.overview import overview
from agentwatch.grafana.boards.releases import releases
from agentwatch.grafana.boards.sessions import sessions

OUT_DIR = Path(__file__).resolve().parent / "dashboards"


BUILDERS = (overview, sessions, host, releases, agentwatch_self)


def _with_definitions(board: dict[str, Any]) -> dict[str, Any]:
    """Give each query variable its `definition`, the query text that Grafana's variable list
    shows and its editor writes: the SDK's variable model has no such field, so it is added
    to the JSON the SDK wrote (the one field written by hand)."""
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            variable["definition"] = variable["query"]["query"]
    return board


def render() -> dict[str, str]:
    """File name -> JSON text of every dashboard, exactly as committed."""
    out = {}
    for build in BUILDERS:
        board = _with_definitions(json.loads(json.dumps(build().build(), cls=JSONEncoder)))
        out[f"{board['uid']}.json"] = json.dumps(board, indent=2, sort_keys=True) + "\n"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if the committed JSON differs instead of writing it",
    )
    args = parser.parse_args(argv)
    stale = []
    for name, text in render().items():
        path = OUT_DIR / name
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(name)
        if not args.check:
            OUT_DIR.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"out of date (run python grafana/build.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
