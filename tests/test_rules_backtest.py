"""Back-test of the alert rules over four days of synthetic history in a real Prometheus 2.42.

Method (Prometheus evaluates rules only going forward, so history is replayed by hand):
1. Generate four days of OpenMetrics at 1-minute resolution: a diurnal token spend with a daily
   one-minute spike, a noisy process footprint, two repositories, the thresholds and `up`,
   with three injected incidents — a 45-minute token burn, a footprint leak, a release that
   stalls past 2 and then 4 days and is finally released.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import free_port
from tests.test_rules import RULE_FILES, RULES_DIR, load_rules, parse_duration

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
MINUTE, HOUR, DAY = 60, 3600, 86400
DAYS = 4
STEPS = DAYS * 24 * 60
TARGET = 'job="agentwatch",instance="127.0.0.1:9847"'

# Incidents, as minutes since the start of the history.
BURN = (2 * 1440 + 14 * 60, 45)  # day 2, 14:00, 45 minutes at 42 M fresh tokens/hour
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
    fresh_total = cache_total = 0.0
    for step in range(STEPS + 1):
        if step:
            fresh, cache = tokens_per_minute(step)
            fresh_total, cache_total = fresh_total + fresh, cache_total + cache
        add("up", "", step, 1)
        add("agentwatch_alert_threshold", 'name="burn_floor_tokens_per_hour"', step, 10_000_000)
        add("agentwatch_alert_threshold", 'name="footprint_processes"', step, 220)
        shop = 'project="shop",model="claude-sonnet-4"'
        add("agentwatch_tokens_total", f'{shop},type="output"', step, fresh_total)
        add("agentwatch_tokens_total", f'{shop},type="cache_read"', step, cache_total)
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
            str(RULES_DIR / "recording.rules.yml"),
        )
        prometheus.stop()
        for block in recorded.iterdir():
            block.rename(storage / block.name)
        prometheus.start()
        firings = []
        for rule in load_rules():
            if "alert" not in rule:
                continue
            hold = parse_duration(str(rule["for"]))
            for series in prometheus.query_range(rule["expr"], start, end):
                labels = {k: v for k, v in series["metric"].items() if k not in ("job", "instance")}
                for first, last in firing_spans(series["values"], hold):
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
    assert [f.labels for f in burns] == [{"project": "shop"}], burns
    [burn] = burns
    began, length = BURN[0] * MINUTE, BURN[1] * MINUTE
    assert began + 2 * MINUTE <= burn.start <= began + 8 * MINUTE
    assert began + length - 5 * MINUTE <= burn.end <= began + length + 6 * MINUTE


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


def test_normal_days_raise_no_other_alert(backtest: tuple[list[Firing], int]) -> None:
    firings, _ = backtest
    expected = {
        "AgentwatchProjectTokenBurn",
        "AgentwatchFootprintClimbing",
        "AgentwatchFootprintHigh",
        "AgentwatchReleaseStalled",
    }
    unexpected = only(firings, lambda f: f.alert not in expected)
    assert not unexpected, unexpected
    quiet_day = (0, DAY)  # day 0: only the diurnal load and its daily spike
    assert not only(firings, lambda f: f.start < quiet_day[1]), "day 0 must be silent"
