"""What basic auth costs a guesser, against the real exporter: is there a user-name timing oracle?

Starts `agentwatch exporter` with a web config of two bcrypt users (cost 10, as Prometheus'
docs use), logs in once as one of them, then on loopback:
  1. times `--samples` wrong passwords for that user and as many unknown users, interleaved,
     each from a loopback address of its own (127.0.x.y), and the good login (remembered);
  2. floods wrong passwords for that user for `--seconds` from 8 threads, all from one
     address, then from 64, and counts what was evaluated (401) and refused unhashed (429).
  3. the peer: Debian's prometheus-node-exporter with the same web config (Prometheus'
     exporter-toolkit, the basic auth every official exporter uses): `--samples` pairs
     (pairs.py, order alternating) of one wrong password to each, each from a fresh address.
`--baseline REF` measures the exporter of a git ref the same way in the same run. Exit 1 when
the medians of (1) differ by more than a factor of 2 or either is under half a bcrypt, or when
a wrong guess costs the guesser less than half what it costs against node_exporter (median of
the per-pair wall ratios, printed with their spread and the load average); 2 when
node_exporter is missing (`scripts/setup --test`).

    .venv/bin/python bench/bench_auth.py [--samples 15] [--seconds 10] [--baseline main]
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import bcrypt
import pairs  # bench/ is on sys.path when a bench runs as `python bench/NAME.py`
import yaml
from bench_scrape import NODE_EXPORTER, baseline_tree, free_port, stop

ROOT = Path(__file__).resolve().parents[1]
COST = 10
USER, PASSWORD = "prometheus", "correct horse battery staple"


def request(
    port: int, source: str, user: str, password: str, path: str = "/healthz"
) -> tuple[int, float]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), 30, source_address=(source, 0)) as sock:
        sock.sendall(f"GET {path} HTTP/1.0\r\nAuthorization: Basic {token}\r\n\r\n".encode())
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    return int(reply.split(b" ", 2)[1]), time.perf_counter() - started


def web_config(work: Path) -> Path:
    web = work / "web.yml"
    if not web.exists():
        users = {
            USER: bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(COST)).decode(),
            "grafana": bcrypt.hashpw(b"another", bcrypt.gensalt(COST)).decode(),
        }
        web.write_text(yaml.safe_dump({"basic_auth_users": users}))
        web.chmod(0o600)
    return web


def start(work: Path, tree: Path | None) -> tuple[subprocess.Popen, int]:
    web = web_config(work)
    port = free_port()
    config = work / f"config-{port}.yaml"
    config.write_text(yaml.safe_dump({"exporter": {"listen": f"127.0.0.1:{port}",
                                                   "web_config_file": str(web)}}))  # fmt: skip
    env = dict(os.environ, **({"PYTHONPATH": str(tree)} if tree else {}))
    process = subprocess.Popen(
        [sys.executable, "-m", "agentwatch.cli", "--config", str(config), "exporter",
         "--spool-dir", str(work / "spool")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    return listening(process, port, "the exporter")


def listening(process: subprocess.Popen, port: int, what: str) -> tuple[subprocess.Popen, int]:
    """The process and its port once it accepts connections (within 30 s), else stopped."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return process, port
        except OSError:
            time.sleep(0.1)
    stop(process)
    raise pairs.SetupError(f"{what} did not start")


def start_peer(work: Path) -> tuple[subprocess.Popen, int]:
    """node_exporter with no collectors and the same users (exporter-toolkit's basic auth)."""
    port = free_port()
    process = subprocess.Popen(
        [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}",
         f"--web.config.file={web_config(work)}", "--collector.disable-defaults"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    return listening(process, port, "node_exporter")


def versus_peer(work: Path, samples: int) -> pairs.Pairs:
    """Pairs of one wrong password to ours and one to node_exporter, each from a new address."""
    ours, our_port = start(work, None)
    peer, peer_port = start_peer(work)
    sources = (f"127.3.{n // 250}.{n % 250 + 1}" for n in range(1 << 16))

    def side(port: int, path: str):  # type: ignore[no-untyped-def]
        def run() -> pairs.Sample:
            source = next(sources)  # a new address and a new guess: nothing cached
            status, wall = request(port, source, USER, f"guess from {source}", path)
            if status != 401:
                raise RuntimeError(f"a wrong password got HTTP {status}")
            return pairs.Sample(wall, 0.0, 0.0)

        return run

    try:
        for port, path in ((our_port, "/healthz"), (peer_port, "/")):
            assert request(port, "127.0.0.1", USER, PASSWORD, path)[0] == 200
        return pairs.run_pairs(
            ("agentwatch", side(our_port, "/healthz")),
            ("node_exporter", side(peer_port, "/")),
            samples,
            progress=False,
        )
    finally:
        stop(ours)
        stop(peer)


def flood(port: int, seconds: float, addresses: int) -> dict[str, int]:
    counts = {"401": 0, "429": 0, "other": 0}
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    sources = [f"127.9.{i // 250}.{i % 250 + 1}" for i in range(addresses)]

    def one(thread: int) -> None:
        n = 0
        while time.monotonic() < stop_at:
            source = sources[(thread + 8 * n) % addresses]
            status, _ = request(port, source, USER, f"guess{thread}-{n}")
            with lock:
                counts[str(status) if str(status) in counts else "other"] += 1
            n += 1

    threads = [threading.Thread(target=one, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return counts


def measure(label: str, work: Path, tree: Path | None, args: Any) -> dict[str, Any]:
    process, port = start(work, tree)
    try:
        assert request(port, "127.0.0.1", USER, PASSWORD)[0] == 200
        wrong, unknown, good = [], [], []
        for n in range(args.samples):
            wrong.append(request(port, f"127.1.0.{n + 1}", USER, f"guess {n}")[1])
            unknown.append(request(port, f"127.2.0.{n + 1}", f"nobody{n}", "guess")[1])
            good.append(request(port, "127.0.0.1", USER, PASSWORD)[1])
        one = flood(port, args.seconds, 1)
        many = flood(port, args.seconds, 64)
    finally:
        stop(process)
    result = {
        "wrong": statistics.median(wrong),
        "unknown": statistics.median(unknown),
        "good": statistics.median(good),
        "one_address": one,
        "64_addresses": many,
    }
    print(
        f"{label:>5}: median wrong password {result['wrong'] * 1000:6.1f} ms, unknown user "
        f"{result['unknown'] * 1000:6.1f} ms, good (remembered) {result['good'] * 1000:5.1f} ms;"
        f" {args.seconds:.0f} s flood from 1 address: {one['401']} evaluated, {one['429']} "
        f"refused unhashed; from 64: {many['401']} evaluated, {many['429']} refused",
        flush=True,
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=10.0, help="each flood")
    parser.add_argument("--baseline", help="git ref of an exporter to measure too")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "auth.json")
    args = parser.parse_args()
    return pairs.main_guard(lambda: run(args))


def run(args: argparse.Namespace) -> int:
    pairs.need_executable(NODE_EXPORTER, "node_exporter", "scripts/setup --test")
    hashed = bcrypt.hashpw(b"x", bcrypt.gensalt(COST))
    times = []
    for _ in range(5):
        started = time.perf_counter()
        bcrypt.checkpw(b"y", hashed)
        times.append(time.perf_counter() - started)
    reference = statistics.median(times)
    print(f"bcrypt cost {COST}: {reference * 1000:.1f} ms here", flush=True)
    with tempfile.TemporaryDirectory(prefix="aw-bench-auth-") as temp:
        work = Path(temp)
        before = pairs.load()
        this = measure("this", work, None, args)
        if args.baseline:
            measure(args.baseline, work, baseline_tree(args.baseline, work / "b"), args)
        print(pairs.load_line(before, pairs.load()))
        peer = versus_peer(work, args.samples)
    print("a wrong password, against node_exporter's basic auth:")
    print(pairs.table(peer, ("wall_s",)))
    ratio = this["wrong"] / this["unknown"]
    checks = [
        pairs.Check("wrong password / unknown user, medians", ratio, 2.0),
        pairs.Check("unknown user / wrong password, medians", 1 / ratio, 2.0),
        pairs.Check(
            "fastest median of the two / half a bcrypt",
            min(this["wrong"], this["unknown"]) / (0.5 * reference),
            1.0,
            at_least=True,
        ),
        pairs.Check(
            "wrong password wall agentwatch / node_exporter, median of pairs",
            peer.spread("wall_s")[1],
            0.5,
            at_least=True,
        ),
    ]
    return pairs.verdict(checks, args.out, {"this": this, "peer": peer.as_dict()})


if __name__ == "__main__":
    sys.exit(main())
