"""TLS and basic auth on the exporter and the controller's /throttle, from a Prometheus-style
web config file: real certificates (openssl), real HTTPS requests, real Prometheus scraping."""

from __future__ import annotations

import base64
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
import requests
import yaml

from agentwatch.controller import client, server
from agentwatch.core import webconfig
from agentwatch.core.webconfig import Authenticator, WebConfigError
from tests.conftest import CLI, free_port, run_cli
from tests.pki import Pki, make_pki

PASSWORD = "correct horse battery staple"
HASH = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()  # cost 4: fast tests


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def web_file(folder: Path, **sections: object) -> Path:
    path = folder / "web.yml"
    path.write_text(yaml.safe_dump(sections))
    path.chmod(0o600)
    return path


def tls_section(pki: Pki, **extra: object) -> dict[str, object]:
    return {"cert_file": str(pki.server_cert), "key_file": str(pki.server_key), **extra}


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def wait_listening(port: int, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"exited early: {process.stderr.read() if process.stderr else ''}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


@pytest.fixture
def exporter(tmp_path: Path, pki: Pki) -> Iterator[callable]:
    """Start `agentwatch exporter` with a given web config; returns its port."""
    started: list[subprocess.Popen] = []

    def start(web: Path) -> int:
        port = free_port()
        config = tmp_path / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                {"exporter": {"listen": f"127.0.0.1:{port}", "web_config_file": str(web)}}
            )
        )
        config.chmod(0o600)
        process = subprocess.Popen(
            [*CLI, "--config", str(config), "exporter", "--spool-dir", str(tmp_path / "spool")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        wait_listening(port, process)
        return port

    yield start
    for process in started:
        process.kill()
        process.wait(timeout=10)


# --- the file format ------------------------------------------------------------------------


def test_a_full_file_loads_and_relative_paths_are_relative_to_it(pki: Pki) -> None:
    path = web_file(
        pki.folder,
        tls_server_config={
            "cert_file": "server.crt",
            "key_file": "server.key",
            "client_auth_type": "RequireAndVerifyClientCert",
            "client_ca_file": "ca.crt",
            "min_version": "TLS13",
        },
        basic_auth_users={"scraper": HASH},
    )
    web = webconfig.load(path)
    assert web.tls is not None and web.tls.cert_file == pki.server_cert
    assert web.context is not None and web.context.verify_mode == ssl.CERT_REQUIRED
    assert web.context.minimum_version == ssl.TLSVersion.TLSv1_3
    assert web.users == {"scraper": HASH.encode()}
    assert web.scheme == "https" and web.warnings == ()


@pytest.mark.parametrize(
    ("sections", "named"),
    [
        ({"basic_auth_user": {}}, "basic_auth_user: unknown key"),
        ({"tls_server_config": {"cert": "x"}}, "tls_server_config.cert: not supported"),
        ({"http_server_config": {"http2": True}}, "http_server_config: not supported"),
        ({"tls_server_config": {"cert_file": "server.crt"}}, "tls_server_config.key_file: req"),
        ({"tls_server_config": {"cert_file": "nope.crt", "key_file": "server.key"}}, "nope.crt"),
        ({"tls_server_config": {"cert_file": "server.crt", "key_file": "server.key",
          "client_auth_type": "RequireAndVerifyClientCert"}}, "client_ca_file: required"),
        ({"tls_server_config": {"cert_file": "server.crt", "key_file": "server.key",
          "min_version": "TLS10"}}, "min_version: 'TLS10' is not one of"),
        ({"tls_server_config": {"cert_file": "server.crt", "key_file": "server.key",
          "client_auth_type": "Sometimes"}}, "client_auth_type: 'Sometimes'"),
        ({"tls_server_config": {"cert_file": "ca.crt", "key_file": "server.key"}}, "cannot load"),
        ({"basic_auth_users": {"scraper": "plaintext"}}, "basic_auth_users.scraper: not a bcrypt"),
        ({"basic_auth_users": {"a:b": HASH}}, "is not a user name"),
    ],
)  # fmt: skip
def test_every_bad_file_is_an_error_naming_the_key(pki: Pki, sections: dict, named: str) -> None:
    with pytest.raises(WebConfigError, match="web.yml: .*" + named.replace("(", r"\(")):
        webconfig.load(web_file(pki.folder, **sections))


def test_unreadable_and_garbage_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(WebConfigError, match="cannot read the web config file"):
        webconfig.load(tmp_path / "absent.yml")
    garbage = tmp_path / "garbage.yml"
    garbage.write_text("- a list\n")
    with pytest.raises(WebConfigError, match="expected a mapping"):
        webconfig.load(garbage)


def test_private_key_readable_by_others_is_refused_by_group_warned(pki: Pki) -> None:
    path = web_file(pki.folder, tls_server_config=tls_section(pki))
    try:
        pki.server_key.chmod(0o644)
        with pytest.raises(WebConfigError, match=r"refusing to use .*chmod 600"):
            webconfig.load(path)
        pki.server_key.chmod(0o640)
        assert any("chmod 600" in line for line in webconfig.load(path).warnings)
    finally:
        pki.server_key.chmod(0o600)


# --- the password check -----------------------------------------------------------------------


def test_authenticator_accepts_only_the_right_password() -> None:
    auth = Authenticator({"scraper": HASH.encode()})
    assert auth.check(basic("scraper", PASSWORD))
    assert auth.check(basic("scraper", PASSWORD))  # from the cache
    assert not auth.check(basic("scraper", PASSWORD + "x"))  # the cache holds no wildcard
    assert not auth.check(basic("nobody", PASSWORD))
    assert not auth.check(basic("scraper", ""))
    assert not auth.check(basic("scraper", "x" * 100))  # longer than bcrypt takes: denied
    for header in (None, "", "Bearer abc", "Basic !!!", "Basic " + base64.b64encode(b"x").decode()):
        assert not auth.check(header)
    assert Authenticator({}).check(None)  # no users configured: no auth


def test_htpasswd_style_hashes_work() -> None:
    for prefix in ("$2a$", "$2y$"):
        auth = Authenticator({"u": (prefix + HASH[4:]).encode()})
        assert auth.check(basic("u", PASSWORD))


def test_a_verified_password_is_not_bcrypted_again(monkeypatch: pytest.MonkeyPatch) -> None:
    slow_hash = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(10))
    auth = Authenticator({"scraper": slow_hash})
    calls = []
    real = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda *a: calls.append(1) or real(*a))
    assert auth.check(basic("scraper", PASSWORD))
    started = time.perf_counter()
    for _ in range(100):
        assert auth.check(basic("scraper", PASSWORD))
    assert time.perf_counter() - started < 0.05  # 100 scrapes cost less than one bcrypt
    assert len(calls) == 1
    assert not auth.check(basic("scraper", "wrong"))  # a mismatch pays a full bcrypt...
    assert not auth.check(basic("nobody", PASSWORD))  # ...as an unknown user's does (dummy)
    assert len(calls) == 3


def test_hash_password_command_makes_a_hash_that_verifies() -> None:
    done = subprocess.run(
        [*CLI, "hash-password", "--cost", "4"],
        input=PASSWORD + "\n",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    hashed = done.stdout.strip()
    assert bcrypt.checkpw(PASSWORD.encode(), hashed.encode()) and PASSWORD not in done.stdout
    for bad, message in (("\n", "empty password"), ("x" * 73 + "\n", "at most 72 bytes")):
        done = subprocess.run(
            [*CLI, "hash-password"], input=bad, capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 1 and message in done.stderr


# --- the exporter over HTTPS ------------------------------------------------------------------


def test_exporter_with_tls_and_basic_auth(tmp_path: Path, pki: Pki, exporter) -> None:
    web = web_file(tmp_path, tls_server_config=tls_section(pki), basic_auth_users={"scraper": HASH})
    port = exporter(web)
    base = f"https://127.0.0.1:{port}"
    for path in ("/metrics", "/healthz", "/", "/nothing"):  # everything is protected
        reply = requests.get(base + path, verify=pki.ca, timeout=5)
        assert reply.status_code == 401, path
        assert reply.headers["WWW-Authenticate"] == 'Basic realm="agentwatch"'
        assert "agentwatch_" not in reply.text
    wrong = requests.get(base + "/metrics", verify=pki.ca, auth=("scraper", "nope"), timeout=5)
    assert wrong.status_code == 401
    right = requests.get(base + "/metrics", verify=pki.ca, auth=("scraper", PASSWORD), timeout=5)
    assert right.status_code == 200 and "agentwatch_exporter_build_info" in right.text
    with pytest.raises(requests.exceptions.SSLError):  # a certificate nobody vouched for
        requests.get(base + "/metrics", auth=("scraper", PASSWORD), timeout=5)
    with pytest.raises(requests.exceptions.ConnectionError):  # no plain HTTP on a TLS port
        requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
    again = requests.get(base + "/healthz", verify=pki.ca, auth=("scraper", PASSWORD), timeout=5)
    assert again.status_code == 200 and again.json()["status"] == "ok"  # still serving


def test_exporter_with_mutual_tls(tmp_path: Path, pki: Pki, exporter) -> None:
    tls = tls_section(
        pki, client_auth_type="RequireAndVerifyClientCert", client_ca_file=str(pki.ca)
    )
    port = exporter(web_file(tmp_path, tls_server_config=tls))
    url = f"https://127.0.0.1:{port}/metrics"
    for cert in (None, (str(pki.stranger_cert), str(pki.stranger_key))):
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(url, verify=pki.ca, cert=cert, timeout=5).raise_for_status()
    reply = requests.get(
        url, verify=pki.ca, cert=(str(pki.client_cert), str(pki.client_key)), timeout=5
    )
    assert reply.status_code == 200 and "agentwatch_sentinel" in reply.text


def test_a_broken_web_config_stops_the_exporter_instead_of_serving_plain_http(
    tmp_path: Path, pki: Pki
) -> None:
    port = free_port()
    web = web_file(tmp_path, tls_server_config={"cert_file": "gone.crt", "key_file": "gone.key"})
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump({"exporter": {"listen": f"127.0.0.1:{port}", "web_config_file": str(web)}})
    )
    done = run_cli("--config", str(config), "exporter", timeout=30)
    assert done.returncode == 2
    assert "tls_server_config.cert_file" in done.stderr and "gone.crt" in done.stderr
    checked = run_cli("--config", str(config), "config", "check", timeout=30)
    assert checked.returncode == 1 and "exporter.web_config_file" in checked.stderr


# --- the controller's /throttle ----------------------------------------------------------------


def test_throttle_with_tls_and_auth_and_the_client_reading_it(tmp_path: Path, pki: Pki) -> None:
    tls = tls_section(pki, client_auth_type="VerifyClientCertIfGiven", client_ca_file=str(pki.ca))
    web = web_file(tmp_path, tls_server_config=tls, basic_auth_users={"orch": HASH})
    board = server.Board()
    board.publish({"max_agents": 3, "effective_max_agents": 2, "updated_at": time.time()})
    port = free_port()
    http = server.start(board, f"127.0.0.1:{port}", web)
    try:
        url = f"https://127.0.0.1:{port}/throttle"
        assert requests.get(url, verify=pki.ca, timeout=5).status_code == 401
        healthz = url.replace("/throttle", "/healthz")
        assert requests.get(healthz, verify=pki.ca, timeout=5).status_code == 401
        good = requests.get(url, verify=pki.ca, auth=("orch", PASSWORD), timeout=5)
        assert good.status_code == 200 and good.json()["max_agents"] == 3
        denied = client.read(url, default_max_agents=1, ca_file=str(pki.ca))
        assert not denied.available and denied.effective_max_agents == 1
        untrusted = client.read(url, auth=("orch", PASSWORD))
        assert not untrusted.available
        throttle = client.read(url, auth=("orch", PASSWORD), ca_file=str(pki.ca))
        assert throttle.available and throttle.effective_max_agents == 2
        with_cert = client.read(
            url,
            auth=("orch", PASSWORD),
            ca_file=str(pki.ca),
            client_cert=(str(pki.client_cert), str(pki.client_key)),
        )
        assert with_cert.available
    finally:
        http.shutdown()
        http.server_close()


def test_throttle_refuses_to_start_with_a_broken_web_config(tmp_path: Path) -> None:
    web = web_file(tmp_path, basic_auth_users={"orch": "not-a-hash"})
    with pytest.raises(ValueError, match=r"basic_auth_users\.orch"):
        server.start(server.Board(), f"127.0.0.1:{free_port()}", web)


# --- Prometheus scraping it -------------------------------------------------------------------


@pytest.mark.slow
def test_prometheus_scrapes_the_tls_and_auth_exporter(tmp_path: Path, pki: Pki, exporter) -> None:
    web = web_file(
        tmp_path, tls_server_config=tls_section(pki), basic_auth_users={"prometheus": HASH}
    )
    target = exporter(web)
    prom_port = free_port()
    (tmp_path / "password").write_text(PASSWORD)
    scrape = {
        "job_name": "agentwatch",
        "scheme": "https",
        "scrape_interval": "1s",
        "tls_config": {"ca_file": str(pki.ca)},
        "basic_auth": {"username": "prometheus", "password_file": str(tmp_path / "password")},
        "static_configs": [{"targets": [f"127.0.0.1:{target}"]}],
    }
    prom_config = tmp_path / "prometheus.yml"
    prom_config.write_text(yaml.safe_dump({"scrape_configs": [scrape]}))
    prometheus = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={prom_config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(prom_port, prometheus)
        deadline = time.monotonic() + 30
        value = None
        while time.monotonic() < deadline:
            try:
                reply = requests.get(
                    f"http://127.0.0.1:{prom_port}/api/v1/query",
                    params={"query": 'up{job="agentwatch"}'},
                    timeout=5,
                ).json()
                result = reply["data"]["result"]
                value = result[0]["value"][1] if result else None
            except (requests.RequestException, ValueError, KeyError):
                value = None
            if value == "1":
                break
            time.sleep(0.3)
        assert value == "1", "Prometheus could not scrape the TLS + basic auth exporter"
        samples = requests.get(
            f"http://127.0.0.1:{prom_port}/api/v1/query",
            params={"query": "agentwatch_exporter_build_info"},
            timeout=5,
        ).json()["data"]["result"]
        assert samples, "scraped, but no agentwatch series arrived"
    finally:
        prometheus.kill()
        prometheus.wait(timeout=10)
