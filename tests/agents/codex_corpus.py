"""A seeded generator of Codex CLI homes holding every edge case of ccusage's Codex rules.

The files look like Codex's rollouts (session_meta, turn_context, thread_settings_applied,
token_count with last/total usage) plus the cases ccusage has rules for: cumulative-only
counters and their resets, repeated snapshots, clamped cache counts, field aliases and
numeric strings, numeric and offset timestamps, fallback and auto-review models, forks and
sub-agents that replay their parent's history, copies across rollouts and archives, service
tiers, long-context requests, saved `codex exec --json` output, and lines that are broken.
The truth for these files is what `ccusage codex daily` says; the manifest only counts which
rules the corpus exercises (so a test can insist that each one is present).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODELS = ("gpt-5", "gpt-5-codex", "gpt-5.1-codex", "gpt-5.2", "gpt-5.3-codex", "gpt-5.4", "gpt-5.5")
CHEAP = ("gpt-5-mini", "gpt-5.4-mini", "gpt-5.4-nano", "gpt-4.1")
UNPRICED = "acme-unpriced-model"


def compact(value: Any) -> str:
    """Codex writes compact JSON; ccusage's byte pre-filter relies on it."""
    return json.dumps(value, separators=(",", ":"))


def stamp(moment: dt.datetime) -> str:
    """Codex's timestamp form: UTC with milliseconds."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.") + (
        f"{moment.microsecond // 1000:03d}Z"
    )


@dataclass
class Totals:
    """A session's running usage, as Codex keeps total_token_usage."""

    input: int = 0
    cached: int = 0
    write: int = 0
    output: int = 0
    reasoning: int = 0

    def add(self, usage: dict[str, int]) -> None:
        self.input += usage["input_tokens"]
        self.cached += usage["cached_input_tokens"]
        self.write += usage.get("cache_write_input_tokens", 0)
        self.output += usage["output_tokens"]
        self.reasoning += usage["reasoning_output_tokens"]

    def usage(self) -> dict[str, int]:
        return {
            "input_tokens": self.input,
            "cached_input_tokens": self.cached,
            "cache_write_input_tokens": self.write,
            "output_tokens": self.output,
            "reasoning_output_tokens": self.reasoning,
            "total_tokens": self.input + self.output,
        }


@dataclass
class Corpus:
    """Where the corpus went and which rules it exercises (counts per rule)."""

    home: Path
    rules: Counter[str] = field(default_factory=Counter)
    files: list[Path] = field(default_factory=list)


class Writer:
    """Builds one home's rollouts from a seeded random source."""

    def __init__(self, home: Path, seed: int, start: dt.datetime) -> None:
        self.home = home
        self.rng = random.Random(seed)
        self.clock = start
        self.corpus = Corpus(home)
        self.serial = 0

    # -- primitives --

    def tick(self, low: float = 2.0, high: float = 90.0) -> dt.datetime:
        self.clock += dt.timedelta(seconds=self.rng.uniform(low, high))
        return self.clock

    def usage(self, big: bool = False) -> dict[str, int]:
        """One response's usage in OpenAI's accounting: cached and cache-write inside input,
        reasoning inside output."""
        tokens_in = self.rng.randint(280_000, 400_000) if big else self.rng.randint(500, 60_000)
        cached = self.rng.randint(0, tokens_in)
        write = self.rng.choice((0, 0, self.rng.randint(0, tokens_in - cached)))
        tokens_out = self.rng.randint(1, 4_000)
        reasoning = self.rng.randint(0, tokens_out)
        return {
            "input_tokens": tokens_in,
            "cached_input_tokens": cached,
            "cache_write_input_tokens": write,
            "output_tokens": tokens_out,
            "reasoning_output_tokens": reasoning,
            "total_tokens": tokens_in + tokens_out,
        }

    def path(self, folder: str = "sessions", moment: dt.datetime | None = None) -> Path:
        self.serial += 1
        moment = moment or self.clock
        name = f"rollout-{moment:%Y-%m-%dT%H-%M-%S}-{self.serial:04d}.jsonl"
        return self.home / folder / f"{moment:%Y/%m/%d}" / name

    def write(self, path: Path, lines: list[str], rule: str | None = None) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        self.corpus.files.append(path)
        if rule:
            self.corpus.rules[rule] += 1
        return path

    def meta(self, session: str, moment: dt.datetime, **extra: Any) -> str:
        payload = {"id": session, "timestamp": stamp(moment), "cwd": f"/work/{session[:6]}"}
        payload.update(extra)
        return compact({"timestamp": stamp(moment), "type": "session_meta", "payload": payload})

    @staticmethod
    def context(moment: dt.datetime, model: str) -> str:
        payload = {"model": model, "cwd": "/work/project"}
        return compact({"timestamp": stamp(moment), "type": "turn_context", "payload": payload})

    @staticmethod
    def tier(moment: dt.datetime, tier: str) -> str:
        settings = {"model": "ignored-by-ccusage", "service_tier": tier}
        payload = {"type": "thread_settings_applied", "thread_settings": settings}
        return compact({"timestamp": stamp(moment), "type": "event_msg", "payload": payload})

    @staticmethod
    def count(moment: dt.datetime | str | int, info: dict[str, Any], **payload: Any) -> str:
        when = stamp(moment) if isinstance(moment, dt.datetime) else moment
        body = {"type": "token_count", "info": info, **payload}
        return compact({"timestamp": when, "type": "event_msg", "payload": body})

    @staticmethod
    def event(moment: dt.datetime, payload: Any) -> str:
        return compact({"timestamp": stamp(moment), "type": "event_msg", "payload": payload})

    @staticmethod
    def info(totals: Totals, usage: dict[str, int]) -> dict[str, Any]:
        return {"total_token_usage": totals.usage(), "last_token_usage": usage}

    def session_id(self) -> str:
        self.serial += 1
        return f"{self.rng.getrandbits(64):016x}-{self.serial:04d}"

    # -- sessions --

    def normal(self, turns: int, model: str, big: bool = False) -> list[dict[str, Any]]:
        """A plain rollout: last and total on every token_count, as Codex writes them."""
        session = self.session_id()
        start = self.tick()
        lines = [self.meta(session, start), self.context(start, model)]
        totals = Totals()
        history = []
        for _ in range(turns):
            usage = self.usage(big=big and self.rng.random() < 0.5)
            totals.add(usage)
            moment = self.tick()
            info = {"total_token_usage": totals.usage(), "last_token_usage": usage}
            lines.append(self.count(moment, info))
            history.append({"moment": moment, "info": info})
            if self.rng.random() < 0.3:
                lines.append(self.count(self.tick(0.1, 1), info))  # repeated snapshot
                self.corpus.rules["repeated_snapshot"] += 1
        self.write(self.path(moment=start), lines, "normal")
        return [{"session": session, "start": start, "history": history, "model": model}]

    def cumulative_only(self) -> None:
        """Only total_token_usage: per-turn deltas, a counter reset, a zero delta."""
        start = self.tick()
        lines = [self.meta(self.session_id(), start), self.context(start, "gpt-5.2")]
        totals = Totals()
        for turn in range(6):
            totals.add(self.usage())
            if turn == 4:  # the counters restart lower: ccusage saturates at zero
                totals = Totals()
                totals.add(self.usage())
                self.corpus.rules["counter_reset"] += 1
            lines.append(self.count(self.tick(), {"total_token_usage": totals.usage()}))
        lines.append(self.count(self.tick(), {"total_token_usage": totals.usage()}))
        self.write(self.path(moment=start), lines, "cumulative_only")

    def last_only(self) -> None:
        """Only last_token_usage, the same numbers twice (both count: no total to compare)."""
        start = self.tick()
        usage = self.usage()
        lines = [self.context(start, "gpt-5-mini")]
        lines += [self.count(self.tick(), {"last_token_usage": usage}) for _ in range(2)]
        self.write(self.path(moment=start), lines, "last_only")

    def clamps_and_aliases(self) -> None:
        """cached > input, cache writes beyond the rest, aliases, numeric strings, total 0."""
        start = self.tick()
        lines = [self.context(start, "gpt-5.4-mini")]
        usages: list[dict[str, Any]] = [
            {"input_tokens": 100, "cached_input_tokens": 900, "output_tokens": 7},
            {"input_tokens": 1000, "cached_input_tokens": 600, "cache_write_input_tokens": 900},
            {"prompt_tokens": 5000, "cached_tokens": 1200, "completion_tokens": 300},
            {"input": 700, "cache_read_input_tokens": 100, "output": 20, "reasoning_tokens": 5},
            {"input_tokens": "4200", "cached_input_tokens": " 200 ", "output_tokens": "+17"},
            {"input_tokens": 300, "cache_creation_input_tokens": 120, "output_tokens": 3},
            {"input_tokens": 300, "cache_write_input_tokens": 50, "cache_creation_input_tokens": 9},
            {
                "input_tokens": 10,
                "output_tokens": 4,
                "reasoning_output_tokens": 1,
                "total_tokens": 0,
            },
            {
                "input_tokens": -5,
                "output_tokens": 2.5,
                "cached_input_tokens": "x",
                "total_tokens": 9,
            },
            {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},  # empty: not counted
            {"input_tokens": True, "output_tokens": 11},
        ]
        lines += [self.count(self.tick(), {"last_token_usage": usage}) for usage in usages]
        self.write(self.path(moment=start), lines, "clamps_and_aliases")

    def models(self) -> None:
        """No turn_context (gpt-5 fallback), model in payload / info / model_name / metadata,
        codex-auto-review on dates across its snapshot, an unpriced model."""
        start = self.tick()
        lines = [self.count(self.tick(), {"last_token_usage": self.usage()})]
        lines.append(self.count(self.tick(), {"last_token_usage": self.usage()}, model="gpt-5.5"))
        lines.append(self.count(self.tick(), {"last_token_usage": self.usage()}))
        info: dict[str, Any] = {"last_token_usage": self.usage(), "model_name": "gpt-5.1-codex"}
        lines.append(self.count(self.tick(), info))
        info = {"last_token_usage": self.usage(), "metadata": {"model": "gpt-4.1"}}
        lines.append(self.count(self.tick(), info))
        lines.append(self.context(self.tick(), UNPRICED))
        lines.append(self.count(self.tick(), {"last_token_usage": self.usage()}))
        lines.append(self.context(self.tick(), "  "))  # blank: keeps the current model
        lines.append(self.count(self.tick(), {"last_token_usage": self.usage()}))
        self.write(self.path(moment=start), lines, "models")
        review = []
        for day in ("2025-08-01", "2025-10-01", "2025-12-20", "2026-03-05", "2026-05-01"):
            noon = dt.datetime.fromisoformat(day + "T12:00:00+00:00")
            review.append(self.context(noon, "codex-auto-review"))
            review.append(self.count(day + "T12:00:01.250Z", {"last_token_usage": self.usage()}))
        self.write(self.path(moment=start), review, "auto_review")

    def timestamps(self) -> None:
        """Epoch seconds and milliseconds, +05:30 and -08:00 offsets near midnight."""
        start = self.tick()
        base = int(self.clock.timestamp())
        lines = [self.context(start, "gpt-5")]
        lines.append(self.count(base + 10, {"last_token_usage": self.usage()}))
        lines.append(self.count((base + 20) * 1000 + 123, {"last_token_usage": self.usage()}))
        day = self.clock.strftime("%Y-%m-%d")
        lines.append(self.count(day + "T00:20:00.500+05:30", {"last_token_usage": self.usage()}))
        lines.append(self.count(day + "T20:30:00-08:00", {"last_token_usage": self.usage()}))
        lines.append(self.count(day + "T23:59:59Z", {"last_token_usage": self.usage()}))
        self.write(self.path(moment=start), lines, "timestamps")

    def broken(self) -> None:
        """Lines ccusage skips: bad JSON, wrong field types, spaced JSON, a cut last line."""
        start = self.tick()
        good = {"last_token_usage": self.usage()}
        lines = [self.context(start, "gpt-5"), self.count(self.tick(), good)]
        lines.append(
            '{"timestamp":"2026-01-01T00:00:00.000Z","type":"event_msg","payload":{"type":"token_count",'
        )
        lines.append("[1,2,3]")
        wrong = json.loads(self.count(self.tick(), {"last_token_usage": self.usage()}))
        wrong["payload"]["model"] = 42
        lines.append(compact(wrong))
        floaty = json.loads(self.count(self.tick(), {"last_token_usage": self.usage()}))
        floaty["timestamp"] = 1767312001.5
        lines.append(compact(floaty))
        spaced = self.count(self.tick(), {"last_token_usage": self.usage()})
        lines.append(json.dumps(json.loads(spaced)))  # spaced JSON: ccusage's filter skips it
        lines.append(self.event(self.tick(), "x"))
        lines.append(self.event(self.tick(), {"type": "token_count", "info": "not-an-object"}))
        lines.append(
            compact({"type": "event_msg", "payload": {"type": "token_count", "info": good}})
        )
        path = self.write(self.path(moment=start), lines, "broken")
        with path.open("a", encoding="utf-8") as handle:  # a line cut mid-write
            handle.write(self.count(self.tick(), {"last_token_usage": self.usage()})[:57])

    def copies(self, sessions: list[dict[str, Any]]) -> None:
        """One rollout copied whole into archived_sessions/ under the same relative path
        (the active copy wins), one copied under another name (events deduplicated), and an
        archive-only rollout."""
        source = self.corpus.files[0]
        relative = source.relative_to(self.home / "sessions")
        twin = self.home / "archived_sessions" / relative
        twin.parent.mkdir(parents=True, exist_ok=True)
        extra = self.count(self.tick(), {"last_token_usage": self.usage()})
        twin.write_bytes(source.read_bytes() + extra.encode() + b"\n")  # ignored: active wins
        self.corpus.files.append(twin)
        self.corpus.rules["archived_same_path"] += 1
        other = self.corpus.files[1]
        copy = other.with_name("rollout-copy-" + other.name)
        copy.write_bytes(other.read_bytes())
        self.corpus.files.append(copy)
        self.corpus.rules["copied_rollout"] += 1
        start = self.tick()
        lines = [self.context(start, "gpt-5-codex")]
        lines.append(self.count(self.tick(), {"last_token_usage": self.usage()}))
        self.write(self.path("archived_sessions", start), lines, "archive_only")

    def forks(self, parent: dict[str, Any]) -> None:
        """Children of a parent session: a fork replaying the parent's first turns at the fork
        instant, a spawned sub-agent doing the same, and forks whose parent is missing (one
        with the dense replay burst, one whose first turns are seconds apart)."""
        history = parent["history"]
        cut = max(1, len(history) - 1)
        fork_time = history[cut - 1]["moment"] + dt.timedelta(seconds=3)
        for kind in ("forked_from_id", "thread_spawn"):
            child = self.session_id()
            extra: dict[str, Any]
            if kind == "forked_from_id":
                extra = {"forked_from_id": parent["session"]}
            else:
                spawn = {"parent_thread_id": parent["session"], "depth": 1}
                extra = {"source": {"subagent": {"thread_spawn": spawn}}}
            lines = [self.meta(child, fork_time, **extra), self.context(fork_time, parent["model"])]
            for index, turn in enumerate(history[:cut]):
                replayed = fork_time + dt.timedelta(milliseconds=3 + index * 4)
                lines.append(self.count(replayed, turn["info"]))
            self.own_turns(lines, history[cut - 1]["info"]["total_token_usage"], fork_time)
            self.write(self.path(moment=fork_time), lines, "fork_" + kind)
        for dense in (True, False):
            child = self.session_id()
            moment = self.tick()
            lines = [self.meta(child, moment, forked_from_id="missing-parent")]
            lines.append(self.context(moment, "gpt-5.3-codex"))
            totals = Totals()
            for index in range(3):
                usage = self.usage()
                totals.add(usage)
                gap = 0.004 * (index + 1) if dense else 2.5 * (index + 1)
                when = moment + dt.timedelta(seconds=gap)
                lines.append(self.count(when, self.info(totals, usage)))
            self.own_turns(lines, totals.usage(), moment + dt.timedelta(seconds=9))
            rule = "orphan_fork_dense" if dense else "orphan_fork_sparse"
            self.write(self.path(moment=moment), lines, rule)

    def own_turns(self, lines: list[str], carried: dict[str, int], after: dt.datetime) -> None:
        totals = Totals(
            carried["input_tokens"],
            carried["cached_input_tokens"],
            carried.get("cache_write_input_tokens", 0),
            carried["output_tokens"],
            carried["reasoning_output_tokens"],
        )
        moment = after
        for _ in range(2):
            moment += dt.timedelta(seconds=self.rng.uniform(6, 20))
            usage = self.usage()
            totals.add(usage)
            lines.append(self.count(moment, self.info(totals, usage)))
        self.clock = max(self.clock, moment)

    def tiers(self) -> None:
        """Recorded service tiers: default, priority, a settings event without a tier (keeps
        the last), an unknown tier (config.toml decides), fast."""
        start = self.tick()
        lines = [self.context(start, "gpt-5.4")]
        for tier in ("default", "priority", None, "flex", "fast", "standard"):
            if tier is None:
                payload = {"type": "thread_settings_applied", "thread_settings": {"model": "x"}}
                lines.append(self.event(self.tick(), payload))
            else:
                lines.append(self.tier(self.tick(), tier))
            lines.append(self.count(self.tick(), {"last_token_usage": self.usage()}))
        self.write(self.path(moment=start), lines, "service_tiers")

    def headless(self) -> None:
        """Saved `codex exec --json` output: usage at the top, under data/result/response,
        with and without timestamps (ccusage then uses the file's mtime)."""
        start = self.tick()
        moment = stamp(self.tick())
        records: list[dict[str, Any]] = [
            {
                "type": "turn.completed",
                "timestamp": moment,
                "model": "gpt-5.2",
                "usage": {"input_tokens": 1200, "cached_input_tokens": 200, "output_tokens": 30},
            },
            {
                "type": "result",
                "data": {
                    "created_at": stamp(self.tick()),
                    "model_name": "gpt-5.2",
                    "usage": {"prompt_tokens": 50, "cached_tokens": 5, "completion_tokens": 12},
                },
            },
            {
                "type": "result",
                "response": {
                    "createdAt": int(self.clock.timestamp()),
                    "usage": {"input_tokens": 90, "output_tokens": 9},
                },
            },
            {"type": "turn.completed", "usage": {"input_tokens": 9, "output_tokens": 4}},
            {"type": "turn.completed", "usage": {"input_tokens": 0, "output_tokens": 0}},
        ]
        self.write(self.path(moment=start), [compact(record) for record in records], "headless")


def generate(home: Path, seed: int, *, fast_config: bool = False, sessions: int = 6) -> Corpus:
    """A Codex home under `home` with every rule's edge cases (seeded, so reproducible)."""
    start = dt.datetime(2026, 2, 27, 21, 0, tzinfo=dt.UTC) + dt.timedelta(days=seed % 5)
    writer = Writer(home, seed, start)
    parents = []
    for index in range(sessions):
        model = writer.rng.choice(MODELS if index % 2 == 0 else CHEAP)
        big = model in ("gpt-5.4", "gpt-5.5")
        parents += writer.normal(writer.rng.randint(2, 6), model, big=big)
        if writer.rng.random() < 0.4:
            writer.clock += dt.timedelta(hours=writer.rng.uniform(3, 30))
    writer.normal(3, "gpt-5.4", big=True)
    writer.cumulative_only()
    writer.last_only()
    writer.clamps_and_aliases()
    writer.models()
    writer.timestamps()
    writer.broken()
    writer.copies(parents)
    writer.forks(max(parents, key=lambda p: len(p["history"])))
    writer.tiers()
    writer.headless()
    if fast_config:
        config = 'model = "gpt-5.4"\nservice_tier = "fast" # priority lane\n'
        (home / "config.toml").write_text(config)
        writer.corpus.rules["config_fast"] += 1
    return writer.corpus


# --- mutation fuzz: small homes with lines broken in every way a field can break ------------

ODD_VALUES: tuple[Any, ...] = (
    None, True, False, -1, 1.5, "12", " 7 ", "x", "", [], {}, 2**64, 2**40, 10**30, "+5", "-5", 0,
)  # fmt: skip


def _fuzz_session(rng: random.Random) -> list[dict[str, Any]]:
    """One short rollout: meta, context, token counts with last and/or total usage, and now
    and then a service tier, a headless record, a fork header, a large request, a repeat."""
    meta = {"id": f"s{rng.randint(0, 3)}", "cwd": "/work/fuzz"}
    lines: list[dict[str, Any]] = [
        {"timestamp": "2026-03-01T10:00:00.000Z", "type": "session_meta", "payload": meta},
        {
            "timestamp": "2026-03-01T10:00:00.000Z",
            "type": "turn_context",
            "payload": {"model": rng.choice(["gpt-5", "gpt-5.4", "gpt-5-mini"])},
        },
    ]
    totals = Totals()
    for turn in range(rng.randint(1, 6)):
        last = {
            "input_tokens": rng.randint(0, 5000),
            "cached_input_tokens": rng.randint(0, 6000),
            "output_tokens": rng.randint(0, 300),
            "reasoning_output_tokens": rng.randint(0, 50),
        }
        last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
        totals.add(last)
        pick = rng.random()
        info = {"last_token_usage": last} if pick < 0.7 else {}
        if pick > 0.3:
            info["total_token_usage"] = totals.usage()
        when = f"2026-03-01T10:{turn + 1:02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z"
        body = {"type": "token_count", "info": info}
        lines.append({"timestamp": when, "type": "event_msg", "payload": body})
    extra: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        tier = rng.choice(["fast", "priority", "default", "standard", "flex", None, 5])
        settings = {"type": "thread_settings_applied", "thread_settings": {"service_tier": tier}}
        extra.append(
            {"timestamp": "2026-03-01T10:00:30.000Z", "type": "event_msg", "payload": settings}
        )
    if rng.random() < 0.3:
        usage = {"input_tokens": rng.randint(0, 900), "cached_input_tokens": rng.randint(0, 900)}
        extra.append({
            "type": "turn.completed",
            "timestamp": rng.choice(["2026-03-01T11:00:00.000Z", 1772362800, "bad", None]),
            "model": rng.choice(["gpt-5.4", None, "codex-auto-review"]),
            "usage": {**usage, "output_tokens": rng.randint(0, 90)},
        })  # fmt: skip
    if rng.random() < 0.3:
        meta["forked_from_id"] = f"s{rng.randint(0, 3)}"
        lines[0]["timestamp"] = f"2026-03-01T10:{rng.randint(0, 8):02d}:00.000Z"
    if rng.random() < 0.2:
        usage = {"input_tokens": 300000, "cached_input_tokens": 100, "output_tokens": 10}
        models: list[Any] = ["gpt-5.5", "gpt-5.4-mini", 7]
        large = {"type": "token_count", "model": rng.choice(models)}
        large["info"] = {"last_token_usage": usage}
        extra.append(
            {"timestamp": "2026-03-01T10:00:40.000Z", "type": "event_msg", "payload": large}
        )
    for line in extra:
        lines.insert(rng.randint(1, len(lines)), line)
    if rng.random() < 0.3 and len(lines) > 3:
        index = rng.randint(2, len(lines) - 1)
        lines.insert(index, dict(lines[index]))
    return lines


def _mutate(rng: random.Random, line: dict[str, Any]) -> dict[str, Any]:
    """The line with one field (at any depth) set to an odd value or removed."""
    copy: dict[str, Any] = json.loads(json.dumps(line))
    paths: list[list[str]] = []

    def walk(node: Any, path: list[str]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                paths.append([*path, key])
                walk(value, [*path, key])

    walk(copy, [])
    path = rng.choice(paths)
    holder = copy
    for key in path[:-1]:
        holder = holder[key]
    value = rng.choice(ODD_VALUES)
    if path[-1] == "timestamp" and isinstance(value, str) and not value.strip().isdigit():
        value = rng.choice([1772359200, 1772359200123, None, 1.5, True])  # ccusage would stop
    if path[-1] in ("model", "model_name") and isinstance(value, str):
        value = rng.choice([5, None, [], {}])  # ccusage's fuzzy name match is not followed
    if rng.random() < 0.15:
        holder.pop(path[-1])
    else:
        holder[path[-1]] = value
    return copy


def fuzz_home(home: Path, rng: random.Random) -> None:
    """A home of one to three mutated rollouts (sessions/ or archived_sessions/), now and then
    with a config.toml asking for the fast tier."""
    for number in range(rng.randint(1, 3)):
        out = []
        for line in _fuzz_session(rng):
            if rng.random() < 0.25:
                line = _mutate(rng, line)
            out.append(json.dumps(line) if rng.random() < 0.03 else compact(line))
        folder = rng.choice(["sessions", "sessions", "archived_sessions"])
        path = home / folder / "2026" / "03" / "01" / f"rollout-{number}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(out) + "\n", encoding="utf-8")
    if rng.random() < 0.3:
        (home / "config.toml").write_text('service_tier = "fast"\n', encoding="utf-8")
