"""`agentwatch prices`: the models the token ledger has counted, each with the price entry that
prices it (or "unpriced"), so what is counted at $0 shows at once.

Reads the ledger's database read-only (the sentinel may be running) and prices with the same
table and config overrides as the sentinel.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentwatch.cli import common, locate
from agentwatch.core import config
from agentwatch.sentinels.token_ledger.pricing import PriceBook, PricingError
from agentwatch.sentinels.token_ledger.records import SYNTHETIC
from agentwatch.sentinels.token_ledger.store import DATABASE_FILE

_QUERY = """
SELECT l.model, COUNT(*), SUM(r.c_in), SUM(r.c_out), SUM(r.c_cr), SUM(r.c_cc), SUM(r.c_cost)
FROM {responses} r JOIN labelsets l ON l.id = r.labels GROUP BY l.model
"""
# A cold backfill's rows wait in responses_staged until it ends (token_ledger/store.py), the
# latest copy of each key being its row (SQLite takes the other columns from the max() row).
_WITH_STAGED = """(
SELECT labels, c_in, c_out, c_cr, c_cc, c_cost FROM responses UNION ALL
SELECT labels, c_in, c_out, c_cr, c_cc, c_cost FROM (
    SELECT labels, c_in, c_out, c_cr, c_cc, c_cost, max(seq) FROM responses_staged
    GROUP BY msg, req))"""


def add(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "prices",
        help="list the models the token ledger counted, with their price or 'unpriced'",
        description="For every model in the token ledger's database: the price entries it is "
        "priced by (USD per million tokens, effective dates, source), or 'unpriced' when no "
        "entry matches (its tokens are counted at $0), and the tokens and cost counted for it.",
    )
    parser.add_argument(
        "--state-dir", type=Path, help="folder of durable state (default: from config)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


@dataclass
class Model:
    """One model of the ledger: what was counted for it and how it is priced."""

    model: str
    responses: int
    tokens: dict[str, int]
    cost: float
    priced_as: str | None  # the table key (exact id or family); None: unpriced
    entries: list[dict[str, Any]]

    @property
    def status(self) -> str:
        if self.model == SYNTHETIC:
            return "not billed"
        return "priced" if self.priced_as is not None else "unpriced"

    def as_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "status": self.status, "priced_as": self.priced_as,
            "responses": self.responses, "tokens": self.tokens,
            "total_tokens": sum(self.tokens.values()), "cost_usd": self.cost,
            "entries": self.entries,
        }  # fmt: skip


def read_models(database: Path, book: PriceBook) -> list[Model]:
    """The models counted in `database`, unpriced ones first, then by tokens."""
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        staged = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'responses_staged'"
        ).fetchone()  # a database of a sentinel from before has none
        query = _QUERY.format(responses=_WITH_STAGED if staged else "responses")
        rows = connection.execute(query).fetchall()
    finally:
        connection.close()
    models = []
    for name, responses, t_in, t_out, t_cr, t_cc, cost in rows:
        found = book.resolve(name)
        models.append(
            Model(
                model=name, responses=int(responses),
                tokens={"input": int(t_in), "output": int(t_out), "cache_read": int(t_cr),
                        "cache_creation": int(t_cc)},
                cost=float(cost), priced_as=None if found is None else found[0],
                entries=[] if found is None else [e.describe() for e in found[1].entries],
            )
        )  # fmt: skip
    order = {"unpriced": 0, "priced": 1, "not billed": 2}
    return sorted(models, key=lambda m: (order[m.status], -sum(m.tokens.values()), m.model))


def _rates(entry: dict[str, Any]) -> str:
    text = "/".join(f"{entry[k]:g}" for k in ("input", "output", "cache_write", "cache_read"))
    long = entry.get("long_context")
    if long:
        text += f" (>{long['above_input_tokens'] // 1000}k: {long['input']:g}/{long['output']:g})"
    if "fast_multiplier" in entry:
        text += f" fast x{entry['fast_multiplier']:g}"
    return text


def table(models: list[Model]) -> str:
    """One line per model and price entry: the dated entries of a model one under another."""
    header = ("MODEL", "STATUS", "PRICED AS", "IN/OUT/CACHE W/CACHE R $/MTok", "FROM", "UNTIL",
              "TOKENS", "COST $")  # fmt: skip
    rows: list[tuple[str, ...]] = [header]
    for model in models:
        total = f"{sum(model.tokens.values()):,}"
        first = [model.model, model.status, model.priced_as or "-"]
        if not model.entries:
            rows.append((*first, "-", "-", "-", total, f"{model.cost:.2f}"))
        for number, entry in enumerate(model.entries):
            lead = first if number == 0 else ["", "", ""]
            tail = (total, f"{model.cost:.2f}") if number == 0 else ("", "")
            dates = (str(entry["from"] or "-"), str(entry["until"] or "-"))
            rows.append((*lead, _rates(entry), *dates, *tail))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
             for row in rows]  # fmt: skip
    unpriced = [m for m in models if m.status == "unpriced"]
    if unpriced:
        at_zero = sum(sum(m.tokens.values()) for m in unpriced)
        lines.append(f"{len(unpriced)} unpriced model(s): {at_zero:,} tokens counted at $0 "
                     "(add a price with the `prices` or `pricing_file` config keys)")  # fmt: skip
    return "\n".join(line.rstrip() for line in lines)


def run(args: argparse.Namespace, cfg: config.Config) -> int:
    _, state_dir = common.dirs(args, cfg)
    database = locate.find(cfg, Path(state_dir)).sentinel_state / DATABASE_FILE
    if not database.is_file():
        print(f"no token-ledger database at {database}: the sentinel has not run with this "
              "state folder yet (`agentwatch sentinel token-ledger`)")  # fmt: skip
        return 1
    settings = cfg.sentinel("token-ledger")
    try:
        book = PriceBook.load(settings["pricing_file"], settings["prices"])
        models = read_models(database, book)
    except (OSError, ValueError, PricingError) as error:
        print(f"cannot read prices: {error}")
        return 1
    except sqlite3.Error as error:
        print(f"cannot read {database}: {error}")
        return 1
    if args.json:
        print(json.dumps({"database": str(database), "models": [m.as_json() for m in models]},
                         indent=1))  # fmt: skip
    else:
        print(table(models) if models else f"no responses counted yet in {database}")
    return 0
