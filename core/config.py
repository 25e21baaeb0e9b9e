"""The config file: every key optional, unknown keys and wrong types rejected by name.

The schema is data (nested dicts of `Key`), so `config check`, the defaults and the example
config all come from one place. The sections of the sentinels are not listed here: each
sentinel declares its own keys (see agentwatch.sentinels.contract), and whoever loads the
config passes them in (`agentwatch.sentinels.registry.load_config` does). Every command
imports this module, so what only some need (yaml, the HTTP module's address parser) is
imported where it is used.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentwatch.core import paths
from agentwatch.core.lazy_re import Pattern
from agentwatch.core.sanitize import preview

MAX_PROBLEM = 400  # characters of one problem line: a value is quoted by its preview only
# Set by the commands that stay running (cli/main.py): a YAML file is parsed by a child
# process (core/yaml_apart.py), so the parser is not loaded in theirs for good.
YAML_APART = False


class ConfigError(Exception):
    """The config file is unusable; `problems` lists each one with its key."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


# ---- value parsers: each returns the parsed value or raises ValueError saying what is wrong

_DURATION = Pattern(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}
_ENV_NAME = Pattern(r"^[A-Za-z_][A-Za-z0-9_]*$")


def duration(value: Any) -> float:
    """Seconds from a number or a string like "15s", "5m", "1h"."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("expected a duration such as 30, '30s', '5m' or '1h'")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        match = _DURATION.match(value) if len(value) < 100 else None
        if not match:
            raise ValueError(f"{preview(value)} is not a duration such as 30, '30s', '5m' or '1h'")
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds <= 0:
        raise ValueError("must be greater than zero")
    return seconds


def positive_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    if value <= 0:
        raise ValueError("must be greater than zero")
    return float(value)


def non_negative_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    if value < 0:
        raise ValueError("must not be negative")
    return float(value)


def fraction(value: Any) -> float:
    """A share above 0 and at most 1."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    if not 0 < value <= 1:
        raise ValueError("must be above 0 and at most 1")
    return float(value)


def positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError("expected a whole number greater than zero")
    return value


def int_range(low: int, high: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"expected a whole number from {low} to {high}")
        return value

    return check


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {preview(value)}")
    return value


def string(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return value


def optional_string(value: Any) -> str | None:
    return None if value is None else string(value)


def one_line(value: Any) -> str:
    text = string(value)
    if not text.strip() or any(c < " " for c in text):
        raise ValueError("expected one non-empty line of text")
    return text


def optional_line(value: Any) -> str | None:
    return None if value is None else one_line(value)


def string_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ValueError("expected a list of non-empty strings")
    return list(value)


def choice(*options: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        text = string(value).lower()
        if text not in options:
            raise ValueError(f"{preview(value)} is not one of {', '.join(options)}")
        return text

    return check


def optional_path(value: Any) -> Path | None:
    if value is None:
        return None
    return Path(os.path.expanduser(string(value)))


def absolute_path(value: Any) -> Path:
    path = Path(os.path.expanduser(string(value)))
    if not path.is_absolute():
        raise ValueError(f"{preview(value)} is not an absolute path (~ is allowed)")
    return path


def path_list(value: Any) -> list[Path] | None:
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


def listen_address(value: Any) -> str:
    from agentwatch.core.listen import parse_listen

    text = string(value)
    parse_listen(text)
    return text


def argv(value: Any) -> list[str]:
    if isinstance(value, str):
        raise ValueError("expected a list of arguments (argv, run without a shell), not a string")
    if not value or not isinstance(value, list):
        raise ValueError("expected a non-empty list of arguments")
    return string_list(value)


def optional_argv(value: Any) -> list[str]:
    """An argv list, or an empty list for "not configured"."""
    return [] if value == [] else argv(value)


def env_name(value: Any) -> str:
    text = string(value)
    if not _ENV_NAME.match(text):
        raise ValueError(f"{preview(text)} is not an environment variable name")
    return text


def http_urls(value: Any) -> list[str]:
    """One http(s) URL or a non-empty list of them (the controller's Alertmanagers)."""
    urls = string_list([value] if isinstance(value, str) else value)
    for index, url in enumerate(urls):
        if not re.match(r"^https?://[^/\s]+", url):
            raise ValueError(f"entry {index} is not an http:// or https:// URL")
    if not urls:
        raise ValueError("expected at least one URL")
    return urls


def optional_http_url(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("expected one http:// or https:// URL")
    return http_urls(value)[0]


def label_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", k) and isinstance(v, str)
        for k, v in value.items()
    ):
        raise ValueError("expected a mapping of label name to string value")
    return dict(value)


# ---- helpers for parsers of structured values (lists of mappings), naming the bad key


def _key_name(name: Any) -> str:
    """A key as a problem line names it: itself when short and plain, else its preview."""
    if isinstance(name, str) and len(name) <= 64 and name.isprintable():
        return name
    return preview(name)


def _capped(problem: str) -> str:
    """One problem line of bounded length, whatever a parser put in its message."""
    if len(problem) <= MAX_PROBLEM:
        return problem
    return f"{problem[:MAX_PROBLEM]}… ({len(problem)} characters)"


def only_keys(entry: Any, allowed: tuple[str, ...], where: str) -> Mapping[str, Any]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: expected a mapping, got {type(entry).__name__}")
    unknown = sorted(_key_name(name) for name in entry if name not in allowed)
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown key (known here: {', '.join(allowed)})")
    return entry


def entry_field(
    entry: Mapping[str, Any], name: str, parse: Callable[[Any], Any], where: str
) -> Any:
    try:
        return parse(entry[name])
    except ValueError as err:
        raise ValueError(f"{where}.{name}: {err}") from err


def optional_field(
    entry: Mapping[str, Any], name: str, parse: Callable[[Any], Any], where: str, default: Any
) -> Any:
    return default if entry.get(name) is None else entry_field(entry, name, parse, where)


# ---- path warnings for `config check`: configured places that do not exist (yet)


def missing_path(value: Any) -> list[str]:
    """A configured file or folder that does not exist: a warning, not an error (it may be
    created later), so `config check` names it instead of saying OK."""
    return [f"{value} does not exist"] if isinstance(value, Path) and not value.exists() else []


def missing_paths(value: Any) -> list[str]:
    return [line for path in value or [] for line in missing_path(path)]


# ---- the schema


@dataclass(frozen=True)
class Key:
    """One leaf of the schema: its default, its parser, a one-line meaning, and optionally
    a check of a configured value that only warns (e.g. a path that does not exist)."""

    default: Any
    parse: Callable[[Any], Any]
    meaning: str
    warn: Callable[[Any], list[str]] | None = None


Schema = Mapping[str, Any]  # name -> Key, or name -> nested Schema

# Alert thresholds that are the user's to choose. The exporter serves each as
# agentwatch_alert_threshold{name}, and the rules compare against that series, so a
# threshold is changed here (or shortened by a test) without touching the rules.
ALERT_THRESHOLDS: dict[str, tuple[float, str]] = {
    "quota_5h_tokens": (0, "fresh tokens allowed per 5 hours (0: not configured, no alert)"),
    "quota_7d_tokens": (0, "fresh tokens allowed per 7 days (0: not configured, no alert)"),
    "burn_floor_tokens_per_hour": (10e6, "below this fresh-token rate a burn never pages"),
    "burn_pattern_sessions": (
        3,
        "sessions of one project that burned the same way within a day: one pattern message",
    ),
    "stall_seconds": (300, "a pane stalled at its prompt longer than this alerts"),
    "rate_limit_cooldown_seconds": (900, "the rate-limit breaker stays open this long"),
    "footprint_processes": (220, "agent-related processes above which the footprint alerts"),
    "session_memory_bytes": (4 * 2**30, "one session tree's memory above this is runaway"),
    "session_cpu_cores": (2, "one session tree's sustained CPU above this is runaway"),
    "host_load_per_cpu": (3, "5-minute load average per CPU above which spawning pauses"),
    "host_memory_available_ratio": (0.1, "available memory share below which agents shrink"),
    "error_ratio": (0.2, "errors per outcome over 10 minutes above which agents shrink"),
    "ledger_lag_bytes": (100 * 2**20, "unread transcript bytes that mean the ledger is behind"),
    "ledger_database_bytes": (2 * 2**30, "ledger database size that means unbounded growth"),
    "quota_elevated_ratio": (0.70, "a quota window used this far is elevated: Opus work waits"),
    "quota_critical_ratio": (0.85, "a quota window used this far is critical: Sonnet work waits"),
    "quota_shutdown_ratio": (0.95, "a quota window used this far pauses every new agent"),
    "quota_stale_seconds": (1800, "an official quota reading older than this counts as no data"),
    "error_ratio_low": (0.05, "errors per outcome over 10 minutes below which agents grow"),
    "deadline_warning_seconds": (300, "an open task this close to its deadline warns"),
    "disk_free_ratio": (0.10, "free share of the state or spool filesystem that alerts"),
    "ledger_commit_seconds": (1.0, "p99 ledger commit time above which the ledger is slow"),
}

# The agent CLIs agentwatch knows by default: each such process roots a session tree.
AGENT_NAMES = ["claude", "codex", "gemini", "aider", "opencode", "cursor-agent", "amp"]


def sentinel_section(interval: float, keys: Mapping[str, Key]) -> dict[str, Key]:
    """The keys every sentinel has (enabled, interval) plus its own."""
    return {
        "enabled": Key(
            True, boolean, "run this sentinel under `agentwatch up` and expect its file"
        ),
        "interval": Key(interval, duration, "seconds between cycles (also sets staleness)"),
        **keys,
    }


def _web_config_key() -> Key:
    return Key(
        None,
        optional_path,
        "Prometheus-style web config: TLS, basic auth (null: plain HTTP)",
        missing_path,
    )


BASE_SCHEMA: dict[str, Any] = {
    "state_dir": Key(None, optional_path, "durable state (default ~/.local/state/agentwatch)"),
    "spool_dir": Key(None, optional_path, "where sentinels write *.prom files"),
    "log_level": Key("info", choice("debug", "info", "warning", "error"), "stderr log level"),
    "thresholds": {
        name: Key(default, non_negative_number, meaning)
        for name, (default, meaning) in ALERT_THRESHOLDS.items()
    },
    "agents": {
        "names": Key(
            AGENT_NAMES,
            string_list,
            "executable names of agent CLIs; each such process roots a session (resources, "
            "idle-error)",
        ),
        "tmux_sockets": Key(
            [], string_list, "tmux sockets besides the default one where agents may run"
        ),
    },
    "exporter": {
        "listen": Key("127.0.0.1:9847", listen_address, "HOST:PORT of /metrics"),
        "web_config_file": _web_config_key(),
        "stale_after_intervals": Key(
            3.0, positive_number, "a spool file older than this many intervals is stale"
        ),
    },
    "controller": {
        "alertmanagers": Key(
            ["http://127.0.0.1:9851"],
            http_urls,
            "Alertmanagers to read (all peers of an HA pair; default: the stack's own)",
        ),
        "match_labels": Key(
            {},
            label_map,
            "act only on alerts with these labels, e.g. {instance: laptop-ana} when one "
            "Alertmanager serves several workstations (default with stack.remote_write.url "
            "set: {host: <stack.remote_write.host>})",
        ),
        "interval": Key(15.0, duration, "seconds between read-decide-apply cycles"),
        "timeout": Key(
            5.0,
            duration,
            "deadline of each whole HTTP exchange with Alertmanager or the orchestrator, body "
            "included (a slower answer counts as none)",
        ),
        "listen": Key("127.0.0.1:9848", listen_address, "HOST:PORT of GET /throttle"),
        "web_config_file": _web_config_key(),
        "state_file": Key(
            None, optional_path, "decision JSON (default <state_dir>/controller.json)"
        ),
        "max_agents": Key(4, positive_int, "concurrency the run may reach (the ceiling)"),
        "min_agents": Key(1, positive_int, "floor: shrinking never goes below this"),
        "shrink_cooldown": Key(180.0, duration, "a shrink alert takes one agent off per this"),
        "grow_sustain": Key(
            120.0,
            duration,
            "a grow alert (low error rate) active this long before each agent is added back",
        ),
        "breaker_cooldown": Key(900.0, duration, "the breaker stays open at least this long"),
        "probe_window": Key(
            300.0, duration, "half-open: one probe agent; closes if clear this long"
        ),
        "hold_for": Key(
            300.0, duration, "no Alertmanager answers: keep the last decision this long"
        ),
        "fallback": Key(
            "floor",
            choice("floor", "hold", "pause", "max"),
            "then: floor (run at min_agents, nothing else relaxes), hold, pause, max (fail open)",
        ),
        "budget_usd": Key(0.0, non_negative_number, "run budget cap in USD (0: unlimited)"),
        "budget_period": Key(
            "auto",
            choice("auto", "day", "week", "month", "run"),
            "spend the budget counts: auto (the started run while one is active, else day), "
            "day, week, month, run",
        ),
        "bernstein_config_file": Key(
            None,
            optional_path,
            "the Bernstein project's bernstein.yaml (budget, seed.budget_usd); its "
            ".sdd/runtime/run_config.json is found beside it (default: <root>/bernstein.yaml "
            "when run_config_file is <root>/.sdd/runtime/run_config.json)",
            missing_path,
        ),
        "burn": {
            "escalate_after": Key(
                900.0,
                duration,
                "an unacknowledged burn alert this old shrinks; twice this old, pauses",
            ),
            "verify_after": Key(300.0, duration, "the throttle is judged this long after it began"),
            "verify_fraction": Key(
                0.5,
                fraction,
                "the throttle worked when the rate fell below this share of its start rate",
            ),
        },
        "run_config_file": Key(
            None,
            optional_path,
            "Bernstein's run config with budget_usd or per_run_max_cost_usd (default: "
            ".sdd/runtime/run_config.json beside bernstein_config_file)",
            missing_path,
        ),
        "orchestrator": {
            "kind": Key("none", choice("none", "bernstein", "webhook", "command"), "adapter"),
            "url": Key(None, optional_http_url, "Bernstein task server or webhook URL"),
            "token_env": Key(None, env_name, "environment variable holding a bearer token"),
            "token_file": Key(
                None, optional_path, "file holding a bearer token (first line)", missing_path
            ),
            "command": Key(
                [], optional_argv, "command hook argv (no shell); decision JSON on stdin"
            ),
            "timeout": Key(10.0, duration, "timeout of each push or command run"),
        },
        "nudge": {
            "enabled": Key(False, boolean, "send 'please continue' to stalled allow-listed panes"),
            "allow_sessions": Key([], string_list, "tmux session names that may be nudged"),
            "message": Key("please continue", one_line, "the text typed into the pane"),
            "backoff": Key(600.0, duration, "minimum time between nudges of one pane (doubles)"),
            "verify_after": Key(120.0, duration, "check the transcript grew this long after"),
            "max_attempts": Key(3, positive_int, "escalated nudges in a row before giving up"),
            "tmux_socket": Key(
                None, optional_string, "tmux socket: a path (-S) or a name (-L); default server"
            ),
            "transcript_dir": Key(
                None,
                optional_path,
                "folder whose *.jsonl must grow (default: the pane's project)",
                missing_path,
            ),
        },
    },
    "claude": {
        "config_dirs": Key(
            None,
            path_list,
            "Claude Code config folders holding projects/ (default: CLAUDE_CONFIG_DIR, else "
            "~/.config/claude and ~/.claude)",
            missing_paths,
        ),
    },
    "stack": {
        "prometheus_listen": Key("127.0.0.1:9850", listen_address, "Prometheus of `agentwatch up`"),
        "alertmanager_listen": Key(
            "127.0.0.1:9851", listen_address, "Alertmanager of `agentwatch up`"
        ),
        "webhook_listen": Key(
            "127.0.0.1:9849", listen_address, "local receiver that prints alert messages"
        ),
        "scrape_interval": Key(15.0, duration, "how often Prometheus scrapes the exporter"),
        "evaluation_interval": Key(15.0, duration, "how often Prometheus evaluates the rules"),
        "group_wait": Key(10.0, duration, "Alertmanager wait before the first message"),
        "group_interval": Key(60.0, duration, "Alertmanager wait before telling a change"),
        "retention": Key("15d", string, "Prometheus retention of the stack's own TSDB"),
        "remote_write": {
            "url": Key(
                None,
                optional_http_url,
                "central store the stack's Prometheus also writes every series to (Prometheus "
                "with the receiver on, Mimir, Thanos Receive, VictoriaMetrics; null: none); "
                "the rules stay evaluated here",
            ),
            "host": Key(
                None,
                optional_line,
                "external label `host` that tells this machine apart in the store (default: "
                "its host name)",
            ),
            "account": Key(
                None,
                optional_line,
                "external label `account`: hosts sharing one subscription share it, and the "
                "central rules sum their windows by it (null: no account label)",
            ),
            "username": Key(None, optional_line, "basic auth user for the store (null: none)"),
            "password_file": Key(
                None,
                optional_path,
                "file holding the basic auth password (chmod 600; Prometheus reads it)",
                missing_path,
            ),
        },
    },
    "demo": {
        "burn_seconds": Key(900.0, duration, "the burning session burns this long, then calms"),
        "stall_after_turns": Key(8, positive_int, "turns before a session stalls on an API error"),
        "seconds_per_turn": Key(4.0, duration, "pace of a steady simulated session"),
        "other_agents_every": Key(
            10.0, duration, "seconds between responses of the demo's Codex, Gemini, OpenCode"
        ),
        "orchestrator_listen": Key(
            "127.0.0.1:9852", listen_address, "the demo orchestrator the controller steers"
        ),
    },
}


def schema(sentinels: Mapping[str, Schema] | None = None) -> dict[str, Any]:
    """The whole schema: the base sections plus one section per sentinel."""
    return {**BASE_SCHEMA, "sentinels": dict(sentinels or {})}


@dataclass
class Config:
    """The validated config: nested plain dicts with every default filled in."""

    values: dict[str, Any]
    source: Path | None = None
    warnings: list[str] = field(default_factory=list)

    def __getitem__(self, section: str) -> Any:
        return self.values[section]

    def sentinel(self, name: str) -> dict[str, Any]:
        return self.values["sentinels"][name]

    @property
    def sentinels(self) -> dict[str, dict[str, Any]]:
        return self.values["sentinels"]

    @property
    def state_dir(self) -> Path:
        return self.values["state_dir"] or paths.default_state_dir()

    @property
    def spool_dir(self) -> Path:
        return self.values["spool_dir"] or paths.default_spool_dir()

    @property
    def claude_config_dirs(self) -> list[Path] | None:
        """The configured Claude Code folders (None: Claude Code's own defaults)."""
        return self.values["claude"]["config_dirs"]


def _apply(
    spec: Schema, raw: Any, where: str, problems: list[str], warnings: list[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        problems.append(f"{where or 'top level'}: expected a mapping, got {type(raw).__name__}")
        raw = {}
    for name in raw:
        if name not in spec:
            known = ", ".join(sorted(spec))
            problems.append(f"{where}{_key_name(name)}: unknown key (known here: {known})")
    for name, item in spec.items():
        key = f"{where}{name}"
        if isinstance(item, Key):
            if name in raw and raw[name] is not None:
                try:
                    out[name] = item.parse(raw[name])
                except ValueError as err:
                    problems.append(_capped(f"{key}: {err}"))
                    out[name] = item.default
                    continue
                if item.warn is not None:
                    warnings.extend(f"{key}: {line}" for line in item.warn(out[name]))
            else:
                out[name] = item.default
        else:
            out[name] = _apply(item, raw.get(name), f"{key}.", problems, warnings)
    return out


def _listens(values: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    for section in ("exporter", "controller", "stack", "demo"):
        for name, value in values[section].items():
            if name == "listen" or name.endswith("_listen"):
                yield f"{section}.{name}", value
    for sentinel, settings in (values.get("sentinels") or {}).items():  # the otel receiver
        if isinstance(settings, Mapping) and isinstance(settings.get("listen"), str):
            yield f"sentinels.{sentinel}.listen", settings["listen"]


def contradictions(values: Mapping[str, Any]) -> list[str]:
    """Settings that are each valid but cannot hold together, naming both keys."""
    from agentwatch.core.listen import parse_listen

    problems = []
    controller = values["controller"]
    if controller["min_agents"] > controller["max_agents"]:
        problems.append(
            f"controller.min_agents ({controller['min_agents']}) is greater than "
            f"controller.max_agents ({controller['max_agents']}): the floor must not be "
            "above the ceiling"
        )
    taken: dict[tuple[str, int], str] = {}
    for key, listen in _listens(values):
        address = parse_listen(listen)
        if address in taken:
            problems.append(f"{taken[address]} and {key} both listen on {listen}")
        taken.setdefault(address, key)
    return problems


def from_mapping(
    raw: Any, source: Path | None = None, sentinels: Mapping[str, Schema] | None = None
) -> Config:
    problems: list[str] = []
    warnings: list[str] = []
    values = _apply(schema(sentinels), raw, "", problems, warnings)
    if not problems:
        problems = contradictions(values)
    if problems:
        raise ConfigError(problems)
    return Config(values=values, source=source, warnings=warnings)


def read_raw(path: Path) -> Any:
    """The YAML of a config file; ConfigError when it cannot be read or parsed, or is over
    a limit: larger than CONFIG_LIMIT, not a regular file, nested too deep, or expanding
    through aliases past yamlsafe.MAX_EXPANDED (a billion laughs). A `*.json` file is read
    as JSON (what `up` writes for its children: they then never load the YAML parser, a
    MiB and a half of every process), and so is YAML text that is JSON and reads the same
    (core/yaml_json.py)."""
    text = _read_text(path)
    if path.suffix == ".json":
        return _parse_json(path, text)
    from agentwatch.core import yaml_json

    raw = yaml_json.parse(text)  # JSON that YAML reads the same: no YAML parser loaded
    if raw is not yaml_json.NOT_YAML_SAME:
        return raw
    if YAML_APART and "yaml" not in sys.modules:
        from agentwatch.core import yaml_apart

        answer = yaml_apart.parse(path, text)
        if answer is not yaml_apart.PARSE_HERE:
            if "problems" in answer:
                raise ConfigError([str(problem) for problem in answer["problems"]])
            return answer["raw"]
    return parse_yaml(path, text)


def parse_yaml(path: Path, text: str) -> Any:
    """The YAML text of the config file `path`; ConfigError when invalid or over a limit."""
    import yaml

    from agentwatch.core import yamlsafe

    try:
        return yamlsafe.load(text)
    except yamlsafe.YamlRefused as err:
        raise ConfigError([f"{path}: refused: {err}"]) from None
    except yaml.YAMLError as err:
        raise ConfigError([_capped(f"{path}: not valid YAML: {err}")]) from None


def _read_text(path: Path) -> str:
    """The file's text, within CONFIG_LIMIT; ConfigError saying why it cannot be read."""
    from agentwatch.core import bounded

    try:
        return bounded.read_text(path, bounded.CONFIG_LIMIT)
    except bounded.FileRefused as err:
        raise ConfigError([f"{path}: cannot read: {str(err).removeprefix(f'{path}: ')}"]) from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError([f"{path}: cannot read: {_reason(err)}"]) from None


def _parse_json(path: Path, text: str) -> Any:
    import json

    try:
        return json.loads(text)
    except RecursionError:
        raise ConfigError([f"{path}: refused: JSON nested too deep"]) from None
    except ValueError as err:
        raise ConfigError([_capped(f"{path}: not valid JSON: {err}")]) from None


def _reason(err: OSError | UnicodeDecodeError) -> str:
    if isinstance(err, UnicodeDecodeError):
        return f"not UTF-8 (byte {err.start})"
    return err.strerror or type(err).__name__


def load(path: Path | None = None, sentinels: Mapping[str, Schema] | None = None) -> Config:
    """Load the config file; a missing default file means all defaults."""
    explicit = path is not None
    path = path or paths.default_config_file()
    if not path.exists():
        if explicit:
            raise ConfigError([f"{path}: no such config file"])
        return from_mapping({}, None, sentinels)
    raw = read_raw(path)
    try:
        return from_mapping(raw, path, sentinels)
    except ConfigError as err:
        raise ConfigError([f"{path}: {problem}" for problem in err.problems]) from err


def defaults_as_yaml(sentinels: Mapping[str, Schema] | None = None) -> str:
    """A commented example config listing every key with its default."""
    import yaml

    lines: list[str] = ["# agentwatch config: every key is optional; shown with its default."]

    def walk(spec: Schema, indent: int) -> None:
        pad = "  " * indent
        for name, item in spec.items():
            if isinstance(item, Key):
                default = item.default
                shown = (
                    "null"
                    if default is None
                    else yaml.safe_dump(default, default_flow_style=True, width=1000).strip()
                )
                if shown.endswith("..."):
                    shown = shown[:-3].strip()
                lines.append(f"{pad}# {name}: {shown}    # {item.meaning}")
            else:
                lines.append(f"{pad}# {name}:")
                walk(item, indent + 1)

    walk(schema(sentinels), 0)
    return "\n".join(lines) + "\n"
