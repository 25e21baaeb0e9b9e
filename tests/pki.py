"""A throwaway certificate authority for TLS tests: CA, server (127.0.0.1) and client certs,
made by the real `openssl` command (argv, no shell)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MINIMAL_CONFIG = "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = unused\n"


@dataclass(frozen=True)
class Pki:
    folder: Path
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path  # signed by another CA: must be refused under mTLS
    stranger_key: Path


def _openssl(folder: Path, *args: str) -> None:
    result = subprocess.run(
        ["openssl", *args], cwd=folder, capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stderr


def _cert(folder: Path, name: str, subject: str, *extra: str) -> None:
    _openssl(
        folder, "req", "-x509", "-config", "min.cnf", "-newkey", "ec",
        "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
        "-keyout", f"{name}.key", "-out", f"{name}.crt", "-subj", subject, *extra,
    )  # fmt: skip


def make_pki(folder: Path) -> Pki:
    assert shutil.which("openssl"), "openssl makes the test certificates (scripts/setup --test)"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "min.cnf").write_text(MINIMAL_CONFIG)
    ca_ext = ("-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign")
    _cert(folder, "ca", "/CN=agentwatch-test-ca", *ca_ext)
    _cert(folder, "other-ca", "/CN=another-ca", *ca_ext)
    leaf = ("-addext", "basicConstraints=CA:FALSE")
    _cert(
        folder, "server", "/CN=localhost", "-CA", "ca.crt", "-CAkey", "ca.key", *leaf,
        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-addext", "extendedKeyUsage=serverAuth",
    )  # fmt: skip
    client_ext = ("-addext", "extendedKeyUsage=clientAuth")
    _cert(folder, "client", "/CN=scraper", "-CA", "ca.crt", "-CAkey", "ca.key", *leaf, *client_ext)
    _cert(
        folder, "stranger", "/CN=stranger", "-CA", "other-ca.crt", "-CAkey", "other-ca.key",
        *leaf, *client_ext,
    )  # fmt: skip
    for key in folder.glob("*.key"):
        key.chmod(0o600)
    return Pki(
        folder,
        folder / "ca.crt",
        folder / "server.crt",
        folder / "server.key",
        folder / "client.crt",
        folder / "client.key",
        folder / "stranger.crt",
        folder / "stranger.key",
    )
