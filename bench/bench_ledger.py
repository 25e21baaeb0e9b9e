"""Benchmarks of the token-ledger sentinel, whole processes against ccusage in interleaved pairs.

    python bench/bench_ledger.py [--size 1G] [--scale 5G] [--pairs 3] [--hogs 1]
                                 [--idle-seconds 60]

(a) cold backfill: `agentwatch sentinel token-ledger --once` (fresh state every run) and
    `ccusage claude daily --json --offline` on the same corpus, warm page cache, in `--pairs`
    pairs (bench/pairs.py: order alternating; wall, CPU of the process tree, peak summed
    RSS); min/median/max of the per-pair ratios. Targets on the medians: wall <= 1.0, CPU
    <= 1.2, memory below ccusage's; token totals equal to ccusage's and the generator's.
(a') scaling: the same pairs on a corpus `--scale` large (5 GiB; files scaled alike): CPU
    <= 1.0x ccusage's there, memory below it, and our CPU grows at most x5.2 for 5x the bytes
    (prorated for another factor) with peak memory flat (<= x1.2).
(b) live latency: the sentinel as a loop plus `agentwatch exporter`, with `--hogs` busy loops
    beside them; append one new response to a transcript, poll /metrics every 5 ms until the
    token counter moves: p99 <= 1 s, the sentinel's CPU <= 3 ms per appended line.
(c) idle: the same sentinel with every transcript tracked and nothing changing: < 0.2 % of a
    core.

Exit 1 when a target is missed or a total differs, 2 when ccusage or agentwatch is missing.
Everything is written as JSON (--out).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
from generators import corpus
from pairs import (
    Check,
    Pairs,
    Sample,
    SetupError,
    free_port,
    kill_group,
    main_guard,
    need_executable,
    ratio_check,
    run_command,
    run_pairs,
    table,
    verdict,
)
from prometheus_client.parser import text_string_to_metric_families

CCUSAGE = os.environ.get("AGENTWATCH_CCUSAGE") or next(
    (
        str(path)
        for path in (
            Path(__file__).resolve().parents[1] / ".tools/ccusage/node_modules/.bin/ccusage",
            Path("/opt/ccusage/node_modules/.bin/ccusage"),
        )
        if path.exists()
    ),
    "/opt/ccusage/node_modules/.bin/ccusage",
)
TYPES = ("input", "output", "cache_creation", "cache_read")
CC_KEYS = {
    "input": "inputTokens",
    "output": "outputTokens",
    "cache_creation": "cacheCreationTokens",
    "cache_read": "cacheReadTokens",
}
TARGETS = {  # ratios are medians of the per-pair ratios agentwatch / ccusage
    "backfill_wall_ratio": 1.0,
    "backfill_rss_ratio": 1.0,  # below
    "backfill_cpu_ratio": 1.2,
    "scale_cpu_ratio": 1.0,  # at --scale (issue 29)
    "scale_rss_vs_ccusage": 1.0,  # below
    "scale_cpu_growth": 5.2,  # for 5x the bytes, prorated for another factor (issue 29)
    "scale_rss_growth": 1.2,  # memory flat
    "live_p99_seconds": 1.0,  # with --hogs busy loops beside it
    "live_cpu_ms_per_line": 3.0,  # issue 29
    "idle_cpu_percent": 0.2,  # below
}


# --------------------------------------------------------------------------------------------
# processes


@contextlib.contextmanager
def background(cmd: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A long-running child in its own process group, stopped (TERM, then KILL) on exit."""
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            kill_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                kill_group(proc.pid)
                proc.wait(10)


def cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def find_agentwatch(explicit: str | None) -> str:
    if explicit:
        return explicit
    # The console script next to this interpreter: the virtualenv's own bin first (resolving
    # the symlink would find another environment's script), never a pyenv shim (a shell).
    for folder in (Path(sys.executable).parent, Path(os.path.realpath(sys.executable)).parent):
        if (folder / "agentwatch").exists():
            return str(folder / "agentwatch")
    found = shutil.which("agentwatch")
    if not found:
        raise SetupError("agentwatch not found: pip install -e . (or pass --agentwatch)")
    return found


def clean_env(home: Path, config_dir: Path) -> dict[str, str]:
    """The caller's environment with an empty HOME, no XDG dirs, and the corpus as config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "CLAUDE_"))}
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(config_dir), TZ="UTC")
    return env


# --------------------------------------------------------------------------------------------
# totals


def ledger_totals(prom: Path) -> dict[str, Any]:
    """Sum of agentwatch_tokens_total per type and of agentwatch_cost_usd_total."""
    tokens = dict.fromkeys(TYPES, 0)
    cost = 0.0
    series = 0
    gauges: dict[str, float] = {}
    for family in text_string_to_metric_families(prom.read_text()):
        for sample in family.samples:
            if sample.name == "agentwatch_tokens_total":
                tokens[sample.labels["type"]] += round(sample.value)
                series += 1
            elif sample.name == "agentwatch_cost_usd_total":
                cost += sample.value
            elif sample.name in ("agentwatch_ledger_files_tracked",) and not sample.labels:
                gauges[sample.name] = sample.value
    return {"tokens": tokens, "cost": cost, "token_series": series, **gauges}


def ccusage_totals(out: bytes) -> dict[str, Any]:
    totals = json.loads(out)["totals"]
    return {
        "tokens": {t: int(totals[k]) for t, k in CC_KEYS.items()},
        "cost": float(totals["totalCost"]),
    }


def expected_totals(manifest: dict[str, Any]) -> dict[str, Any]:
    e = manifest["expected_ccusage"]
    return {"tokens": {t: int(e[k]) for t, k in CC_KEYS.items()}, "cost": float(e["totalCost"])}


def same_tokens(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Tokens exactly. The cost is not compared with the generator's or ccusage's: the ledger
    prices as Anthropic bills (the long-context rule on every token of a request, dated
    entries; docs/ledger-rules.md), which the conformance suite checks against its oracle."""
    return bool(a["tokens"] == b["tokens"])


# --------------------------------------------------------------------------------------------
# phases


def warm_cache(root: Path) -> tuple[int, int, float]:
    started = time.perf_counter()
    files = total = 0
    for path in corpus.transcript_files(root):
        with open(path, "rb", buffering=0) as fh:
            while chunk := fh.read(4 << 20):
                total += len(chunk)
        files += 1
    return files, total, time.perf_counter() - started


def once_command(aw: str, spool: Path, state: Path) -> list[str]:
    """The sentinel's cold backfill: one pass over every transcript, then exit."""
    return [aw, "sentinel", "token-ledger", "--once", "--spool-dir", str(spool),
            "--state-dir", str(state)]  # fmt: skip


def pair_backfill(
    args: argparse.Namespace, root: Path, work: Path, aw: str, label: str
) -> tuple[Pairs, dict[str, Any], dict[str, Any], Path, Path]:
    """`--pairs` interleaved pairs of the two whole commands on `root`: the sentinel's cold
    backfill (fresh state every run) and ccusage. Returns the pairs, the token totals of the
    last run of each, and the spool and state folders of our last run."""
    home = work / "home"
    home.mkdir(exist_ok=True)
    env = clean_env(home, root)
    spool, state = work / f"{label}-spool", work / f"{label}-state"
    last: dict[str, Sample] = {}

    def ours() -> Sample:
        shutil.rmtree(spool, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
        return run_command(once_command(aw, spool, state), env=env, timeout=args.timeout)

    def theirs() -> Sample:
        command = [args.ccusage, "claude", "daily", "--json", "--offline"]
        last["ccusage"] = run_command(command, env=env, timeout=args.timeout)
        return last["ccusage"]

    result = run_pairs(("agentwatch --once", ours), ("ccusage claude daily", theirs), args.pairs)
    print(table(result), flush=True)
    return (
        result,
        ledger_totals(spool / "token-ledger.prom"),
        ccusage_totals(last["ccusage"].out),
        spool,
        state,
    )


def backfill(
    args: argparse.Namespace, root: Path, work: Path, aw: str, manifest: dict[str, Any]
) -> tuple[Pairs, list[Check], Path, Path]:
    """(a): the pairs on the base corpus, with the totals checked against the generator's."""
    result, ours, theirs, spool, state = pair_backfill(args, root, work, aw, "base")
    gen = expected_totals(manifest)
    print_totals({"agentwatch": ours, "ccusage": theirs, "generator": gen})
    checks = [
        ratio_check(result, "wall_s", TARGETS["backfill_wall_ratio"]),
        ratio_check(result, "cpu_s", TARGETS["backfill_cpu_ratio"]),
        ratio_check(result, "rss_mib", TARGETS["backfill_rss_ratio"], strict=True),
        Check("(a) token types agentwatch != ccusage", differing(ours, theirs), 0),
        Check("(a) token types agentwatch != generator", differing(ours, gen), 0),
    ]
    return result, checks, spool, state


def scale(
    args: argparse.Namespace, root: Path, work: Path, aw: str, base: Pairs
) -> tuple[Pairs, list[Check]]:
    """(a'): the same pairs on a corpus `--scale` large (files scaled alike, so a file's size
    and the mix of lines stay): against ccusage there, and our growth from the base corpus
    (median CPU and peak memory of our runs at each size)."""
    size = corpus.parse_size(args.scale)
    factor = size / corpus.parse_size(args.size)
    files = max(1, round(args.files * factor))
    big_root = Path(f"/tmp/aw-corpus-{corpus.format_size(size)}-f{files}-s{args.seed}")
    print(f"scale corpus {big_root} ({args.scale}, {files} files)", flush=True)
    manifest, made = corpus.ensure_corpus(big_root, size, files, args.seed, progress=True)
    print(f"  {'generated' if made else 're-used'}", flush=True)
    nfiles, nbytes, took = warm_cache(big_root)
    print(f"  page cache warmed: {nfiles} files, {nbytes / (1 << 20):.0f} MiB in {took:.1f} s")
    result, ours, theirs, _spool, state = pair_backfill(args, big_root, work, aw, "scale")
    shutil.rmtree(state, ignore_errors=True)  # a big history's database: not kept
    gen = expected_totals(manifest)
    print_totals({"agentwatch": ours, "ccusage": theirs, "generator": gen})

    def median_of(pairs: Pairs, side: str, metric: str) -> float:
        samples = pairs.a if side == "a" else pairs.b
        return statistics.median(sample.value(metric) for sample in samples)

    growth_cpu = median_of(result, "a", "cpu_s") / median_of(base, "a", "cpu_s")
    growth_rss = median_of(result, "a", "rss_mib") / median_of(base, "a", "rss_mib")
    peer_growth = median_of(result, "b", "cpu_s") / median_of(base, "b", "cpu_s")
    print(f"growth for x{factor:.1f} the bytes: agentwatch CPU x{growth_cpu:.2f}, peak memory "
          f"x{growth_rss:.2f}; ccusage CPU x{peer_growth:.2f}")  # fmt: skip
    label = f"(a') {args.scale}"
    checks = [
        ratio_check(result, "cpu_s", TARGETS["scale_cpu_ratio"]),
        ratio_check(result, "rss_mib", TARGETS["scale_rss_vs_ccusage"], strict=True),
        Check(f"{label}: agentwatch CPU growth from {args.size}", growth_cpu,
              TARGETS["scale_cpu_growth"] * factor / 5),
        Check(f"{label}: agentwatch peak memory growth from {args.size}", growth_rss,
              TARGETS["scale_rss_growth"]),
        Check(f"{label}: token types agentwatch != ccusage", differing(ours, theirs), 0),
        Check(f"{label}: token types agentwatch != generator", differing(ours, gen), 0),
    ]  # fmt: skip
    for check in checks[:2]:
        check.name = f"{label}: {check.name}"
    return result, checks


def differing(a: dict[str, Any], b: dict[str, Any]) -> int:
    """Token types whose totals differ (the cost is not compared: see same_tokens)."""
    return sum(1 for kind in TYPES if a["tokens"][kind] != b["tokens"][kind])


def print_totals(totals: dict[str, dict[str, Any]]) -> None:
    print(f"    {'totals':12} " + " ".join(f"{t:>14}" for t in TYPES) + f" {'cost $':>16}")
    for name, tot in totals.items():
        print(f"    {name:12} " + " ".join(f"{tot['tokens'][t]:>14}" for t in TYPES)
              + f" {tot['cost']:>16.6f}")  # fmt: skip


@contextlib.contextmanager
def hogs(count: int) -> Iterator[None]:
    """`count` busy loops at normal priority beside the measured processes (a loaded
    machine: the live target holds with the CPU taken)."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for proc in procs:
            kill_group(proc.pid)
            proc.wait(10)


def scrape_tokens(port: int, timeout: float = 2.0) -> int | None:
    """Sum of every agentwatch_tokens_total sample on /metrics (None if not there yet)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        body = resp.read()
    except OSError:
        return None
    finally:
        conn.close()
    if resp.status != 200:
        return None
    total = 0.0
    found = False
    for line in body.split(b"\n"):
        if line.startswith(b"agentwatch_tokens_total{"):
            total += float(line.rsplit(b" ", 1)[1])
            found = True
    return round(total) if found else None


def wait_for(predicate: Any, timeout: float, interval: float = 0.005) -> tuple[Any, float]:
    """Poll until predicate() returns something truthy; (value, seconds) or (None, timeout)."""
    started = time.perf_counter()
    deadline = started + timeout
    while True:
        value = predicate()
        now = time.perf_counter()
        if value:
            return value, now - started
        if now >= deadline:
            return None, timeout
        time.sleep(interval)


def pick_targets(root: Path, count: int, seed: int) -> list[Path]:
    """Main session transcripts of moderate size in different projects, to append to."""
    candidates = [
        p
        for p in corpus.transcript_files(root)
        if "subagents" not in p.parts and 20_000 <= p.stat().st_size <= 8 << 20
    ]
    rng = random.Random(seed)
    rng.shuffle(candidates)
    chosen: list[Path] = []
    projects: set[str] = set()
    for p in candidates:
        if p.parent.name not in projects:
            chosen.append(p)
            projects.add(p.parent.name)
        if len(chosen) == count:
            break
    return chosen or candidates[:count]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k] if q < 100 else ordered[-1]


def live_and_idle(
    args: argparse.Namespace, root: Path, work: Path, aw: str, spool: Path, state: Path
) -> dict[str, Any]:
    env = clean_env(work / "home", root)
    port = args.port or free_port()
    result: dict[str, Any] = {"port": port}
    sentinel_cmd = [
        aw,
        "sentinel",
        "token-ledger",
        "--spool-dir",
        str(spool),
        "--state-dir",
        str(state),
    ]
    exporter_cmd = [aw, "exporter", "--spool-dir", str(spool), "--listen", f"127.0.0.1:{port}"]
    rng = random.Random(args.seed * 31 + 7)
    targets = pick_targets(root, 4, args.seed)
    try:
        with (
            background(sentinel_cmd, env, work / "sentinel.log") as sentinel,
            background(exporter_cmd, env, work / "exporter.log") as exporter,
            hogs(args.hogs),
        ):
            sp = psutil.Process(sentinel.pid)
            ep = psutil.Process(exporter.pid)
            served, _ = wait_for(
                lambda: [v] if (v := scrape_tokens(port)) is not None else None, 60, 0.05
            )
            if served is None:
                raise RuntimeError("the exporter did not serve agentwatch_tokens_total in 60 s")
            base = served[0]
            for t in targets:
                corpus.remember_size(root, t)
            contexts: dict[Path, dict[str, Any]] = {}

            def append(i: int) -> dict[str, Any]:
                target = targets[i % len(targets)]
                added = corpus.append_response(target, rng, context=contexts.get(target))
                contexts[target] = added["context"]
                return added

            # warm-up: the loop may still be starting (watches, first scan); not measured
            expected = base + append(0)["total"]
            seen, first = wait_for(
                lambda: scrape_tokens(port) == expected, min(args.timeout, 120.0)
            )
            if not seen:
                raise RuntimeError(
                    f"the first appended line never showed up on /metrics "
                    f"(see {work / 'sentinel.log'})"
                )
            result["first_line_seconds"] = first
            time.sleep(0.5)
            latencies: list[float] = []
            missed = wrong = 0
            cpu0, ecpu0 = cpu_seconds(sp), cpu_seconds(ep)
            t0 = time.perf_counter()
            for i in range(args.live_lines):
                before = expected
                added = append(i + 1)
                written = time.perf_counter()
                expected += added["total"]
                deadline = written + args.live_timeout
                value = before
                while time.perf_counter() < deadline:
                    value = scrape_tokens(port)
                    if value is not None and value != before:
                        break
                    time.sleep(0.005)
                if value is None or value == before:
                    missed += 1
                    continue
                latencies.append(time.perf_counter() - written)
                if value != expected:
                    # a partial update would be a bug; let it settle and count it
                    wrong += 1
                    wait_for(lambda: scrape_tokens(port) == expected, args.live_timeout)  # noqa: B023
                time.sleep(args.live_gap)
            elapsed = time.perf_counter() - t0
            cpu1, ecpu1 = cpu_seconds(sp), cpu_seconds(ep)
            final = scrape_tokens(port)
            result["live"] = {
                "load": list(os.getloadavg()),
                "lines": args.live_lines,
                "seen": len(latencies),
                "missed": missed,
                "partial_updates": wrong,
                "final_total_ok": final == expected,
                "p50_s": percentile(latencies, 50) if latencies else None,
                "p90_s": percentile(latencies, 90) if latencies else None,
                "p99_s": percentile(latencies, 99) if latencies else None,
                "max_s": max(latencies) if latencies else None,
                "mean_s": statistics.fmean(latencies) if latencies else None,
                "sentinel_cpu_s": cpu1 - cpu0,
                "sentinel_cpu_ms_per_line": (cpu1 - cpu0) * 1000 / args.live_lines,
                "exporter_cpu_s": ecpu1 - ecpu0,
                "elapsed_s": elapsed,
                "targets": [str(t.relative_to(root)) for t in targets],
            }
            if args.idle_seconds > 0:
                time.sleep(2.0)  # let the last write settle
                tracked = ledger_totals(spool / "token-ledger.prom").get(
                    "agentwatch_ledger_files_tracked"
                )
                tracked = None if tracked is None else int(tracked)
                cpu0, ecpu0 = cpu_seconds(sp), cpu_seconds(ep)
                t0 = time.perf_counter()
                time.sleep(args.idle_seconds)
                elapsed = time.perf_counter() - t0
                cpu1, ecpu1 = cpu_seconds(sp), cpu_seconds(ep)
                if sentinel.poll() is not None:
                    raise RuntimeError(f"the sentinel exited {sentinel.returncode} while idle")
                result["idle"] = {
                    "seconds": elapsed,
                    "files_tracked": tracked,
                    "transcript_files": sum(1 for _ in corpus.transcript_files(root)),
                    "sentinel_cpu_s": cpu1 - cpu0,
                    "sentinel_cpu_percent": (cpu1 - cpu0) / elapsed * 100,
                    "exporter_cpu_percent_unscraped": (ecpu1 - ecpu0) / elapsed * 100,
                    "sentinel_rss_mib": sp.memory_info().rss / (1 << 20),
                }
    finally:
        corpus.restore_appends(root)
    return result


# --------------------------------------------------------------------------------------------
# report


def live_checks(res: dict[str, Any], hog_count: int) -> list[Check]:
    """Print (b) and (c) and return their checks."""
    checks: list[Check] = []
    lv = res.get("live")
    if lv:
        print(
            f"\n(b) live, {hog_count} busy loop(s) beside it: {lv['lines']} appended lines, "
            f"{lv['seen']} seen, {lv['missed']} missed, {lv['partial_updates']} partial, final "
            f"total {'ok' if lv['final_total_ok'] else 'WRONG'}; load average "
            f"{' '.join(f'{x:.2f}' for x in lv['load'])}"
        )
        if lv["p50_s"] is not None:
            print(
                f"    latency p50 {lv['p50_s'] * 1000:.1f} ms, p90 {lv['p90_s'] * 1000:.1f} ms, "
                f"p99 {lv['p99_s'] * 1000:.1f} ms, max {lv['max_s'] * 1000:.1f} ms"
            )
        print(
            f"    sentinel CPU {lv['sentinel_cpu_ms_per_line']:.2f} ms per line "
            f"(exporter, scraped every 5 ms: {lv['exporter_cpu_s']:.2f} s)"
        )
        p99 = lv["p99_s"] if lv["p99_s"] is not None else float("inf")
        checks += [
            Check("(b) live p99 append -> /metrics, s", p99, TARGETS["live_p99_seconds"]),
            Check(
                "(b) sentinel CPU per appended line, ms",
                lv["sentinel_cpu_ms_per_line"],
                TARGETS["live_cpu_ms_per_line"],
            ),
            Check("(b) appended lines missed or partial", lv["missed"] + lv["partial_updates"], 0),
            Check("(b) final total wrong", 0 if lv["final_total_ok"] else 1, 0),
        ]
    idle = res.get("idle")
    if idle:
        print(
            f"\n(c) idle {idle['seconds']:.0f} s, {idle['files_tracked']} files tracked "
            f"({idle['transcript_files']} transcripts): sentinel "
            f"{idle['sentinel_cpu_percent']:.3f} % of a core "
            f"({idle['sentinel_cpu_s'] * 1000:.0f} ms CPU, "
            f"RSS {idle['sentinel_rss_mib']:.0f} MiB); exporter "
            f"{idle['exporter_cpu_percent_unscraped']:.3f} % (not scraped)"
        )
        checks.append(
            Check(
                "(c) idle sentinel CPU, % of a core",
                idle["sentinel_cpu_percent"],
                TARGETS["idle_cpu_percent"],
                strict=True,
            )
        )
    return checks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1G", help="corpus size, e.g. 200M, 1G (binary units)")
    ap.add_argument("--files", type=int, default=2000, help="transcript files in the corpus")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus-dir", help="default /tmp/aw-corpus-SIZE[-fFILES-sSEED]")
    ap.add_argument(
        "--skip-backfill",
        action="store_true",
        help="no timed backfill (one untimed --once still seeds the live phase)",
    )
    ap.add_argument("--skip-live", action="store_true", help="no live and no idle phase")
    ap.add_argument("--pairs", type=int, default=3, help="interleaved backfill pairs (3)")
    ap.add_argument(
        "--scale",
        default="5G",
        help="also backfill a corpus this large (files scaled alike) and compare its time "
        "and memory with the base size's; 0 skips it",
    )
    ap.add_argument(
        "--hogs", type=int, default=1, help="busy loops beside the live phase (default 1)"
    )
    ap.add_argument("--live-lines", type=int, default=100)
    ap.add_argument("--live-gap", type=float, default=0.05, help="seconds between appends")
    ap.add_argument(
        "--live-timeout", type=float, default=10.0, help="seconds to wait for one appended line"
    )
    ap.add_argument("--idle-seconds", type=float, default=60.0, help="0 skips the idle phase")
    ap.add_argument("--port", type=int, default=0, help="exporter port (default: a free one)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per backfill run")
    ap.add_argument("--ccusage", default=CCUSAGE)
    ap.add_argument("--agentwatch", help="the agentwatch command (default: next to python)")
    ap.add_argument("--work-dir", help="keep spool, state and logs here (default: a temp dir)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "out" / "result.json"))
    args = ap.parse_args(argv)

    size = corpus.parse_size(args.size)
    name = f"aw-corpus-{corpus.format_size(size)}"
    if args.files != 2000 or args.seed != 1:
        name += f"-f{args.files}-s{args.seed}"
    root = Path(args.corpus_dir or f"/tmp/{name}")
    aw = find_agentwatch(args.agentwatch)
    need_executable(args.ccusage, "ccusage", "run scripts/setup --test or pass --ccusage")

    print(f"corpus {root} ({args.size}, {args.files} files, seed {args.seed})", flush=True)
    started = time.perf_counter()
    manifest, made = corpus.ensure_corpus(root, size, args.files, args.seed, progress=True)
    print(
        f"  {'generated' if made else 're-used'} in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    nfiles, nbytes, took = warm_cache(root)
    print(
        f"  page cache warmed: {nfiles} files, {nbytes / (1 << 20):.0f} MiB in {took:.1f} s",
        flush=True,
    )

    res: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": [sys.executable, *sys.argv] if argv is None else argv,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu": next(
                (
                    ln.split(":", 1)[1].strip()
                    for ln in Path("/proc/cpuinfo").read_text().splitlines()
                    if ln.startswith("model name")
                ),
                "?",
            ),
        },
        "corpus": {
            "dir": str(root),
            **{k: v for k, v in manifest.items() if k not in ("by_kind", "expected_ccusage")},
        },
        "targets": TARGETS,
    }
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="aw-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    checks: list[Check] = []
    try:
        if not args.skip_backfill:
            print("(a) cold backfill, whole processes in interleaved pairs", flush=True)
            base, found, spool, state = backfill(args, root, work, aw, manifest)
            checks += found
            res["backfill"] = base.as_dict()
            if args.scale not in ("", "0"):
                print(f"(a') the same at {args.scale}", flush=True)
                big, found = scale(args, root, work, aw, base)
                checks += found
                res["scale"] = big.as_dict()
        elif not args.skip_live:
            (work / "home").mkdir(exist_ok=True)
            spool, state = work / "spool-0", work / "state-0"
            run_command(once_command(aw, spool, state), env=clean_env(work / "home", root),
                        timeout=args.timeout)  # fmt: skip
        if not args.skip_live:
            print(
                "(b) live latency" + (" and (c) idle" if args.idle_seconds > 0 else ""), flush=True
            )
            res.update(live_and_idle(args, root, work, aw, spool, state))
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    checks += live_checks(res, args.hogs)
    print()
    return verdict(checks, Path(args.out), res)


if __name__ == "__main__":
    sys.exit(main_guard(main))
