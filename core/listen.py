"""Listen addresses as the config writes them: light to import, because every command that
loads a config checks its addresses (core/http.py, the server, imports ssl and http.server)."""

from __future__ import annotations

__all__ = ["parse_listen"]


def parse_listen(text: str, any_port: bool = False) -> tuple[str, int]:
    """(host, port) of `HOST:PORT`; IPv6 hosts in brackets (`[::1]:9847`). ValueError
    explains the expected form. Port 0 (the kernel picks one) only with `any_port`."""
    host, sep, port = text.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        bracketed = True
    else:
        bracketed = False
    lowest = 0 if any_port else 1
    valid = bool(sep and host and port.isdigit() and lowest <= int(port) < 65536)
    if valid and ":" in host and not bracketed:  # "::1:9847" is ambiguous
        valid = False
    if not valid:
        raise ValueError(f"{text!r} is not HOST:PORT, e.g. 127.0.0.1:9847 or [::1]:9847")
    return host, int(port)
