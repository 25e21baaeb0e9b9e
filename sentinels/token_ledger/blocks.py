"""ccusage-style 5-hour billing blocks, computed from the ledger's minute buckets.

Where no official quota numbers exist (API-key users), the quota guard measures the 5-hour
window as `ccusage blocks` does (docs/ledger-rules.md, "Billing blocks"): a block starts at its
first entry's time floored to the UTC hour and lasts 5 hours; an entry more than 5 hours after
the block's start (or more than 5 hours after the previous entry, which implies it) starts the
next one. Minute buckets are exact for this: a bucket holds the entries of one minute
`(m-1, m] * 60 s` and the time of its earliest entry, and no block edge falls inside one.

The past blocks are computed once at the start; later buckets extend or update them in memory.
Only a bucket that lands between or before known blocks (a backfill reading older files) makes
the blocks from there on be computed again from the database.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
BLOCK_MS = 5 * HOUR_MS

# One committed bucket change: (minute, labelset) -> [minute, labelset, first_ms, input,
# output, cache_read, cache_creation, cost, responses] (the row store.add_buckets writes).
BucketDeltas = dict[tuple[int, int], list]


def minute_of(ts: float) -> int:
    """The bucket of an entry at `ts` seconds: m such that the entry is in ((m-1)*60, m*60].

    Right-closed, because ccusage's blocks are closed at their end (an entry at exactly
    start + 5 h belongs to the block) and every block edge is a whole minute."""
    return -(-ms_of(ts) // MINUTE_MS)


def ms_of(ts: float) -> int:
    return int(ts * 1000 + 0.5) if ts >= 0 else -int(-ts * 1000 + 0.5)


def floor_hour(ms: int) -> int:
    return ms // HOUR_MS * HOUR_MS


@dataclass(slots=True)
class Block:
    """A 5-hour billing block and its tokens."""

    start_ms: int
    tokens: float
    end_ms: int = 0

    def __post_init__(self) -> None:
        self.end_ms = self.start_ms + BLOCK_MS


def build(minutes: Iterable[tuple[int, int, float]], blocks: list[Block] | None = None) -> list:
    """Blocks from (minute, first_ms, tokens) in minute order, appended to `blocks` (whose
    last block may grow); ccusage's identify_session_blocks on whole minutes."""
    found = [] if blocks is None else blocks
    current = found[-1] if found else None
    for minute, first_ms, tokens in minutes:
        if current is None or minute * MINUTE_MS > current.end_ms:
            current = Block(floor_hour(first_ms), 0.0)
            found.append(current)
        current.tokens += tokens
    return found


class BlockTracker:
    """Every block in memory (a few thousand a year), kept up to date from committed buckets.

    `minutes(after)` reads (minute, first_ms, tokens) for minutes > `after` (None: all) from
    the database, `labels_in(lo, hi)` the tokens per labelset of minutes lo..hi (see Store)."""

    def __init__(
        self,
        minutes: Callable[[int | None], Iterable[tuple[int, int, float]]],
        labels_in: Callable[[int, int], dict[int, float]],
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self._minutes = minutes
        self._labels_in = labels_in
        self._monotonic = monotonic
        self.blocks: list[Block] = build(minutes(None))
        self._keep: int | None = None  # blocks[keep:] must be computed again
        self._next_rebuild = 0.0
        # The active block's tokens per labelset: (start_ms, first and last minute, tokens).
        self._active: tuple[int, int, int, dict[int, float]] | None = None

    # ---- updating
    def recompute(self) -> None:
        """Leave every block to the next `settle`: a backfill from scratch reads files in no
        time order, so folding each of its batches in would be work thrown away."""
        self._keep = 0
        self._active = None

    def add(self, deltas: BucketDeltas) -> None:
        """Committed bucket changes: fold them into the blocks they fall in."""
        if self._keep == 0:
            return  # every block is computed again (a backfill reading older files)
        by_minute: dict[int, list] = {}
        for minute, _labels, first_ms, t_in, t_out, t_cr, t_cc, _cost, _new in deltas.values():
            tokens = t_in + t_out + t_cr + t_cc
            row = by_minute.get(minute)
            if row is None:
                by_minute[minute] = [first_ms, tokens]
            else:
                row[0] = min(row[0], first_ms)
                row[1] += tokens
        last: Block | None = None  # where the previous minute went: most minutes follow it
        for minute in sorted(by_minute):
            first_ms, tokens = by_minute[minute]
            if last is not None and last.start_ms <= first_ms and minute * MINUTE_MS <= last.end_ms:
                last.tokens += tokens
            else:
                last = self._add_minute(minute, first_ms, tokens)
        if self._active is not None:
            self._add_active(deltas)

    def _add_minute(self, minute: int, first_ms: int, tokens: float) -> Block | None:
        """Place one minute; the block it went to (None: left to `settle`)."""
        blocks = self.blocks
        end = minute * MINUTE_MS  # the bucket's entries lie in [first_ms, end]
        keep = len(blocks) if self._keep is None else self._keep
        if keep < len(blocks) and (keep == 0 or end > blocks[keep - 1].end_ms):
            return None  # in the part that is computed again from the database anyway
        index = bisect.bisect_right(blocks, first_ms, 0, keep, key=_start) - 1
        for candidate in (index - 1, index):  # an entry at a block's end belongs to it
            if candidate >= 0 and blocks[candidate].start_ms <= first_ms:
                block = blocks[candidate]
                if end <= block.end_ms:
                    block.tokens += tokens
                    return block
        if keep == len(blocks) and (not blocks or end > blocks[-1].end_ms):
            build([(minute, first_ms, tokens)], blocks)  # after every block: the next one
            return blocks[-1]
        # Before the first block or between two: blocks[index] and those before it stand
        # (the bucket lies wholly after its end), the rest is computed again.
        self._keep = index + 1 if self._keep is None else min(self._keep, index + 1)
        self._active = None
        return None

    def _add_active(self, deltas: BucketDeltas) -> None:
        """Keep the active block's tokens per labelset (when read already) up to date."""
        assert self._active is not None
        _start_ms, first, last, cached = self._active
        for minute, labels, _first, t_in, t_out, t_cr, t_cc, _cost, _new in deltas.values():
            if first <= minute <= last:
                cached[labels] = cached.get(labels, 0.0) + t_in + t_out + t_cr + t_cc

    def settle(self, force: bool = False) -> None:
        """Compute again what `add` could not place; during a backfill at most so often that
        it costs under 5% of the time (`force`: now, e.g. when the backfill is done)."""
        if self._keep is None:
            return
        now = self._monotonic()
        if not force and now < self._next_rebuild:
            return
        keep = self._keep
        del self.blocks[keep:]
        after = self.blocks[-1].end_ms // MINUTE_MS if self.blocks else None
        build(self._minutes(after), self.blocks)
        self._keep = None
        self._active = None
        done = self._monotonic()
        self._next_rebuild = done + 20 * (done - now)

    # ---- reading
    @property
    def pending(self) -> bool:
        return self._keep is not None

    def active(self, now: float) -> Block | None:
        """The block in progress at `now` (start <= now < end), if any."""
        now_ms = ms_of(now)
        index = bisect.bisect_right(self.blocks, now_ms, key=_start) - 1
        if index >= 0 and now_ms < self.blocks[index].end_ms:
            return self.blocks[index]
        return None

    def completed(self, now: float) -> list[float]:
        """The tokens of every block that has ended (never the active one)."""
        now_ms = ms_of(now)
        return [block.tokens for block in self.blocks if block.end_ms <= now_ms]

    def per_labels(self, block: Block) -> dict[int, float]:
        """The block's tokens per labelset (read once per block, then kept up to date)."""
        if self._active is None or self._active[0] != block.start_ms:
            first = block.start_ms // MINUTE_MS  # the bucket ending at the start...
            index = bisect.bisect_left(self.blocks, block.start_ms, key=_start)
            if index > 0 and self.blocks[index - 1].end_ms == block.start_ms:
                first += 1  # ...belongs to the block before when that one ends there
            last = block.end_ms // MINUTE_MS
            self._active = (block.start_ms, first, last, self._labels_in(first, last))
        return self._active[3]


def _start(block: Block) -> int:
    return block.start_ms
