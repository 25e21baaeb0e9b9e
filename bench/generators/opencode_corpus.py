"""OpenCode data directories that exercise every rule of `ccusage opencode daily` 20.0.24.

Each builder in RULES writes one rule's edge cases into a directory laid out as OpenCode's
data directory (an `opencode*.db` SQLite file and/or `storage/message/**.json`) and returns
the environment that points ccusage at it. The truth is ccusage's report on the same files:
the tests run both readers; nothing here states an expected total.

Messages are spread over days of November 2026 so that a wrong rule shows in the day it
belongs to. Everything is deterministic (fixed ids, fixed times, `random.Random(seed)`).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DAY_MS = 86_400_000
NOV_1 = 1_793_491_200_000  # 2026-11-01T00:00:00Z, in ms
PRICED = ("claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5")
# Priced too, but their pages give no cache-write price (ccusage charges 1.25x input, we
# leave such an entry unpriced), so corpora give them no cache writes.
NO_CACHE_WRITE = ("gpt-5", "gpt-5-codex", "gemini-2.5-pro")
UNPRICED = ("standin-coder",)

MESSAGE_TABLE = """CREATE TABLE `message` (
  `id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL)"""
SESSION_MESSAGE_TABLE = """CREATE TABLE `session_message` (
  `id` text PRIMARY KEY, `session_id` text NOT NULL, `type` text NOT NULL,
  `seq` integer NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `data` text NOT NULL)"""


def at(day: int, hour: int = 12, minute: int = 0) -> int:
    """Epoch ms of a time in November 2026 (UTC)."""
    return NOV_1 + (day - 1) * DAY_MS + (hour * 60 + minute) * 60_000


def tokens(
    inp: int = 0, out: int = 0, read: int = 0, write: int = 0, reasoning: int = 0,
    total: int | None = None,
) -> dict[str, Any]:  # fmt: skip
    """A `tokens` block as OpenCode writes it (total = the sum, unless given)."""
    if total is None:
        total = inp + out + read + write + reasoning
    return {"total": total, "input": inp, "output": out, "reasoning": reasoning,
            "cache": {"write": write, "read": read}}  # fmt: skip


def assistant(
    ident: str | None, created: int, tok: Any, model: Any = "claude-sonnet-4-5",
    provider: Any = "anthropic", session: str = "ses_corpus", cost: Any = 0, **extra: Any,
) -> dict[str, Any]:  # fmt: skip
    """An assistant message in OpenCode's shape (id/sessionID only matter for files)."""
    message: dict[str, Any] = {"role": "assistant", "mode": "build", "agent": "build",
                               "path": {"cwd": "/work/demo", "root": "/work/demo"},
                               "cost": cost, "tokens": tok, "modelID": model,
                               "providerID": provider, "time": {"created": created},
                               "finish": "stop"}  # fmt: skip
    if ident is not None:
        message["id"] = ident
    message["sessionID"] = session
    message.update(extra)
    for key in [key for key, value in message.items() if value is _DROP]:
        del message[key]
    return message


_DROP = object()  # pass as a field's value to leave the field out


def user(ident: str, created: int, session: str = "ses_corpus") -> dict[str, Any]:
    """A user message: no tokens, never counted."""
    return {"id": ident, "sessionID": session, "role": "user", "time": {"created": created},
            "agent": "build", "model": {"providerID": "anthropic", "modelID": "x"}}  # fmt: skip


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


@dataclass
class Corpus:
    """A tree to read, the environment that points ccusage (and `roots()`) at it, and the
    HOME both must run with."""

    base: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.base / "home"


class Root:
    """One OpenCode data directory being written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)

    def db(self, name: str = "opencode.db", schema: Iterable[str] = (MESSAGE_TABLE,)) -> Db:
        return Db(self.path / name, schema)

    def file(self, relative: str, content: Any) -> Path:
        """A legacy message file under storage/message (dicts as JSON, str/bytes as is)."""
        path = self.path / "storage" / "message" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content if isinstance(content, str) else dumps(content))
        return path


class Db:
    """An OpenCode database with its real `message` (and `session_message`) schema."""

    def __init__(self, path: Path, schema: Iterable[str]) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(path)
        for statement in schema:
            self.connection.execute(statement)

    def message(self, ident: Any, data: Any, session: Any = "ses_corpus", created: int = 0) -> None:
        """A `message` row; data dicts are written as JSON, other values as they are."""
        text = dumps(data) if isinstance(data, dict) else data
        columns = [row[1] for row in self.connection.execute("PRAGMA table_info(message)")]
        if "time_created" in columns:
            self.connection.execute(
                "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                (ident, session, created, created, text),
            )
        else:
            self.connection.execute("INSERT INTO message VALUES (?, ?, ?)", (ident, session, text))

    def v2(self, ident: str, kind: str, data: Any, created: int, session: str = "ses_v2") -> None:
        """A `session_message` row (the v2 schema)."""
        text = dumps(data) if isinstance(data, dict) else data
        seq = self.connection.execute("SELECT count(*) FROM session_message").fetchone()[0]
        self.connection.execute(
            "INSERT INTO session_message VALUES (?, ?, ?, ?, ?, ?, ?)",
            (ident, session, kind, seq, created, created, text),
        )

    def close(self) -> None:
        self.connection.commit()
        self.connection.close()


def single(base: Path) -> tuple[Corpus, Root]:
    """A corpus of one data directory, named by OPENCODE_DATA_DIR."""
    root = Root(base / "data")
    return Corpus(base, {"OPENCODE_DATA_DIR": str(root.path)}), root


# ------------------------------------------------------------------------------------ rules


def rule_database_basics(base: Path) -> Corpus:
    """Rows of `message`: priced models, a stated cost (used when > 0), zero and negative
    costs (priced from the table), user rows, unpriced models, every token class."""
    corpus, root = single(base)
    db = root.db()
    db.message("msg_u1", user("msg_u1", at(1, 9)))
    db.message("msg_a1", assistant(None, at(1, 9, 1), tokens(1200, 300, 5000, 800)))
    db.message("msg_a2", assistant(None, at(1, 9, 2), tokens(10, 20, 30, 40), cost=0.125))
    db.message("msg_a3", assistant(None, at(2), tokens(500, 50), "gpt-5", "openai", cost=-1))
    db.message("msg_a4", assistant(None, at(2), tokens(500, 50, 4000), "gpt-5-codex", "openai"))
    db.message("msg_a5", assistant(None, at(3), tokens(7, 8, 9, 10), "claude-haiku-4-5"))
    db.message("msg_a6", assistant(None, at(3), tokens(70, 80, 90, 100), "claude-opus-4-5"))
    db.message("msg_a7", assistant(None, at(4), tokens(1, 2, 3, 4), "standin-coder", "standin"))
    db.message("msg_a8", assistant(None, at(4), tokens(1, 2, 3), "standin-coder", cost=0.5))
    db.message("msg_a9", assistant(None, at(5), tokens(), cost=0.75))  # no tokens: skipped
    db.message("msg_a10", assistant(None, at(5), tokens(3, 1), cost=1))  # integer cost
    db.close()
    return corpus


def rule_reasoning_and_total(base: Path) -> Corpus:
    """Reasoning tokens start `extra`; a `total` above the parts fills output when output
    is 0, else adds to extra; a smaller total changes nothing; extra is priced as output."""
    corpus, root = single(base)
    db = root.db()
    cases = [
        tokens(100, 10, reasoning=5),  # OpenCode's own shape: total = parts + reasoning
        tokens(100, 10, reasoning=5, total=0),
        tokens(100, 10, reasoning=5, total=200),
        tokens(100, 0, reasoning=5, total=200),
        tokens(100, 10, reasoning=5, total=50),
        {"total": 123},
        {"reasoning": 9},
        {"input": 100, "output": 10, "reasoning": -5, "total": 100},
        tokens(250_000, 90_000, 10_000, reasoning=150_000),  # extra pushes output past 200k
    ]
    for day, tok in enumerate(cases, start=1):
        db.message(f"msg_r{day}", assistant(None, at(day), tok))
    db.close()
    return corpus


def rule_lenient_numbers(base: Path) -> Corpus:
    """Only non-negative JSON integers count (u64): strings, floats (even 1024.0 and 1e2),
    negatives, null, booleans, objects and ints past u64 read 0; a non-object `cache` is
    absent; duplicates inside `tokens`/`cache` keep the last value."""
    corpus, root = single(base)
    db = root.db()
    cases: list[Any] = [
        {"input": 100},
        {"input": "100"},
        {"input": 100.7},
        {"input": -5, "output": 10},
        {"input": None, "output": 10},
        {"input": True, "output": 10},
        {"input": 1e20, "output": 1},
        {"input": 2**64, "output": 3},
        {"input": 100, "cache": 5},
        {"input": 100, "cache": {"read": "7", "write": 3.9}},
        {"input": 1024.0, "output": 1},
        {"input": {"a": 1}, "output": 12},
        {"input": 2**64 - 1 - 10**19, "output": 2},
    ]
    for day, tok in enumerate(cases, start=1):
        db.message(f"msg_n{day}", assistant(None, at(day), tok))
    raw = [
        '{"modelID":"claude-haiku-4-5","providerID":"a","time":{"created":%d},'
        '"tokens":{"input":2,"input":200}}',
        '{"modelID":"claude-haiku-4-5","providerID":"a","time":{"created":%d},'
        '"tokens":{"input":4,"cache":{"read":1,"read":2}}}',
        '{"modelID":"claude-haiku-4-5","providerID":"a","time":{"created":%d},'
        '"tokens":{"input":7,"foo":1,"foo":2}}',
        '{"modelID":"claude-haiku-4-5","providerID":"a","time":{"created":%d},'
        '"tokens":{"input":512,"output":-0}}',
    ]
    for offset, text in enumerate(raw):
        day = len(cases) + 1 + offset
        db.message(f"msg_n{day}", text % at(day))
    db.close()
    return corpus


def rule_fields(base: Path) -> Corpus:
    """modelID and providerID must be non-empty strings (trimmed); `tokens` and `time` must
    be objects; the role is not checked; a missing, zero, negative, string or float
    `time.created` puts the message on 1970-01-01; a stated cost counts only as a number."""
    corpus, root = single(base)
    db = root.db()
    variants: list[dict[str, Any]] = [
        {},
        {"model": ""},
        {"model": "   "},
        {"model": " claude-haiku-4-5 "},
        {"model": 5},
        {"provider": None},
        {"provider": ""},
        {"provider": _DROP},
        {"cost": "0.5"},
        {"cost": 0.5},
        {"cost": True},
        {"cost": None},
        {"role": "user"},
        {"tokens": [1, 2]},
        {"tokens": "x"},
        {"tokens": None},
        {"sessionID": 5},
        {"path": "not-an-object"},
    ]
    for day, variant in enumerate(variants, start=1):
        tok = variant.pop("tokens", tokens(1000 + day, 10))
        message = assistant(None, at(day), tok, variant.pop("model", "claude-haiku-4-5"),
                            variant.pop("provider", "anthropic"), cost=variant.pop("cost", 0),
                            **variant)  # fmt: skip
        db.message(f"msg_f{day}", message)
    times: list[Any] = [_DROP, 0, -3 * DAY_MS, str(at(20)), at(21) + 0.5, {"x": 1}]
    for index, created in enumerate(times):
        message = assistant(None, 0, tokens(10 + index, 1), "claude-haiku-4-5")
        if created is _DROP:
            del message["time"]["created"]
        else:
            message["time"]["created"] = created
        db.message(f"msg_t{index}", message)
    db.message("msg_t9", dumps({**assistant(None, 0, tokens(99)), "time": 5}))
    db.close()
    return corpus


def rule_strict_json(base: Path) -> Corpus:
    """The whole message fails on: bad JSON, a non-object, NaN, a duplicate declared
    top-level field, a lone surrogate or control character in a declared string; a
    duplicate unknown field, a surrogate in an unknown field or deep nesting do not."""
    corpus, root = single(base)
    db = root.db()
    head = '"providerID":"a","time":{"created":%d}'
    raw = {
        "dup_role": '{"modelID":"claude-haiku-4-5",' + head + ',"role":"a","role":"b",'
        '"tokens":{"input":1}}',
        "dup_model": '{"modelID":"claude-haiku-4-5","modelID":"x",'
        + head
        + ',"tokens":{"input":2}}',
        "dup_tokens": '{"modelID":"claude-haiku-4-5",'
        + head
        + ',"tokens":{"input":4},"tokens":{}}',
        "dup_cost": '{"modelID":"claude-haiku-4-5",'
        + head
        + ',"tokens":{"input":8},"cost":1,"cost":2}',
        "dup_id": '{"id":"a","id":"b","modelID":"claude-haiku-4-5",'
        + head
        + ',"tokens":{"input":16}}',
        "dup_time_inner": '{"modelID":"claude-haiku-4-5","providerID":"a",'
        '"time":{"created":%d,"created":1},"tokens":{"input":32}}',
        "nan": '{"modelID":"claude-haiku-4-5",' + head + ',"tokens":{"input":64},"cost":NaN}',
        "surrogate_model": '{"modelID":"claude-haiku-4-5\\ud800",'
        + head
        + ',"tokens":{"input":128}}',
        "surrogate_unknown": '{"modelID":"claude-haiku-4-5",' + head + ',"title":"\\udc00",'
        '"tokens":{"input":256}}',
        "escaped_control": '{"modelID":"claude-haiku-4-5\\u0001",'
        + head
        + ',"tokens":{"input":512}}',
        "raw_control": '{"modelID":"claude-haiku-4-5",'
        + head
        + ',"title":"a\x01b","tokens":{"input":3}}',
        "dup_unknown_nested": '{"modelID":"claude-haiku-4-5",' + head + ',"path":{"a":1,"a":2},'
        '"tokens":{"input":1024}}',
        "deep": '{"modelID":"claude-haiku-4-5",'
        + head
        + ',"x":'
        + "[" * 150
        + "]" * 150
        + ',"tokens":{"input":2048}}',
        "escaped_key": '{"model\\u0049D":"claude-haiku-4-5",' + head + ',"tokens":{"input":4096}}',
        "surrogate_tokens": '{"modelID":"claude-haiku-4-5",' + head + ',"tokens":{"input":5,'
        '"note":"\\udc00"}}',
        "surrogate_time_key": '{"modelID":"claude-haiku-4-5","providerID":"a","time":{"created":%d,'
        '"\\ud800":1},"tokens":{"input":6}}',
        "surrogate_path": '{"modelID":"claude-haiku-4-5",' + head + ',"path":{"cwd":"\\ud800"},'
        '"tokens":{"input":9}}',
        "not_json": "not json {",
        "array": "[1, 2]",
        "number": "5",
        "truncated": '{"modelID":"claude-haiku-4-5",' + head + ',"tokens":{"input":8192}',
        "trailing": '{"modelID":"claude-haiku-4-5",' + head + ',"tokens":{"input":16384}} {}',
        "whitespace": ' \n{"modelID":"claude-haiku-4-5",'
        + head
        + ',"tokens":{"input":32768}}\r\n\t',
    }
    for day, (name, text) in enumerate(raw.items(), start=1):
        db.message(f"msg_{name}", text % at(day) if "%d" in text else text)
    db.close()
    return corpus


def rule_database_choice(base: Path) -> Corpus:
    """One database per directory: opencode.db if it is there, else the first by name of
    opencode-<channel>.db with a channel of [A-Za-z0-9_-]* (possibly empty); other names,
    subdirectories and the other channels are not read."""
    corpus = Corpus(base)
    roots = []
    layouts = {
        "default": ["opencode.db", "opencode-beta.db", "opencode-alpha.db"],
        "channels": ["opencode-beta.db", "opencode-alpha.db", "opencode-zz.db"],
        "odd": ["opencode-a.b.db", "opencode-zz.db", "opencode-.db", "Opencode.db"],
        "none": ["opencode.sqlite", "sub/opencode.db", "opencode-x y.db"],
    }
    value = 1
    for name, dbs in layouts.items():
        root = Root(base / name)
        roots.append(str(root.path))
        for db_name in dbs:
            db = root.db(db_name)
            db.message(f"{name}-{db_name}", assistant(None, at(1), tokens(value)))
            db.close()
            value *= 2
    corpus.env["OPENCODE_DATA_DIR"] = ",".join(roots)
    return corpus


def rule_database_columns(base: Path) -> Corpus:
    """The legacy 3-column schema; NULL session or id skip the row; an integer id is text;
    BLOB data is read; duplicate ids keep the first row (a table without a primary key)."""
    corpus, root = single(base)
    db = root.db(schema=("CREATE TABLE message (id, session_id, data)",))
    db.message("l1", assistant(None, at(1), tokens(1)))
    db.message(7, assistant(None, at(1), tokens(2)))
    db.message("l3", assistant(None, at(1), tokens(4)), session=None)
    db.message("l4", dumps(assistant(None, at(1), tokens(8))).encode())
    db.message("l5", assistant(None, at(1), tokens(16)), session=5)
    db.message("l1", assistant(None, at(2), tokens(32)), session="other")
    db.message(None, assistant(None, at(2), tokens(64)))
    db.message("", assistant(None, at(3), tokens(128)))
    db.message("", assistant(None, at(3), tokens(256)))
    db.message("l9", b"\xff\xfe not utf-8")
    db.message("l10", None)
    db.close()
    return corpus


def rule_session_message(base: Path) -> Corpus:
    """v2 rows of `session_message`: type 'assistant' only (exactly), model.id or
    model.modelID over modelID, model.providerID over providerID, data's time.created over
    the time_created column; an id already read from `message` is not read again."""
    corpus, root = single(base)
    db = root.db(schema=(MESSAGE_TABLE, SESSION_MESSAGE_TABLE))
    db.message("m1", assistant(None, at(1), tokens(1)))
    model = {"id": "claude-haiku-4-5", "providerID": "anthropic"}
    rows: list[tuple[str, str, dict[str, Any], int]] = [
        ("v1", "assistant", {"model": model, "tokens": tokens(2)}, at(2)),
        (
            "v2",
            "assistant",
            {"model": model, "time": {"created": at(3)}, "tokens": tokens(4)},
            at(2),
        ),
        ("v3", "user", {"model": model, "tokens": tokens(8)}, at(2)),
        (
            "v4",
            "assistant",
            {"modelID": "claude-haiku-4-5", "providerID": "p", "tokens": tokens(16)},
            at(2),
        ),
        (
            "v5",
            "assistant",
            {"model": {"modelID": "claude-haiku-4-5", "providerID": "p"}, "tokens": tokens(32)},
            at(2),
        ),
        (
            "v6",
            "assistant",
            {"model": {"id": "claude-haiku-4-5"}, "providerID": "p", "tokens": tokens(64)},
            at(2),
        ),
        ("m1", "assistant", {"model": model, "tokens": tokens(128)}, at(2)),
        ("v8", "Assistant", {"model": model, "tokens": tokens(256)}, at(2)),
        (
            "v9",
            "assistant",
            {
                "model": {"id": "claude-opus-4-5", "providerID": "q"},
                "modelID": "zz",
                "tokens": tokens(512),
            },
            at(2),
        ),
        ("v10", "assistant", {"model": model, "tokens": tokens(1024)}, 0),
        (
            "v11",
            "assistant",
            {"model": model, "time": {"created": 0}, "tokens": tokens(2048)},
            at(4),
        ),
        ("v12", "assistant", {"model": model, "tokens": tokens(3000), "cost": 0.25}, at(5)),
        (
            "v13",
            "assistant",
            {"model": "claude-haiku-4-5", "providerID": "p", "tokens": tokens(5)},
            at(5),
        ),
    ]
    for ident, kind, data, created in rows:
        db.v2(ident, kind, data, created)
    raw = {
        "v14": '{"model":{"id":"claude-haiku-4-5\\ud800","providerID":"p"},"tokens":{"input":7}}',
        "v15": '{"model":{"id":"claude-haiku-4-5"},"model":{"id":"x"},"providerID":"p",'
        '"tokens":{"input":9}}',
        "v16": '{"model":{"id":"claude-haiku-4-5","id":"claude-opus-4-5","providerID":"p"},'
        '"tokens":{"input":11}}',
        "v17": '{"model":{"id":"claude-haiku-4-5","providerID":"p"},"id":1,"id":2,'
        '"tokens":{"input":13}}',
    }
    for ident, text in raw.items():
        db.v2(ident, "assistant", text, at(6))
    db.close()
    return corpus


def rule_message_files(base: Path) -> Corpus:
    """Legacy files: `*.json` below storage/message, depth first in readdir order, symlinks
    ignored; a file named after an id the database gave is not read; a repeated id keeps
    the first file; files without an id always count; a file must be one JSON value
    (no BOM, no trailing data, valid UTF-8); other extensions and folders are not read."""
    corpus, root = single(base)
    db = root.db()
    db.message("dbid", assistant(None, at(1), tokens(1)))
    db.message("zero", assistant(None, at(1), tokens()))  # gives no entry, so no skip
    db.close()
    files: dict[str, Any] = {
        "ses_a/dbid.json": assistant("other", at(1), tokens(2)),
        "ses_a/zero.json": assistant("zero-file", at(1), tokens(3)),
        "ses_a/msg_x.json": assistant("dbid", at(1), tokens(4)),
        "ses_a/noid1.json": assistant(None, at(2), tokens(32)),
        "ses_b/noid2.json": assistant(None, at(2), tokens(64)),
        "ses_a/upper.JSON": assistant("u", at(2), tokens(128)),
        "ses_a/deep/er/z.json": assistant("z", at(2), tokens(256)),
        "ses_a/bad.json": b"\xff\xfe{}",
        "ses_a/trunc.json": dumps(assistant("t", at(2), tokens(512)))[:-5],
        "ses_a/bom.json": "\ufeff" + dumps(assistant("bom", at(2), tokens(2048))),
        "ses_a/trailing.json": dumps(assistant("tr", at(2), tokens(4096))) + "\n\n  ",
        "ses_a/trailing2.json": dumps(assistant("tr2", at(2), tokens(8192))) + " {}",
        "ses_a/sid.json": assistant("sid", at(3), tokens(16384), session=5),
        "dir.json/in.json": assistant("in", at(3), tokens(32768)),
        "ses_a/.json": assistant("hidden", at(3), tokens(65536)),
        "ses_a/..json": assistant("dots", at(3), tokens(131072)),
        "ses_a/a.b.json": assistant("ab", at(3), tokens(262144)),
        "ses_a/cost.json": assistant("c", at(3), tokens(5), cost=0.25),
        "ses_a/empty.json": "",
        "ses_c/int_id1.json": assistant(5, at(4), tokens(1)),  # non-string id: none
        "ses_c/int_id2.json": assistant(5, at(4), tokens(2)),
        "ses_c/empty_id1.json": assistant("", at(4), tokens(4)),
        "ses_c/empty_id2.json": assistant("", at(4), tokens(8)),
        "ses_c/space_id1.json": assistant(" sp ", at(4), tokens(16)),
        "ses_c/space_id2.json": assistant("sp", at(4), tokens(32)),
        "ses_c/sur_id.json": '{"id":"a\\ud800","modelID":"claude-haiku-4-5","providerID":"a",'
        '"time":{"created":T},"tokens":{"input":64}}'.replace("T", str(at(5))),
        "ses_c/sur_session.json": '{"id":"ss","sessionID":"\\udfff","modelID":"claude-haiku-4-5",'
        '"providerID":"a","time":{"created":T},"tokens":{"input":128}}'.replace("T", str(at(5))),
        "ses_c/pair_model.json": '{"id":"pm","modelID":"claude-haiku-4-5\\ud83d\\ude00",'
        '"providerID":"a","time":{"created":T},"tokens":{"input":256}}'.replace("T", str(at(5))),
    }
    for relative, content in files.items():
        root.file(relative, content)
    storage = root.path / "storage" / "message"
    (storage / "ses_a" / "link.json").symlink_to(storage / "ses_a" / "noid1.json")
    (storage / "linkdir").symlink_to(storage / "ses_b")
    other = root.path / "storage" / "other"
    other.mkdir(parents=True)
    (other / "x.json").write_text(dumps(assistant("o", at(3), tokens(7))))
    # duplicates across folders: which one wins depends on the directory's readdir order
    for n in range(6):
        root.file(f"dup{n}/f{n}.json", assistant("same", at(10 + n), tokens(1 << n)))
    return corpus


def rule_roots(base: Path) -> Corpus:
    """OPENCODE_DATA_DIR: comma separated, trimmed, blanks and missing folders skipped, a
    folder listed twice read once, ids repeated across folders kept from the first."""
    corpus = Corpus(base)
    paths = []
    for index, name in enumerate(("a", "b", "c")):
        root = Root(base / name)
        db = root.db()
        db.message(f"only-{name}", assistant(None, at(1), tokens(1 << index)))
        db.message("shared", assistant(None, at(2 + index), tokens(8 << index)))
        db.close()
        root.file(
            "ses/shared-file.json", assistant("shared-file", at(5 + index), tokens(64 << index))
        )
        paths.append(str(root.path))
    files_only = Root(base / "d")  # no database: its files are all read, whatever their names
    files_only.file("ses/only-a.json", assistant("only-a-file", at(8), tokens(512)))
    files_only.file("ses/x.json", assistant("shared", at(9), tokens(1024)))
    files_only.file("ses/y.json", assistant("d-own", at(9), tokens(2048)))
    paths.append(str(files_only.path))
    listed = [f" {paths[1]} ", "", paths[0], f"{paths[1]}/", str(base / "missing"), paths[2], " ",
              paths[3]]  # fmt: skip
    corpus.env["OPENCODE_DATA_DIR"] = ",".join(listed)
    return corpus


def rule_home_fallback(base: Path) -> Corpus:
    """Without OPENCODE_DATA_DIR: $HOME/.local/share/opencode (XDG_DATA_HOME unset)."""
    corpus = Corpus(base)
    root = Root(corpus.home / ".local" / "share" / "opencode")
    db = root.db()
    db.message("home", assistant(None, at(1), tokens(11)))
    db.close()
    corpus.env["HOME"] = str(corpus.home)
    return corpus


def rule_xdg(base: Path) -> Corpus:
    """An absolute XDG_DATA_HOME replaces ~/.local/share (HOME's copy is not read)."""
    corpus = rule_home_fallback(base)
    root = Root(base / "xdg" / "opencode")
    db = root.db()
    db.message("xdg", assistant(None, at(2), tokens(22)))
    db.close()
    corpus.env["XDG_DATA_HOME"] = str(base / "xdg")
    return corpus


def rule_xdg_relative(base: Path) -> Corpus:
    """A relative XDG_DATA_HOME is ignored: HOME's copy is read."""
    corpus = rule_xdg(base)
    corpus.env["XDG_DATA_HOME"] = "xdg"
    return corpus


def rule_xdg_without_opencode(base: Path) -> Corpus:
    """XDG_DATA_HOME set but without an opencode folder: nothing, no fallback to HOME."""
    corpus = rule_home_fallback(base)
    (base / "empty-xdg").mkdir()
    corpus.env["XDG_DATA_HOME"] = str(base / "empty-xdg")
    return corpus


def rule_empty_data_dir(base: Path) -> Corpus:
    """OPENCODE_DATA_DIR set but empty: nothing is read, not even HOME's copy."""
    corpus = rule_home_fallback(base)
    corpus.env["OPENCODE_DATA_DIR"] = " , "
    return corpus


def rule_prices(base: Path) -> Corpus:
    """Long-context tiers: Sonnet 4/4.5 charge each class's tokens above 200k at the higher
    rate; Gemini 2.5 Pro bills the whole request at the higher rates once input + cache
    tokens exceed 200,000 (not at exactly 200,000); names normalized (claude-sonnet-4.5,
    claude-sonnet-45), aliased, dated, trimmed, provider-prefixed or unknown."""
    corpus, root = single(base)
    db = root.db()
    cases: list[tuple[str, str, dict[str, Any]]] = [
        ("claude-sonnet-4-5", "anthropic", tokens(300_000, 250_000, 400_000, 210_000)),
        ("claude-sonnet-4", "anthropic", tokens(150_000, 10, 150_000, 150_000)),
        ("claude-sonnet-4-5-20250929", "anthropic", tokens(200_000, 200_001)),
        ("gemini-2.5-pro", "google", tokens(300_000, 100_000)),
        ("gemini-2.5-pro", "google", tokens(200_000, 1_000)),
        ("gemini-2.5-pro", "google", tokens(200_001, 1_000)),
        ("gemini-2.5-pro", "google", tokens(100, 10, 200_000)),
        ("gemini-2.5-pro", "google", tokens(100, 10, 199_900)),
        ("claude-sonnet-4.5", "github-copilot", tokens(1000, 100, 50, 25)),
        ("claude-sonnet-45", "anthropic", tokens(1000, 100)),
        ("claude-opus-4.6", "anthropic", tokens(1000, 100, 10, 1)),
        ("claude-opus-4-1-20250805", "anthropic", tokens(1000, 100, 10, 1)),
        ("claude-haiku-4-5-20251001", "anthropic", tokens(1000, 100, 10, 1)),
        ("claude-sonnet-4-6", "anthropic", tokens(300_000, 300_000)),
        ("gpt-5", "openai", tokens(40_000, 2_000, 100_000, reasoning=1_500)),
        ("  gpt-5-codex ", "openai", tokens(40_000, 2_000, 100_000)),
        ("standin-coder", "standin", tokens(40_000, 2_000, 100_000)),
        ("claude-sonnet-9-9", "anthropic", tokens(1000, 100)),
    ]
    for day, (model, provider, tok) in enumerate(cases, start=1):
        db.message(f"msg_p{day}", assistant(None, at(day), tok, model, provider))
    db.close()
    return corpus


def rule_day_boundaries(base: Path) -> Corpus:
    """Messages a minute either side of midnight UTC and of other zones' midnights, for the
    timezone test (days are cut in the report's zone)."""
    corpus, root = single(base)
    db = root.db()
    minutes = [-1, 0, 1, 329, 330, 331, 149, 150, 151, 1439]  # UTC, +05:30, -02:30
    for day in (1, 2):
        for minute in minutes:
            created = at(day, 0) + minute * 60_000
            message = assistant(None, created, tokens(1000 + minute, 10), "claude-haiku-4-5")
            db.message(f"msg_b{day}_{minute}", message)
    db.close()
    return corpus


RULES: dict[str, Callable[[Path], Corpus]] = {
    name.removeprefix("rule_"): builder
    for name, builder in sorted(globals().items())
    if name.startswith("rule_") and callable(builder)
}


# ----------------------------------------------------------------------------------- random


def random_corpus(base: Path, seed: int, messages: int = 400, roots: int = 2) -> Corpus:
    """A seeded mix the way real data directories look: several sessions per root, most
    rows in the database, some legacy files (a few repeating database ids), ids shared
    across roots, reasoning, cache reads and writes, stated and table costs."""
    rng = random.Random(seed)
    corpus = Corpus(base)
    listed = []
    for index in range(roots):
        root = Root(base / f"root{index}")
        listed.append(str(root.path))
        db = root.db(schema=(MESSAGE_TABLE, SESSION_MESSAGE_TABLE) if index else (MESSAGE_TABLE,))
        ids: list[str] = []
        used: set[str] = set()
        for number in range(messages):
            ident = f"msg_{seed}_{index}_{number:05d}"
            if index and rng.random() < 0.03:
                shared = f"msg_{seed}_0_{rng.randrange(messages):05d}"  # also in root 0
                ident = ident if shared in used else shared
            used.add(ident)
            message = random_message(rng, ident)
            if rng.random() < 0.15:
                folder = f"ses_{rng.randrange(5)}"
                root.file(f"{folder}/{ident if rng.random() < 0.8 else 'x' + ident}.json", message)
                if ids and rng.random() < 0.2:
                    root.file(f"{folder}/{rng.choice(ids)}.json", random_message(rng, None))
            elif index and rng.random() < 0.2:
                data = {k: v for k, v in message.items() if k not in ("modelID", "providerID")}
                data["model"] = {"id": message["modelID"], "providerID": message["providerID"]}
                db.v2(ident, "assistant", data, message["time"]["created"])
            else:
                db.message(ident, message, session=f"ses_{rng.randrange(8)}",
                           created=message["time"]["created"])  # fmt: skip
                ids.append(ident)
            if rng.random() < 0.3:
                db.message(ident + "_user", user(ident + "_user", message["time"]["created"]))
        db.close()
    corpus.env["OPENCODE_DATA_DIR"] = ",".join(listed)
    return corpus


def random_message(rng: random.Random, ident: str | None) -> dict[str, Any]:
    """One assistant step with plausible usage."""
    model = rng.choice(PRICED + NO_CACHE_WRITE + UNPRICED)
    provider = {"gemini-2.5-pro": "google", "standin-coder": "standin"}.get(
        model, "openai" if model.startswith("gpt") else "anthropic"
    )
    read = rng.choice((0, rng.randrange(1, 300_000)))
    write = 0 if model in NO_CACHE_WRITE or rng.random() < 0.5 else rng.randrange(1, 40_000)
    tok = tokens(rng.randrange(0, 250_000), rng.randrange(0, 12_000), read, write,
                 rng.choice((0, 0, rng.randrange(1, 5_000))))  # fmt: skip
    if rng.random() < 0.05:
        tok["total"] = tok["total"] + rng.randrange(1, 1000)
    cost = round(rng.uniform(0.001, 2.0), 6) if rng.random() < 0.2 else 0
    created = NOV_1 + rng.randrange(0, 20 * DAY_MS)
    return assistant(ident, created, tok, model, provider, cost=cost)


def write_size(base: Path, target_bytes: int, seed: int = 7) -> Corpus:
    """A corpus of about `target_bytes` on disk (database plus some files), for the bench."""
    rng = random.Random(seed)
    root = Root(base / "data")
    db = root.db()
    number = 0
    db.connection.execute("PRAGMA journal_mode=OFF")
    db.connection.execute("PRAGMA synchronous=OFF")
    while True:
        for _ in range(5000):
            ident = f"msg_bench_{number:08d}"
            message = random_message(rng, None)
            message["summary"] = {"title": "x" * rng.randrange(200, 1200)}  # realistic bulk
            if number % 50 == 0:
                root.file(f"ses_{number % 97}/{ident}_f.json", {**message, "id": ident + "_f"})
            db.message(ident, message, created=message["time"]["created"])
            number += 1
        db.connection.commit()
        if os.path.getsize(db.path) >= target_bytes:
            break
    db.close()
    return Corpus(base, {"OPENCODE_DATA_DIR": str(root.path)})
