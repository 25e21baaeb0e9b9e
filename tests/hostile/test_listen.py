"""A listener whose port is taken says so in one line and exits non-zero: the real
`agentwatch exporter` and `agentwatch controller`, on a port a socket of the test holds (once
they died with `AttributeError: 'Server' object has no attribute '_intake'`, hiding it)."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentwatch.core.http import Handler, ListenError, make_server
from tests.conftest import CLI


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port held by a listening socket of the test."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize("command", ["exporter", "controller"])
def test_a_taken_port_is_one_line_and_a_non_zero_exit(
    command: str, taken: int, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("{}\n")
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"))
    done = subprocess.run(
        [*CLI, "--config", str(config), command, "--listen", f"127.0.0.1:{taken}",
         "--spool-dir", str(tmp_path / "spool"),
         *(["--state-dir", str(tmp_path / "state")] if command == "controller" else [])],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    said = [line for line in output.splitlines() if "already in use" in line]
    assert len(said) == 1 and f"127.0.0.1:{taken} is already in use" in said[0], output
    assert "ERROR" in said[0]
    assert "Traceback" not in output and "AttributeError" not in output


def test_every_listener_gets_the_line_from_the_shared_server(taken: int) -> None:
    """make_server is what each listener binds through (exporter, controller, the OTel
    receiver, the demo's): the error is its own, with the address as the config writes it."""
    with pytest.raises(ListenError) as raised:
        make_server(f"127.0.0.1:{taken}", Handler)
    assert str(raised.value).startswith(f"127.0.0.1:{taken} is already in use")
    assert raised.value.errno == errno.EADDRINUSE and "\n" not in str(raised.value)
    cause = OSError(errno.EADDRINUSE, "Address already in use")
    assert str(ListenError(("::1", 9847), cause)).startswith("[::1]:9847 is already in use")
    refused = ListenError(("192.0.2.1", 80), OSError(errno.EADDRNOTAVAIL, "Cannot assign"))
    assert str(refused) == "cannot listen on 192.0.2.1:80: Cannot assign"
