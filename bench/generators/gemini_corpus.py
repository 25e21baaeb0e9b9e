"""Seeded corpora of Gemini CLI session files: every counting rule's edge cases plus a random
mix shaped like real sessions. Their truth is ccusage's: the conformance tests run
`ccusage gemini daily` on the same tree. Cases where the ledger differs from ccusage by
design (docs/agents/gemini.md, "Where we differ") are kept out of `edge_cases` and built by
`known_differences` for their own tests.

Records are written as Gemini CLI 0.61 writes them (one JSON object a line, a message written
again under its id when its tokens or tool calls arrive) and as older versions wrote whole
`.json` sessions. Files with no timestamp of their own are dated by their mtime, which the
generator sets (MTIME), so every run groups the same days.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MTIME = 1_767_225_600  # 2026-01-01T00:00:00Z
PRICED = (
    "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-3-pro-preview",
    "gemini-3.1-pro-preview", "gemini-3-flash-preview", "gemini-3.5-flash", "gemini-3.8-flash",
)  # fmt: skip
UNPRICED_BY_BOTH = "gemini-9-ultra-scripted"  # neither table knows it: cost 0 on both sides
RECORD_FIELDS = (
    "sessionId", "session_id", "startTime", "lastUpdated", "messages", "type", "id", "model",
    "tokens", "timestamp", "created_at", "stats", "result",
)  # fmt: skip
Line = Mapping[str, Any] | str


@dataclass
class Corpus:
    """A tree under root/tmp (the GEMINI_DATA_DIR) and how many files it holds."""

    root: Path
    files: list[Path] = field(default_factory=list)

    @property
    def data_dir(self) -> Path:
        return self.root / "tmp"

    def write(self, rel: str, content: str | bytes, mtime: float = MTIME) -> Path:
        path = self.data_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        os.utime(path, (mtime, mtime))
        self.files.append(path)
        return path

    def jsonl(self, rel: str, lines: Iterable[Line], mtime: float = MTIME) -> Path:
        text = "".join(
            (line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines
        )
        return self.write(rel, text, mtime)

    def json(self, rel: str, value: Any, mtime: float = MTIME) -> Path:
        return self.write(rel, value if isinstance(value, str) else json.dumps(value), mtime)


def at(day: int, hour: int = 10, minute: int = 0, second: int = 0, millis: int = 0) -> str:
    """A Gemini CLI timestamp in March 2026."""
    return f"2026-03-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.{millis:03d}Z"


def tokens(
    input: int, output: int, cached: int = 0, thoughts: int = 0, tool: int = 0,
    total: int | str | None = "api",
) -> dict[str, Any]:  # fmt: skip
    """A `tokens` object; total "api" is the real API's (cached inside input), None omits it."""
    value: dict[str, Any] = {"input": input, "output": output, "cached": cached,
                             "thoughts": thoughts, "tool": tool}  # fmt: skip
    if total == "api":
        value["total"] = input + output + thoughts + tool
    elif total is not None:
        value["total"] = total
    return value


def message(
    ident: str | None, stamp: str | None, model: str | None, usage: Any, **extra: Any
) -> dict[str, Any]:
    """A `type: gemini` record; None leaves a field out."""
    record: dict[str, Any] = {"type": "gemini", "content": "scripted reply"}
    for key, value in (("id", ident), ("timestamp", stamp), ("model", model), ("tokens", usage)):
        if value is not None:
            record[key] = value
    record.update(extra)
    return record


def header(session: str, start: str | None = None) -> dict[str, Any]:
    value: dict[str, Any] = {"sessionId": session, "projectHash": "0" * 64, "kind": "main"}
    if start:
        value.update(startTime=start, lastUpdated=start)
    return value


def user(ident: str, stamp: str) -> dict[str, Any]:
    return {"id": ident, "timestamp": stamp, "type": "user", "content": [{"text": "scripted"}]}


# ----------------------------------------------------------------------------- edge cases


def cached_rule(c: Corpus) -> None:
    """Cached input leaves `input` only when total equals the parts without it."""
    m = "gemini-2.5-flash"
    c.jsonl("cached/chats/session-a.jsonl", [
        header("cached-a"),
        message("c1", at(2), m, tokens(1000, 10, 300, 5)),                   # api total: inside
        message("c2", at(2), m, tokens(700, 10, 300, 5, total=1015)),        # total with cached
        message("c3", at(2), m, tokens(1000, 10, 300, 0, total=None)),       # no total: outside
        message("c4", at(2), m, tokens(1000, 10, 300, 0, total=5000)),       # other total
        message("c5", at(2), m, tokens(200, 10, 300, 0)),                    # cached > input
        message("c6", at(2), m, tokens(0, 10, 300, 0)),                      # no input at all
        message("c7", at(2), m, tokens(1000, 0, 0, 0, total=0)),             # zero total
        message("c8", at(2), m, tokens(1000, 10, 300, 5, 40)),               # tool inside too
    ])  # fmt: skip


def token_values(c: Corpus) -> None:
    """Spellings, precedence, and values that are not whole non-negative numbers."""
    m = "gemini-2.5-pro"
    c.jsonl("values/chats/session-v.jsonl", [
        header("values"),
        message("v1", at(3), m, {"prompt_tokens": 100, "candidates": 7, "cached_tokens": 20,
                                 "reasoning": 3, "tool_tokens": 2, "total_tokens": 112}),
        message("v2", at(3), m, {"prompt": 90, "output_tokens": 4, "thoughts_tokens": 2}),
        message("v3", at(3), m, {"input_tokens": 80, "candidates_tokens": 6,
                                 "reasoning_tokens": 1}),
        message("v4", at(3), m, {"input": 100, "prompt": 999, "output": 5, "total": 105}),
        message("v5", at(3), m, {"input": None, "prompt": 999, "output": 5}),
        message("v6", at(3), m, {"input": "1000", "output": 10, "cached": 300, "total": 1010}),
        message("v7", at(3), m, {"input": 1000.9, "output": 10.7, "thoughts": 2.5}),
        message("v8", at(3), m, {"input": -5, "output": 10, "total": 10}),
        message("v9", at(3), m, {"input": True, "output": 10, "total": 10}),
        message("v10", at(3), m, {"input": 2**53 + 1, "output": 1}),
        message("v11", at(3), m, {"input": 1e3, "output": 2e1}),
        message("v12", at(3), m, "not an object"),
        message("v13", at(3), m, [1, 2]),
        message("v14", at(3), m, None),
        message("v15", at(3), m, {}),
        message("v16", at(3), m, tokens(0, 0, 0, 0)),
        message("v17", at(3), m, {"total": 654}),
        message("v18", at(3), m, {"input": 100, "output": 10, "total": 900}),
        message("v19", at(3), m, {"thoughts": 50}),
        message("v20", at(3), m, {"input": 100, "thoughts": 20, "total": 500}),
    ])  # fmt: skip


def jsonl_dedup(c: Corpus) -> None:
    """A message written again under its id replaces the first copy; copies without tokens
    do not; ids are trimmed strings; id-less messages each count; no dedup across files."""
    m = "gemini-2.5-flash"
    lines: list[Line] = [
        header("dedup"),
        user("u1", at(4)),
        message("d1", at(4), m, None),  # tokens not yet known
        message("d1", at(4), m, tokens(2000, 20, 1000, 4)),  # now they are
        message("d1", at(4), m, tokens(2000, 20, 1000, 4), toolCalls=[{"id": "t1"}]),
        message("d2", at(4), m, tokens(500, 5)),
        message("d2", at(5), m, tokens(800, 9)),  # later copy wins (and its day)
        message("d2", at(5), m, None),  # a null copy changes nothing
        message(" d3 ", at(4), m, tokens(100, 1)),
        message("d3", at(4), m, tokens(300, 3)),  # same id once trimmed
        message(None, at(4), m, tokens(50, 1)),
        message(None, at(4), m, tokens(50, 1)),  # id-less: both count
        message("", at(4), m, tokens(60, 1)),
        message("", at(4), m, tokens(60, 1)),  # empty id: both count
        {**message("d5", at(4), m, tokens(70, 1)), "id": 5},
        {**message("d5", at(4), m, tokens(70, 1)), "id": 5},  # numeric id: both count
        message("d6", at(4), m, {"input": 10, "output": 1}),
        message("d6", at(4), m, "bad tokens"),  # unusable copy: first stays
    ]
    c.jsonl("dedup/chats/session-d.jsonl", lines)
    c.jsonl("dedup/chats/session-d-copy.jsonl", lines[:5])  # same ids, another file


def legacy_json(c: Corpus) -> None:
    """Whole-file sessions: no dedup inside, dated by message, else startTime/lastUpdated."""
    m = "gemini-2.5-pro"
    c.json("legacy/chats/session-2026-03-06T10-00-aaaa1111.json", {
        **header("legacy-a", at(6, 9)),
        "messages": [
            user("u", at(6)),
            message("l1", at(6, 10), m, tokens(3000, 30, 1000, 10)),
            message("l1", at(6, 10), m, tokens(3000, 30, 1000, 10)),  # counted twice
            message("l2", None, m, tokens(400, 4)),                   # startTime's day
            message("l3", "not a time", m, tokens(500, 5)),
            message("l4", at(7), None, tokens(600, 6)),               # no model: dropped
            {"id": "u2", "type": "user", "tokens": tokens(9999, 9)},  # not gemini
            {**message("l5", at(7), m, tokens(700, 7)), "model": "gemini-2.5-flash"},
            "not an object",
        ],
    })  # fmt: skip
    c.json("legacy/chats/session-b.json", {
        "sessionId": "legacy-b", "startTime": "bad", "lastUpdated": at(8, 1),
        "messages": [message("b1", None, m, tokens(800, 8))],
    })  # fmt: skip
    c.json("legacy/chats/session-c.json", {"messages": [message("c1", None, m, tokens(900, 9))]})
    c.json("legacy/chats/single.json", message("s1", at(9), m, tokens(100, 10, 40)))
    c.json("legacy/chats/single-undated.json", message("s2", None, m, tokens(110, 11)))
    c.json("legacy/chats/not-array.json",
           {**message("n1", at(9), m, tokens(120, 12)), "messages": {"a": 1}})  # fmt: skip
    c.json("legacy/chats/empty-messages.json", {"messages": [], "stats": {"input": 5}})
    c.json(
        "legacy/stats.json",
        {
            "model": m,
            "timestamp": at(10),
            "stats": {
                "models": {
                    "gemini-2.5-flash": {"tokens": {"input": 100, "output": 10, "cached": 400}},
                    "gemini-3-flash-preview": {"tokens": {"input": 50, "output": 5, "cached": 10}},
                }
            },
        },
    )
    c.json(
        "legacy/result.json",
        {
            "timestamp": at(10),
            "model": m,
            "result": {"stats": {"input": 300, "output": 3, "cached": 30}},
        },
    )
    c.json("legacy/undated-stats.json", {"model": m, "stats": {"input": 10, "output": 1}})
    c.json("legacy/array.json", [message("x", at(10), m, tokens(1, 1))])
    c.json(
        "legacy/broken.json", '{"messages": [' + json.dumps(message("y", at(10), m, tokens(1, 1)))
    )
    c.json("legacy/bom.json", "\ufeff" + json.dumps(message("z", at(10), m, tokens(1, 1))))
    c.json("legacy/dup-top.json", '{"sessionId": "a", "sessionId": "b", "messages": ['
           + json.dumps(message("w", at(10), m, tokens(1000, 1))) + "]}")  # fmt: skip
    c.json("legacy/dup-inner.json", '{"messages": [' + json.dumps(message("w", at(10), m,
           tokens(1000, 1)))[:-1] + ', "model": "gemini-2.5-flash"}]}')  # fmt: skip


def jsonl_stats(c: Corpus) -> None:
    """Stats records inside a session log: per-model first, else the flat object."""
    c.jsonl("stats/chats/session-s.jsonl", [
        {"stats": {"input": 10, "output": 1}, "timestamp": at(11)},             # model unknown
        {"model": "gemini-2.5-pro", "x": 1},                                    # model hint
        {"stats": {"input": 100, "output": 10, "cached": 40, "thoughts": 1}, "timestamp": at(11)},
        {"stats": {"models": {"gemini-2.5-flash": {"tokens": {"input": 100, "output": 10,
                   "cached": 40, "total": 110}}}}, "timestamp": at(11)},
        {"stats": {"models": {"gemini-2.5-flash": {"x": 1}}, "input": 20, "output": 2},
         "timestamp": at(11)},                                                   # falls back
        {"stats": {"models": {"gemini-2.5-flash": {"tokens": {"input": 0}}}, "input": 30},
         "timestamp": at(11)},
        {"result": {"stats": {"input": 40, "output": 4}}, "timestamp": at(11)},
        {"stats": None, "timestamp": at(11)},
        {"stats": "text", "timestamp": at(11)},
        {"stats": {"input": 50, "output": 5}},                                  # mtime's day
        {"type": "gemini", "stats": {"input": 60, "output": 6}},                # gemini: no stats
        {"$set": {"messages": [message("set", at(11), "gemini-2.5-pro", tokens(70, 7))]}},
    ])  # fmt: skip


def models(c: Corpus) -> None:
    """The model: the record's own (trimmed), else the last one named earlier in the file."""
    c.jsonl("models/chats/session-m.jsonl", [
        header("models"),
        message("m0", at(12), None, tokens(100, 1)),                  # nothing named yet: out
        message("m1", at(12), "  gemini-2.5-pro  ", tokens(200, 2)),
        message("m2", at(12), None, tokens(300, 3)),                  # inherits pro
        {"model": "gemini-3-flash-preview", "kind": "note"},
        message("m3", at(12), None, tokens(400, 4)),
        message("m4", at(12), "   ", tokens(500, 5)),                 # blank: inherits
        {**message("m5", at(12), None, tokens(600, 6)), "model": 5},  # number: inherits
        message("m6", at(12), UNPRICED_BY_BOTH, tokens(700, 7)),
        {**message("m7", at(12), "gemini-2.5-pro", tokens(800, 8)), "type": "Gemini"},
        {**message("m8", at(12), "gemini-2.5-pro", tokens(900, 9)), "type": "user"},
        {**message("m9", at(12), "gemini-2.5-pro", tokens(950, 9)), "type": 5},
    ])  # fmt: skip
    escaped = json.dumps(message("m12", at(12), "gemini-2.5-pro", tokens(980, 9)))
    c.write("models/chats/session-escaped.jsonl", "\n".join([
        escaped.replace('"gemini"', '"gem\\u0069ni"'),                       # still gemini
        json.dumps({"mod\u0065l": "gemini-3-flash-preview"}, ensure_ascii=False)
        .replace("mode", "mod\\u0065"),                                        # a model hint
        json.dumps(message("m13", at(12), None, tokens(990, 9))),
        escaped.replace('"m12"', '"m14"')[:-1] + ', "tok\\u0065ns": null}',  # named twice
    ]) + "\n")  # fmt: skip


def bad_lines(c: Corpus) -> None:
    """Lines ccusage skips; a record naming one of its fields twice is skipped whole."""
    m = "gemini-2.5-flash"
    good = json.dumps(message("g1", at(13), m, tokens(1000, 10)))
    lines: list[str] = [
        "\ufeff" + json.dumps(message("bom", at(13), m, tokens(5000, 5))),
        json.dumps(header("bad")),
        "{not json",
        good[:-7],  # cut short
        json.dumps(message("nan", at(13), m, tokens(1, 1))).replace('"output": 1', '"output": NaN'),
        "[1, 2]",
        "null",
        "7",
        '"text"',
        "",
        "   ",
        good.replace('"g1"', '"g2"'),
        good.replace('"g1"', '"g3"')[:-1] + ', "content": "a", "content": "b"}',
        good.replace('"g1"', '"g4"').replace('"input": 1000', '"input": 1000, "input": 4000'),
        good.replace('"g1"', '"g5"')[:-1] + ', "text": "\\ud800"}',
    ]
    for index, name in enumerate(RECORD_FIELDS):
        twice = json.dumps(message(f"dup{index}", at(13), m, tokens(100 + index, 1)))
        lines.append(twice[:-1] + f', "{name}": null, "{name}": null}}')
    c.write("bad/chats/session-b.jsonl", "\n".join(lines) + "\n")
    c.write("bad/chats/session-crlf.jsonl",
            "\r\n".join([json.dumps(header("crlf")), good.replace('"g1"', '"r1"'),
                         good.replace('"g1"', '"r2"')]) + "\r\n")  # fmt: skip
    c.write("bad/chats/session-no-newline.jsonl", good.replace('"g1"', '"nl"'))


def timestamps(c: Corpus) -> None:
    """ccusage's strict form only; anything else dates the response by the file's mtime."""
    m = "gemini-2.5-flash"
    forms = [
        "2026-03-14T23:30:00-05:00", "2026-03-14T23:30:00.250+05:30", "2026-03-14T00:00:00Z",
        "2026-03-14T10:00:00.1Z", "2026-03-14T10:00:00.123456Z", "2026-03-14T10:00:00",
        "2026-03-14", "2026-03-14 10:00:00Z", "2026-02-29T10:00:00Z", "2024-02-29T10:00:00Z",
        "2026-03-14T24:00:00Z", "2026-03-14T10:60:00Z", "2026-13-14T10:00:00Z",
        "2026-03-14T10:00:00+0500", "2026-03-14T10:00:00+05:60",
        "2026-03-14T10:00:00+23:59", "2026-03-14T10:00:00+24:00", "2026-03-14T10:00:00-99:00",
        "1970-01-01T00:00:00.000Z",
        "2026-03-14t10:00:00Z", "２０２６-03-14T10:00:00Z", 1773482400, None,
    ]  # fmt: skip
    lines: list[Line] = [header("times")]
    for index, form in enumerate(forms):
        lines.append(message(f"t{index}", form, m, tokens(100 + index, 1)))  # type: ignore[arg-type]
    lines.append({**message("ca", None, m, tokens(77, 7)), "created_at": "2026-03-15T00:00:00Z"})
    lines.append({**message("cb", "bad", m, tokens(78, 7)), "created_at": "2026-03-15T01:00:00Z"})
    c.jsonl("times/chats/session-t.jsonl", lines, mtime=MTIME + 86400 * 3)


def file_names(c: Corpus) -> None:
    """Which files ccusage reads: *.json and *.jsonl anywhere below, by exact extension."""
    m = "gemini-2.5-flash"
    line = [message("f", at(16), m, tokens(100, 1))]
    c.jsonl("files/chats/session-upper.JSONL", line)
    c.jsonl("files/chats/session-x.jsonl.tmp-123", line)
    c.jsonl("files/chats/session-y.jsonl.unreadable-1767225600000", line)
    c.jsonl("files/chats/parent-session/subagent-1.jsonl", line)  # subagents: counted
    c.jsonl("files/elsewhere/deep/deeper/log.jsonl", line)
    c.jsonl("files/chats/.hidden.jsonl", line)
    c.jsonl("files/chats/.jsonl", line)  # no extension at all
    c.write("files/chats/notes.txt", json.dumps(line[0]))
    target = c.jsonl("files/outside/target.jsonl", line)
    link = c.data_dir / "files/chats/link.jsonl"
    link.symlink_to(target)
    (c.data_dir / "files/linked-dir").symlink_to(target.parent, target_is_directory=True)


def pricing(c: Corpus) -> None:
    """Every priced model: each class alone, and the 200k tier by input, by cache, by both."""
    cases = [
        tokens(100_000, 0), tokens(0, 100_000), tokens(100_000, 0, 100_000),
        tokens(200_000, 0), tokens(200_001, 0), tokens(300_000, 0, 300_000),
        tokens(250_000, 1000, 100_000, 500), tokens(100_000, 300_000),
        tokens(1000, 1000, 0, 300_000), tokens(150_000, 10, 0, 0, 60_000),
    ]  # fmt: skip
    for n, model in enumerate((*PRICED, UNPRICED_BY_BOTH)):
        lines = [message(f"p{n}-{i}", at(17 + i % 10, n % 24), model, usage)
                 for i, usage in enumerate(cases)]  # fmt: skip
        c.jsonl(f"pricing/chats/session-{n}.jsonl", lines)


SECTIONS = (cached_rule, token_values, jsonl_dedup, legacy_json, jsonl_stats, models, bad_lines,
            timestamps, file_names, pricing)  # fmt: skip


def edge_cases(root: Path) -> Corpus:
    """Every section above in one tree."""
    corpus = Corpus(root)
    for section in SECTIONS:
        section(corpus)
    return corpus


# ----------------------------------------------------------------------------- random mix


def session_lines(rng: random.Random, session: str, day: int, turns: int) -> list[Line]:
    """One session as Gemini CLI 0.61 writes it: header, user turns, each reply written
    first without tokens (sometimes), then with them, again when a tool call follows."""
    model = rng.choice(PRICED)
    lines: list[Line] = [header(session, at(day, 8))]
    context = rng.randint(2_000, 20_000)
    for turn in range(turns):
        stamp = at(day, 8 + turn // 60 % 16, turn % 60, rng.randint(0, 59), rng.randint(0, 999))
        lines.append(user(str(uuid.UUID(int=rng.getrandbits(128))), stamp))
        lines.append({"$set": {"lastUpdated": stamp}})
        ident = str(uuid.UUID(int=rng.getrandbits(128)))
        context += rng.randint(50, 5_000)
        cached = rng.choice((0, context // 2, context - rng.randint(0, 500)))
        usage = tokens(context, rng.randint(1, 2_000), max(cached, 0), rng.choice((0, 0, 64, 900)),
                       rng.choice((0, 0, 0, 12)))  # fmt: skip
        if rng.random() < 0.3:
            lines.append(message(ident, stamp, model, None))
        lines.append(message(ident, stamp, model, usage))
        if rng.random() < 0.4:
            lines.append(message(ident, stamp, model, usage, toolCalls=[{"id": "call"}]))
        lines.append({"$set": {"lastUpdated": stamp}})
    return lines


def mixed(root: Path, seed: int, sessions: int = 40, max_turns: int = 30) -> Corpus:
    """A seeded mix of sessions over ten days in several projects, some in the old format."""
    rng = random.Random(seed)
    corpus = Corpus(root)
    for n in range(sessions):
        session = str(uuid.UUID(int=rng.getrandbits(128)))
        day = rng.randint(1, 10)
        lines = session_lines(rng, session, day, rng.randint(1, max_turns))
        project = f"project-{n % 5}"
        if rng.random() < 0.2:
            records = [line for line in lines[1:] if isinstance(line, dict) and "id" in line]
            corpus.json(f"{project}/chats/session-{n:03d}.json",
                        {**header(session, at(day, 8)), "messages": records})  # fmt: skip
        else:
            corpus.jsonl(f"{project}/chats/session-{n:03d}-{session[:8]}.jsonl", lines)
    return corpus


# ----------------------------------------------------------------------------- differences


def known_differences(root: Path) -> Corpus:
    """Inputs on which the ledger differs from ccusage by design (docs/agents/gemini.md)."""
    corpus = Corpus(root)
    corpus.jsonl("diff/chats/session-total-short.jsonl", [
        # A total smaller than its parts with thoughts: ccusage prices the thoughts as output
        # but leaves them out of totalTokens; the ledger counts what it prices.
        message("k1", at(20), "gemini-2.5-flash", tokens(1000, 10, 300, 5, total=900)),
    ])  # fmt: skip
    corpus.jsonl("diff/chats/session-unpriced.jsonl", [
        # Models ccusage prices from LiteLLM (some by fuzzy name matching) that the ledger's
        # table, built from Google's page, does not hold: unpriced here, never guessed.
        message("k2", at(21), "gemini-3.1-flash-lite", tokens(1000, 10)),
        message("k3", at(21), "gemini-2.0-flash", tokens(1000, 10)),
        # Rust's trim keeps \x1c..\x1f (not Unicode White_Space), so these names are not
        # gemini-2.5-flash; ccusage's fuzzy match prices them as if they were, we do not.
        message("k4", at(21), "\x1cgemini-2.5-flash\u3000", tokens(960, 9)),
        message("k5", at(21), "gemini-2.5-flash\x1f", tokens(970, 9)),
    ])  # fmt: skip
    return corpus
