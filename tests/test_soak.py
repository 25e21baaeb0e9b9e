"""A bounded soak: the exporter and every sentinel as real processes under a synthetic
workload, SIGKILLed and restarted at random moments; afterwards nothing is lost or counted
twice, no process grew beyond the bounds, and every sentinel is healthy again.

Workload (AGENTWATCH_SOAK_SECONDS, default 90 s; e.g. `AGENTWATCH_SOAK_SECONDS=600 scripts/test
-k soak` for a longer run):

- writer threads append Claude Code assistant lines to transcripts of several projects (one a
  sub-agent file): each response as a smaller streamed copy then the final copy, some lines
  split across two writes, some responses copied again into another project's transcript;
- rotate in place: a transcript is renamed inside its folder (`s1.jsonl` -> `s1.r3.jsonl`,
  still a transcript, so it still counts, unread tail included) and a new file starts at the
  old path — no pause needed, every byte stays on disk;
- rotate out and truncate: a transcript is renamed out of `projects/` (log-rotation style), and
  another is truncated to 0 and rewritten (new lines, then half its old lines again: the new
  content outgrows the old offset, so comparing sizes alone would miss the truncation).
  Bytes that vanish before any reader saw them can not be counted by anyone, so these two
  happen at a barrier: writers hold, and the live ledger must first have counted everything
  written so far (it must catch up there, too);
- fake agent processes (a `claude` binary with children) are spawned and killed for the
  resources and footprint sentinels; a real tmux server holds one agent pane for resources and
  idle-error; a real git repository gets commits for release-readiness;
- during the first 55 % of the run each component (exporter and five sentinels) is SIGKILLed
  and restarted twice (more in longer runs) at random moments.

The oracle is independent of the live run's history: every byte ever written to a transcript
is also appended to an archive (one archive file per generation of each transcript path), and
a clean `token-ledger --once` over the archive gives the expected totals: the distinct
responses ever written, each counted once with its largest copy.

Bounds checked at the end: token totals per type and the response count equal the oracle
exactly (cost within 1e-9 relative); `agentwatch_ledger_unread_bytes` is 0; every sentinel has
`agentwatch_sentinel_up == 1` on the exporter; no component died by itself; and from a
baseline taken 8 s after the last kill to the end, each long-lived process grew by at most
RSS_BOUND (30 MiB) resident memory and FD_BOUND (20) open file descriptors.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
import requests
import yaml

from agentwatch.sentinels import registry
from tests.conftest import CLI, local_config, samples, token_totals
from tests.transcripts import assistant, encode, user_line

pytestmark = [pytest.mark.soak, pytest.mark.slow]

SOAK_SECONDS = float(os.environ.get("AGENTWATCH_SOAK_SECONDS", "90"))
CHAOS_SHARE = 0.55  # kills happen in the first part of the run only
WARM_UP = 8.0  # after the last restart, before the memory/fd baseline
RSS_BOUND = 30 * 1024 * 1024
FD_BOUND = 20
CATCH_UP_SECONDS = 60.0
SENTINELS = tuple(registry.sentinels())  # every sentinel there is
SLEEP = shutil.which("sleep") or "/bin/sleep"
DASH = shutil.which("dash") or "/bin/sh"
TMUX = shutil.which("tmux")
GIT = shutil.which("git") or "git"
TYPES = ("input", "output", "cache_read", "cache_creation")


@dataclass
class Component:
    """One long-lived process of the set, restartable after a SIGKILL."""

    name: str
    argv: list[str]
    log: Path
    process: subprocess.Popen | None = None
    kills: int = 0

    def start(self) -> None:
        with self.log.open("ab") as handle:
            self.process = subprocess.Popen(
                self.argv, stdout=subprocess.DEVNULL, stderr=handle, start_new_session=True
            )

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self.kills += 1

    def died_by_itself(self) -> str | None:
        if self.process is not None and self.process.poll() is not None:
            return f"{self.name} exited with {self.process.returncode}: {self.log_tail()}"
        return None

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]

    def usage(self) -> tuple[int, int]:
        """(resident bytes, open file descriptors) of the running process."""
        assert self.process is not None
        process = psutil.Process(self.process.pid)
        return process.memory_info().rss, process.num_fds()


class Transcripts:
    """Every transcript path of the run, its lock, and the archive of every byte written."""

    def __init__(self, live: Path, archive: Path):
        self.live, self.archive = live, archive
        self.locks: dict[Path, threading.Lock] = {}
        self.generation: dict[Path, int] = {}
        self.rotations = 0

    def add(self, relative: str) -> Path:
        path = self.live / "projects" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        self.locks[path] = threading.Lock()
        self.generation[path] = 0
        return path

    def _archive_of(self, path: Path) -> Path:
        relative = path.relative_to(self.live / "projects")
        name = f"{relative.stem}.g{self.generation[path]}.jsonl"
        target = self.archive / "projects" / relative.parent / name
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def write(self, path: Path, data: bytes, split: int = 0) -> None:
        """Append to the transcript (in two writes when `split`) and to its archive."""
        with self.locks[path]:
            with self._archive_of(path).open("ab") as handle:
                handle.write(data)
            with path.open("ab") as handle:
                if 0 < split < len(data):
                    handle.write(data[:split])
                    handle.flush()
                    time.sleep(0.005)
                    data = data[split:]
                handle.write(data)

    def rotate_in_place(self, path: Path) -> None:
        """Rename inside the folder (still a transcript); the next write starts a new file."""
        with self.locks[path]:
            self.rotations += 1
            if path.exists():
                path.rename(path.with_name(f"{path.stem}.r{self.rotations}.jsonl"))
            self.generation[path] += 1

    def rotate_out(self, path: Path, outside: Path) -> None:
        """Rename out of projects/ (call at a barrier: the ledger has read it all)."""
        self.rotations += 1
        outside.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.rename(outside / f"{path.stem}.{self.rotations}.jsonl")
        self.generation[path] += 1

    def truncate_and_rewrite(self, path: Path, new: bytes) -> None:
        """Truncate to 0, then write `new` and half the old lines again (at a barrier).

        `new` comes first: a rewrite that keeps the old first kilobyte is not detected by
        the ledger yet (see test_rewrite_keeping_the_first_lines_loses_none)."""
        old = self._archive_of(path)
        old_lines = old.read_bytes().splitlines(keepends=True) if old.exists() else []
        self.generation[path] += 1
        content = new + b"".join(old_lines[: len(old_lines) // 2])
        with self._archive_of(path).open("ab") as handle:
            handle.write(content)
        with path.open("ab") as handle:
            handle.truncate(0)
            handle.write(content)


@dataclass
class Writers:
    """Threads appending streamed responses; `hold()` blocks them all at a line boundary."""

    transcripts: Transcripts
    paths: list[Path]
    seed: int
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)
    responses: int = 0
    errors: list[BaseException] = field(default_factory=list)

    def start(self, count: int) -> None:
        for number in range(count):
            thread = threading.Thread(target=self._run, args=(number,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)
        assert not self.errors, self.errors

    def hold(self) -> list[threading.Lock]:
        locks = [self.transcripts.locks[path] for path in self.paths]
        for lock in locks:
            lock.acquire()
        return locks

    def _run(self, number: int) -> None:
        rng = random.Random(self.seed + number)
        own = self.paths[number::3] or self.paths
        sequence = 0
        try:
            while not self.stop.is_set():
                sequence += 1
                path = rng.choice(own)
                msg = f"msg_w{number}_{sequence:06d}"
                self.transcripts.write(path, response_lines(rng, msg), rng.choice((0, 0, 37)))
                if rng.random() < 0.1:  # the same response again elsewhere (a resumed session)
                    other = rng.choice(self.paths)
                    self.transcripts.write(other, response_lines(rng, msg, final_only=True))
                self.responses += 1
                time.sleep(rng.uniform(0.02, 0.08))
        except BaseException as err:  # surfaced by finish()
            self.errors.append(err)


def response_lines(rng: random.Random, msg: str, final_only: bool = False) -> bytes:
    """A streamed response: an early copy with fewer output tokens, a user line, the final
    copy (usage fixed per message id, so every copy of `msg` agrees on it)."""
    fixed = random.Random(msg)
    tokens = {
        "input_tokens": fixed.randint(1, 5000),
        "cache_read": fixed.randint(0, 20000),
        "cache_creation": fixed.randint(0, 3000),
        "model": fixed.choice(("claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805")),
        "timestamp": f"2026-11-28T10:{fixed.randint(0, 59):02d}:05.000Z",
    }
    final = fixed.randint(20, 4000)
    last = assistant(msg, output_tokens=final, **tokens)
    if final_only:
        return encode(last)
    early = assistant(msg, output_tokens=rng.randint(1, final), **tokens)
    return encode(early, user_line("continue"), last)


def run_oracle(tmp_path: Path, archive: Path, round_: int) -> dict[str, float]:
    """Totals of a clean `token-ledger --once` over the archive (fresh state every time)."""
    where = tmp_path / f"oracle-{round_}"
    config = where / "config.yaml"
    where.mkdir()
    config.write_text(yaml.safe_dump({"claude": {"config_dirs": [str(archive)]}}))
    dirs = ["--spool-dir", str(where / "spool"), "--state-dir", str(where / "state")]
    argv = [*CLI, "--config", str(config), "--log-level", "warning", "sentinel", "token-ledger"]
    argv += ["--once", *dirs]
    ran = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert ran.returncode == 0, ran.stderr
    return ledger_totals((where / "spool" / "token-ledger.prom").read_text())


def ledger_totals(text: str) -> dict[str, float]:
    totals = token_totals(text)
    found = samples(text)
    totals["responses"] = sum(
        value for (name, _), value in found.items() if name == "agentwatch_api_responses_total"
    )
    totals["unread"] = found.get(("agentwatch_ledger_unread_bytes", ()), -1.0)
    return totals


def scrape(url: str) -> str | None:
    try:
        answer = requests.get(url, timeout=5)
        return answer.text if answer.ok else None
    except requests.RequestException:
        return None


def same_totals(live: dict[str, float] | None, expected: dict[str, float]) -> bool:
    if live is None or live["unread"] != 0:
        return False
    if any(live[key] != expected[key] for key in (*TYPES, "responses")):
        return False
    return abs(live["cost"] - expected["cost"]) <= 1e-9 * max(expected["cost"], 1.0)


def wait_for_oracle(
    url: str, expected: dict[str, float], components: list[Component]
) -> dict[str, float] | None:
    """Poll the exporter until the live ledger equals the oracle; the last totals seen."""
    live = None
    deadline = time.monotonic() + CATCH_UP_SECONDS
    while time.monotonic() < deadline:
        text = scrape(url)
        live = ledger_totals(text) if text else None
        if same_totals(live, expected):
            return live
        for component in components:
            assert component.died_by_itself() is None, component.died_by_itself()
        time.sleep(0.5)
    return live


class Churn:
    """Short-lived fake agents spawned and killed: a shell named `claude` whose two `sleep`
    children are its tool calls, so resources sees a tree and footprint an agent CLI."""

    def __init__(self, root: Path, seed: int):
        self.claude = root / "bin" / "claude"
        self.pane_claude = root / "pane" / "claude"  # what the tmux pane runs: `sleep`
        for path, source in ((self.claude, DASH), (self.pane_claude, SLEEP)):
            path.parent.mkdir(parents=True)
            shutil.copy2(source, path)
        self.script = root / "agent.sh"
        self.script.write_text(f"{SLEEP} 600 &\n{SLEEP} 600 &\nwait\n")
        self.rng = random.Random(seed)
        self.alive: list[subprocess.Popen] = []
        self.spawned = 0

    def tick(self) -> None:
        if len(self.alive) < 4 and self.rng.random() < 0.5:
            self.alive.append(
                subprocess.Popen(
                    [str(self.claude), str(self.script)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,  # its own group: killed with its children
                )
            )
            self.spawned += 1
        if self.alive and self.rng.random() < 0.3:
            self._kill(self.alive.pop(self.rng.randrange(len(self.alive))))

    @staticmethod
    def _kill(process: subprocess.Popen) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop(self) -> None:
        for process in self.alive:
            self._kill(process)
        self.alive = []


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        [GIT, "-C", str(repo), "-c", "user.name=soak", "-c", "user.email=soak@example.invalid",
         *args], capture_output=True, check=True, timeout=30,
    )  # fmt: skip


def make_repo(path: Path) -> None:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("soak\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "first")


def start_tmux(socket: Path, claude: Path) -> bool:
    if TMUX is None:
        return False
    ran = subprocess.run(
        [TMUX, "-S", str(socket), "new-session", "-d", "-s", "soak", "-x", "120", "-y", "40",
         str(claude), "100000"], capture_output=True, timeout=30, check=False,
    )  # fmt: skip
    return ran.returncode == 0


def stop_tmux(socket: Path) -> None:
    if TMUX is not None and socket.exists():
        subprocess.run([TMUX, "-S", str(socket), "kill-server"], capture_output=True,
                       timeout=30, check=False)  # fmt: skip


def components_for(config: Path, spool: Path, state: Path, logs: Path) -> list[Component]:
    base = [*CLI, "--config", str(config), "--log-level", "info"]
    found = [Component("exporter", [*base, "exporter", "--spool-dir", str(spool)],
                       logs / "exporter.log")]  # fmt: skip
    for name in SENTINELS:
        argv = [*base, "sentinel", name, "--spool-dir", str(spool), "--state-dir", str(state)]
        found.append(Component(name, argv, logs / f"{name}.log"))
    return found


def kill_schedule(rng: random.Random, components: list[Component], until: float) -> list:
    """(moment, component, restart delay): each component killed a few times before `until`."""
    per_component = max(2, int(SOAK_SECONDS // 60) + 1)
    plan = [
        (rng.uniform(3.0, until - 1.0), component, rng.uniform(0.1, 2.0))
        for component in components
        for _ in range(per_component)
    ]
    return sorted(plan, key=lambda item: item[0])


def test_soak_no_loss_no_double_count_bounded_growth(tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("AGENTWATCH_SOAK_SEED", "20261128")))
    live_root, archive = tmp_path / "claude", tmp_path / "archive"
    transcripts = Transcripts(live_root, archive)
    paths = [
        transcripts.add("-home-alice-web/s1.jsonl"),
        transcripts.add("-home-alice-web/s2.jsonl"),
        transcripts.add("-home-alice-api/s3.jsonl"),
        transcripts.add("-home-alice-api/s3/subagents/agent-a1.jsonl"),
        transcripts.add("-home-bob-infra/s4.jsonl"),
        transcripts.add("-home-bob-infra/s5.jsonl"),
    ]
    repo = tmp_path / "repo"
    make_repo(repo)
    churn = Churn(tmp_path / "fleet", rng.randrange(1 << 30))
    socket = tmp_path / "tmux.sock"
    has_tmux = start_tmux(socket, churn.pane_claude)
    spool, state, logs = tmp_path / "spool", tmp_path / "state", tmp_path / "logs"
    logs.mkdir()
    tmux_sockets = [str(socket)] if has_tmux else []
    config = local_config(
        tmp_path,
        {
            "claude": {"config_dirs": [str(live_root)]},
            "agents": {"tmux_sockets": tmux_sockets},
            "sentinels": {
                "token-ledger": {"interval": "2s", "reconcile_interval": "3s"},
                "resources": {"interval": "1s"},
                "footprint": {"interval": "1s"},
                "idle-error": {"interval": "1s", "settle_time": "2s"},
                "release-readiness": {
                    "interval": "2s",
                    "repositories": [{"path": str(repo), "name": "soak"}],
                },
            },
        },
    )
    url = f"http://{yaml.safe_load(config.read_text())['exporter']['listen']}/metrics"
    components = components_for(config, spool, state, logs)
    writers = Writers(transcripts, paths, rng.randrange(1 << 30))
    try:
        for component in components:
            component.start()
        writers.start(3)
        report = soak(tmp_path, rng, components, writers, transcripts, churn, repo, url)
    finally:
        writers.stop.set()
        churn.stop()
        stop_tmux(socket)
        for component in components:
            if component.process is not None and component.process.poll() is None:
                component.process.kill()
                component.process.wait(timeout=30)
    print(report)  # shown with -s: the measured growth of each process


def soak(
    tmp_path: Path,
    rng: random.Random,
    components: list[Component],
    writers: Writers,
    transcripts: Transcripts,
    churn: Churn,
    repo: Path,
    url: str,
) -> str:
    started = time.monotonic()
    chaos_end = SOAK_SECONDS * CHAOS_SHARE
    plan = kill_schedule(rng, components, chaos_end)
    barriers = [SOAK_SECONDS * share for share in (0.3, 0.7)]
    next_rotation, next_commit, oracle_round = 6.0, 4.0, 0
    baseline: dict[str, tuple[int, int, int]] = {}  # name -> (pid, rss, fds)
    while (now := time.monotonic() - started) < SOAK_SECONDS:
        while plan and plan[0][0] <= now:
            _, component, delay = plan.pop(0)
            component.kill()
            time.sleep(delay)
            component.start()
        for component in components:
            assert component.died_by_itself() is None, component.died_by_itself()
        if barriers and now >= barriers[0]:
            barriers.pop(0)
            oracle_round += 1
            at_barrier(tmp_path, rng, components, writers, transcripts, url, oracle_round)
        if now >= next_rotation:
            transcripts.rotate_in_place(rng.choice(writers.paths))
            next_rotation = now + rng.uniform(4.0, 10.0)
        if now >= next_commit:
            (repo / "CHANGES.md").write_text(f"change at {now:.0f}\n")
            git(repo, "add", "CHANGES.md")
            git(repo, "commit", "-q", "-m", "work")
            next_commit = now + rng.uniform(5.0, 15.0)
        if not baseline and not plan and now >= chaos_end + WARM_UP:
            baseline = {c.name: (c.process.pid, *c.usage()) for c in components}  # type: ignore[union-attr]
        churn.tick()
        time.sleep(0.25)
    assert baseline, "the run was too short for a memory/fd baseline"

    writers.finish()
    churn.stop()
    expected = run_oracle(tmp_path, transcripts.archive, oracle_round + 1)
    live = wait_for_oracle(url, expected, components)
    assert same_totals(live, expected), (
        f"live ledger {live} never matched the oracle {expected}; ledger log:\n"
        + components[1].log_tail()
    )
    assert expected["responses"] >= writers.responses > 0
    health = wait_all_up(url)
    assert all(value == 1 for value in health.values()) and set(health) == set(SENTINELS), health
    return check_growth(components, baseline, expected, transcripts, churn)


def at_barrier(
    tmp_path: Path,
    rng: random.Random,
    components: list[Component],
    writers: Writers,
    transcripts: Transcripts,
    url: str,
    round_: int,
) -> None:
    """Writers hold; the live ledger must count all that was written so far; then one
    transcript is rotated out of projects/ and another truncated and rewritten."""
    held = writers.hold()
    try:
        expected = run_oracle(tmp_path, transcripts.archive, round_)
        live = wait_for_oracle(url, expected, components)
        assert same_totals(live, expected), f"barrier {round_}: live {live} != oracle {expected}"
        rotated, truncated = rng.sample(writers.paths, 2)
        transcripts.rotate_out(rotated, tmp_path / "rotated")
        # The rewrite outgrows the old file, so a reader that only compares sizes misses it.
        size = truncated.stat().st_size if truncated.exists() else 0
        new, index = b"", 0
        while len(new) < size // 2 + 4096:
            new += response_lines(rng, f"msg_rewrite_{round_}_{index}")
            index += 1
        transcripts.truncate_and_rewrite(truncated, new)
    finally:
        for lock in held:
            lock.release()


def wait_all_up(url: str) -> dict[str, float]:
    health: dict[str, float] = {}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = scrape(url)
        if text:
            health = {
                dict(labels)["sentinel"]: value
                for (name, labels), value in samples(text).items()
                if name == "agentwatch_sentinel_up"
            }
            if health and all(value == 1 for value in health.values()):
                break
        time.sleep(0.5)
    return health


def check_growth(
    components: list[Component],
    baseline: dict[str, tuple[int, int, int]],
    expected: dict[str, float],
    transcripts: Transcripts,
    churn: Churn,
) -> str:
    lines = [
        f"soak {SOAK_SECONDS:.0f}s: {expected['responses']:.0f} responses, "
        f"{transcripts.rotations} rotations, {churn.spawned} fake agents, "
        f"{sum(c.kills for c in components)} SIGKILLs"
    ]
    problems = []
    for component in components:
        pid, rss, fds = baseline[component.name]
        assert component.process is not None and component.process.pid == pid, (
            f"{component.name} restarted after the baseline"
        )
        rss_now, fds_now = component.usage()
        lines.append(
            f"  {component.name:<18} kills {component.kills}  rss {rss / 2**20:6.1f} -> "
            f"{rss_now / 2**20:6.1f} MiB ({(rss_now - rss) / 2**20:+.1f})  fds {fds} -> "
            f"{fds_now} ({fds_now - fds:+d})"
        )
        if rss_now - rss > RSS_BOUND or fds_now - fds > FD_BOUND:
            problems.append(component.name)
    report = "\n".join(lines)
    assert not problems, f"grew beyond the bounds: {problems}\n{report}"
    return report
