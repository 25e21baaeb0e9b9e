"""The config file: every key optional, unknown keys and wrong types rejected by name.

The schema is data (nested dicts of `Key`), so `config check`, the defaults and the
example config all come from one place.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agentwatch.exporter import paths


class ConfigError(Exception):
    """The config file is unusable; `problems` lists each one with its key."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def parse_duration(value: Any) -> float:
    """Seconds from a number or a string like "15s", "5m", "1h"."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 30, '30s', '5m' or '1h'")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise ValueError(f"{value!r} is not a duration such as 30, '30s', '5m' or '1h'")
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds <= 0:
        raise ValueError("must be greater than zero")
    return seconds


def _duration(value: Any) -> float:
    return parse_duration(value)


def _positive_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    if value <= 0:
        raise ValueError("must be greater than zero")
    return float(value)


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return value


def _optional_path(value: Any) -> Path | None:
    if value is None:
        return None
    return Path(os.path.expanduser(_string(value)))


def _path_list(value: Any) -> list[Path] | None:
    """A list of paths, or one string with a comma-separated list (like CLAUDE_CONFIG_DIR)."""
    if value is None:
        return None
    if isinstance(value, str):
        items = [part for part in value.split(",") if part.strip()]
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        items = value
    else:
        raise ValueError("expected a list of paths or a comma-separated string")
    return [Path(os.path.expanduser(item.strip())) for item in items]


def _string_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ValueError("expected a list of non-empty strings")
    return list(value)


def _optional_string(value: Any) -> str | None:
    return None if value is None else _string(value)


def _listen_address(value: Any) -> str:
    text = _string(value)
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not HOST:PORT, e.g. 127.0.0.1:9847")
    return text


def _choice(*options: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        text = _string(value).lower()
        if text not in options:
            raise ValueError(f"{value!r} is not one of {', '.join(options)}")
        return text

    return check


def _workers(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 64:
        raise ValueError("expected a whole number from 0 to 64")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _price_table(value: Any) -> dict[str, dict[str, float]]:
    """Model -> {input, output, cache_write, cache_read, ...} in USD per million tokens."""
    if not isinstance(value, Mapping):
        raise ValueError("expected a mapping of model name to prices")
    allowed = {
        "input",
        "output",
        "cache_write",
        "cache_read",
        "input_above_200k",
        "output_above_200k",
        "cache_write_above_200k",
        "cache_read_above_200k",
        "fast_multiplier",
    }
    table: dict[str, dict[str, float]] = {}
    for model, prices in value.items():
        if not isinstance(prices, Mapping):
            raise ValueError(f"{model}: expected a mapping of prices")
        unknown = set(prices) - allowed
        if unknown:
            raise ValueError(f"{model}: unknown price key(s) {', '.join(sorted(unknown))}")
        for name, price in prices.items():
            if isinstance(price, bool) or not isinstance(price, int | float) or price < 0:
                raise ValueError(f"{model}.{name}: expected a non-negative number")
        if "input" not in prices or "output" not in prices:
            raise ValueError(f"{model}: 'input' and 'output' prices are required")
        table[str(model)] = {name: float(price) for name, price in prices.items()}
    return table


@dataclass(frozen=True)
class Key:
    """One leaf of the schema: its default, its parser and a one-line meaning."""

    default: Any
    parse: Callable[[Any], Any]
    meaning: str


@dataclass
class Config:
    """The validated config: nested plain dicts with every default filled in."""

    values: dict[str, Any]
    source: Path | None = None
    problems: list[str] = field(default_factory=list)

    def __getitem__(self, section: str) -> Any:
        return self.values[section]

    def sentinel(self, name: str) -> dict[str, Any]:
        return self.values["sentinels"][name]

    @property
    def state_dir(self) -> Path:
        return self.values["state_dir"] or paths.default_state_dir()

    @property
    def spool_dir(self) -> Path:
        return self.values["spool_dir"] or paths.default_spool_dir()


def _sentinel_keys(interval: float, **extra: Key) -> dict[str, Any]:
    return {
        "enabled": Key(
            True, _boolean, "run this sentinel under `agentwatch up` and expect its file"
        ),
        "interval": Key(interval, _duration, "seconds between cycles (also sets staleness)"),
        **extra,
    }


SCHEMA: dict[str, Any] = {
    "state_dir": Key(None, _optional_path, "durable state (default ~/.local/state/agentwatch)"),
    "spool_dir": Key(None, _optional_path, "where sentinels write *.prom files"),
    "log_level": Key("info", _choice("debug", "info", "warning", "error"), "stderr log level"),
    "exporter": {
        "listen": Key("127.0.0.1:9847", _listen_address, "HOST:PORT of /metrics"),
        "stale_after_intervals": Key(
            3.0, _positive_number, "a spool file older than this many intervals is stale"
        ),
    },
    "sentinels": {
        "token-ledger": _sentinel_keys(
            60.0,
            reconcile_interval=Key(
                300.0, _duration, "full rescan for changes inotify missed (events are instant)"
            ),
            claude_config_dir=Key(
                None,
                _path_list,
                "transcript roots (default: CLAUDE_CONFIG_DIR, ~/.config/claude, ~/.claude)",
            ),
            session_ttl=Key(
                7200.0, _duration, "per-session series expire this long after activity"
            ),
            pricing_file=Key(None, _optional_path, "a JSON price table replacing the shipped one"),
            prices=Key({}, _price_table, "per-model price overrides, USD per million tokens"),
            progress_interval=Key(5.0, _duration, "seconds between backfill progress lines"),
            workers=Key(0, _workers, "processes parsing a large backfill (0: up to 2 cores)"),
        ),
        "resources": _sentinel_keys(
            15.0,
            agent_names=Key(
                ["claude", "codex", "gemini", "aider", "opencode", "cursor-agent", "amp"],
                _string_list,
                "executable names of agent CLIs; each such process roots a session tree",
            ),
            orchestrator_pidfile=Key(None, _optional_path, "pid file of the orchestrator"),
            orchestrator_name=Key(None, _optional_string, "process name of the orchestrator"),
            tmux_sockets=Key([], _string_list, "tmux sockets besides the default one"),
        ),
        "footprint": _sentinel_keys(
            60.0,
            signatures_file=Key(
                None, _optional_path, "a JSON signature list replacing the shipped one"
            ),
        ),
    },
}


def _apply(schema: Mapping[str, Any], raw: Any, where: str, problems: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        problems.append(f"{where or 'top level'}: expected a mapping, got {type(raw).__name__}")
        raw = {}
    for name in raw:
        if name not in schema:
            known = ", ".join(sorted(schema))
            problems.append(f"{where}{name}: unknown key (known here: {known})")
    for name, spec in schema.items():
        key = f"{where}{name}"
        if isinstance(spec, Key):
            if name in raw and raw[name] is not None:
                try:
                    out[name] = spec.parse(raw[name])
                except ValueError as err:
                    problems.append(f"{key}: {err}")
                    out[name] = spec.default
            else:
                out[name] = spec.default
        else:
            out[name] = _apply(spec, raw.get(name), f"{key}.", problems)
    return out


def from_mapping(raw: Any, source: Path | None = None) -> Config:
    problems: list[str] = []
    values = _apply(SCHEMA, raw, "", problems)
    if problems:
        raise ConfigError(problems)
    return Config(values=values, source=source)


def load(path: Path | None = None) -> Config:
    """Load the config file; a missing default file means all defaults."""
    explicit = path is not None
    path = path or paths.default_config_file()
    if not path.exists():
        if explicit:
            raise ConfigError([f"{path}: no such config file"])
        return from_mapping({}, None)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError([f"{path}: cannot read: {err}"]) from err
    except yaml.YAMLError as err:
        raise ConfigError([f"{path}: not valid YAML: {err}"]) from err
    try:
        return from_mapping(raw, path)
    except ConfigError as err:
        raise ConfigError([f"{path}: {problem}" for problem in err.problems]) from err


def defaults_as_yaml() -> str:
    """A commented example config listing every key with its default."""
    lines: list[str] = ["# agentwatch config: every key is optional; shown with its default."]

    def walk(schema: Mapping[str, Any], indent: int) -> None:
        pad = "  " * indent
        for name, spec in schema.items():
            if isinstance(spec, Key):
                default = spec.default
                shown = (
                    "null"
                    if default is None
                    else yaml.safe_dump(default, default_flow_style=True, width=1000).strip()
                )
                if shown.endswith("..."):
                    shown = shown[:-3].strip()
                lines.append(f"{pad}# {name}: {shown}    # {spec.meaning}")
            else:
                lines.append(f"{pad}# {name}:")
                walk(spec, indent + 1)

    walk(SCHEMA, 0)
    return "\n".join(lines) + "\n"
