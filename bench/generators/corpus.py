"""Deterministic generator of a realistic Claude Code transcript tree (the benchmark corpus).

    python bench/generators/corpus.py OUT_DIR --size 1G [--files N] [--seed S] [--force]

writes OUT_DIR/projects/<slug>/<session-uuid>.jsonl and sub-agent files
OUT_DIR/projects/<slug>/<session-uuid>/subagents/agent-<id>.jsonl, then OUT_DIR/corpus.json (the
manifest: parameters and statistics, including the token totals and cost that ccusage 20.0.24
`claude daily` must report on the tree, computed here with its dedup rules).

The mix, by bytes, follows real transcripts: user lines carrying tool results dominate (5-100 KB,
a few of several MB, duplicated in `toolUseResult` as Claude Code does), assistant lines are
1-3 KB and come as several lines per API response sharing message.id + requestId (earlier copies
with smaller output_tokens), plus summaries, file-history snapshots (a few huge ones), progress
wrappers (hook progress, and agent progress that repeats a sub-agent's response), `/btw` sidechain
replays and `<synthetic>` API-error lines. Every line passes ccusage's acceptance rules except a
small, counted set of deliberately bad lines (`BAD_KINDS`). The lines come from the project's one
line builder, `agentwatch.demo.transcripts`.

Used as a library (by bench/bench_ledger.py): `generate()` builds a tree, `ensure_corpus()`
re-uses a matching one, `append_response()` appends one new response to an existing transcript
(the latency benchmark).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import re
import shutil
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentwatch.core import claude
from agentwatch.demo import transcripts
from agentwatch.demo.transcripts import b62, dumps, iso_ms, new_message_id, new_request_id, new_uuid

GENERATOR_VERSION = 2
MANIFEST = "corpus.json"
GENERATING = ".generating"

# 2026-01-05T00:00:00Z; sessions spread over the following SPAN_DAYS days.
BASE_MS = 1767571200000
SPAN_DAYS = 30

# model -> weight as a session's main model
MODELS: dict[str, float] = {
    "claude-sonnet-4-5-20250929": 0.38,
    "claude-opus-4-5-20251101": 0.22,
    "claude-opus-4-6": 0.15,
    "claude-sonnet-4-6": 0.15,
    "claude-haiku-4-5-20251001": 0.10,
}
HAIKU = "claude-haiku-4-5-20251001"
SYNTHETIC = transcripts.SYNTHETIC

# $ per million tokens: input, output, 5-minute cache write, cache read, the same above 200k
# tokens of a class in one entry (None: no tier), fast-mode multiplier. ccusage 20.0.24 offline.
PRICES: dict[
    str, tuple[float, float, float, float, tuple[float, float, float, float] | None, float]
] = {
    "claude-sonnet-4-5-20250929": (3.0, 15.0, 3.75, 0.30, (6.0, 22.5, 7.5, 0.60), 1.0),
    "claude-sonnet-4-6": (3.0, 15.0, 3.75, 0.30, None, 1.0),
    "claude-opus-4-5-20251101": (5.0, 25.0, 6.25, 0.50, None, 1.0),
    "claude-opus-4-6": (5.0, 25.0, 6.25, 0.50, None, 6.0),
    "claude-haiku-4-5-20251001": (1.0, 5.0, 1.25, 0.10, None, 1.0),
}
TIER = 200_000

# Deliberately bad lines: each has a `"usage":{` and unique ids, and ccusage drops it.
BAD_KINDS = (
    "truncated",  # a line cut mid-write (broken JSON)
    "ts_microseconds",  # timestamp with 6 fraction digits
    "null_request_id",  # "requestId":null
    "duplicate_key",  # a key twice in one object
    "bad_version",  # "version":"2.0"
    "float_tokens",  # "output_tokens":12.0
    "nested_null",  # a tool_use block with "id":null (the null check runs at any depth)
    "lone_surrogate",  # a "\ud800" escape in a text block
)
BAD_PROBABILITY = 0.002  # per API response

SYNTHETIC_TEXTS = (
    'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},'
    '"request_id":null}',
    'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"This request '
    "would exceed the rate limit for your organization of 450,000 input tokens per minute. "
    'For details, refer to: https://docs.claude.com/en/api/rate-limits."},"request_id":"req_011'
    'CVXq3Jd7yTt3"}',
    "Claude AI usage limit reached|1764300000",
)

PROJECT_NAMES = (
    "agentwatch",
    "billing-api",
    "web-frontend",
    "infra",
    "ml-pipeline",
    "docs-site",
    "cli-tools",
    "mobile-app",
    "data-warehouse",
    "auth-service",
    "search",
    "payments",
    "my_app.v2",
    "scratch",
    "notebooks",
    "k8s-manifests",
    "game-engine",
    "compiler",
    "blog",
    "dotfiles",
)
BRANCHES = ("main", "main", "main", "develop", "feature/ledger", "fix/retry-429", "HEAD")
VERSIONS = ("2.0.14", "2.0.28", "2.0.37", "2.0.55", "2.1.3", "2.1.12")
OLD_VERSIONS = ("1.0.51", "1.0.72")
TOOLS = (
    "Read",
    "Read",
    "Read",
    "Bash",
    "Bash",
    "Grep",
    "Edit",
    "Edit",
    "Write",
    "Glob",
    "WebFetch",
    "TodoWrite",
)


def parse_size(text: str) -> int:
    """'200M', '1G', '1.5G', '512K' (binary units) or a plain number of bytes."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"not a size: {text!r}")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()]
    return int(float(m.group(1)) * scale)


def format_size(n: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def entry_cost(
    model: str,
    inp: int,
    out: int,
    cc5: int,
    cc1h: int,
    cr: int,
    fast: bool = False,
    cost_usd: float | None = None,
) -> float:
    """The cost ccusage (mode auto, offline) gives one entry."""
    if cost_usd is not None:
        return cost_usd
    price = PRICES.get(model)
    if price is None:
        return 0.0
    p_in, p_out, p_cw, p_cr, tier, fast_mult = price

    def part(n: int, base: float, above: float | None) -> float:
        if above is None or n <= TIER:
            return n * base
        return TIER * base + (n - TIER) * above

    t_in, t_out, t_cw, t_cr = tier if tier else (None, None, None, None)
    cost = (
        part(inp, p_in, t_in)
        + part(out, p_out, t_out)
        + part(cc5, p_cw, t_cw)
        + part(cc1h, 2 * p_in, 2 * t_in if t_in is not None else None)
        + part(cr, p_cr, t_cr)
    ) / 1e6
    return cost * fast_mult if fast else cost


# --------------------------------------------------------------------------------------------
# The expected result: ccusage's dedup rules applied to every valid entry the generator writes.


def usage_tokens(usage: dict[str, Any]) -> tuple[int, int, int, int, int]:
    """(input, output, cache_creation, cache_read, of which 1h cache) the way ccusage reads it."""
    cc_obj = usage.get("cache_creation")
    if isinstance(cc_obj, dict):
        cc1h = int(cc_obj.get("ephemeral_1h_input_tokens", 0))
        cc = int(cc_obj.get("ephemeral_5m_input_tokens", 0)) + cc1h
    else:
        cc1h = 0
        cc = int(usage.get("cache_creation_input_tokens", 0))
    return (
        int(usage["input_tokens"]),
        int(usage["output_tokens"]),
        cc,
        int(usage.get("cache_read_input_tokens", 0)),
        cc1h,
    )


@dataclass
class _Kept:
    total: int
    cost: float
    has_speed: bool
    tokens: tuple[int, int, int, int]  # input, output, cache_creation, cache_read
    model: str


class Expected:
    """Token totals and cost ccusage `claude daily` reports (findings §4, §5, §6)."""

    def __init__(self) -> None:
        self.main: dict[tuple[str, str | None], _Kept] = {}
        self.main_ids: set[str] = set()
        self.side: dict[str, _Kept] = {}
        self.entries = 0

    @staticmethod
    def _better(new: _Kept, old: _Kept) -> bool:
        if new.total != old.total:
            return new.total > old.total
        if new.cost != old.cost:
            return new.cost > old.cost
        return new.has_speed and not old.has_speed

    def add(
        self,
        mid: str,
        rid: str | None,
        sidechain: bool,
        tokens: tuple[int, int, int, int],
        model: str,
        cost: float,
        has_speed: bool = False,
    ) -> None:
        self.entries += 1
        kept = _Kept(sum(tokens), cost, has_speed, tokens, model)
        if sidechain:
            old = self.side.get(mid)
            if old is None or self._better(kept, old):
                self.side[mid] = kept
        else:
            self.main_ids.add(mid)
            key = (mid, rid)
            old = self.main.get(key)
            if old is None or self._better(kept, old):
                self.main[key] = kept

    def totals(self) -> dict[str, Any]:
        sums = [0, 0, 0, 0]
        cost = 0.0
        by_model: dict[str, list[int]] = {}
        kept = list(self.main.values())
        kept += [k for mid, k in self.side.items() if mid not in self.main_ids]
        for k in kept:
            for i in range(4):
                sums[i] += k.tokens[i]
            cost += k.cost
            if k.model != SYNTHETIC:
                m = by_model.setdefault(k.model, [0, 0, 0, 0])
                for i in range(4):
                    m[i] += k.tokens[i]
        return {
            "inputTokens": sums[0],
            "outputTokens": sums[1],
            "cacheCreationTokens": sums[2],
            "cacheReadTokens": sums[3],
            "totalTokens": sum(sums),
            "totalCost": cost,
            "entriesWritten": self.entries,
            "entriesCounted": len(kept),
            "byModel": {
                m: dict(zip(("input", "output", "cache_creation", "cache_read"), v, strict=True))
                for m, v in sorted(by_model.items())
            },
        }


# --------------------------------------------------------------------------------------------
# Text


class TextPool:
    """A few MB of seeded prose and code; text is cut from it at random offsets."""

    def __init__(self, rng: random.Random, size: int = 3 << 20):
        syll = (
            "ka",
            "to",
            "ri",
            "mem",
            "ser",
            "vo",
            "lin",
            "dex",
            "qu",
            "an",
            "tor",
            "py",
            "js",
            "on",
            "ex",
            "ba",
            "cor",
            "fil",
            "te",
            "ra",
            "st",
            "ng",
            "re",
            "ad",
            "ch",
            "ed",
        )
        words = ["".join(rng.choices(syll, k=rng.randint(1, 4))) for _ in range(3000)]
        words += [
            "the",
            "a",
            "to",
            "of",
            "and",
            "in",
            "is",
            "for",
            "return",
            "def",
            "class",
            "import",
            "self",
            "None",
            "True",
            "const",
            "let",
            "function",
            "=>",
            "{",
            "}",
            "(",
            ")",
            "==",
            "!=",
            "+=",
            "//",
            "#",
            "if",
            "else",
            "await",
            "async",
        ]
        extra = [
            "é",
            "ü",
            "—",
            "→",
            "中文",
            "🙂",
            "\\",
            '"',
            "'",
            "\t",
            "`",
            "<div>",
            "</div>",
            "&amp;",
            "\u00a0",
            "C:\\Users\\x",
            "${HOME}",
            "\\n",
        ]
        parts: list[str] = []
        n = 0
        while n < size:
            r = rng.random()
            if r < 0.55:
                line = " ".join(rng.choices(words, k=rng.randint(3, 16)))
            elif r < 0.9:
                a, b, c, d = rng.choices(words, k=4)
                line = f'{"    " * rng.randint(0, 3)}{a}_{b} = {c}("{d}", {rng.randint(0, 999)})'
            else:
                line = " ".join(rng.choices(words + extra, k=rng.randint(2, 12)))
            parts.append(line)
            n += len(line) + 1
        self.text = "\n".join(parts)

    def take(self, rng: random.Random, n: int) -> str:
        n = max(1, n)
        size = len(self.text)
        if n >= size:
            reps = n // size + 1
            start = rng.randrange(size)
            return (self.text[start:] + self.text * reps)[:n]
        start = rng.randrange(size - n)
        return self.text[start : start + n]

    def words(self, rng: random.Random, n: int) -> str:
        return " ".join(self.take(rng, n * 7).split()[:n]) or "ok"


# --------------------------------------------------------------------------------------------
# Generation


@dataclass
class Stats:
    files: int = 0
    main_files: int = 0
    subagent_files: int = 0
    projects: int = 0
    bytes: int = 0
    lines: int = 0
    max_line_bytes: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind -> [lines, bytes]
    bad: dict[str, int] = field(default_factory=dict)
    api_errors: dict[str, int] = field(default_factory=dict)
    responses: int = 0

    def count(self, kind: str, nbytes: int) -> None:
        entry = self.by_kind.setdefault(kind, [0, 0])
        entry[0] += 1
        entry[1] += nbytes
        self.lines += 1
        self.bytes += nbytes
        if nbytes > self.max_line_bytes:
            self.max_line_bytes = nbytes


class _Writer:
    def __init__(self, path: Path, stats: Stats):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(path, "wb", buffering=1 << 20)  # noqa: SIM115 - closed in close()
        self.stats = stats
        self.bytes = 0

    def write(self, kind: str, line: str) -> None:
        data = line.encode("utf-8") + b"\n"
        self.fh.write(data)
        self.bytes += len(data)
        self.stats.count(kind, len(data))

    def close(self) -> None:
        self.fh.close()


@dataclass
class _Response:
    """A sub-agent response as an agent_progress wrapper repeats it."""

    message_id: str
    request_id: str
    model: str
    usage: dict[str, Any]
    block: dict[str, Any]
    timestamp: str


@dataclass
class _Session:
    rng: random.Random
    pool: TextPool
    expected: Expected
    stats: Stats
    cwd: str
    session_id: str
    model: str
    version: str
    branch: str
    t_ms: int
    sidechain: bool = False
    agent_id: str | None = None
    cache_object: bool = True
    cost_usd: bool = False
    fast: bool = False
    long_context: bool = False
    parent: str | None = None
    context: int = 0
    cache_split: str = "5m"
    responses: list[_Response] = field(default_factory=list)
    history: list[list[str]] = field(default_factory=list)  # recent responses' lines, for /btw
    pending_agents: list[tuple[str, list[_Response]]] = field(default_factory=list)
    pending_cache: int = 0  # tokens added by tool results since the last response

    # -- helpers
    def tick(self, lo: int = 200, hi: int = 20_000) -> str:
        self.t_ms += self.rng.randint(lo, hi)
        return iso_ms(self.t_ms)

    def fields(self) -> transcripts.Fields:
        """The session fields of its next line (its parent: the last line written)."""
        return transcripts.Fields(
            cwd=self.cwd,
            session=self.session_id,
            parent_uuid=self.parent,
            sidechain=self.sidechain,
            version=self.version,
            git_branch=self.branch,
            agent_id=self.agent_id,
        )

    def uuid(self) -> str:
        u = new_uuid(self.rng)
        self.parent = u
        return u

    # -- line kinds
    def summary(self, w: _Writer) -> None:
        text = self.pool.words(self.rng, self.rng.randint(4, 10))
        w.write("summary", dumps(transcripts.summary(text, new_uuid(self.rng))))

    def snapshot(self, w: _Writer, files: int, kind: str = "file-history-snapshot") -> None:
        rng = self.rng
        mid = new_uuid(rng)
        ts = iso_ms(self.t_ms)
        backups: dict[str, Any] = {}
        base = self.cwd
        for i in range(files):
            path = f"{base}/{self.pool.words(rng, 2).replace(' ', '/')}/{i}_{b62(rng, 6)}.py"
            backups[path] = {
                "backupFileName": f"{b62(rng, 16)}@v{rng.randint(1, 9)}",
                "version": rng.randint(1, 9),
                "backupTime": ts,
            }
        w.write(kind, dumps(transcripts.snapshot(mid, ts, backups, update=rng.random() < 0.3)))

    def user_prompt(self, w: _Writer, text: str | None = None) -> None:
        rng = self.rng
        if text is None:
            text = self.pool.take(rng, int(rng.lognormvariate(math.log(400), 0.9)) + 20)
        fields = self.fields()
        line = transcripts.user_prompt(
            text,
            uuid=self.uuid(),
            timestamp=self.tick(2_000, 120_000),
            permission_mode=None if self.sidechain else "acceptEdits",
            **fields,
        )
        w.write("user_prompt", dumps(line))
        self.context += len(text) // 4

    def _split(self, cc: int) -> tuple[int, int]:
        """(5-minute, 1-hour) cache write tokens, as this session's cache TTL splits them."""
        if not self.cache_object or self.cache_split == "5m":
            return cc, 0
        if self.cache_split == "1h":
            return 0, cc
        cc1h = self.rng.randint(0, cc)
        return cc - cc1h, cc1h

    def _make_usage(self, inp: int, out: int, cc: int | tuple[int, int], cr: int) -> dict[str, Any]:
        cc5, cc1h = self._split(cc) if isinstance(cc, int) else cc
        return transcripts.make_usage(
            inp,
            out,
            cc5 + cc1h,
            cr,
            cache_1h=cc1h if self.cache_object else None,
            speed="fast" if self.fast else None,
        )

    def _record(
        self,
        mid: str,
        rid: str | None,
        sidechain: bool,
        usage: dict[str, Any],
        model: str,
        cost_usd: float | None,
    ) -> None:
        inp, out, cc, cr, cc1h = usage_tokens(usage)
        fast = usage.get("speed") == "fast"
        cost = entry_cost(model, inp, out, cc - cc1h, cc1h, cr, fast, cost_usd)
        self.expected.add(mid, rid, sidechain, (inp, out, cc, cr), model, cost, "speed" in usage)

    def _content_blocks(self, tools: list[tuple[str, str]]) -> list[dict[str, Any]]:
        rng = self.rng
        blocks: list[dict[str, Any]] = []
        if rng.random() < 0.35:
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": self.pool.take(rng, rng.randint(200, 1500)),
                    "signature": "Eq" + b62(rng, rng.randint(300, 1200)),
                }
            )
        if not tools or rng.random() < 0.6:
            blocks.append({"type": "text", "text": self.pool.take(rng, rng.randint(60, 1800))})
        for tool_id, name in tools:
            blocks.append(
                {"type": "tool_use", "id": tool_id, "name": name, "input": self._tool_input(name)}
            )
        return blocks

    def _tool_input(self, name: str) -> dict[str, Any]:
        rng = self.rng
        path = f"{self.cwd}/{self.pool.words(rng, 2).replace(' ', '/')}.py"
        if name == "Read":
            return {"file_path": path}
        if name == "Bash":
            return {
                "command": f"cd {self.cwd} && pytest -q -k {b62(rng, 6)}",
                "description": self.pool.words(rng, 5),
            }
        if name == "Grep":
            return {
                "pattern": self.pool.words(rng, 1),
                "path": self.cwd,
                "output_mode": "content",
                "-n": True,
            }
        if name in ("Edit", "Write"):
            return {
                "file_path": path,
                "old_string": self.pool.take(rng, rng.randint(40, 600)),
                "new_string": self.pool.take(rng, rng.randint(40, 900)),
            }
        if name == "Glob":
            return {"pattern": "**/*.py"}
        if name == "WebFetch":
            return {
                "url": f"https://docs.example.com/{b62(rng, 8)}",
                "prompt": self.pool.words(rng, 8),
            }
        if name == "Task":
            return {
                "description": self.pool.words(rng, 4),
                "prompt": self.pool.take(rng, rng.randint(200, 1500)),
                "subagent_type": "general-purpose",
            }
        return {
            "todos": [
                {
                    "content": self.pool.words(rng, 6),
                    "status": "pending",
                    "activeForm": self.pool.words(rng, 3),
                }
                for _ in range(3)
            ]
        }

    def _next_usage(self) -> tuple[int, int, int, int]:
        rng = self.rng
        limit = 900_000 if self.long_context else 185_000
        if self.context > limit:  # auto-compact
            self.context = rng.randint(15_000, 30_000)
        cr = self.context
        cc = min(rng.randint(50, 3_000) + self.pending_cache, 190_000)
        self.pending_cache = 0
        inp = rng.choice((1, 3, 4, 6, 8, 10)) if rng.random() < 0.9 else rng.randint(100, 9_000)
        out = int(rng.lognormvariate(math.log(350), 1.0)) + 12
        self.context += cc + out
        return inp, out, cc, cr

    def response(
        self, w: _Writer, tools: list[tuple[str, str]], *, sidechain_rid: bool = False
    ) -> _Response:
        """One API response: one line per content block, sharing message.id and requestId."""
        rng = self.rng
        mid = new_message_id(rng)
        rid = new_request_id(rng)
        inp, out, cc, cr = self._next_usage()
        blocks = self._content_blocks(tools)
        ts = self.tick(1_500, 40_000)
        lines: list[str] = []
        split = self._split(cc)  # every copy of one response has the same usage but output
        final = self._make_usage(inp, out, split, cr)
        for i, block in enumerate(blocks):
            last = i == len(blocks) - 1
            partial_out = out if last else rng.randint(1, max(1, out // 4))
            usage = (
                final if last else self._make_usage(inp, min(partial_out, out - 1) or 1, split, cr)
            )
            cost_usd = None
            if self.cost_usd:
                i_, o_, c_, r_, h_ = usage_tokens(usage)
                cost_usd = round(entry_cost(self.model, i_, o_, c_ - h_, h_, r_), 8)
            line = transcripts.assistant(
                mid,
                rid,
                model=self.model,
                usage=usage,
                content=[block],
                timestamp=ts,
                uuid=self.uuid(),
                stop_reason=("tool_use" if tools else "end_turn") if last else None,
                stop_sequence=True,
                cost_usd=cost_usd,
                **self.fields(),
            )
            text = dumps(line)
            w.write("assistant_sidechain" if self.sidechain else "assistant", text)
            lines.append(text)
            self._record(mid, rid, self.sidechain, usage, self.model, cost_usd)
            ts = iso_ms(self.t_ms + rng.randint(5, 900))
        self.stats.responses += 1
        self.history.append(lines)
        del self.history[:-12]
        resp = _Response(mid, rid, self.model, final, blocks[-1], ts)
        self.responses.append(resp)
        if rng.random() < BAD_PROBABILITY:
            self.bad_line(w)
        return resp

    def api_error(self, w: _Writer) -> None:
        rng = self.rng
        idx = rng.choices((0, 1, 2), weights=(6, 3, 1))[0]
        usage = transcripts.synthetic_usage()
        mid = new_uuid(rng)
        line = transcripts.api_error(
            mid,
            SYNTHETIC_TEXTS[idx],
            usage=usage,
            stop_sequence=True,
            timestamp=self.tick(500, 30_000),
            uuid=self.uuid(),
            **self.fields(),
        )
        w.write("api_error", dumps(line))
        self._record(mid, None, self.sidechain, usage, SYNTHETIC, None)
        name = ("overloaded_529", "rate_limit_429", "usage_limit")[idx]
        self.stats.api_errors[name] = self.stats.api_errors.get(name, 0) + 1

    def bad_line(self, w: _Writer) -> None:
        rng = self.rng
        kind = rng.choice(BAD_KINDS)
        usage = self._make_usage(
            rng.randint(1, 50), rng.randint(10, 500), rng.randint(0, 900), self.context
        )
        block: dict[str, Any] = {"type": "text", "text": self.pool.take(rng, 300)}
        if kind == "nested_null":
            block = {
                "type": "tool_use",
                "id": None,
                "name": "Read",
                "input": {"file_path": self.cwd + "/x.py"},
            }
        ts = self.tick(100, 2_000)
        if kind == "ts_microseconds":
            ts = ts[:-1] + f"{rng.randint(0, 999):03d}Z"
        fields = self.fields()
        if kind == "bad_version":
            fields["version"] = "2.0"
        text = dumps(
            transcripts.assistant(
                new_message_id(rng),
                new_request_id(rng),
                model=self.model,
                usage=usage,
                content=[block],
                timestamp=ts,
                uuid=new_uuid(rng),
                stop_reason="end_turn",
                stop_sequence=True,
                **fields,
            )
        )
        if kind == "truncated":
            cut = text.index('"usage":{') + 20
            text = text[: rng.randint(cut, len(text) - 2)]
        elif kind == "null_request_id":
            text = re.sub(r'"requestId":"[^"]*"', '"requestId":null', text)
        elif kind == "duplicate_key":
            text = '{"gitBranch":"main",' + text[1:]
        elif kind == "float_tokens":
            text = re.sub(r'"output_tokens":(\d+)', r'"output_tokens":\1.0', text)
        elif kind == "lone_surrogate":
            text = text.replace('"type":"text","text":"', '"type":"text","text":"\\ud800', 1)
        w.write("bad", text)
        self.stats.bad[kind] = self.stats.bad.get(kind, 0) + 1

    def tool_result(self, w: _Writer, tool_id: str, name: str, size: int) -> None:
        rng = self.rng
        path = f"{self.cwd}/{self.pool.words(rng, 2).replace(' ', '/')}.py"
        result: dict[str, Any]
        if name == "Read":
            text = self.pool.take(rng, size // 2)
            content: Any = text
            result = {
                "type": "text",
                "file": {
                    "filePath": path,
                    "content": text,
                    "numLines": text.count("\n") + 1,
                    "startLine": 1,
                    "totalLines": text.count("\n") + 1,
                },
            }
        elif name == "Bash":
            text = self.pool.take(rng, size // 2)
            content = text
            result = {"stdout": text, "stderr": "", "interrupted": False, "isImage": False}
        elif name in ("Edit", "Write"):
            original = self.pool.take(rng, int(size * 0.8))
            content = f"The file {path} has been updated. Here's the result of running `cat -n`"
            content += " on a snippet of the edited file:\n" + self.pool.take(rng, size // 10)
            result = {
                "filePath": path,
                "oldString": self.pool.take(rng, 200),
                "newString": self.pool.take(rng, 300),
                "originalFile": original,
                "structuredPatch": [
                    {
                        "oldStart": 10,
                        "oldLines": 6,
                        "newStart": 10,
                        "newLines": 8,
                        "lines": self.pool.take(rng, 600).split("\n"),
                    }
                ],
                "userModified": False,
                "replaceAll": False,
            }
        elif name == "Glob":
            names = [f"{self.cwd}/{b62(rng, 8)}/{b62(rng, 10)}.py" for _ in range(size // 120)]
            content = "\n".join(names)
            result = {
                "filenames": names,
                "durationMs": rng.randint(3, 300),
                "numFiles": len(names),
                "truncated": False,
            }
        else:
            text = self.pool.take(rng, size // 2)
            content = [{"type": "text", "text": text}]
            result = {
                "mode": "content",
                "numFiles": rng.randint(1, 40),
                "filenames": [],
                "content": text,
                "numLines": text.count("\n") + 1,
            }
        fields = self.fields()
        line = transcripts.tool_result(
            content,
            tool_use_id=tool_id,
            is_error=rng.random() < 0.03,
            result=result,
            uuid=self.uuid(),
            timestamp=self.tick(50, 30_000),
            **fields,
        )
        data = dumps(line)
        w.write("tool_result", data)
        self.pending_cache += len(data) // 8

    def hook_progress(self, w: _Writer, tool_id: str, name: str) -> None:
        fields = self.fields()
        line = transcripts.hook_progress(
            tool_id, name, timestamp=self.tick(10, 500), uuid=self.uuid(), **fields
        )
        w.write("progress_hook", dumps(line))

    def task(self, w: _Writer, tool_id: str) -> None:
        """The agent_progress wrappers and the result of a Task tool call (a sub-agent run)."""
        rng = self.rng
        agent_id, responses = self.pending_agents.pop(0)
        for r in responses:
            fields = self.fields()
            copied = transcripts.assistant(
                r.message_id,
                r.request_id,
                model=r.model,
                usage=r.usage,
                content=[r.block],
                uuid=new_uuid(rng),
                timestamp=r.timestamp,
                stop_sequence=True,
            )
            line = transcripts.agent_progress(
                copied,
                agent=agent_id,
                prompt=self.pool.words(rng, 12),
                tool_use_id=f"agent_msg_{b62(rng, 24)}",
                parent_tool_use_id=tool_id,
                uuid=self.uuid(),
                timestamp=self.tick(10, 3_000),
                **fields,
            )
            w.write("progress_agent", dumps(line))
            self._record(r.message_id, r.request_id, False, r.usage, r.model, None)
        total = [0, 0, 0, 0]
        for r in responses:
            for i, v in enumerate(usage_tokens(r.usage)[:4]):
                total[i] += v
        last = responses[-1].usage if responses else transcripts.make_usage(cache_1h=0)
        text = self.pool.take(rng, rng.randint(500, 6000))
        fields = self.fields()
        uuid, timestamp = self.uuid(), self.tick(1_000, 60_000)
        # Passes ccusage's raw `"usage":{` prefilter but never counts (toolUseResult.usage).
        result = {
            "status": "completed",
            "prompt": self.pool.words(rng, 20),
            "agentId": agent_id,
            "content": [{"type": "text", "text": text}],
            "totalDurationMs": rng.randint(5_000, 900_000),
            "totalTokens": sum(total),
            "totalToolUseCount": len(responses),
            "usage": last,
        }
        line = transcripts.tool_result(
            [{"type": "text", "text": text}],
            tool_use_id=tool_id,
            result=result,
            uuid=uuid,
            timestamp=timestamp,
            **fields,
        )
        w.write("tool_result_task", dumps(line))

    def btw_replay(self, w: _Writer) -> None:
        """`/btw`: the parent's recent history replayed as sidechain lines, then an answer."""
        rng = self.rng
        self.user_prompt(w, "/btw " + self.pool.words(rng, 12))
        for lines in self.history[-8:]:
            rid = new_request_id(rng)
            for text in lines:
                replay = transcripts.sidechain_copy(
                    json.loads(text), {"requestId": rid, "uuid": new_uuid(rng)}
                )
                w.write("sidechain_replay", dumps(replay))
                msg = replay["message"]
                self._record(
                    msg["id"], rid, True, msg["usage"], msg["model"], replay.get("costUSD")
                )
        saved = self.sidechain
        self.sidechain = True
        self.response(w, [])
        self.sidechain = saved


def _tool_size(rng: random.Random, remaining: int) -> int:
    if rng.random() < 0.004:
        size = rng.randint(1 << 20, 6 << 20)
    else:
        size = int(rng.lognormvariate(math.log(9_000), 0.9))
        size = min(max(size, 5_000), 100_000)
    return max(5_000, min(size, remaining))


def _write_session(
    s: _Session, path: Path, budget: int, *, big_snapshot: int = 0, subagent: bool = False
) -> int:
    """Write one transcript of about `budget` bytes; returns the bytes written."""
    rng = s.rng
    w = _Writer(path, s.stats)
    try:
        if not subagent and rng.random() < 0.3:
            for _ in range(rng.randint(1, 3)):
                s.summary(w)
        big_at = int(budget * rng.uniform(0.1, 0.6)) if big_snapshot else -1
        btw_at = int(budget * rng.uniform(0.3, 0.9)) if not subagent and rng.random() < 0.08 else -1
        first = True
        while first or w.bytes < budget:
            if big_at >= 0 and w.bytes >= big_at:
                s.snapshot(w, big_snapshot, "file-history-snapshot_huge")
                big_at = -1
            if btw_at >= 0 and w.bytes >= btw_at and s.history:
                s.btw_replay(w)
                btw_at = -1
            # a turn: prompt, then responses with tool calls until one ends the turn
            if not subagent:
                s.snapshot(w, rng.randint(0, 12))
            if first and subagent:  # the task prompt
                s.user_prompt(w, s.pool.take(rng, rng.randint(300, 3000)))
            else:
                s.user_prompt(w)
            first = False
            for _ in range(rng.randint(1, 14)):
                if rng.random() < 0.012:
                    s.api_error(w)
                if rng.random() < 0.25:
                    tools: list[tuple[str, str]] = []
                else:
                    use_task = bool(s.pending_agents) and rng.random() < 0.35
                    n = 1 if rng.random() < 0.8 else rng.randint(2, 4)
                    tools = [
                        (
                            "toolu_01" + b62(rng, 22),
                            "Task" if use_task and i == 0 else rng.choice(TOOLS),
                        )
                        for i in range(n)
                    ]
                s.response(w, tools)
                if not tools:
                    break
                for tool_id, name in tools:
                    if name == "Task":
                        s.task(w, tool_id)
                        continue
                    s.tool_result(w, tool_id, name, _tool_size(rng, budget - w.bytes))
                    if rng.random() < 0.15:
                        s.hook_progress(w, tool_id, name)
                if w.bytes >= budget:
                    break
        if big_at >= 0:
            s.snapshot(w, big_snapshot, "file-history-snapshot_huge")
    finally:
        w.close()
    return w.bytes


def _huge_snapshot_entries(total_bytes: int) -> tuple[int, int]:
    """(how many huge snapshot lines, entries in each): about 2.5 % of the corpus, 2-64 MB."""
    count = max(1, round(total_bytes / (300 << 20)))
    size = min(max(int(total_bytes * 0.025), 2 << 20), 64 << 20)
    return count, max(1, size // 185)  # one tracked-file entry is ~185 bytes


def generate(
    out_dir: str | os.PathLike[str],
    total_bytes: int,
    files: int = 2000,
    seed: int = 1,
    *,
    progress: bool = False,
    span_days: int = SPAN_DAYS,
    base_ms: int = BASE_MS,
) -> dict[str, Any]:
    """Write a transcript tree of about `total_bytes` in `files` files under out_dir/projects,
    its sessions starting within `span_days` from `base_ms` (a year's history: 365).

    Deterministic for (total_bytes, files, seed, span_days, base_ms). Returns the statistics
    (also written to out_dir/corpus.json together with the parameters).
    """
    started = time.monotonic()
    out = Path(out_dir)
    projects = out / "projects"
    if projects.exists():
        raise FileExistsError(f"{projects} exists; remove it first")
    out.mkdir(parents=True, exist_ok=True)
    (out / GENERATING).write_text("generator running\n")
    files = max(1, files)
    rng = random.Random(seed)
    pool = TextPool(random.Random(seed * 7919 + 1))
    stats = Stats()
    expected = Expected()

    # The layout first: sessions (main file + sub-agent files), projects, weights.
    n_projects = max(3, min(len(PROJECT_NAMES) * 3, files // 40 + 3))
    cwds = []
    for i in range(n_projects):
        name = PROJECT_NAMES[i % len(PROJECT_NAMES)]
        owner = ("work", "src", "code/oss")[i // len(PROJECT_NAMES) % 3]
        cwds.append(f"/home/alice/{owner}/{name}")
    project_weights = [1 / (i + 1) ** 0.9 for i in range(n_projects)]
    plan: list[tuple[int, int]] = []  # (session index, -1 main or sub-agent index)
    sessions = 0
    while len(plan) < files:
        subs = rng.randint(1, 3) if rng.random() < 0.2 else 0
        subs = min(subs, files - len(plan) - 1)
        plan.extend((sessions, j) for j in range(subs))
        plan.append((sessions, -1))
        sessions += 1
    weights = [rng.lognormvariate(0.0, 1.4) * (0.25 if j >= 0 else 1.0) for _, j in plan]
    huge_count, huge_entries = _huge_snapshot_entries(total_bytes)
    main_idx = sorted((i for i, (_, j) in enumerate(plan) if j < 0), key=lambda i: -weights[i])
    huge_files = set(main_idx[:huge_count])

    remaining_weight = sum(weights)
    session: _Session | None = None
    current = -1
    used_projects: set[str] = set()
    last_report = time.monotonic()
    for i, (sidx, sub) in enumerate(plan):
        if session is None or current != sidx:
            current = sidx
            srng = random.Random(f"{seed}/{sidx}")
            cwd = srng.choices(cwds, weights=project_weights)[0]
            model = srng.choices(list(MODELS), weights=list(MODELS.values()))[0]
            old = srng.random() < 0.05
            session = _Session(
                rng=srng,
                pool=pool,
                expected=expected,
                stats=stats,
                cwd=cwd,
                session_id=new_uuid(srng),
                model=model,
                version=srng.choice(OLD_VERSIONS if old else VERSIONS),
                branch=srng.choice(BRANCHES),
                t_ms=base_ms + srng.randrange(span_days * 86_400_000),
                cache_object=not old,
                cost_usd=old and srng.random() < 0.5,
                fast=model == "claude-opus-4-6" and srng.random() < 0.1,
                long_context=model == "claude-sonnet-4-5-20250929" and srng.random() < 0.05,
                cache_split=srng.choices(("5m", "1h", "mixed"), weights=(6, 3, 1))[0],
                context=srng.randint(12_000, 30_000),
            )
            used_projects.add(cwd)
        remaining = max(0, total_bytes - stats.bytes)
        budget = max(3_000, int(remaining * weights[i] / remaining_weight))
        remaining_weight -= weights[i]
        slug_dir = projects / claude.slug(session.cwd)
        if sub >= 0:
            agent_id = f"{session.rng.getrandbits(32):08x}"
            child = _Session(
                rng=session.rng,
                pool=pool,
                expected=expected,
                stats=stats,
                cwd=session.cwd,
                session_id=session.session_id,
                model=HAIKU if session.rng.random() < 0.6 else session.model,
                version=session.version,
                branch=session.branch,
                t_ms=session.t_ms + session.rng.randint(60_000, 3_600_000),
                sidechain=True,
                agent_id=agent_id,
                cache_object=session.cache_object,
                context=session.rng.randint(8_000, 20_000),
            )
            path = slug_dir / session.session_id / "subagents" / f"agent-{agent_id}.jsonl"
            _write_session(child, path, budget, subagent=True)
            # agent_progress wrappers repeat (some of) its responses in the parent
            session.pending_agents.append((agent_id, child.responses[:40]))
            stats.subagent_files += 1
        else:
            path = slug_dir / f"{session.session_id}.jsonl"
            _write_session(
                session, path, budget, big_snapshot=huge_entries if i in huge_files else 0
            )
            stats.main_files += 1
        stats.files += 1
        if progress and time.monotonic() - last_report > 5:
            last_report = time.monotonic()
            print(
                f"  {stats.files}/{files} files, {stats.bytes / (1 << 20):.0f} MiB", file=sys.stderr
            )
    stats.projects = len(used_projects)
    result = {
        "params": {
            "total_bytes": total_bytes,
            "files": files,
            "seed": seed,
            "generator_version": GENERATOR_VERSION,
            **({} if span_days == SPAN_DAYS else {"span_days": span_days}),
            **({} if base_ms == BASE_MS else {"base_ms": base_ms}),
        },
        "files": stats.files,
        "main_files": stats.main_files,
        "subagent_files": stats.subagent_files,
        "projects": stats.projects,
        "bytes": stats.bytes,
        "lines": stats.lines,
        "max_line_bytes": stats.max_line_bytes,
        "responses": stats.responses,
        "by_kind": {
            k: {"lines": v[0], "bytes": v[1], "share": round(v[1] / stats.bytes, 4)}
            for k, v in sorted(stats.by_kind.items(), key=lambda kv: -kv[1][1])
        },
        "bad_lines": dict(sorted(stats.bad.items())),
        "api_errors": dict(sorted(stats.api_errors.items())),
        "expected_ccusage": expected.totals(),
        "generated_seconds": round(time.monotonic() - started, 2),
    }
    (out / MANIFEST).write_text(json.dumps(result, indent=1) + "\n")
    (out / GENERATING).unlink()
    return result


def read_manifest(out_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    path = Path(out_dir) / MANIFEST
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def ensure_corpus(
    out_dir: str | os.PathLike[str],
    total_bytes: int,
    files: int = 2000,
    seed: int = 1,
    *,
    progress: bool = False,
) -> tuple[dict[str, Any], bool]:
    """The manifest of a corpus with these parameters at out_dir, generating it if needed.

    Returns (manifest, generated). A directory this module made (manifest or an interrupted
    run's marker) is replaced when the parameters differ; anything else is left alone.
    """
    out = Path(out_dir)
    wanted = {
        "total_bytes": total_bytes,
        "files": files,
        "seed": seed,
        "generator_version": GENERATOR_VERSION,
    }
    restore_appends(out)
    manifest = read_manifest(out)
    if (
        manifest is not None
        and manifest.get("params") == wanted
        and not (out / GENERATING).exists()
        and (out / "projects").is_dir()
    ):
        return manifest, False
    if out.exists() and any(out.iterdir()):
        if manifest is None and not (out / GENERATING).exists():
            raise FileExistsError(f"{out} is not empty and was not made by this generator")
        shutil.rmtree(out)
    return generate(out, total_bytes, files, seed, progress=progress), True


# --------------------------------------------------------------------------------------------
# Appending (the live benchmark) and putting a corpus back afterwards.

APPENDS = ".appends.json"


def _tail_context(path: Path) -> dict[str, Any]:
    """Fields of the last parseable line that has a cwd, read from the end of the file."""
    size = path.stat().st_size
    window = 256 << 10
    with open(path, "rb") as fh:
        while True:
            start = max(0, size - window)
            fh.seek(start)
            data = fh.read(size - start)
            lines = data.split(b"\n")
            if start > 0:
                lines = lines[1:]  # a partial line
            for raw in reversed(lines):
                if b'"cwd"' not in raw:
                    continue
                try:
                    obj = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(obj, dict) and isinstance(obj.get("cwd"), str):
                    return obj
            if start == 0 or window >= 64 << 20:
                return {}
            window *= 4


def remember_size(out_dir: str | os.PathLike[str], path: Path) -> None:
    """Note a file's size before the benchmark appends to it (restore_appends undoes it)."""
    marker = Path(out_dir) / APPENDS
    try:
        sizes = json.loads(marker.read_text())
    except (OSError, ValueError):
        sizes = {}
    sizes.setdefault(str(path), path.stat().st_size)
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(json.dumps(sizes))
    os.replace(tmp, marker)


def restore_appends(out_dir: str | os.PathLike[str]) -> int:
    """Truncate files the benchmark appended to back to their generated size."""
    marker = Path(out_dir) / APPENDS
    try:
        sizes = json.loads(marker.read_text())
    except (OSError, ValueError):
        return 0
    for name, size in sizes.items():
        with contextlib.suppress(OSError):
            os.truncate(name, size)
    marker.unlink()
    return len(sizes)


def append_response(
    path: str | os.PathLike[str],
    rng: random.Random | None = None,
    *,
    model: str | None = None,
    tokens: tuple[int, int, int, int] | None = None,
    timestamp: str | None = None,
    context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Append one new assistant response line (new message.id and requestId) to a transcript.

    cwd, sessionId, version, branch and model come from the file's last lines unless given in
    `context` (pass the returned "context" back to avoid re-reading the tail). The line is
    written with one write() on an O_APPEND descriptor. Returns what was added.
    """
    p = Path(path)
    rng = rng or random.Random()
    ctx = context if context is not None else _tail_context(p)
    found = ctx.get("message")
    msg: dict[str, Any] = found if isinstance(found, dict) else {}
    model = (
        model
        or (msg.get("model") if msg.get("model") not in (None, SYNTHETIC) else None)
        or "claude-sonnet-4-5-20250929"
    )
    if tokens is None:
        tokens = (
            rng.randint(1, 12),
            rng.randint(20, 2000),
            rng.randint(100, 5000),
            rng.randint(20_000, 150_000),
        )
    inp, out, cc, cr = tokens
    usage = transcripts.make_usage(inp, out, cc, cr, cache_1h=0)
    mid = new_message_id(rng)
    rid = new_request_id(rng)
    uuid = new_uuid(rng)
    line = transcripts.assistant(
        mid,
        rid,
        model=model,
        usage=usage,
        content=[{"type": "text", "text": "Done: " + b62(rng, rng.randint(40, 400))}],
        cwd=str(ctx.get("cwd", "/home/alice/work/" + p.parent.name)),
        session=str(ctx.get("sessionId", p.stem)),
        parent_uuid=ctx.get("uuid") if isinstance(ctx.get("uuid"), str) else None,
        sidechain=ctx.get("isSidechain") is True,
        version=str(ctx.get("version", "2.0.37")),
        git_branch=str(ctx.get("gitBranch", "main")),
        agent_id=ctx.get("agentId") if isinstance(ctx.get("agentId"), str) else None,
        timestamp=timestamp or transcripts.now(),
        uuid=uuid,
        stop_reason="end_turn",
        stop_sequence=True,
    )
    data = transcripts.encode(line) + b"\n"
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    new_ctx = dict(ctx)
    new_ctx["uuid"] = uuid
    new_ctx.setdefault("message", {"model": model})
    return {
        "path": str(p),
        "message_id": mid,
        "request_id": rid,
        "model": model,
        "tokens": {"input": inp, "output": out, "cache_creation": cc, "cache_read": cr},
        "total": inp + out + cc + cr,
        "bytes": len(data),
        "context": new_ctx,
    }


def transcript_files(out_dir: str | os.PathLike[str]) -> Iterable[Path]:
    """Every *.jsonl under out_dir/projects, sorted."""
    return sorted((Path(out_dir) / "projects").rglob("*.jsonl"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python bench/generators/corpus.py", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("out_dir")
    ap.add_argument("--size", default="200M", help="total bytes, e.g. 200M, 1G (binary units)")
    ap.add_argument("--files", type=int, default=2000, help="number of .jsonl files")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--force",
        action="store_true",
        help="replace OUT_DIR if this generator made it with other parameters",
    )
    args = ap.parse_args(argv)
    total = parse_size(args.size)
    if args.force:
        manifest, made = ensure_corpus(args.out_dir, total, args.files, args.seed, progress=True)
    else:
        manifest, made = generate(args.out_dir, total, args.files, args.seed, progress=True), True
    brief = {k: v for k, v in manifest.items() if k != "by_kind"}
    print(json.dumps(brief, indent=1))
    print(f"{'kind':28} {'lines':>9} {'MiB':>9} {'share':>6}")
    for kind, v in manifest["by_kind"].items():
        print(f"{kind:28} {v['lines']:>9} {v['bytes'] / (1 << 20):>9.1f} {v['share']:>6.1%}")
    if not made:
        print(f"(re-used the existing corpus in {args.out_dir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
