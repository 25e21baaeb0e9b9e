"""TLS and basic auth for our HTTP listeners, from a Prometheus exporter-toolkit web config file.

The file format is the one Prometheus and its exporters read (`--web.config.file`), so the
same file and the same bcrypt hashes (`htpasswd -B`, `agentwatch hash-password`) work for
both. Every problem is a `WebConfigError` naming the key; a listener with a broken web config
refuses to start instead of falling back to plain HTTP. Paths in the file are relative to it.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import ssl
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentwatch.core import bounded, secretfiles
from agentwatch.core.sanitize import preview

log = logging.getLogger("agentwatch.webconfig")

# The names of ssl's constants, not the constants: a listener without TLS never loads ssl
# (cli/entry.py defers it; 1.3 MiB of private memory), nor bcrypt, hmac and hashlib without
# basic auth users (imported where used).
CLIENT_AUTH = {
    "NoClientCert": "CERT_NONE",
    "VerifyClientCertIfGiven": "CERT_OPTIONAL",
    "RequireAndVerifyClientCert": "CERT_REQUIRED",
}
TLS_VERSIONS = {"TLS12": "TLSv1_2", "TLS13": "TLSv1_3"}
# Keys of the exporter-toolkit format we know but do not implement: named, not ignored.
UNSUPPORTED = {
    "tls_server_config": (
        "cert",
        "key",
        "cipher_suites",
        "curve_preferences",
        "prefer_server_cipher_suites",
        "client_allowed_sans",
    ),
    "": ("http_server_config",),
}
TLS_KEYS = (
    "cert_file",
    "key_file",
    "client_auth_type",
    "client_ca_file",
    "min_version",
    "max_version",
)
TOP_KEYS = ("tls_server_config", "basic_auth_users")


class WebConfigError(ValueError):
    """The web config file is unusable; the message names the file and the key."""


@dataclass(frozen=True)
class TlsSettings:
    """The tls_server_config section: certificate, key and client verification."""

    cert_file: Path
    key_file: Path
    client_auth_type: str = "NoClientCert"
    client_ca_file: Path | None = None
    min_version: str = "TLS12"
    max_version: str | None = None


@dataclass(frozen=True)
class WebConfig:
    """What one listener needs: a TLS context (or None: plain HTTP) and the users."""

    source: Path
    tls: TlsSettings | None
    users: Mapping[str, bytes] = field(default_factory=dict)
    context: ssl.SSLContext | None = None
    warnings: tuple[str, ...] = ()

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"


def read_raw(path: Path) -> dict[str, Any]:
    """The file's YAML mapping; WebConfigError when it cannot be read, is over a limit (size,
    not a regular file, nesting, alias expansion) or is not a mapping. The YAML parser loads
    only here: a listener without a web config never holds it."""
    import yaml

    from agentwatch.core import yamlsafe

    try:
        raw = yamlsafe.load(bounded.read_text(path, bounded.CONFIG_LIMIT))
    except (OSError, UnicodeDecodeError) as err:
        reason = (
            str(err).removeprefix(f"{path}: ") if isinstance(err, bounded.FileRefused) else None
        )
        reason = reason or getattr(err, "strerror", None) or type(err).__name__
        raise WebConfigError(f"{path}: cannot read the web config file: {reason}") from None
    except yamlsafe.YamlRefused as err:
        raise WebConfigError(f"{path}: refused: {err}") from None
    except yaml.YAMLError as err:
        raise WebConfigError(f"{path}: not valid YAML: {str(err)[:400]}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise WebConfigError(f"{path}: expected a mapping with tls_server_config/basic_auth_users")
    return raw


def _name(key: Any) -> str:
    """A key as an error names it: itself when short and plain, else its preview."""
    if isinstance(key, str) and len(key) <= 64 and key.isprintable():
        return key
    return preview(key)


def _check_keys(mapping: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in mapping:
        name = f"{where}.{_name(key)}" if where else _name(key)
        if key in UNSUPPORTED.get(where, ()):
            raise WebConfigError(
                f"{name}: not supported by agentwatch (known: {', '.join(allowed)})"
            )
        if key not in allowed:
            raise WebConfigError(f"{name}: unknown key (known here: {', '.join(allowed)})")


def _file(value: Any, key: str, base: Path) -> Path:
    """The path of a certificate, key or CA file, checked by reading it within its cap (the
    ssl module opens it by name afterwards: a FIFO must not get that far)."""
    if not isinstance(value, str) or not value.strip():
        raise WebConfigError(f"tls_server_config.{key}: expected a file path")
    path = Path(os.path.expanduser(value))
    path = path if path.is_absolute() else base / path
    limit = bounded.DATA_LIMIT if key == "client_ca_file" else bounded.SECRET_LIMIT
    try:
        bounded.read_bytes(path, limit)
    except bounded.FileRefused as err:
        raise WebConfigError(f"tls_server_config.{key}: refusing {err}") from None
    except OSError:
        raise WebConfigError(
            f"tls_server_config.{key}: {path} is missing or not readable"
        ) from None
    return path


def _choice(value: Any, options: Mapping[str, Any], key: str) -> str:
    if value not in options:
        raise WebConfigError(f"{key}: {preview(value)} is not one of {', '.join(options)}")
    return str(value)


def _tls(raw: Any, base: Path) -> TlsSettings:
    if not isinstance(raw, dict):
        raise WebConfigError("tls_server_config: expected a mapping")
    _check_keys(raw, TLS_KEYS, "tls_server_config")
    for key in ("cert_file", "key_file"):
        if key not in raw:
            raise WebConfigError(f"tls_server_config.{key}: required for TLS")
    auth = _choice(
        raw.get("client_auth_type", "NoClientCert"),
        CLIENT_AUTH,
        "tls_server_config.client_auth_type",
    )
    ca = raw.get("client_ca_file")
    ca_file = None if ca is None else _file(ca, "client_ca_file", base)
    if auth != "NoClientCert" and ca_file is None:
        raise WebConfigError(f"tls_server_config.client_ca_file: required with {auth}")
    max_version = raw.get("max_version")
    return TlsSettings(
        cert_file=_file(raw["cert_file"], "cert_file", base),
        key_file=_file(raw["key_file"], "key_file", base),
        client_auth_type=auth,
        client_ca_file=ca_file,
        min_version=_choice(
            raw.get("min_version", "TLS12"), TLS_VERSIONS, "tls_server_config.min_version"
        ),
        max_version=None
        if max_version is None
        else _choice(max_version, TLS_VERSIONS, "tls_server_config.max_version"),
    )


def _users(raw: Any) -> dict[str, bytes]:
    if not isinstance(raw, dict):
        raise WebConfigError("basic_auth_users: expected a mapping of user name to bcrypt hash")
    users: dict[str, bytes] = {}
    for user, hashed in raw.items():
        if not isinstance(user, str) or not user or ":" in user:
            raise WebConfigError(f"basic_auth_users: {preview(user)} is not a user name (no ':')")
        if not isinstance(hashed, str) or not _is_bcrypt(hashed):
            raise WebConfigError(
                f"basic_auth_users.{_name(user)}: not a bcrypt hash (make one with "
                "`agentwatch hash-password` or `htpasswd -nBC 10 '' | tr -d ':'`)"
            )
        users[user] = hashed.encode("ascii")
    return users


def _is_bcrypt(text: str) -> bool:
    return len(text) == 60 and text[:4] in ("$2a$", "$2b$", "$2y$") and text.isascii()


def context_of(tls: TlsSettings) -> ssl.SSLContext:
    """The server TLS context; WebConfigError when the certificate or key cannot be loaded."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion[TLS_VERSIONS[tls.min_version]]
    if tls.max_version is not None:
        context.maximum_version = ssl.TLSVersion[TLS_VERSIONS[tls.max_version]]
    try:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    except (ssl.SSLError, OSError) as err:
        raise WebConfigError(
            f"tls_server_config: cannot load {tls.cert_file} with {tls.key_file}: {err}"
        ) from None
    context.verify_mode = ssl.VerifyMode[CLIENT_AUTH[tls.client_auth_type]]
    if tls.client_ca_file is not None:
        try:
            context.load_verify_locations(cafile=tls.client_ca_file)
        except (ssl.SSLError, OSError) as err:
            raise WebConfigError(
                f"tls_server_config.client_ca_file: cannot load {tls.client_ca_file}: {err}"
            ) from None
    return context


def load(path: Path) -> WebConfig:
    """Read and check the file, load the certificate; WebConfigError names the problem."""
    raw = read_raw(path)
    try:
        _check_keys(raw, TOP_KEYS, "")
        tls = None
        if raw.get("tls_server_config") is not None:
            tls = _tls(raw["tls_server_config"], path.parent)
        users = _users(raw.get("basic_auth_users") or {})
        warnings = [secretfiles.problem(path, "web config: password hashes")]
        if tls is not None:
            warnings.append(secretfiles.require_private(tls.key_file, "TLS private key"))
        context = context_of(tls) if tls is not None else None
    except (WebConfigError, secretfiles.InsecureFileError) as err:
        raise WebConfigError(f"{path}: {err}") from None
    return WebConfig(path, tls, users, context, tuple(w for w in warnings if w))


OK, MISSING, WRONG, LIMITED = "ok", "missing", "wrong", "rate_limited"
FAILURE_BURST = 10  # wrong credentials one client may send at once...
FAILURE_REFILL = 6.0  # ...then one more every this many seconds (10 a minute)
MAX_CLIENTS = 1024  # client addresses remembered at once (bounded memory)


class FailureLimit:
    """A token bucket of failed logins per client address: FAILURE_BURST at once, then one
    per FAILURE_REFILL seconds. A client over it is refused before any hash is computed, so a
    guesser from one address gets 10 tries a minute, not one per bcrypt (~10 a second)."""

    def __init__(
        self, burst: int = FAILURE_BURST, refill: float = FAILURE_REFILL, clients: int = MAX_CLIENTS
    ):
        self.burst, self.refill, self.clients = burst, refill, clients
        self._buckets: dict[str, tuple[float, float]] = {}  # client: (tokens, when)
        self._lock = threading.Lock()

    def _tokens(self, client: str, now: float) -> float:
        tokens, when = self._buckets.get(client, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - when) / self.refill)

    def take(self, client: str, now: float | None = None) -> bool:
        """Reserve one failure for a check about to hash (False: none left, refuse unhashed).
        Taken before hashing, so clients racing on many connections get no more than this."""
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens = self._tokens(client, now)
            if tokens < 1.0:
                return False
            self._buckets.pop(client, None)  # re-inserted last: the dict is oldest first
            self._buckets[client] = (tokens - 1.0, now)
            if len(self._buckets) > self.clients:
                full = [c for c in self._buckets if self._tokens(c, now) >= self.burst]
                for gone in full or [next(iter(self._buckets))]:
                    del self._buckets[gone]
            return True

    def give_back(self, client: str, now: float | None = None) -> None:
        """The check succeeded: the reserved failure was not one."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if client in self._buckets:
                self._buckets[client] = (min(self._tokens(client, now) + 1.0, self.burst), now)


class Authenticator:
    """Checks `Authorization: Basic` against bcrypt hashes; a wrong password always costs one.

    bcrypt is slow by design; a scrape every 15 s must not pay it each time, so a password that
    verified once is remembered (as an HMAC under a key of this process, per user and hash) and
    later matched with hmac.compare_digest. Only successes are remembered: every mismatch,
    for a known user or an unknown one (checked against a dummy hash of the users' cost), pays
    a full bcrypt, so the answer's time tells nothing about which user names exist (as
    Prometheus' exporter-toolkit does). One bcrypt at a time (guesses use one core at most,
    the scrapes with remembered credentials pass without waiting), and a client past its
    FailureLimit is refused before any hash."""

    def __init__(self, users: Mapping[str, bytes], limit: FailureLimit | None = None):
        self.users = dict(users)
        self.limit = limit if limit is not None else FailureLimit()
        self._verified: dict[tuple[str, bytes], bytes] = {}
        self._key = os.urandom(32)
        self._bcrypt = threading.Lock()
        self._dummy = _dummy_hash(self.users.values()) if self.users else b""

    @property
    def enabled(self) -> bool:
        return bool(self.users)

    def check(self, header: str | None) -> bool:
        return self.verdict(header) == OK

    def verdict(self, header: str | None, client: str = "") -> str:
        """OK, or why not: MISSING (no basic credentials), WRONG, LIMITED (the client failed
        too often lately; answered without hashing)."""
        if not self.users:
            return OK
        credentials = _basic_credentials(header)
        if credentials is None:
            return MISSING
        import hashlib
        import hmac

        import bcrypt

        user, password = credentials
        hashed = self.users.get(user)
        digest = hmac.new(self._key, user.encode() + b"\0" + password, hashlib.sha256).digest()
        if hashed is not None:
            known = self._verified.get((user, hashed))
            if known is not None and hmac.compare_digest(known, digest):
                return OK
        if not self.limit.take(client):
            return LIMITED
        with self._bcrypt:
            try:
                ok = bcrypt.checkpw(password, hashed or self._dummy) and hashed is not None
            except ValueError:  # e.g. a password longer than bcrypt's 72 bytes
                ok = False
        if ok and hashed is not None:
            self._verified[(user, hashed)] = digest
            self.limit.give_back(client)
            return OK
        return WRONG


def _dummy_hash(hashes: Iterable[bytes]) -> bytes:
    """A bcrypt hash of a random password at the users' most common cost (ties: the
    highest): an unknown user costs what a known one does."""
    import bcrypt

    costs = Counter(int(hashed[4:6]) for hashed in hashes if hashed[4:6].isdigit())
    cost = max(costs, key=lambda c: (costs[c], c)) if costs else 10
    return bcrypt.hashpw(os.urandom(16).hex().encode(), bcrypt.gensalt(rounds=cost))


def _basic_credentials(header: str | None) -> tuple[str, bytes] | None:
    if not header:
        return None
    scheme, _, encoded = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, sep, password = decoded.partition(b":")
    if not sep:
        return None
    try:
        return user.decode("utf-8"), password
    except UnicodeDecodeError:
        return None


def load_for(path: Path | None, component: str) -> WebConfig | None:
    """The web config of a listener (None: plain HTTP), its warnings logged once."""
    if path is None:
        return None
    web = load(path)
    for warning in web.warnings:
        log.warning("%s: %s", component, warning)
    if web.tls is None and web.users:
        log.warning(
            "%s: basic auth without TLS sends passwords in clear text; add tls_server_config",
            component,
        )
    return web


def hash_password(password: bytes, cost: int = 10) -> str:
    """A bcrypt hash for basic_auth_users (the cost Prometheus' docs use)."""
    if len(password) > 72:
        raise ValueError("bcrypt uses at most 72 bytes of a password; choose a shorter one")
    import bcrypt

    return bcrypt.hashpw(password, bcrypt.gensalt(rounds=cost)).decode("ascii")
