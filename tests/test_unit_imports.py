"""The installed units' commands, each run whole as systemd starts it (its own interpreter, the
YAML config `agentwatch install` leaves), leave out what they do not use: the YAML parser
(core/yaml_apart.py parses the file in a child), ssl without TLS, inspect (dataclasses'
import, deferred by the entry), requests, importlib.resources (for a shipped file), psutil
(the fallback without /proc), zoneinfo (a reset message naming its zone) and the process
pool (a cold backfill), and argparse (cli/main.py reads a unit's line). Each costs 0.6 to
several MiB of private memory in a unit (issue 29: the installed kit's summed PSS,
bench/bench_kit.py --units)."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentwatch.cli import main
from agentwatch.core import config, yaml_apart
from agentwatch.sentinels import registry
from tests.conftest import free_port

HEAVY = (
    "yaml", "ssl", "inspect", "requests", "prometheus_client.exposition", "importlib.resources",
    "psutil", "zoneinfo", "concurrent.futures", "argparse",
)  # fmt: skip
# What a command needs after all: the controller talks HTTP with requests (which loads ssl,
# and urllib3 importlib.metadata, with importlib.resources).
NEEDED = {
    "controller": {"requests", "ssl", "importlib.resources"},
}
PROBE = """
import atexit, json, sys
def loaded():
    return [m for m in {heavy} if m in sys.modules and "__getattr__" not in vars(sys.modules[m])]
atexit.register(lambda: print(json.dumps(loaded())))
sys.argv = ["agentwatch", *{argv}]
from agentwatch.cli.entry import run
run()
"""
UNITS = ["exporter", "controller"] + [
    f"sentinel {name}" for name, item in registry.sentinels().items() if item.schedule == "loop"
]


def home_with_config(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """A home with the runtime folder and a YAML config on free ports, as after install."""
    (tmp_path / "run").mkdir(mode=0o700)
    ports = {name: free_port() for name in ("exporter", "controller", "alertmanager", "otel")}
    folder = tmp_path / ".config" / "agentwatch"
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(
        f"exporter:\n  listen: 127.0.0.1:{ports['exporter']}\n"
        f"controller:\n  listen: 127.0.0.1:{ports['controller']}\n"
        f"  alertmanagers: ['http://127.0.0.1:{ports['alertmanager']}']\n"
        f"sentinels:\n  otel:\n    listen: 127.0.0.1:{ports['otel']}\n"
    )
    return tmp_path, ports


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def catches_sigterm(pid: int) -> bool:
    """Whether the process has its SIGTERM handler (the listeners bind before they set it)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


@pytest.mark.parametrize("unit", UNITS)
def test_a_unit_leaves_the_heavy_modules_out(unit: str, tmp_path: Path) -> None:
    home, ports = home_with_config(tmp_path)
    argv = unit.split()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": str(home / "run")}
    process = subprocess.Popen(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY, argv=argv)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    spool = home / "run" / "agentwatch" / f"{argv[-1]}.prom"
    deadline = time.monotonic() + 120
    try:
        while not (
            (listening(ports[unit]) if unit in ports else spool.exists())
            and catches_sigterm(process.pid)
        ):
            assert process.poll() is None, process.communicate()[1][-2000:]
            assert time.monotonic() < deadline, f"{unit} never became ready"
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr[-2000:]
    loaded = set(json.loads(stdout.strip().splitlines()[-1]))
    assert loaded - NEEDED.get(unit, set()) == set()


def test_the_child_parses_as_the_process_would(tmp_path: Path) -> None:
    """The same values or the same problems, whichever side parses; what JSON cannot carry
    exactly (a date, a non-string key) is left to the process. (The units' test above shows
    the child's values arriving: they listen on the ports the YAML names.)"""
    cases = {
        "plain.yaml": "log_level: debug\nexporter: {listen: '127.0.0.1:1'}\nagents: {}\n",
        "broken.yaml": "exporter: [unclosed\n",
        "deep.yaml": "a: " + "[" * 100 + "]" * 100 + "\n",
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        try:
            here: object = {"raw": config.parse_yaml(path, text)}
        except config.ConfigError as err:
            here = {"problems": err.problems}
        assert yaml_apart.parse(path, text) == here, name
    for text in ("when: 2026-12-04\n", "1: one\n"):
        assert yaml_apart.parse(tmp_path / "odd.yaml", text) is yaml_apart.PARSE_HERE


@pytest.mark.parametrize("program", ["/bin/false", "/nonexistent/python"])
def test_a_child_that_fails_leaves_the_parsing_here(
    program: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", program)
    assert yaml_apart.parse(tmp_path / "config.yaml", "a: 1\n") is yaml_apart.PARSE_HERE


def test_read_raw_takes_the_childs_answer(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("log_level: debug\nwhen: 2026-12-04\n")
    monkeypatch.setattr(config, "YAML_APART", True)
    monkeypatch.delitem(sys.modules, "yaml")  # as in a unit, where nothing loaded it
    asked = []
    monkeypatch.setattr(yaml_apart, "parse", lambda *a: asked.append(a) or {"raw": {"x": 1}})
    assert config.read_raw(path) == {"x": 1} and asked
    monkeypatch.setattr(yaml_apart, "parse", lambda *a: yaml_apart.PARSE_HERE)
    assert config.read_raw(path)["when"].isoformat() == "2026-12-04"


@pytest.mark.parametrize("unit", UNITS + [f"sentinel {name}" for name in registry.sentinels()])
@pytest.mark.parametrize("config_file", [[], ["--config", "/etc/agentwatch.yaml"]])
def test_a_units_line_reads_as_argparse_reads_it(unit: str, config_file: list[str]) -> None:
    argv = config_file + unit.split()
    fast = main.unit_args(argv)
    assert fast is not None
    assert vars(fast) == vars(main.build_parser(main.command_in(argv)).parse_args(argv))


@pytest.mark.parametrize(
    "argv",
    [["sentinel", "nope"], ["sentinel"], ["exporter", "x"], ["status"], ["--config"], [],
     ["sentinel", "otel", "--once", "-h"], ["--version", "sentinel", "otel"],
     ["sentinel", "otel", "--onc"], ["sentinel", "otel", "--state-dir"],
     ["sentinel", "otel", "--state-dir", "-x"], ["sentinel", "otel", "--once=1"],
     ["--log-level", "loud", "exporter"], ["sentinel", "--config", "c", "otel"],
     ["controller", "--alertmanager", "http://127.0.0.1:1"], ["sentinel", "otel", "--"]],
)  # fmt: skip
def test_any_other_line_is_left_to_argparse(argv: list[str]) -> None:
    assert main.unit_args(argv) is None


PARSER = main.build_parser()


def argparse_reads(argv: list[str]) -> dict[str, object] | None:
    """argparse's namespace of the line, None when it refuses it (or prints help)."""
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            return vars(PARSER.parse_args(argv))
    except SystemExit:
        return None


ONCE = [
    ["--config", "c.yaml", "sentinel", "agent-ledger", "--once", "--state-dir", "s",
     "--spool-dir", "p"],
    ["sentinel", "--once", "agent-ledger", "--spool-dir=p", "--state-dir=s"],
    ["--config=c.json", "--log-level", "debug", "sentinel", "token-ledger", "--once"],
    ["--log-level=error", "exporter", "--listen", "127.0.0.1:1", "--spool-dir", ""],
    ["controller", "--once", "--state-file", "d.json", "--listen=127.0.0.1:2"],
    ["sentinel", "otel", "--state-dir=-x", "--state-dir", "y", "--once", "--once"],
]  # fmt: skip


@pytest.mark.parametrize("argv", ONCE)
def test_a_once_line_reads_as_argparse_reads_it(argv: list[str]) -> None:
    fast = main.unit_args(argv)
    assert fast is not None
    assert vars(fast) == argparse_reads(argv)


VALUES = ["s", "/tmp/d", "", "a b", "x=y", "-x", "-1", "--once", "sentinel", "127.0.0.1:1"]
TOP = ["--config", "--log-level"]
OPTIONS = {
    "sentinel": ["--once", "--state-dir", "--spool-dir"],
    "exporter": ["--spool-dir", "--listen"],
    "controller": ["--once", "--state-file", "--listen", "--state-dir", "--spool-dir"],
}
NAMES = ["agent-ledger", "token-ledger", "otel", "nope", "-h", "x"]
STRAY = ["--help", "-h", "--version", "--", "-", "--onc", "--st", "--once=1", "--alertmanager",
         "--config", "debug", "extra", "status", "--log-level=loud", "--Once"]  # fmt: skip


@st.composite
def command_line(draw: st.DrawFn) -> list[str]:
    """A resident command's line: options in any order and either form, a value of any
    kind for each, now and then a token argparse refuses or reads otherwise."""

    def option(name: str) -> list[str]:
        if name in ("--once",):
            return [name]
        if name == "--log-level":
            value = draw(st.sampled_from(["debug", "info", "error", "loud", ""]))
        else:
            value = draw(st.sampled_from(VALUES))
        return [f"{name}={value}"] if draw(st.booleans()) else [name, value]

    line = [
        word for name in draw(st.lists(st.sampled_from(TOP), max_size=2)) for word in option(name)
    ]
    command = draw(st.sampled_from(list(OPTIONS)))
    words = [[draw(st.sampled_from(NAMES))]] if command == "sentinel" else []
    words += [
        option(name) for name in draw(st.lists(st.sampled_from(OPTIONS[command]), max_size=5))
    ]
    words = draw(st.permutations(words))
    tail = [word for group in words for word in group]
    if draw(st.integers(0, 3)) == 0:
        tail.insert(draw(st.integers(0, len(tail))), draw(st.sampled_from(STRAY)))
    return [*line, command, *tail]


@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
@given(command_line())
def test_generated_lines_read_as_argparse_reads_them(argv: list[str]) -> None:
    """Whatever line the fast path takes, argparse takes too, with the same namespace."""
    fast = main.unit_args(argv)
    if fast is not None:
        assert vars(fast) == argparse_reads(argv), argv
