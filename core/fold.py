"""Bounded cardinality: at most N projects, models and sessions get series of their own, the
rest are shown folded into `project="other"` / `model="other"` / `session="other"`. Both
ledgers fold this way (the agent ledger one Fold per agent), so it lives in core.

A ledger's database keeps every name's exact totals; only the exposition folds. The rule keeps every
exposed counter monotonic and the sum of each family exact:

- Projects and models: a name gets its own series when it first appears while a slot is free,
  and keeps it for good (the choice is stored with the counters, so a restart keeps it). A
  name first seen when the slots are full is folded from its first token on, and stays folded:
  no series ever moves into or out of "other", so "other" only grows by new tokens. Files are
  read newest first, so on a first backfill the slots go to the most recently active names; a
  database from before the fold gives them to the names with the most tokens. Raising a cap
  gives the new slots to names not seen yet; lowering it folds the names kept last (their
  series end and "other" grows by what they held: still monotonic, once).
- Sessions expire (session_ttl): a slot frees when its session expires and goes to the next
  new session; a folded session stays folded until it expires, when its totals stay in
  "other" (which only grows while the sentinel runs; a restart is a counter reset).

`agentwatch_ledger_folded_series{label}` (`agentwatch_agent_ledger_folded_series{agent,label}`)
tells how many names are folded.
"""

from __future__ import annotations

from collections.abc import Iterable

OTHER = "other"
DIMENSIONS = ("project", "model")


class Fold:
    """Which project and model names are shown as themselves."""

    def __init__(self, caps: dict[str, int], kept: dict[str, list[str]], known: dict[str, set]):
        self.caps = caps
        # A literal "other" is never kept: its series would collide with the folded one.
        self.kept = {
            dim: dict.fromkeys(name for name in kept.get(dim, []) if name != OTHER)
            for dim in DIMENSIONS
        }
        for dim in DIMENSIONS:  # a lowered cap: the names kept last are folded
            while len(self.kept[dim]) > caps[dim]:
                self.kept[dim].popitem()
        self.known = {dim: set(known.get(dim, ())) for dim in DIMENSIONS}

    def plan(self, seen: dict[str, set[str]]) -> dict[str, tuple[list[str], list[str]]]:
        """For the names of a batch: per dimension, the new ones and those of them that get
        a slot. Nothing changes until `apply` (after the batch committed)."""
        planned = {}
        for dim, names in seen.items():
            fresh = sorted(name for name in names if name not in self.known[dim])
            room = max(self.caps[dim] - len(self.kept[dim]), 0)
            planned[dim] = (fresh, [name for name in fresh if name != OTHER][:room])
        return planned

    def apply(self, planned: dict[str, tuple[list[str], list[str]]]) -> None:
        for dim, (fresh, kept) in planned.items():
            self.known[dim].update(fresh)
            self.kept[dim].update(dict.fromkeys(kept))

    def show(self, dim: str, name: str) -> str:
        return name if name in self.kept[dim] else OTHER

    def folded(self, dim: str) -> int:
        """Distinct names shown as "other"."""
        return len(self.known[dim]) - len(self.kept[dim])


def top_names(totals: Iterable[tuple[str, float]], cap: int) -> list[str]:
    """The `cap` names with the largest totals (ties by name): a first fold of old data."""
    ranked = sorted(totals, key=lambda item: (-item[1], item[0]))
    return [name for name, _ in ranked[:cap]]


class SessionFold:
    """Which recent sessions are shown as themselves; the folded ones' expired totals."""

    def __init__(self, cap: int, recent: dict[str, list]):
        self.cap = cap
        newest = sorted(recent, key=lambda session: -recent[session][2])
        self.kept = dict.fromkeys(s for s in newest[:cap] if s != OTHER)
        self.retired = [0.0] * 5  # in, out, cache_read, cache_creation, cost of expired ones

    def admit(self, session: str) -> None:
        """A session just became recent: a slot if one is free."""
        if session != OTHER and len(self.kept) < self.cap:
            self.kept[session] = None

    def expired(self, session: str, row: list) -> None:
        """A recent session expired: its slot frees, or its totals stay in "other"."""
        if session in self.kept:
            del self.kept[session]
            return
        for index, amount in enumerate(row[3:8]):
            self.retired[index] += amount
