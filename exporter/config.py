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


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError("expected a whole number greater than zero")
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


def _non_negative_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    if value < 0:
        raise ValueError("must not be negative")
    return float(value)


# Alert thresholds that are the user's to choose. The exporter serves each as
# agentwatch_alert_threshold{name}, and the rules compare against that series, so a
# threshold is changed here (or shortened by a test) without touching the rules.
ALERT_THRESHOLDS: dict[str, tuple[float, str]] = {
    "quota_5h_tokens": (0, "fresh tokens allowed per 5 hours (0: not configured, no alert)"),
    "quota_7d_tokens": (0, "fresh tokens allowed per 7 days (0: not configured, no alert)"),
    "burn_floor_tokens_per_hour": (10e6, "below this fresh-token rate a burn never pages"),
    "stall_seconds": (300, "a pane stalled at its prompt longer than this alerts"),
    "rate_limit_cooldown_seconds": (900, "the rate-limit breaker stays open this long"),
    "footprint_processes": (220, "agent-related processes above which the footprint alerts"),
    "session_memory_bytes": (4 * 2**30, "one session tree's memory above this is runaway"),
    "session_cpu_cores": (2, "one session tree's sustained CPU above this is runaway"),
    "host_load_per_cpu": (3, "5-minute load average per CPU above which spawning pauses"),
    "host_memory_available_ratio": (0.1, "available memory share below which agents shrink"),
    "error_ratio": (0.2, "API errors per response over 10 minutes above which agents shrink"),
    "ledger_lag_bytes": (100 * 2**20, "unread transcript bytes that mean the ledger is behind"),
    "ledger_database_bytes": (2 * 2**30, "ledger database size that means unbounded growth"),
}


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


# --- release-readiness: the repositories list (validated entry by entry, bad key named) ---
_RELEASE_PROBES = ("command", "required_file", "ci")
_GIT_REF_NAME = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/+@-]+(?<![./])$")
_GITHUB_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RELEASE_TEMPLATE_MARKERS = ["TODO", "TBD", "FIXME", "Lorem ipsum", "<!-- template -->"]


def _only_keys(entry: Any, allowed: tuple[str, ...], where: str) -> Mapping[str, Any]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: expected a mapping, got {type(entry).__name__}")
    unknown = sorted(str(name) for name in entry if name not in allowed)
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown key (known here: {', '.join(allowed)})")
    return entry


def _field(entry: Mapping[str, Any], name: str, parse: Callable[[Any], Any], where: str) -> Any:
    try:
        return parse(entry[name])
    except ValueError as err:
        raise ValueError(f"{where}.{name}: {err}") from err


def _optional(
    entry: Mapping[str, Any], name: str, parse: Callable[[Any], Any], where: str, default: Any
) -> Any:
    return default if entry.get(name) is None else _field(entry, name, parse, where)


def _git_name(value: Any) -> str:
    text = _string(value)
    if not _GIT_REF_NAME.match(text):
        raise ValueError(f"{text!r} is not a plain git branch or remote name")
    return text


def _absolute_path(value: Any) -> Path:
    path = Path(os.path.expanduser(_string(value)))
    if not path.is_absolute():
        raise ValueError(f"{value!r} is not an absolute path (~ is allowed)")
    return path


def _repo_relative_file(value: Any) -> str:
    text = _string(value).strip()
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if not parts or text.startswith("/") or ".." in parts or any(c < " " for c in text):
        raise ValueError(f"{value!r} is not a file path relative to the repository")
    return "/".join(parts)


def _argv(value: Any) -> list[str]:
    if isinstance(value, str):
        raise ValueError("expected a list of arguments (argv, run without a shell), not a string")
    if not value or not isinstance(value, list):
        raise ValueError("expected a non-empty list of arguments")
    return _string_list(value)


def _api_url(value: Any) -> str:
    text = _string(value).rstrip("/")
    local = re.match(r"^http://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(/|$)", text + "/")
    if not (text.startswith("https://") or local):
        raise ValueError(f"{value!r}: expected an https:// URL (the token is sent to it)")
    return text


def _env_name(value: Any) -> str:
    text = _string(value)
    if not _ENV_NAME.match(text):
        raise ValueError(f"{text!r} is not an environment variable name")
    return text


def _ci_probe(value: Any, where: str) -> dict[str, Any]:
    keys = ("github_repo", "token_env", "token_file", "api_url", "timeout")
    entry = _only_keys(value, keys, where)
    github_repo = _optional(entry, "github_repo", _string, where, None)
    if github_repo is None or not _GITHUB_REPO.match(github_repo):
        raise ValueError(f"{where}.github_repo: required, as owner/name")
    return {
        "github_repo": github_repo,
        "token_env": _optional(entry, "token_env", _env_name, where, "GITHUB_TOKEN"),
        "token_file": _optional(entry, "token_file", _absolute_path, where, None),
        "api_url": _optional(entry, "api_url", _api_url, where, "https://api.github.com"),
        "timeout": _optional(entry, "timeout", _duration, where, 10.0),
    }


def _release_probes(value: Any, where: str) -> dict[str, Any]:
    keys = ("command", "command_timeout", "required_file", "template_markers", "ci")
    entry = _only_keys(value or {}, keys, where)
    markers = list(RELEASE_TEMPLATE_MARKERS)
    return {
        "command": _optional(entry, "command", _argv, where, None),
        "command_timeout": _optional(entry, "command_timeout", _duration, where, 60.0),
        "required_file": _optional(entry, "required_file", _repo_relative_file, where, None),
        "template_markers": _optional(entry, "template_markers", _string_list, where, markers),
        "ci": None if entry.get("ci") is None else _ci_probe(entry["ci"], f"{where}.ci"),
    }


def _repository(value: Any, where: str) -> dict[str, Any]:
    keys = ("path", "name", "branch", "remote", "tag_pattern", "probes")
    entry = _only_keys(value, keys, where)
    path = _optional(entry, "path", _absolute_path, where, None)
    if path is None:
        raise ValueError(f"{where}.path: required (the repository's folder)")
    name = _optional(entry, "name", _string, where, path.name)
    tag_pattern = _optional(entry, "tag_pattern", _string, where, "v*")
    for key, text in (("name", name), ("tag_pattern", tag_pattern)):
        if not text.strip():
            raise ValueError(f"{where}.{key}: must not be empty")
    return {
        "name": name,
        "path": path,
        "branch": _optional(entry, "branch", _git_name, where, "main"),
        "remote": _optional(entry, "remote", _git_name, where, None),
        "tag_pattern": tag_pattern,
        "probes": _release_probes(entry.get("probes"), f"{where}.probes"),
    }


def _repositories(value: Any) -> list[dict[str, Any]]:
    """The repositories release-readiness watches; every bad entry is reported by its index."""
    if not isinstance(value, list):
        raise ValueError("expected a list of repositories (mappings with at least `path`)")
    problems: list[str] = []
    repositories: list[dict[str, Any]] = []
    for index, entry in enumerate(value):
        try:
            repository = _repository(entry, f"[{index}]")
        except ValueError as err:
            problems.append(str(err))
            continue
        if any(known["name"] == repository["name"] for known in repositories):
            problems.append(f"[{index}].name: {repository['name']!r} is used twice; set `name`")
        repositories.append(repository)
    if problems:
        raise ValueError("; ".join(problems))
    return repositories


def _http_urls(value: Any) -> list[str]:
    """One http(s) URL or a non-empty list of them (the controller's Alertmanagers)."""
    urls = _string_list([value] if isinstance(value, str) else value)
    for index, url in enumerate(urls):
        if not re.match(r"^https?://[^/\s]+", url):
            raise ValueError(f"entry {index} is not an http:// or https:// URL")
    if not urls:
        raise ValueError("expected at least one URL")
    return urls


def _optional_http_url(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("expected one http:// or https:// URL")
    return _http_urls(value)[0]


def _optional_argv(value: Any) -> list[str]:
    """An argv list, or an empty list for "not configured"."""
    return [] if value == [] else _argv(value)


def _label_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", k) and isinstance(v, str)
        for k, v in value.items()
    ):
        raise ValueError("expected a mapping of label name to string value")
    return dict(value)


def _one_line(value: Any) -> str:
    text = _string(value)
    if not text.strip() or any(c < " " for c in text):
        raise ValueError("expected one non-empty line of text")
    return text


SCHEMA: dict[str, Any] = {
    "state_dir": Key(None, _optional_path, "durable state (default ~/.local/state/agentwatch)"),
    "spool_dir": Key(None, _optional_path, "where sentinels write *.prom files"),
    "log_level": Key("info", _choice("debug", "info", "warning", "error"), "stderr log level"),
    "thresholds": {
        name: Key(default, _non_negative_number, meaning)
        for name, (default, meaning) in ALERT_THRESHOLDS.items()
    },
    "exporter": {
        "listen": Key("127.0.0.1:9847", _listen_address, "HOST:PORT of /metrics"),
        "web_config_file": Key(
            None, _optional_path, "Prometheus-style web config: TLS, basic auth (null: plain HTTP)"
        ),
        "stale_after_intervals": Key(
            3.0, _positive_number, "a spool file older than this many intervals is stale"
        ),
    },
    "controller": {
        "alertmanagers": Key(
            ["http://127.0.0.1:9851"],
            _http_urls,
            "Alertmanagers to read (all peers of an HA pair; default: the stack's own)",
        ),
        "match_labels": Key(
            {},
            _label_map,
            "act only on alerts with these labels, e.g. {instance: laptop-ana} when one "
            "Alertmanager serves several workstations",
        ),
        "interval": Key(15.0, _duration, "seconds between read-decide-apply cycles"),
        "timeout": Key(5.0, _duration, "HTTP timeout for Alertmanager and the orchestrator"),
        "listen": Key("127.0.0.1:9848", _listen_address, "HOST:PORT of GET /throttle"),
        "web_config_file": Key(
            None, _optional_path, "Prometheus-style web config: TLS, basic auth (null: plain HTTP)"
        ),
        "state_file": Key(
            None, _optional_path, "decision JSON (default <state_dir>/controller.json)"
        ),
        "max_agents": Key(4, _positive_int, "concurrency the run may reach (the ceiling)"),
        "min_agents": Key(1, _positive_int, "floor: shrinking never goes below this"),
        "shrink_cooldown": Key(180.0, _duration, "a shrink alert takes one agent off per this"),
        "grow_sustain": Key(300.0, _duration, "clear this long before each agent is added back"),
        "breaker_cooldown": Key(900.0, _duration, "the breaker stays open at least this long"),
        "probe_window": Key(
            300.0, _duration, "half-open: one probe agent; closes if clear this long"
        ),
        "hold_for": Key(
            300.0, _duration, "no Alertmanager answers: keep the last decision this long"
        ),
        "fallback": Key(
            "floor",
            _choice("floor", "hold", "pause", "max"),
            "then: floor (run at min_agents, nothing else relaxes), hold, pause, max (fail open)",
        ),
        "budget_usd": Key(0.0, _non_negative_number, "run budget cap in USD (0: unlimited)"),
        "run_config_file": Key(
            None, _optional_path, "orchestrator run config with per_run_max_cost_usd (Bernstein)"
        ),
        "orchestrator": {
            "kind": Key("none", _choice("none", "bernstein", "webhook", "command"), "adapter"),
            "url": Key(None, _optional_http_url, "Bernstein task server or webhook URL"),
            "token_env": Key(None, _env_name, "environment variable holding a bearer token"),
            "token_file": Key(None, _optional_path, "file holding a bearer token (first line)"),
            "command": Key(
                [], _optional_argv, "command hook argv (no shell); decision JSON on stdin"
            ),
            "timeout": Key(10.0, _duration, "timeout of each push or command run"),
        },
        "nudge": {
            "enabled": Key(False, _boolean, "send 'please continue' to stalled allow-listed panes"),
            "allow_sessions": Key([], _string_list, "tmux session names that may be nudged"),
            "message": Key("please continue", _one_line, "the text typed into the pane"),
            "backoff": Key(600.0, _duration, "minimum time between nudges of one pane (doubles)"),
            "verify_after": Key(120.0, _duration, "check the transcript grew this long after"),
            "max_attempts": Key(3, _positive_int, "escalated nudges in a row before giving up"),
            "tmux_socket": Key(
                None, _optional_string, "tmux socket: a path (-S) or a name (-L); default server"
            ),
            "transcript_dir": Key(
                None, _optional_path, "folder whose *.jsonl must grow (default: the pane's project)"
            ),
        },
    },
    "stack": {
        "prometheus_listen": Key(
            "127.0.0.1:9850", _listen_address, "Prometheus of `agentwatch up`"
        ),
        "alertmanager_listen": Key(
            "127.0.0.1:9851", _listen_address, "Alertmanager of `agentwatch up`"
        ),
        "webhook_listen": Key(
            "127.0.0.1:9849", _listen_address, "local receiver that prints alert messages"
        ),
        "scrape_interval": Key(15.0, _duration, "how often Prometheus scrapes the exporter"),
        "evaluation_interval": Key(15.0, _duration, "how often Prometheus evaluates the rules"),
        "group_wait": Key(10.0, _duration, "Alertmanager wait before the first message"),
        "group_interval": Key(60.0, _duration, "Alertmanager wait before telling a change"),
        "retention": Key("15d", _string, "Prometheus retention of the stack's own TSDB"),
    },
    "demo": {
        "burn_seconds": Key(900.0, _duration, "the burning session burns this long, then calms"),
        "stall_after_turns": Key(8, _positive_int, "turns before a session stalls on an API error"),
        "seconds_per_turn": Key(4.0, _duration, "pace of a steady simulated session"),
        "orchestrator_listen": Key(
            "127.0.0.1:9852", _listen_address, "the demo orchestrator the controller steers"
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
        "release-readiness": _sentinel_keys(
            3600.0,
            repositories=Key(
                [],
                _repositories,
                "repositories to watch: path, name, branch, remote, tag_pattern, probes "
                "(command, command_timeout, required_file, template_markers, ci)",
            ),
            git_timeout=Key(30.0, _duration, "seconds one local git command may take"),
            fetch_timeout=Key(120.0, _duration, "seconds a `git fetch` of the remote may take"),
        ),
        "idle-error": _sentinel_keys(
            10.0,
            tmux_sockets=Key(
                None, _string_list, "tmux sockets besides the default one (null: as resources)"
            ),
            agent_names=Key(
                None, _string_list, "agent CLI names marking an agent pane (null: as resources)"
            ),
            capture_rows=Key(45, _positive_int, "rows of each pane's tail captured"),
            window_lines=Key(20, _positive_int, "last non-empty lines a stall may fire from"),
            settle_time=Key(
                20.0, _duration, "a throttle fires once the tail is unchanged this long"
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
