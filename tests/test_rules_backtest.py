"""Back-test of the alert rules over four days of synthetic history in a real Prometheus 2.42.

Method (Prometheus evaluates rules only going forward, so history is replayed by hand):
1. Generate four days of OpenMetrics at 1-minute resolution: a diurnal token spend with a daily
   one-minute spike, a noisy process footprint, two repositories, Claude Code's official
   five_hour quota reading (climbing during working hours, reset every 5 hours, stale at night),
   the day's spend against a daily budget, an orchestrator working during the day, the state and
   spool filesystems, every threshold at its default and `up`, with injected incidents — a
   45-minute token burn (heavy work), a 30-minute retry-loop burn (failing tool calls), a
   footprint leak, a release that stalls past 2 and then 4 days and is finally released, a quota
   window used up fast, a stale quota reading at 90 %, a day that overspends its budget, a run
   wedged with a task claimed and no agent, a filling state disk and a task running into its
   deadline.
2. Backfill it with `promtool tsdb create-blocks-from openmetrics` into a TSDB directory and start
   Prometheus on a free loopback port on it, with the rules loaded.
3. Backfill the recording rules with `promtool tsdb create-blocks-from rules` against that
   Prometheus, and restart it on the combined blocks.
4. Evaluate every alerting rule's `expr` with /api/v1/query_range over the four days at a
   1-minute step and apply its `for:` here: a label set fires once the expression has returned
   it at every step for `for`.
The incidents must alert at the right times, and nothing else may alert at any time.
"""

from __future__ import annotations

import math
import random
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from agentwatch.core.config import ALERT_THRESHOLDS
from tests.conftest import free_port
from tests.test_rules import RAW_FILES, RULE_FILES, RULES_DIR, load_rules, parse_duration

pytestmark = pytest.mark.slow  # docs/tests.md: not in `scripts/test --fast`

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
MINUTE, HOUR, DAY = 60, 3600, 86400
DAYS = 4
STEPS = DAYS * 24 * 60
TARGET = 'job="agentwatch",instance="127.0.0.1:9847"'

# Incidents, as minutes since the start of the history (the history starts at 00:00 UTC).
BURN = (2 * 1440 + 14 * 60, 45)  # day 2, 14:00, 45 minutes at 42 M fresh tokens/hour
RETRY = (1 * 1440 + 15 * 60, 30)  # day 1, 15:00, 30 minutes at 42 M/h, 8 of 10 tool calls fail
QUOTA = 3 * 1440 + 8 * 60  # day 3, the 08:00-13:00 window (a multiple of 5 h) used 3x as fast
STALE = (1 * 1440 + 18 * 60, 120)  # day 1, 18:00: a reading of 90 %, taken at 17:00
BUDGET_DAY = 2  # day 2 spends $6/h instead of $3/h against a $50 daily budget
WEDGE = (1 * 1440 + 3 * 60, 30)  # day 1, 03:00: a task claimed, no agent running
DISK = (3 * 1440 + 2 * 60, 210)  # day 3, 02:00: the state disk loses 200 MB a minute
DEADLINE = (2 * 1440 + 9 * 60, 2 * 1440 + 10 * 60)  # day 2: task t7 from 09:00, deadline 10:00
LEAK = (1 * 1440 + 10 * 60, 240)  # day 1, 10:00, +1 process a minute for 4 hours, then cleaned up
RELEASED = 3 * 1440 + 12 * 60  # the stalled repository is finally released on day 3, 12:00
STALL_AGE_AT_START = DAY  # its oldest unreleased commit is one day old when the history starts


@dataclass(frozen=True)
class Firing:
    alert: str
    severity: str
    labels: dict[str, str]
    start: int  # seconds since the history start
    end: int


def minute_of_day(step: int) -> int:
    return step % 1440


def tokens_per_minute(step: int) -> tuple[float, float]:
    """(fresh output tokens, cache reads) spent in the minute ending at this step."""
    hour = minute_of_day(step) // 60
    fresh = 50_000.0 if 8 <= hour < 18 else 0.0  # 3 M/h during the working day
    if minute_of_day(step) == 11 * 60:
        fresh += 400_000  # one big context load a day: 7.8 M/h over 5 minutes, under the floor
    if BURN[0] <= step < BURN[0] + BURN[1]:
        fresh += 650_000
    cache_reads = 2_000_000.0 if 8 <= hour < 18 else 0.0  # 120 M/h that must never count
    return fresh, cache_reads


def working(step: int) -> bool:
    return 8 <= minute_of_day(step) // 60 < 18


def worked_until(step: int) -> int:
    """Working minutes (08:00-18:00) from the start of the history up to this step."""
    return step // 1440 * 600 + min(max(minute_of_day(step) - 479, 0), 600)


def quota_reading(step: int) -> tuple[float, int]:
    """(five_hour used ratio, minute the reading was taken): +10 %/h of working time in each
    5-hour window (+30 %/h in the QUOTA window, up to 100 %); no renders outside working hours,
    so the reading ages; during STALE an old reading says 90 %."""
    window = step // 300 * 300
    pace = 0.3 if window == QUOTA else 0.1
    if STALE[0] <= step < STALE[0] + STALE[1]:
        return 0.9, STALE[0] - 60
    if working(step):
        taken = step
    else:
        day = step // 1440 - (1 if minute_of_day(step) < 8 * 60 else 0)
        taken = max(day * 1440 + 18 * 60 - 1, 0)
    return min(1.0, pace * (worked_until(step) - worked_until(window)) / 60), taken


def spent_today(step: int) -> float:
    """The day's spend so far: $3 per working hour ($6 on BUDGET_DAY), from local midnight."""
    per_hour = 6.0 if step // 1440 == BUDGET_DAY else 3.0
    return per_hour * (worked_until(step) - worked_until(step // 1440 * 1440)) / 60


def state_disk_free(step: int) -> float:
    free = 50e9
    if DISK[0] <= step < DISK[0] + DISK[1]:
        free -= (step - DISK[0]) * 200e6
    return free


def footprint(step: int, noise: random.Random) -> int:
    value = 50 + round(8 * math.sin(2 * math.pi * step / 1440)) + noise.randint(-3, 3)
    if LEAK[0] <= step < LEAK[0] + LEAK[1]:
        value += step - LEAK[0]
    return value


def openmetrics(start: int) -> str:
    """Four days of history as OpenMetrics text (seconds timestamps, one family at a time)."""
    series: dict[str, list[str]] = {}

    def add(name: str, labels: str, step: int, value: float) -> None:
        key = f"{name}{{{TARGET}{',' if labels else ''}{labels}}}"
        series.setdefault(key, []).append(f"{key} {value:.15g} {start + step * MINUTE}")

    noise = random.Random(7)
    fresh_total = cache_total = loop_total = calls = failures = 0.0
    done = failed = 0
    for step in range(STEPS + 1):
        if step:
            fresh, cache = tokens_per_minute(step)
            fresh_total, cache_total = fresh_total + fresh, cache_total + cache
            if RETRY[0] <= step < RETRY[0] + RETRY[1]:
                loop_total, calls, failures = loop_total + 700_000, calls + 10, failures + 8
            if working(step) and step % 10 == 0:
                done += 1
            if minute_of_day(step) == 12 * 60:
                failed += 1
        add("up", "", step, 1)
        for name, (default, _) in ALERT_THRESHOLDS.items():
            add("agentwatch_alert_threshold", f'name="{name}"', step, default)
        shop = 'project="shop",model="claude-sonnet-4"'
        add("agentwatch_tokens_total", f'{shop},type="output"', step, fresh_total)
        add("agentwatch_tokens_total", f'{shop},type="cache_read"', step, cache_total)
        # the retry loop: a project and its one session, its tool calls failing
        add("agentwatch_tokens_total", 'project="loop",model="m",type="output"', step, loop_total)
        loop = 'project="loop",session="s-loop"'
        add("agentwatch_session_tokens_total", f'{loop},type="output"', step, loop_total)
        add("agentwatch_claude_session_tool_calls_total", f'{loop},tool="Bash"', step, calls)
        add("agentwatch_claude_session_tool_failures_total", f'{loop},tool="Bash"', step, failures)
        # Claude Code's official five_hour reading
        ratio, taken = quota_reading(step)
        add("agentwatch_quota_used_ratio", 'window="five_hour"', step, ratio)
        resets = start + (step // 300 + 1) * 300 * MINUTE
        add("agentwatch_quota_resets_timestamp_seconds", 'window="five_hour"', step, resets)
        add("agentwatch_quota_reading_timestamp_seconds", "", step, start + taken * MINUTE)
        # the budget guard without an orchestrator: the ledger's spend of the day
        add("agentwatch_budget_spent_usd", 'period="day"', step, spent_today(step))
        add("agentwatch_budget_limit_usd", 'source="config"', step, 50)
        # an orchestrator working during the day (a task claimed, two agents), wedged once
        wedged = WEDGE[0] <= step < WEDGE[0] + WEDGE[1]
        add("agentwatch_orchestrator_up", "", step, 1)
        add("agentwatch_orchestrator_agents", "", step, 2 if working(step) else 0)
        claimed = 1 if working(step) or wedged else 0
        add("agentwatch_orchestrator_tasks", 'status="claimed"', step, claimed)
        add("agentwatch_orchestrator_tasks", 'status="done"', step, done)
        add("agentwatch_orchestrator_tasks", 'status="failed"', step, failed)
        if DEADLINE[0] <= step <= DEADLINE[1] + 10:
            deadline = start + DEADLINE[1] * MINUTE
            add(
                "agentwatch_orchestrator_task_deadline_timestamp_seconds",
                'task="t7"',
                step,
                deadline,
            )
        # the filesystems of the state and spool folders
        for folder, free in (("state", state_disk_free(step)), ("spool", 800e6)):
            add("agentwatch_filesystem_avail_bytes", f'dir="{folder}"', step, free)
            add(
                "agentwatch_filesystem_size_bytes",
                f'dir="{folder}"',
                step,
                100e9 if folder == "state" else 1e9,
            )
        add("agentwatch_footprint_agent_processes", "", step, footprint(step, noise))
        stalled = step < RELEASED
        add("agentwatch_release_unreleased_commits", 'repo="shop"', step, 5 if stalled else 0)
        add("agentwatch_release_publish_blocked", 'repo="shop"', step, 1)
        if stalled:
            oldest = start - STALL_AGE_AT_START
            add(
                "agentwatch_release_oldest_unreleased_commit_timestamp_seconds",
                'repo="shop"',
                step,
                oldest,
            )
        # a repository that is far behind but not blocked: never an alert
        add("agentwatch_release_unreleased_commits", 'repo="blog"', step, 3)
        add("agentwatch_release_publish_blocked", 'repo="blog"', step, 0)
        add(
            "agentwatch_release_oldest_unreleased_commit_timestamp_seconds",
            'repo="blog"',
            step,
            start - 10 * DAY,
        )
    lines: list[str] = []
    for family in sorted({key.split("{", 1)[0] for key in series}):
        lines.append(f"# TYPE {family} unknown")
        for key in sorted(k for k in series if k.split("{", 1)[0] == family):
            lines.extend(series[key])
    return "\n".join([*lines, "# EOF", ""])


def promtool(*args: str) -> None:
    result = subprocess.run(
        ["promtool", *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


class Prometheus:
    """A real Prometheus on a loopback port over a given TSDB directory, with our rules."""

    def __init__(self, tmp_path: Path, storage: Path) -> None:
        self.config = tmp_path / "prometheus.yml"
        rule_list = "\n".join(f"  - {path}" for path in RULE_FILES)
        self.config.write_text(f"global:\n  evaluation_interval: 1m\nrule_files:\n{rule_list}\n")
        self.storage = storage
        self.url = ""
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        listen = f"127.0.0.1:{free_port()}"
        self.url = f"http://{listen}"
        self.process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={self.config}",
                f"--storage.tsdb.path={self.storage}",
                f"--web.listen-address={listen}",
                "--storage.tsdb.retention.time=30d",
                "--log.level=warn",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.process.stderr.read()  # type: ignore[union-attr]
            try:
                if requests.get(f"{self.url}/-/ready", timeout=1).ok:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.1)
        raise AssertionError("prometheus did not become ready")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def query_range(self, expr: str, start: int, end: int) -> list[dict[str, Any]]:
        response = requests.post(
            f"{self.url}/api/v1/query_range",
            data={"query": expr, "start": start, "end": end, "step": MINUTE},
            timeout=60,
        )
        assert response.ok, f"{response.status_code} {response.text} for {expr}"
        return response.json()["data"]["result"]


def firing_spans(values: list[list[Any]], hold: float) -> Iterator[tuple[int, int]]:
    """Spans (first, last timestamp) during which a series that is present at consecutive steps
    has been present for at least `hold` seconds: Prometheus's `for:`."""
    run_start = previous = None
    span: list[int] | None = None
    for raw_ts, _ in values:
        ts = int(raw_ts)
        if previous is None or ts - previous > MINUTE:
            if span:
                yield span[0], span[1]
            run_start, span = ts, None
        if ts - run_start >= hold:
            span = [span[0] if span else ts, ts]
        previous = ts
    if span:
        yield span[0], span[1]


def alert_series(result: list[dict[str, Any]]) -> Iterator[tuple[dict[str, str], list[Any]]]:
    """The query's series as Prometheus's alerting sees them: without the metric name (so two
    branches of an `or` that differ only in it are one alert) and without job and instance."""
    merged: dict[tuple[tuple[str, str], ...], list[Any]] = {}
    for series in result:
        labels = {k: v for k, v in series["metric"].items() if k not in ("job", "instance")}
        labels.pop("__name__", None)
        merged.setdefault(tuple(sorted(labels.items())), []).extend(series["values"])
    for key, values in merged.items():
        yield dict(key), sorted(values, key=lambda value: float(value[0]))


@pytest.fixture(scope="module")
def backtest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[Firing], int]]:
    """Every alert firing over the history, as found by evaluating the rules in Prometheus."""
    assert shutil.which("promtool"), "promtool is required (Debian package prometheus)"
    tmp_path = tmp_path_factory.mktemp("backtest")
    end = int(time.time()) // HOUR * HOUR - HOUR
    start = end - STEPS * MINUTE
    history = tmp_path / "history.om"
    history.write_text(openmetrics(start))
    storage = tmp_path / "tsdb"
    promtool(
        "tsdb",
        "create-blocks-from",
        "openmetrics",
        "--max-block-duration=24h",
        str(history),
        str(storage),
    )
    prometheus = Prometheus(tmp_path, storage)
    try:
        prometheus.start()
        loaded = requests.get(f"{prometheus.url}/api/v1/rules", timeout=10).json()["data"]
        assert sum(len(g["rules"]) for g in loaded["groups"]) == len(load_rules())
        recorded = tmp_path / "recorded"
        promtool(
            "tsdb",
            "create-blocks-from",
            "rules",
            f"--url={prometheus.url}",
            f"--start={start}",
            f"--end={end}",
            f"--output-dir={recorded}",
            "--eval-interval=60s",
            *(str(RULES_DIR / name) for name in RAW_FILES),
        )
        prometheus.stop()
        for block in recorded.iterdir():
            block.rename(storage / block.name)
        prometheus.start()
        alerts = [rule for rule in load_rules() if "alert" in rule]
        # One query per alert rule over four days: independent, so several at once (Prometheus
        # answers them in parallel; the order of the results does not matter).
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(
                pool.map(lambda rule: prometheus.query_range(rule["expr"], start, end), alerts)
            )
        firings = []
        for rule, result in zip(alerts, results, strict=True):
            hold = parse_duration(str(rule["for"]))
            for labels, values in alert_series(result):
                for first, last in firing_spans(values, hold):
                    firings.append(
                        Firing(
                            rule["alert"],
                            rule["labels"]["severity"],
                            labels,
                            first - start,
                            last - start,
                        )
                    )
        yield firings, start
    finally:
        prometheus.stop()


def only(firings: list[Firing], predicate: Callable[[Firing], bool]) -> list[Firing]:
    return [firing for firing in firings if predicate(firing)]


def test_the_burn_alerts_during_the_burn_only(backtest: tuple[list[Firing], int]) -> None:
    firings, _ = backtest
    burns = only(firings, lambda f: f.alert == "AgentwatchProjectTokenBurn")
    heavy = [f for f in burns if f.severity == "warning"]
    assert [f.labels for f in heavy] == [{"project": "shop"}], burns
    [burn] = heavy
    began, length = BURN[0] * MINUTE, BURN[1] * MINUTE
    assert began + 2 * MINUTE <= burn.start <= began + 8 * MINUTE
    assert began + length - 5 * MINUTE <= burn.end <= began + length + 6 * MINUTE


def test_the_retry_loop_burn_pages_as_a_retry_loop(backtest: tuple[list[Firing], int]) -> None:
    """Failing tool calls make the same kind of burn a retry loop (critical), never heavy work."""
    firings, _ = backtest
    loops = only(
        firings,
        lambda f: f.alert.endswith("TokenBurn") and f.labels.get("project") == "loop",
    )
    found = sorted((f.alert, f.severity, tuple(sorted(f.labels.items()))) for f in loops)
    assert found == [
        ("AgentwatchProjectTokenBurn", "critical", (("project", "loop"),)),
        ("AgentwatchSessionTokenBurn", "critical", (("project", "loop"), ("session", "s-loop"))),
    ], loops
    began, length = RETRY[0] * MINUTE, RETRY[1] * MINUTE
    for firing in loops:
        assert began + 2 * MINUTE <= firing.start <= began + 8 * MINUTE
        assert began + length - 5 * MINUTE <= firing.end <= began + length + 6 * MINUTE


def at(day: int, hour: int, minute: int = 0) -> int:
    """Seconds since the history start of a day's local time (the history starts at 00:00)."""
    return ((day * 24 + hour) * 60 + minute) * MINUTE


def near(value: int, expected: int, slack: int = 2 * MINUTE) -> bool:
    return abs(value - expected) <= slack


def test_the_fast_quota_window_climbs_the_buckets_and_is_forecast(
    backtest: tuple[list[Firing], int],
) -> None:
    """30 %/h from 08:00: elevated at 10:20, critical 10:50, shutdown 11:10 (+2 min `for`),
    until the reset at 13:00; the forecast (used up at 11:20, before 13:00) warns from about
    08:30 (once the 30-minute pace is the new one) until the shutdown bucket takes over."""
    firings, _ = backtest
    day = QUOTA // 1440
    reset = at(day, 13) - MINUTE
    official = {"window": "five_hour", "source": "official"}
    for alert, (hour, minute) in (
        ("AgentwatchQuotaElevated", (10, 22)),
        ("AgentwatchQuotaCritical", (10, 52)),
        ("AgentwatchQuotaShutdown", (11, 12)),
    ):
        [firing] = only(firings, lambda f, a=alert: f.alert == a)
        assert firing.labels == official, firing
        assert near(firing.start, at(day, hour, minute)) and near(firing.end, reset), firing
    [forecast] = only(firings, lambda f: f.alert == "AgentwatchQuotaExhaustionPredicted")
    assert forecast.labels == official
    assert at(day, 8, 10) <= forecast.start <= at(day, 8, 50), forecast
    assert near(forecast.end, at(day, 11, 9)), forecast


def test_the_budget_alerts_escalate_on_the_overspending_day_only(
    backtest: tuple[list[Firing], int],
) -> None:
    """$6/h from 08:00 against $50: 80 % at 14:40, 95 % at 15:55, 100 % at 16:20 (+1 min
    `for`). The warning is the 80 to 95 % band only, so it ends when the critical begins; the
    critical and the exhausted alert last until the day's spend restarts at midnight. $3/h
    days reach 60 %."""
    firings, _ = backtest
    midnight = at(BUDGET_DAY + 1, 0) - MINUTE
    critical = at(BUDGET_DAY, 0, 15 * 60 + 55)
    for alert, minute, end in (
        ("AgentwatchBudgetWarning", 14 * 60 + 40, critical - MINUTE),
        ("AgentwatchBudgetCritical", 15 * 60 + 55, midnight),
        ("AgentwatchBudgetExhausted", 16 * 60 + 20, midnight),
    ):
        [firing] = only(firings, lambda f, a=alert: f.alert == a)
        assert firing.labels == {"period": "day"}
        assert near(firing.start, at(BUDGET_DAY, 0, minute)), firing
        assert near(firing.end, end), firing


def test_the_wedged_run_the_filling_disk_and_the_deadline_alert(
    backtest: tuple[list[Firing], int],
) -> None:
    firings, _ = backtest
    [wedged] = only(firings, lambda f: f.alert == "AgentwatchOrchestratorWedged")
    began, length = WEDGE[0] * MINUTE, WEDGE[1] * MINUTE
    assert near(wedged.start, began + 10 * MINUTE) and near(wedged.end, began + length - MINUTE)
    [disk] = only(firings, lambda f: f.alert == "AgentwatchDiskFilling")
    assert disk.labels == {"dir": "state"}, "the steady spool filesystem never alerts"
    began, length = DISK[0] * MINUTE, DISK[1] * MINUTE
    assert began + 30 * MINUTE <= disk.start <= began + length, disk
    assert disk.end <= began + length + 3 * HOUR, disk
    [near_deadline] = only(firings, lambda f: f.alert == "AgentwatchTaskDeadlineNear")
    deadline = DEADLINE[1] * MINUTE
    assert near_deadline.labels == {"task": "t7"}
    assert near(near_deadline.start, deadline - 4 * MINUTE, MINUTE), near_deadline
    assert near(near_deadline.end, deadline - MINUTE, MINUTE), near_deadline
    [past] = only(firings, lambda f: f.alert == "AgentwatchTaskPastDeadline")
    assert near(past.start, deadline + 2 * MINUTE, MINUTE), past


def test_the_footprint_leak_alerts_while_it_climbs(backtest: tuple[list[Firing], int]) -> None:
    firings, _ = backtest
    began, length = LEAK[0] * MINUTE, LEAK[1] * MINUTE
    climbing = only(firings, lambda f: f.alert == "AgentwatchFootprintClimbing")
    assert len(climbing) == 1, climbing
    assert began + 30 * MINUTE <= climbing[0].start <= began + 2 * HOUR
    assert climbing[0].end <= began + length + HOUR
    high = only(firings, lambda f: f.alert == "AgentwatchFootprintHigh")
    assert len(high) == 1, high
    # 50 ± 11 processes plus one a minute passes 220 after about 170 minutes, +5 min for
    assert began + 155 * MINUTE <= high[0].start <= began + 190 * MINUTE
    assert began + length - 2 * MINUTE <= high[0].end <= began + length + 2 * MINUTE


def test_the_release_stall_escalates_and_ends_with_the_release(
    backtest: tuple[list[Firing], int],
) -> None:
    firings, _ = backtest
    stalls = only(firings, lambda f: f.alert == "AgentwatchReleaseStalled")
    assert {f.labels["repo"] for f in stalls} == {"shop"}, "an unblocked repository never alerts"
    by_severity = {f.severity: f for f in stalls}
    assert len(stalls) == len(by_severity) == 2, stalls
    released = RELEASED * MINUTE
    # the oldest commit turns 2 days old one day in, 4 days old three days in; for: 30m
    for severity, turns in (("info", 1 * DAY), ("warning", 3 * DAY)):
        firing = by_severity[severity]
        assert turns + 30 * MINUTE <= firing.start <= turns + 32 * MINUTE, severity
        assert released - 2 * MINUTE <= firing.end <= released + MINUTE, severity
    assert "critical" not in by_severity, "7 days are never reached"


# Always active by design: the watchdog for the dead man's switch, and `grow` while nothing
# fails (the orchestrator finishes tasks; its one failure a day pauses it for ten minutes).
ALWAYS = {"AgentwatchWatchdog", "AgentwatchErrorRatioLow"}


def test_the_always_on_alerts_are_on(backtest: tuple[list[Firing], int]) -> None:
    firings, _ = backtest
    [watchdog] = only(firings, lambda f: f.alert == "AgentwatchWatchdog")
    assert watchdog.start <= 2 * MINUTE and watchdog.end >= DAYS * DAY - 2 * MINUTE
    grow = only(firings, lambda f: f.alert == "AgentwatchErrorRatioLow")
    assert grow and all(f.labels == {} for f in grow)
    assert sum(f.end - f.start for f in grow) >= 0.9 * DAYS * DAY, "grow is the normal state"


def test_normal_days_raise_no_other_alert(backtest: tuple[list[Firing], int]) -> None:
    firings, _ = backtest
    expected = ALWAYS | {
        "AgentwatchProjectTokenBurn",
        "AgentwatchSessionTokenBurn",
        "AgentwatchFootprintClimbing",
        "AgentwatchFootprintHigh",
        "AgentwatchReleaseStalled",
        "AgentwatchQuotaElevated",
        "AgentwatchQuotaCritical",
        "AgentwatchQuotaShutdown",
        "AgentwatchQuotaExhaustionPredicted",
        "AgentwatchBudgetWarning",
        "AgentwatchBudgetCritical",
        "AgentwatchBudgetExhausted",
        "AgentwatchOrchestratorWedged",
        "AgentwatchDiskFilling",
        "AgentwatchTaskDeadlineNear",
        "AgentwatchTaskPastDeadline",
    }
    unexpected = only(firings, lambda f: f.alert not in expected)
    assert not unexpected, unexpected
    quiet_day = (0, DAY)  # day 0: only the diurnal load and its daily spike
    early = only(firings, lambda f: f.start < quiet_day[1] and f.alert not in ALWAYS)
    assert not early, "day 0 must be silent"
    # the stale 90 % reading of day 1 evening never raises a quota bucket
    stale = (STALE[0] * MINUTE, (STALE[0] + STALE[1]) * MINUTE)
    assert not only(
        firings, lambda f: f.alert.startswith("AgentwatchQuota") and f.start < stale[1] + HOUR
    )
