"""OpenCode's token usage, read the way `ccusage opencode daily` 20.0.24 reads it.

OpenCode (1.x) keeps one SQLite database per data directory (`opencode.db`, or
`opencode-<channel>.db`); every assistant step is a row of its `message` table whose JSON
`data` carries `tokens` {input, output, reasoning, cache {read, write}, total}, `cost`,
`modelID`, `providerID` and `time.created` (epoch ms). Older versions wrote the same JSON as
one file per message under `storage/message/<session>/<message>.json`; a planned schema keeps
assistant messages in `session_message`. ccusage reads all three, and so do we; every rule
below was confirmed against the ccusage binary (docs/agents/opencode.md lists them).

The module is pure: paths in, `AgentUsage` records and bounded reject counts out. It never
logs, and never keeps or reports message text.
"""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from agentwatch.sentinels.agent_ledger.base import AgentUsage, ReadResult

AGENT = "opencode"
PRICES_FILE = Path(__file__).with_name("opencode_prices.json")

DEFAULT_DB = "opencode.db"
_CHANNEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_U64_MAX = 2**64 - 1
_I64_MAX = 2**63 - 1
# Python's datetime ends with year 9999; ccusage prints later days, we reject them.
_MAX_TIMESTAMP_MS = 253_402_300_799_000
# Top-level fields serde declares; a duplicate of one of these fails the whole message.
_LEGACY_FIELDS = frozenset({"tokens", "modelID", "providerID", "time", "id", "sessionID", "cost"})
_V2_FIELDS = frozenset({"model", "modelID", "providerID", "tokens", "time", "cost"})
_LEGACY_STRINGS: tuple[str, ...] = ("modelID", "providerID", "id", "sessionID")
_V2_STRINGS: tuple[str, ...] = ("modelID", "providerID")
# Declared objects are read through a JSON value: a lone surrogate anywhere in one fails.
_LEGACY_OBJECTS: tuple[str, ...] = ("tokens", "time")
_V2_OBJECTS: tuple[str, ...] = ("model", "tokens", "time")


def _names(declared: frozenset[str]) -> re.Pattern[bytes]:
    """Every place a quoted declared name starts (the lookahead counts overlapping ones
    too: more than the real keys is safe, it only sends a message to the checking parse)."""
    return re.compile(b'"(?=(' + b"|".join(sorted(k.encode() for k in declared)) + b')")')


_LEGACY_NAMES, _V2_NAMES = _names(_LEGACY_FIELDS), _names(_V2_FIELDS)


@dataclass(frozen=True, slots=True)
class OpenCodeUsage(AgentUsage):
    """An `AgentUsage` with what ccusage prices but the base record has no slot for: the
    provider (for provider-prefixed price names) and `extra` tokens, reasoning and any
    `total` beyond the four parts, which ccusage adds to totalTokens and prices as output."""

    provider: str = ""
    extra: int = 0

    def counts(self) -> tuple[int, ...]:
        """The four types and `extra`, which is priced too: bounded like them."""
        return (self.input, self.output, self.cache_read, self.cache_creation, self.extra)


_FIELDS = (
    "agent", "key", "timestamp", "session", "project", "model", "input", "output",
    "cache_read", "cache_creation", "cost_usd", "provider", "extra",
)  # fmt: skip
(_S_AGENT, _S_KEY, _S_TIME, _S_SESSION, _S_PROJECT, _S_MODEL, _S_INPUT, _S_OUTPUT, _S_READ,
 _S_WRITE, _S_COST, _S_PROVIDER, _S_EXTRA) = (
    getattr(OpenCodeUsage, name).__set__ for name in _FIELDS
)  # fmt: skip
_new = object.__new__


def _usage(
    key: str, timestamp: float, session: str, project: str, model: str, fresh: int,
    output: int, read: int, write: int, cost: float | None, provider: str, extra: int,
) -> OpenCodeUsage:  # fmt: skip
    """The same record as OpenCodeUsage(agent=AGENT, ...), its slots filled directly: the
    frozen dataclass's __init__ makes one object.__setattr__ call per field, 3x the cost,
    and a large database has a few hundred thousand of them."""
    usage = _new(OpenCodeUsage)
    _S_AGENT(usage, AGENT)
    _S_KEY(usage, key)
    _S_TIME(usage, timestamp)
    _S_SESSION(usage, session)
    _S_PROJECT(usage, project)
    _S_MODEL(usage, model)
    _S_INPUT(usage, fresh)
    _S_OUTPUT(usage, output)
    _S_READ(usage, read)
    _S_WRITE(usage, write)
    _S_COST(usage, cost)
    _S_PROVIDER(usage, provider)
    _S_EXTRA(usage, extra)
    return usage


class _Reject(Exception):
    """A message that ccusage's parser fails on; the reason is a short fixed string."""


# ------------------------------------------------------------------------------------ paths


def roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """OpenCode's data directories as ccusage finds them: OPENCODE_DATA_DIR (a comma list,
    used alone when set, even empty), else an absolute XDG_DATA_HOME/opencode, else
    ~/.local/share/opencode; only directories that exist."""
    listed = env.get("OPENCODE_DATA_DIR")
    if listed is not None:
        found: list[Path] = []
        for raw in listed.split(","):
            path = Path(raw.strip())
            if raw.strip() and path.is_dir() and path not in found:
                found.append(path)
        return found
    xdg = env.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg) / "opencode"
    elif str(home) not in ("", "."):
        base = home / ".local" / "share" / "opencode"
    else:
        return []
    return [base] if base.is_dir() else []


def database(root: Path) -> Path | None:
    """The one database ccusage reads in a root: opencode.db, else the first (by name)
    opencode-<channel>.db whose channel is letters, digits, '_' or '-' (possibly empty)."""
    default = root / DEFAULT_DB
    if default.is_file():
        return default
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return None
    for name in names:
        channel = name[len("opencode-") : -len(".db")] if len(name) >= 12 else None
        if (
            channel is not None
            and name.startswith("opencode-")
            and name.endswith(".db")
            and set(channel) <= _CHANNEL_CHARS
            and (root / name).is_file()
        ):
            return root / name
    return None


def _json_files(directory: Path, out: list[Path]) -> None:
    """`*.json` below a directory in readdir order, depth first, symlinks neither followed
    nor listed: ccusage's order, which decides the winner among duplicate message ids."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_symlink():
                continue
            if entry.is_file(follow_symlinks=False):
                # Rust's extension() == "json" is Python's suffix: ".json" alone has none
                if Path(entry.name).suffix == ".json":
                    out.append(Path(entry.path))
            elif entry.is_dir(follow_symlinks=False):
                _json_files(Path(entry.path), out)
        except OSError:
            continue


def files(root: Path) -> list[Path]:
    """The root's database (first) and its legacy message files, in the order ccusage reads
    them. Pass the lists of all roots, in `roots()` order, to one `read_files` call."""
    found: list[Path] = []
    db = database(root)
    if db is not None:
        found.append(db)
    _json_files(root / "storage" / "message", found)
    return found


# ---------------------------------------------------------------------------- JSON decoding


class _Object(dict[str, Any]):
    """A JSON object that remembers which keys it saw twice (Python keeps the last)."""

    duplicates: frozenset[str] = frozenset()


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    if len(obj) != len(pairs):
        keys = [key for key, _ in pairs]
        obj.duplicates = frozenset(key for key in obj if keys.count(key) > 1)
    return obj


def _no_constant(name: str) -> Any:
    raise _Reject("not json")


class _Huge:
    """A JSON number past float64's range (1e400, or an integer above about 1.8e308):
    serde_json fails a message on one inside a field it reads, and skips one elsewhere."""


_HUGE = _Huge()


def _float(text: str) -> float | _Huge:
    value = float(text)  # correctly rounded, as serde_json's; inf when it overflows
    return _HUGE if math.isinf(value) else value


def _int(text: str) -> int | _Huge:
    # below 300 characters an integer is far inside float64's range (and int() is cheap)
    return int(text) if len(text) < 300 or not math.isinf(float(text)) else _HUGE


def _huge(value: Any) -> bool:
    """Is there a number past float64's range in this value?"""
    if value is _HUGE:
        return True
    if isinstance(value, dict):
        return any(_huge(item) for item in value.values())
    if isinstance(value, list):
        return any(_huge(item) for item in value)
    return False


_CHECKING = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_constant=_no_constant, parse_float=_float, parse_int=_int
)
_PLAIN = json.JSONDecoder(parse_constant=_no_constant, parse_float=_float, parse_int=_int)


def _may_repeat(text: str, declared: frozenset[str]) -> bool:
    """Could a declared field occur twice? Only then is the slower key-checking parse
    needed (an escaped key name can hide a repeat, so any \\u escape counts as maybe)."""
    return "\\u" in text or any(text.count(f'"{key}"') > 1 for key in declared)


def _lone_surrogate(value: Any) -> bool:
    """Is there a lone surrogate (from a \\u escape) in this string, or in any key or string
    inside this value?"""
    if isinstance(value, str):
        return not value.isascii() and any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_lone_surrogate(k) or _lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_lone_surrogate(item) for item in value)
    return False


def _fast(text: str | bytes, declared: frozenset[str]) -> dict[str, Any] | None:
    """The common message, parsed by orjson: bytes with no \\u escape (so no escaped or
    lone-surrogate name or string) and no declared name twice. None sends it to the
    checking parse, which decides everything else (orjson refuses NaN, BOMs, control
    characters, invalid UTF-8 and lone surrogates, as that parse does; where it reads an
    integer past 64 bits as a float, _count, _millis and _cost give the same answer)."""
    if type(text) is not bytes or b"\\u" in text:
        return None
    names = (_LEGACY_NAMES if declared is _LEGACY_FIELDS else _V2_NAMES).findall(text)
    if len(names) != len(set(names)):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if type(value) is dict else None


def _decode(
    text: str | bytes,
    declared: frozenset[str],
    strings: tuple[str, ...],
    objects: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Parse one message as serde_json would into ccusage's struct: strict JSON (no BOM, no
    NaN, no raw control character in any string), no duplicate declared field, no lone
    surrogate in a declared string (duplicates inside nested objects keep the last value,
    as serde's Value does)."""
    fast = _fast(text, declared)
    if fast is not None:
        return fast
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        decoder = _CHECKING if _may_repeat(text, declared) else _PLAIN
        value = decoder.decode(text)
    except (ValueError, RecursionError) as err:
        raise _Reject("not json") from err
    if not isinstance(value, dict):
        raise _Reject("not an object")
    if getattr(value, "duplicates", frozenset()) & declared:
        raise _Reject("duplicate field")
    if any(_huge(value.get(key)) for key in declared):  # orjson refuses these: never fast
        raise _Reject("number out of range")
    if "\\u" in text:  # only an escape can make a lone surrogate
        for key in strings:
            if isinstance(value.get(key), str) and _lone_surrogate(value[key]):
                raise _Reject("bad string")
        for key in objects:
            if isinstance(value.get(key), dict | list) and _lone_surrogate(value[key]):
                raise _Reject("bad string")
    return value


def _count(value: Any) -> int:
    """serde's as_u64: a non-negative JSON integer that fits u64; anything else is 0."""
    if type(value) is int and 0 <= value <= _U64_MAX:  # JSON's only int subclass is bool
        return value
    return 0


def _millis(value: Any) -> int | None:
    """A JSON integer in i64 range (floats and strings do not count)."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and -_I64_MAX - 1 <= value <= _I64_MAX
    ):
        return value
    return None


def _text(value: Any) -> str | None:
    """A non-empty string, trimmed; anything else is absent."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _object(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _cost(value: Any) -> float | None:
    """A stated cost ccusage uses: a positive finite JSON number (a bool is not one; an
    integer is in float64's range, or the message was rejected)."""
    kind = type(value)
    if kind is float or kind is int:
        cost = float(value)
        if 0 < cost < math.inf:
            return cost
    return None


# ------------------------------------------------------------------------------- one message


class _Source(NamedTuple):
    """Where a message came from: the row's own id/session (database) and a fallback key
    (a tuple: made for every row of a database)."""

    id: str | None
    session: str | None
    fallback_key: str
    created: int | None = None  # v2 rows: the time_created column


def _beyond_parts(output: int, extra: int, missing: int) -> tuple[int, int]:
    """(output, extra) with a `total` that is `missing` tokens beyond the parts: they are
    the output when it is 0, else more extra."""
    if output == 0:
        return missing, extra
    return output, extra + missing


def _entry(message: Mapping[str, Any], source: _Source, v2: bool) -> OpenCodeUsage | None:
    """One message as ccusage maps it, or None when ccusage skips it silently."""
    tokens = _object(message.get("tokens"))
    if tokens is None:
        return None
    cache_block = _object(tokens.get("cache")) or {}
    fresh, output = _count(tokens.get("input")), _count(tokens.get("output"))
    read, write = _count(cache_block.get("read")), _count(cache_block.get("write"))
    extra = _count(tokens.get("reasoning"))
    missing = _count(tokens.get("total")) - (fresh + output + read + write + extra)
    if missing > 0:
        output, extra = _beyond_parts(output, extra, missing)
    if fresh == output == read == write == extra == 0:
        return None
    model, provider = _model(message, v2)
    if model is None or provider is None:
        return None
    time_block = _object(message.get("time"))
    created = _millis(time_block.get("created")) if time_block is not None else None
    if v2 and created is None:
        created = source.created
    if created is not None and created > _MAX_TIMESTAMP_MS:
        raise _Reject("timestamp out of range")
    ident = source.id if source.id is not None else _text(message.get("id"))
    session = source.session if source.session is not None else _text(message.get("sessionID"))
    key = f"{AGENT}:{ident}" if ident else f"{AGENT}:{source.fallback_key}"
    return OpenCodeUsage(
        agent=AGENT,
        key=key,
        timestamp=created / 1000 if created is not None and created > 0 else 0.0,
        session=sys.intern(session or ""),  # few distinct values, many entries
        project=sys.intern(_project(message)),
        model=sys.intern(model),
        input=fresh,
        output=output,
        cache_read=read,
        cache_creation=write,
        cost_usd=_cost(message.get("cost")),
        provider=sys.intern(provider),
        extra=extra,
    )


def _model(message: Mapping[str, Any], v2: bool) -> tuple[str | None, str | None]:
    """modelID/providerID; v2 rows prefer model.id (or model.modelID) and model.providerID."""
    model, provider = _text(message.get("modelID")), _text(message.get("providerID"))
    if v2:
        ref = _object(message.get("model"))
        if ref is not None:
            model = _text(ref.get("id")) or _text(ref.get("modelID")) or model
            provider = _text(ref.get("providerID")) or provider
    return model, provider


def _project(message: Mapping[str, Any]) -> str:
    """The working directory's last component (OpenCode writes path.cwd)."""
    path = _object(message.get("path"))
    cwd = path.get("cwd") if path is not None else None
    return _folder_name(cwd) if isinstance(cwd, str) else ""


@lru_cache(maxsize=4096)
def _folder_name(cwd: str) -> str:
    """The last component of a working directory (a session's messages share one)."""
    return sys.intern(os.path.basename(cwd.rstrip("/")))


# ----------------------------------------------------------------------------- the database


def _column_text(value: Any) -> str | None:
    """A column read as ccusage's sqlite crate reads a String: NULL and bad UTF-8 fail."""
    if value is None:
        return None
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return str(value)


def _open(db: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True, timeout=5)
    connection.text_factory = bytes
    return connection


def _columns(connection: sqlite3.Connection, table: str) -> set[str]:
    rows = connection.execute("SELECT name FROM pragma_table_info(?)", (table,)).fetchall()
    return {_column_text(row[0]) or "" for row in rows}


def _table(connection: sqlite3.Connection, table: str) -> bool:
    query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ? LIMIT 1"
    return connection.execute(query, (table,)).fetchone() is not None


def _session_messages(
    connection: sqlite3.Connection, db: Path
) -> Iterator[tuple[bytes | str, _Source, bool]]:
    """The `session_message` rows of type 'assistant' (the planned schema); rows with a NULL
    or non-text column are skipped."""
    if not _table(connection, "session_message") or not {"id", "session_id", "type", "data"} <= (
        columns := _columns(connection, "session_message")
    ):
        return
    created = "time_created" if "time_created" in columns else "NULL"
    query = f"SELECT id, session_id, type, data, {created} FROM session_message"
    for index, (ident, session, kind, data, made) in enumerate(connection.execute(query)):
        ident_text, session_text = _column_text(ident), _column_text(session)
        text = _column_text(data)
        if ident_text is None or session_text is None or text is None:
            continue
        if _column_text(kind) != "assistant":
            continue
        stamp = int(made) if isinstance(made, int | float) and math.isfinite(made) else 0
        source = _Source(ident_text or None, session_text, f"{db}#s{index}", stamp)
        yield data if type(data) is bytes else text, source, True


class _Unusual:
    """`_common`'s answer for a message it does not decide: `_entry` decides it."""


_UNUSUAL = _Unusual()


def _common(
    message: dict[str, Any],
    ident: str,
    session: str,
    names: dict[str, str],
    projects: dict[str, str],
) -> OpenCodeUsage | _Unusual | None:
    """`_entry` for a `message` row in the shape OpenCode writes, with the values for which
    its rules are the identity: every token count an int from 0 to u64 (`_count(v) == v`),
    `time.created` an int from 1 ms to the year 9999
    (`_millis(v) == v`, no reject), modelID and providerID strings. Anything else is
    _UNUSUAL and goes to `_entry`, so each rule has one implementation to test. `names`
    and `projects` keep what a model or provider string, and a cwd, become (a few
    distinct values in many rows)."""
    try:  # the fields OpenCode always writes; any missing one goes to the rules
        tokens = message["tokens"]
        cache_block = tokens["cache"]
        fresh, output, extra = tokens["input"], tokens["output"], tokens["reasoning"]
        read, write = cache_block["read"], cache_block["write"]
        model, provider = message["modelID"], message["providerID"]
        created = message["time"]["created"]
    except (KeyError, TypeError):
        return _UNUSUAL
    total = tokens.get("total", 0)
    if not (
        type(fresh) is int
        and type(output) is int
        and type(read) is int
        and type(write) is int
        and type(extra) is int
        and type(total) is int
        and 0 <= (fresh | output | read | write | extra | total) <= _U64_MAX
        and type(model) is str
        and type(provider) is str
        and type(created) is int
        and 0 < created <= _MAX_TIMESTAMP_MS
    ):
        return _UNUSUAL
    path = message.get("path")
    cwd = path.get("cwd") if type(path) is dict else None
    return _mapped(
        fresh, output, extra, read, write, total, model, provider, created,
        message.get("cost"), cwd if type(cwd) is str else None, ident, session, names,
        projects,
    )  # fmt: skip


def _mapped(
    fresh: int, output: int, extra: int, read: int, write: int, total: int, model: str,
    provider: str, created: int, cost: Any, cwd: str | None, ident: str, session: str,
    names: dict[str, str], projects: dict[str, str],
) -> OpenCodeUsage | None:  # fmt: skip
    """The common row's record from its checked values (what `_common` read, or what
    `_opencodescan.common` read in C: the same tuple, so one tail maps both)."""
    missing = total - (fresh + output + read + write + extra)
    if missing > 0:
        output, extra = _beyond_parts(output, extra, missing)
    if fresh == output == read == write == extra == 0:
        return None
    model_name = names.get(model)
    if model_name is None:
        model_name = names[model] = sys.intern(model.strip())
    provider_name = names.get(provider)
    if provider_name is None:
        provider_name = names[provider] = sys.intern(provider.strip())
    if not model_name or not provider_name:
        return None
    if cwd is not None:
        project = projects.get(cwd)
        if project is None:
            project = projects[cwd] = _folder_name(cwd)
    else:
        project = ""
    return _usage(
        f"{AGENT}:{ident}", created / 1000, session, project, model_name, fresh, output,
        read, write, _cost(cost) if cost else None, provider_name, extra,
    )  # fmt: skip


def _scan_py(data: bytes) -> tuple[Any, ...] | None:
    """`_opencodescan.common`'s stand-in without the extension: every row takes orjson."""
    return None


try:  # built from _opencodescan.c with the package; without a compiler, orjson and Python
    from agentwatch.sentinels.agent_ledger._opencodescan import common as _scan
except ImportError:  # pragma: no cover - the tests build it
    _scan = _scan_py


def _by_rules(
    db: Path, index: int, ident: Any, session: Any, data: Any, result: ReadResult
) -> tuple[OpenCodeUsage | None, str | None]:
    """A `message` row read through `_parse` (the rules), with its id when it has one."""
    ident_text, session_text = _column_text(ident), _column_text(session)
    text = _column_text(data)
    if ident_text is None or session_text is None or text is None:
        return None, None
    # valid UTF-8 bytes go on as bytes: what the orjson path (_fast) takes
    source = _Source(ident_text or None, session_text, f"{db}#m{index}")
    return _parse(data if type(data) is bytes else text, source, False, result), source.id


def _read_database(db: Path, result: ReadResult, seen: set[str], ids: set[str]) -> None:
    """The rows ccusage reads, in its order: `message` (id, session_id, data), then
    `session_message` rows of type 'assistant'; rows with a NULL or non-text column are
    skipped. Entries whose key is not in `seen` are added to both; the ids of the rows that
    gave an entry go to `ids` (ccusage skips legacy files named after them).

    A `message` row whose data orjson parses and writes back byte for byte (what OpenCode,
    through JSON.stringify, writes) cannot repeat a field, escape a name or hold a lone
    surrogate, so `_common` maps it; every other row goes through `_parse`, which applies
    the strict rules."""
    try:
        connection = _open(db)
    except sqlite3.Error:
        result.reject("database unreadable")
        return
    entries = result.entries
    loads, dumps, decode_error = orjson.loads, orjson.dumps, orjson.JSONDecodeError
    scan = _scan
    sessions: dict[bytes, str] = {}
    names: dict[str, str] = {}
    projects: dict[str, str] = {}
    try:
        if _table(connection, "message"):
            cursor = connection.execute("SELECT id, session_id, data FROM message")
            for index, (ident, session, data) in enumerate(cursor):
                entry: OpenCodeUsage | _Unusual | None = _UNUSUAL
                if (
                    type(ident) is bytes
                    and ident
                    and type(session) is bytes
                    and type(data) is bytes
                ):
                    try:
                        ident_text = ident.decode()
                        session_text = sessions.get(session)
                        if session_text is None:
                            session_text = sessions[session] = sys.intern(session.decode())
                    except UnicodeDecodeError:
                        continue
                    scanned = scan(data)
                    if scanned is not None:
                        entry = _mapped(*scanned, ident_text, session_text, names, projects)
                    else:
                        try:
                            message = loads(data)
                        except decode_error:
                            message = None
                        if type(message) is dict and dumps(message) == data:
                            entry = _common(message, ident_text, session_text, names, projects)
                if entry is _UNUSUAL:
                    entry, row_id = _by_rules(db, index, ident, session, data, result)
                else:
                    row_id = ident_text
                if isinstance(entry, OpenCodeUsage):
                    if row_id:
                        ids.add(row_id)
                    if entry.key not in seen:
                        seen.add(entry.key)
                        entries.append(entry)
        for data, source, v2 in _session_messages(connection, db):
            found = _parse(data, source, v2, result)
            if found is not None:
                if source.id:
                    ids.add(source.id)
                if found.key not in seen:
                    seen.add(found.key)
                    entries.append(found)
    except sqlite3.Error:
        result.reject("database unreadable")
    finally:
        connection.close()


# ------------------------------------------------------------------------------ read_files


def _parse(
    data: bytes | str, source: _Source, v2: bool, result: ReadResult
) -> OpenCodeUsage | None:
    if v2:
        declared, strings, objects = _V2_FIELDS, _V2_STRINGS, _V2_OBJECTS
    else:
        declared, strings, objects = _LEGACY_FIELDS, _LEGACY_STRINGS, _LEGACY_OBJECTS
    try:
        return _entry(_decode(data, declared, strings, objects), source, v2)
    except _Reject as reason:
        result.reject(str(reason))
        return None


def _message_root(path: Path, db_ids: Mapping[Path, set[str]]) -> set[str]:
    """The ids the database of this file's root contributed (ccusage skips a file whose
    name, less .json, is one of them, without reading it)."""
    for root, ids in db_ids.items():
        if path.is_relative_to(root / "storage" / "message"):
            return ids
    return set()


def read_files(paths: Iterable[Path]) -> ReadResult:
    """Every counted assistant message, in ccusage's order, first occurrence of an id kept.

    `paths` are what `files()` lists for each root (database first), roots in `roots()`
    order. A database is read whole on every call: its rows change in place, and their
    keys (the message ids) are what keeps a re-read from counting anything twice."""
    result = ReadResult()
    seen: set[str] = set()
    db_ids: dict[Path, set[str]] = {}

    def keep(entry: OpenCodeUsage | None) -> str | None:
        if entry is None or entry.key in seen:
            return None
        seen.add(entry.key)
        result.entries.append(entry)
        return entry.key

    for path in paths:
        if path.suffix == ".db":
            _read_database(path, result, seen, db_ids.setdefault(path.parent, set()))
            continue
        if path.stem in _message_root(path, db_ids):
            continue
        try:
            data = path.read_bytes()
        except OSError:
            result.reject("unreadable")
            continue
        keep(_parse(data, _Source(None, None, f"file:{path}"), False, result))
    return result


# ------------------------------------------------------------------------------------ price


@cache
def _table_of_prices() -> dict[str, dict[str, Any]]:
    with PRICES_FILE.open(encoding="utf-8") as handle:
        models: dict[str, dict[str, Any]] = json.load(handle)["models"]
    return models


def _resolve(model: str) -> str:
    """ccusage's aliases for OpenCode model ids."""
    return {"gemini-3-pro-high": "gemini-3-pro-preview", "k2p6": "kimi-k2.6"}.get(model, model)


def _normalize(model: str) -> str:
    """claude-<family>-4.5 and claude-<family>-45x become claude-<family>-4-5, as in ccusage."""
    for family in ("claude-haiku-", "claude-opus-", "claude-sonnet-"):
        if not model.startswith(family):
            continue
        rest = model[len(family) :]
        major, dot, minor = rest.partition(".")
        if dot and major.isdigit() and major.isascii() and minor[:1].isdigit():
            return f"{family}{major}-{minor}"
        if len(rest) >= 2 and rest[0].isdigit() and rest[1].isdigit():
            return f"{family}{rest[0]}-{rest[1:]}"
    return model


def candidates(model: str, provider: str) -> list[str]:
    """The names ccusage tries in order: the model, its normalized form, then both with the
    provider (dashes as underscores) in front."""
    resolved = _resolve(model)
    base = [resolved]
    if (normalized := _normalize(resolved)) != resolved:
        base.append(normalized)
    names = list(base)
    if provider and provider != "unknown":
        names += [f"{provider.replace('-', '_')}/{name}" for name in base]
    return names


_CLASSES = ("input", "output", "cache_read", "cache_write")


def _tiered(tokens: int, base: float, above: float | None, threshold: int) -> float:
    if above is not None and tokens > threshold:
        return threshold * base + (tokens - threshold) * above
    return tokens * base


def _cost_of(rates: Mapping[str, Any], counts: Mapping[str, int]) -> float | None:
    """USD for the counts at a model's rates (USD per million), tiers as ccusage applies
    them: "per_class" charges each class's tokens above the threshold at the higher rate,
    "request" bills every token at the higher rates once the prompt (input + cache) passes it.
    None when a class has tokens but the page gives that class no price."""
    tier = rates.get("above") or {}
    threshold = int(tier.get("threshold", 200_000))
    long_request = tier.get("mode") == "request" and (
        counts["input"] + counts["cache_read"] + counts["cache_write"] > threshold
    )
    total = 0.0
    for kind in _CLASSES:
        tokens = counts[kind]
        if tokens == 0:
            continue
        base = rates.get(kind)
        if base is None:
            return None
        above = tier.get(kind)
        if tier.get("mode") == "per_class":
            total += _tiered(tokens, base / 1e6, None if above is None else above / 1e6, threshold)
        else:
            rate = above if long_request and above is not None else base
            total += tokens * rate / 1e6
    return total


def _boundary(char: str) -> bool:
    return not (char.isascii() and char.isalnum())


def _version_follows(key: str, suffix: str) -> bool:
    """A key ending in a digit must not match the start of a longer version (gpt-5 in
    gpt-5-1), though a date (8 digits) may follow."""
    if not key[-1:].isdigit() or suffix[:1] not in ("-", "."):
        return False
    rest = suffix[1:]
    digits = len(rest) - len(rest.lstrip("0123456789"))
    if digits == 0:
        return False
    after = rest[digits : digits + 1]
    return not (digits == 8 and (after == "" or _boundary(after)))


def _contains(value: str, key: str) -> bool:
    """Does `key` occur in `value` between non-alphanumeric boundaries?"""
    start = value.find(key) if key else -1
    while start >= 0:
        suffix = value[start + len(key) :]
        if (start == 0 or _boundary(value[start - 1])) and (
            not suffix or (_boundary(suffix[0]) and not _version_follows(key, suffix))
        ):
            return True
        start = value.find(key, start + len(key))
    return False


def find(table: Mapping[str, Any], model: str) -> Any:
    """ccusage's lookup: the exact name, else the longest key that contains the name or is
    contained in it at word boundaries ('.' and '@' read as '-'); ties go to the smaller."""
    if model in table:
        return table[model]
    norm = model.replace(".", "-").replace("@", "-")
    found = [
        key
        for key in table
        if _contains(model, key)
        or _contains(key, model)
        or _contains(norm, key.replace(".", "-").replace("@", "-"))
        or _contains(key.replace(".", "-").replace("@", "-"), norm)
    ]
    if not found:
        return None
    return table[min(found, key=lambda key: (-len(key.encode()), key.encode()))]


_Pricer = Callable[[int, int, int, int], float | None]
_RATES: dict[tuple[str, str], tuple[_Pricer, ...]] = {}  # (model, provider) -> _rates


def _pricer(rates: Mapping[str, Any]) -> _Pricer:
    """`_cost_of` at these rates, its look-ups done once: the same operations in the same
    order, so the same float, for (input, output, cache_read, cache_write) tokens."""
    tier = rates.get("above") or {}
    threshold = int(tier.get("threshold", 200_000))
    base_in, base_out, base_read, base_write = (rates.get(kind) for kind in _CLASSES)
    if tier.get("mode") == "per_class":
        # (rate per token, rate above the threshold or None); None when unpriced
        classes = tuple(
            None if base is None else (base / 1e6, None if above is None else above / 1e6)
            for base, above in ((rates.get(kind), tier.get(kind)) for kind in _CLASSES)
        )

        def per_class(fresh: int, output: int, read: int, write: int) -> float | None:
            total = 0.0
            for tokens, rate in zip((fresh, output, read, write), classes, strict=True):
                if tokens:
                    if rate is None:
                        return None
                    total += _tiered(tokens, rate[0], rate[1], threshold)
            return total

        return per_class
    by_request = tier.get("mode") == "request"
    # the rate a long request pays: the tier's where it has one
    longs: tuple[Any, ...] = tuple(
        base if tier.get(kind) is None else tier.get(kind)
        for base, kind in zip((base_in, base_out, base_read, base_write), _CLASSES, strict=True)
    )
    long_in, long_out, long_read, long_write = longs

    def flat(fresh: int, output: int, read: int, write: int) -> float | None:
        long_request = by_request and fresh + read + write > threshold
        total = 0.0
        if fresh:
            if base_in is None:
                return None
            total += fresh * (long_in if long_request else base_in) / 1e6
        if output:
            if base_out is None:
                return None
            total += output * (long_out if long_request else base_out) / 1e6
        if read:
            if base_read is None:
                return None
            total += read * (long_read if long_request else base_read) / 1e6
        if write:
            if base_write is None:
                return None
            total += write * (long_write if long_request else base_write) / 1e6
        return total

    return flat


def _rates(model: str, provider: str) -> tuple[_Pricer, ...]:
    """A pricer for each of the names ccusage tries that the table has, in its order:
    looked up once per model and provider (`find` scans the whole table)."""
    pricers = _RATES.get((model, provider))
    if pricers is None:
        table = _table_of_prices()
        found = (find(table, name) for name in candidates(model, provider))
        pricers = _RATES[model, provider] = tuple(_pricer(r) for r in found if r is not None)
    return pricers


def price(entry: AgentUsage) -> float | None:
    """USD for an entry from opencode_prices.json (the providers' published rates), for
    entries without a stated cost; None for models the table does not price."""
    pricers = _RATES.get((entry.model, getattr(entry, "provider", "")))
    if pricers is None:
        pricers = _rates(entry.model, getattr(entry, "provider", ""))
    output = entry.output + getattr(entry, "extra", 0)
    for pricer in pricers:
        cost = pricer(entry.input, output, entry.cache_read, entry.cache_creation)
        if cost is not None and cost > 0:
            return cost
    return None
