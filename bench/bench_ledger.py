"""Benchmarks of the token-ledger sentinel, as ratios against ccusage measured in the same run.

    python bench/bench_ledger.py [--size 1G] [--files 2000] [--idle-seconds 60] [--skip-ccusage]

(a) cold backfill: `ccusage claude daily --json --offline` vs
    `agentwatch sentinel token-ledger --once` (fresh state) on the same corpus, warm page cache:
    wall time, CPU, and each run's peak RSS (of its own process tree, summed over the
    processes alive at once, sampled every 10 ms), and the token totals of both (and of the
    generator) must agree.
(a') scaling: the same backfill of a corpus --scale (5 GiB) large, in back-to-back pairs with
    the base corpus: time at most 5.5x the base's for 5x the bytes, and flat peak memory.
(b) live latency: the sentinel as a loop plus `agentwatch exporter`; append one new response to
    a transcript, poll /metrics every 5 ms until the token counter moves; p50/p99 and the
    sentinel's CPU per appended line.
(c) idle: the same sentinel with every transcript tracked and nothing changing; CPU as % of a
    core.

Results are printed and written as JSON (--out).
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
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil
from prometheus_client.parser import text_string_to_metric_families

from agentwatch.demo import corpus

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
TARGETS = {
    "backfill_wall_ratio": ("<=", 1.0),
    "backfill_rss_ratio": ("<", 1.0),
    "backfill_cpu_ratio": ("<=", 1.2),
    "scale_wall_ratio": ("<=", 5.5),
    "scale_rss_ratio": ("<=", 1.2),
    "live_p99_seconds": ("<=", 1.0),
    "live_cpu_ms_per_line": ("<=", 10.0),
    "idle_cpu_percent": ("<", 0.2),
}
COST_REL_TOL = 1e-9


# --------------------------------------------------------------------------------------------
# processes


@dataclass
class Run:
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_mib: float
    returncode: int

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s

    def describe(self) -> str:
        return (
            f"{self.wall_s:7.2f} s wall, {self.cpu_s:7.2f} s cpu, "
            f"{self.max_rss_mib:7.1f} MiB peak RSS (its process tree)"
        )


def _kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


def _pids() -> set[int]:
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) from /proc/PID/stat; None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS


def _rss(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * PAGE
    except OSError:
        return None


class TreeSampler(threading.Thread):
    """Samples one run's process tree (its root and every descendant) every `every` seconds:
    the peak of the SUMMED resident memory of the processes alive at once (a parallel run must
    not hide behind its largest process) and the CPU time of every process seen (workers
    started through a fork server are not waited children).

    That peak is the run's memory figure. wait4's and RUSAGE_CHILDREN's ru_maxrss cannot be
    used: a child's high-water mark starts at the benchmark's own resident size when it is
    forked, so once the corpus is generated in this process every run reports the same
    number. A sample has to be cheap to be taken every 10 ms without slowing the timed run on
    a 2-core machine, so the tree is found without reading the whole process table each time:
    processes that existed before the run (`before`) are never its descendants, and a new pid
    is classified once, by its parent."""

    def __init__(self, pid: int, before: set[int], every: float = 0.01):
        super().__init__(daemon=True)
        self.every = every
        self.tree = {pid}
        self.seen = before | {pid}  # classified: in the tree, or not ours
        self.peak_rss = 0
        self.cpu: dict[int, float] = {}
        self.done = threading.Event()

    def _adopt(self) -> None:
        """Add the new processes whose parent is in the tree (children before grandchildren)."""
        parents = {}
        for pid in _pids() - self.seen:
            found = _stat(pid)
            if found is not None:
                parents[pid] = found[0]
        added = True
        while added:
            added = False
            for pid, parent in list(parents.items()):
                if parent in self.tree:
                    self.tree.add(pid)
                    del parents[pid]
                    added = True
        self.seen |= self.tree | parents.keys()

    def run(self) -> None:
        while not self.done.is_set():
            self._adopt()
            total = 0
            for pid in list(self.tree):
                rss, found = _rss(pid), _stat(pid)
                if rss is None or found is None:
                    self.tree.discard(pid)  # exited: its CPU time stays counted
                    continue
                total += rss
                self.cpu[pid] = found[1]
            if not self.tree:
                return
            self.peak_rss = max(self.peak_rss, total)
            self.done.wait(self.every)


def run_measured(
    cmd: list[str], env: dict[str, str], stdout: Path, stderr: Path, timeout: float
) -> Run:
    """Run cmd to completion: wall time, CPU and peak RSS of its own process tree (the
    sampler's peak; CPU never less than wait4's for the child and what it waited for)."""
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        before = _pids()
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True
        )
        sampler = TreeSampler(proc.pid, before)
        sampler.start()
        timer = threading.Timer(timeout, _kill_group, args=(proc.pid,))
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            _kill_group(proc.pid)
            proc.wait(10)
            raise
        finally:
            timer.cancel()
            sampler.done.set()
            sampler.join(5)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = stderr.read_text(errors="replace")[-2000:]
        raise RuntimeError(
            f"{cmd[0]} exited {proc.returncode}{' (timeout)' if wall >= timeout else ''}:\n{tail}"
        )
    waited = usage.ru_utime + usage.ru_stime  # the child and the children it waited for
    sampled = sum(sampler.cpu.values())  # every process seen in the tree
    peak = sampler.peak_rss / (1 << 20)
    return Run(wall, max(waited, sampled) - usage.ru_stime, usage.ru_stime, peak, proc.returncode)


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
            _kill_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid)
                proc.wait(10)


def cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
        raise SystemExit("agentwatch not found: pip install -e . (or pass --agentwatch)")
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


def ccusage_totals(out: Path) -> dict[str, Any]:
    totals = json.loads(out.read_text())["totals"]
    return {
        "tokens": {t: int(totals[k]) for t, k in CC_KEYS.items()},
        "cost": float(totals["totalCost"]),
    }


def expected_totals(manifest: dict[str, Any]) -> dict[str, Any]:
    e = manifest["expected_ccusage"]
    return {"tokens": {t: int(e[k]) for t, k in CC_KEYS.items()}, "cost": float(e["totalCost"])}


def same_totals(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["tokens"] == b["tokens"] and abs(a["cost"] - b["cost"]) <= max(
        1e-6, COST_REL_TOL * abs(b["cost"])
    )


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


def backfill(
    args: argparse.Namespace, root: Path, work: Path, aw: str, manifest: dict[str, Any]
) -> dict[str, Any]:
    """Both readers on the whole corpus, alternating, `--repeat` times each; every run's
    memory is the peak of its own process tree, so the runs' figures differ."""
    home = work / "home"
    home.mkdir(exist_ok=True)
    env = clean_env(home, root)
    cc_runs: list[Run] = []
    aw_runs: list[Run] = []
    cc_tot: dict[str, Any] | None = None
    aw_tot: dict[str, Any] = {}
    for i in range(args.repeat):
        if not args.skip_ccusage:
            out = work / f"ccusage-{i}.json"
            command = [args.ccusage, "claude", "daily", "--json", "--offline"]
            run = run_measured(command, env, out, work / f"ccusage-{i}.err", args.timeout)
            cc_runs.append(run)
            cc_tot = ccusage_totals(out)
            print(f"  ccusage    run {i + 1}: {run.describe()}", flush=True)
        spool, state = work / f"spool-{i}", work / f"state-{i}"
        run = run_measured(
            once_command(aw, spool, state),
            env,
            work / f"once-{i}.out",
            work / f"once-{i}.err",
            args.timeout,
        )
        aw_runs.append(run)
        aw_tot = ledger_totals(spool / "token-ledger.prom")
        print(f"  agentwatch run {i + 1}: {run.describe()}", flush=True)
    gen = expected_totals(manifest)
    result: dict[str, Any] = {
        "agentwatch": summarize(aw_runs),
        "totals": {"agentwatch": aw_tot, "generator": gen},
        "checks": {"agentwatch_tokens_equal_generator": same_tokens(aw_tot, gen)},
        "spool_dir": str(work / f"spool-{args.repeat - 1}"),
        "state_dir": str(work / f"state-{args.repeat - 1}"),
    }
    if cc_runs and cc_tot is not None:
        cc = summarize(cc_runs)
        result["ccusage"] = cc
        result["totals"]["ccusage"] = cc_tot
        result["checks"]["agentwatch_tokens_equal_ccusage"] = same_tokens(aw_tot, cc_tot)
        result["checks"]["generator_equals_ccusage"] = same_totals(gen, cc_tot)
        result["ratios"] = {
            "backfill_wall_ratio": result["agentwatch"]["wall_s"] / cc["wall_s"],
            "backfill_rss_ratio": result["agentwatch"]["max_rss_mib"] / cc["max_rss_mib"],
            "backfill_cpu_ratio": result["agentwatch"]["cpu_s"] / cc["cpu_s"],
        }
    return result


def scale(args: argparse.Namespace, root: Path, work: Path, aw: str) -> dict[str, Any]:
    """The same cold backfill on a corpus `--scale` large (files scaled alike, so a file's
    size and the mix of lines stay): its wall time and peak memory against the base corpus's,
    in pairs run back to back (base, then large, `--scale-repeat` times), so that both sides
    of the ratio see the same load on a shared machine. Memory must stay flat: chunks are
    bounded, not the history."""
    size = corpus.parse_size(args.scale)
    factor = size / corpus.parse_size(args.size)
    files = max(1, round(args.files * factor))
    big_root = Path(f"/tmp/aw-corpus-{corpus.format_size(size)}-f{files}-s{args.seed}")
    print(f"scale corpus {big_root} ({args.scale}, {files} files)", flush=True)
    manifest, made = corpus.ensure_corpus(big_root, size, files, args.seed, progress=True)
    print(f"  {'generated' if made else 're-used'}", flush=True)
    nfiles, nbytes, took = warm_cache(big_root)
    print(f"  page cache warmed: {nfiles} files, {nbytes / (1 << 20):.0f} MiB in {took:.1f} s")
    home = work / "home"
    home.mkdir(exist_ok=True)
    runs: dict[str, list[Run]] = {"base": [], "big": []}
    totals: dict[str, Any] = {}
    for i in range(args.scale_repeat or args.repeat):
        for name, tree, label in (("base", root, args.size), ("big", big_root, args.scale)):
            spool, state = work / f"scale-{name}-spool-{i}", work / f"scale-{name}-state-{i}"
            run = run_measured(
                once_command(aw, spool, state),
                clean_env(home, tree),
                work / f"scale-{name}-{i}.out",
                work / f"scale-{name}-{i}.err",
                args.timeout,
            )
            runs[name].append(run)
            if name == "big":
                totals = ledger_totals(spool / "token-ledger.prom")
            shutil.rmtree(state, ignore_errors=True)  # a 5 GiB history's database: not kept
            print(f"  agentwatch {label:>4} run {i + 1}: {run.describe()}", flush=True)
    base, big = summarize(runs["base"]), summarize(runs["big"])
    gen = expected_totals(manifest)
    return {
        "corpus": {"dir": str(big_root), "bytes": manifest["bytes"], "files": manifest["files"]},
        "factor": factor,
        "base": base,
        "agentwatch": big,
        "totals": {"agentwatch": totals, "generator": gen},
        "checks": {"scale_agentwatch_tokens_equal_generator": same_tokens(totals, gen)},
        "ratios": {
            "scale_wall_ratio": big["wall_s"] / base["wall_s"],
            "scale_rss_ratio": big["max_rss_mib"] / base["max_rss_mib"],
        },
    }


def summarize(runs: list[Run]) -> dict[str, Any]:
    return {
        "wall_s": statistics.median(r.wall_s for r in runs),
        "cpu_s": statistics.median(r.cpu_s for r in runs),
        "max_rss_mib": statistics.median(r.max_rss_mib for r in runs),
        "runs": [asdict(r) for r in runs],
    }


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


def verdict(name: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    op, limit = TARGETS[name]
    ok = value <= limit if op == "<=" else value < limit
    return f"{'PASS' if ok else 'FAIL'} (target {op} {limit:g})"


def report(res: dict[str, Any]) -> None:
    c = res["corpus"]
    print()
    print(
        f"corpus: {c['bytes'] / (1 << 30):.3f} GiB, {c['files']} files "
        f"({c['subagent_files']} sub-agent), {c['projects']} projects, {c['lines']} lines, "
        f"largest line {c['max_line_bytes'] / (1 << 20):.1f} MiB, {c['responses']} responses, "
        f"{sum(c['bad_lines'].values())} bad lines"
    )
    b = res.get("backfill")
    if b:
        print(
            "\n(a) cold backfill (warm page cache; median of "
            f"{len(b['agentwatch']['runs'])} run(s))"
        )
        print(f"    {'':12} {'wall s':>9} {'cpu s':>9} {'peak RSS MiB':>13}")
        for name in ("ccusage", "agentwatch"):
            if name in b:
                r = b[name]
                print(
                    f"    {name:12} {r['wall_s']:9.2f} {r['cpu_s']:9.2f} {r['max_rss_mib']:13.1f}"
                )
        for name in ("ccusage", "agentwatch"):
            if name in b:
                peaks = ", ".join(f"{run['max_rss_mib']:.1f}" for run in b[name]["runs"])
                print(f"    {name} peak RSS per run (own process tree): {peaks} MiB")
        if "ratios" in b:
            r = b["ratios"]
            print(
                f"    {'aw/ccusage':12} {r['backfill_wall_ratio']:9.2f} "
                f"{r['backfill_cpu_ratio']:9.2f} {r['backfill_rss_ratio']:13.2f}"
            )
            print(
                f"    wall ratio: {verdict('backfill_wall_ratio', r['backfill_wall_ratio'])}; "
                f"RSS ratio: {verdict('backfill_rss_ratio', r['backfill_rss_ratio'])}"
            )
        print(f"    {'totals':12} " + " ".join(f"{t:>14}" for t in TYPES) + f" {'cost $':>16}")
        for name, tot in b["totals"].items():
            print(
                f"    {name:12} "
                + " ".join(f"{tot['tokens'][t]:>14}" for t in TYPES)
                + f" {tot['cost']:>16.6f}"
            )
        for name, ok in b["checks"].items():
            print(f"    {name}: {'yes' if ok else 'NO'}")
        if "ratios" in b:
            r = b["ratios"]
            print(f"    cpu ratio: {verdict('backfill_cpu_ratio', r['backfill_cpu_ratio'])}")
    sc = res.get("scale")
    if sc:
        a, base = sc["agentwatch"], sc["base"]
        r = sc["ratios"]
        print(
            f"\n(a') scale: {sc['corpus']['bytes'] / (1 << 30):.2f} GiB, "
            f"{sc['corpus']['files']} files: {a['wall_s']:.2f} s wall, {a['cpu_s']:.2f} s cpu, "
            f"{a['max_rss_mib']:.1f} MiB peak RSS"
        )
        print(
            f"    against {base['wall_s']:.2f} s and {base['max_rss_mib']:.1f} MiB at "
            f"{res['corpus']['bytes'] / (1 << 30):.2f} GiB: time x{r['scale_wall_ratio']:.2f} "
            f"for x{sc['factor']:.1f} the bytes, "
            f"{verdict('scale_wall_ratio', r['scale_wall_ratio'])}; memory "
            f"x{r['scale_rss_ratio']:.2f}, {verdict('scale_rss_ratio', r['scale_rss_ratio'])}"
        )
        for name, ok in sc["checks"].items():
            print(f"    {name}: {'yes' if ok else 'NO'}")
    lv = res.get("live", {}).get("live")
    if lv:
        print(
            f"\n(b) live: {lv['lines']} appended lines, {lv['seen']} seen, {lv['missed']} "
            f"missed, {lv['partial_updates']} partial, final total "
            f"{'ok' if lv['final_total_ok'] else 'WRONG'}"
        )
        if lv["p50_s"] is not None:
            print(
                f"    latency p50 {lv['p50_s'] * 1000:.1f} ms, p90 {lv['p90_s'] * 1000:.1f} ms, "
                f"p99 {lv['p99_s'] * 1000:.1f} ms, max {lv['max_s'] * 1000:.1f} ms: "
                f"{verdict('live_p99_seconds', lv['p99_s'])}"
            )
        print(
            f"    sentinel CPU {lv['sentinel_cpu_ms_per_line']:.2f} ms per line: "
            f"{verdict('live_cpu_ms_per_line', lv['sentinel_cpu_ms_per_line'])} "
            f"(exporter, scraped every 5 ms: {lv['exporter_cpu_s']:.2f} s)"
        )
    idle = res.get("live", {}).get("idle")
    if idle:
        print(
            f"\n(c) idle {idle['seconds']:.0f} s, {idle['files_tracked']} files tracked "
            f"({idle['transcript_files']} transcripts): sentinel "
            f"{idle['sentinel_cpu_percent']:.3f} % of a core "
            f"({idle['sentinel_cpu_s'] * 1000:.0f} ms CPU, "
            f"RSS {idle['sentinel_rss_mib']:.0f} MiB): "
            f"{verdict('idle_cpu_percent', idle['sentinel_cpu_percent'])}; exporter "
            f"{idle['exporter_cpu_percent_unscraped']:.3f} % (not scraped)"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1G", help="corpus size, e.g. 200M, 1G (binary units)")
    ap.add_argument("--files", type=int, default=2000, help="transcript files in the corpus")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus-dir", help="default /tmp/aw-corpus-SIZE[-fFILES-sSEED]")
    ap.add_argument("--skip-ccusage", action="store_true", help="no ccusage run, no ratios")
    ap.add_argument(
        "--skip-backfill",
        action="store_true",
        help="no timed backfill (one untimed --once still seeds the live phase)",
    )
    ap.add_argument("--skip-live", action="store_true", help="no live and no idle phase")
    ap.add_argument("--repeat", type=int, default=1, help="backfill runs of each (median)")
    ap.add_argument(
        "--scale",
        default="5G",
        help="also backfill a corpus this large (files scaled alike) and compare its time "
        "and memory with the base size's; 0 skips it",
    )
    ap.add_argument(
        "--scale-repeat", type=int, default=0, help="pairs of scale runs (default: --repeat)"
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
    args.repeat = max(1, args.repeat)

    size = corpus.parse_size(args.size)
    name = f"aw-corpus-{corpus.format_size(size)}"
    if args.files != 2000 or args.seed != 1:
        name += f"-f{args.files}-s{args.seed}"
    root = Path(args.corpus_dir or f"/tmp/{name}")
    aw = find_agentwatch(args.agentwatch)
    if not args.skip_ccusage and not os.access(args.ccusage, os.X_OK):
        raise SystemExit(f"ccusage not found at {args.ccusage} (or pass --skip-ccusage)")

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
        "targets": {k: f"{op} {v:g}" for k, (op, v) in TARGETS.items()},
    }
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="aw-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    ok = True
    try:
        if not args.skip_backfill:
            print("(a) cold backfill", flush=True)
            res["backfill"] = backfill(args, root, work, aw, manifest)
            ok = all(res["backfill"]["checks"].values())
            spool = Path(res["backfill"]["spool_dir"])
            state = Path(res["backfill"]["state_dir"])
            if args.scale not in ("", "0"):
                res["scale"] = scale(args, root, work, aw)
                ok = ok and all(res["scale"]["checks"].values())
        elif not args.skip_live:
            (work / "home").mkdir(exist_ok=True)
            spool, state = work / "spool-0", work / "state-0"
            run_measured(
                once_command(aw, spool, state),
                clean_env(work / "home", root),
                work / "once.out",
                work / "once.err",
                args.timeout,
            )
        if not args.skip_live:
            print(
                "(b) live latency" + (" and (c) idle" if args.idle_seconds > 0 else ""), flush=True
            )
            res["live"] = live_and_idle(args, root, work, aw, spool, state)
            lv = res["live"]["live"]
            ok = ok and lv["missed"] == 0 and lv["final_total_ok"]
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    measured: dict[str, float | None] = {
        "backfill_wall_ratio": res.get("backfill", {}).get("ratios", {}).get("backfill_wall_ratio"),
        "backfill_rss_ratio": res.get("backfill", {}).get("ratios", {}).get("backfill_rss_ratio"),
        "live_p99_seconds": res.get("live", {}).get("live", {}).get("p99_s"),
        "live_cpu_ms_per_line": res.get("live", {}).get("live", {}).get("sentinel_cpu_ms_per_line"),
        "idle_cpu_percent": res.get("live", {}).get("idle", {}).get("sentinel_cpu_percent"),
        "backfill_cpu_ratio": res.get("backfill", {}).get("ratios", {}).get("backfill_cpu_ratio"),
        "scale_wall_ratio": res.get("scale", {}).get("ratios", {}).get("scale_wall_ratio"),
        "scale_rss_ratio": res.get("scale", {}).get("ratios", {}).get("scale_rss_ratio"),
    }
    res["summary"] = {k: {"value": v, "verdict": verdict(k, v)} for k, v in measured.items()}
    res["correct"] = ok
    report(res)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"\nwritten {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
