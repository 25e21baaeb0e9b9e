"""The exporter's front page, rendered by a real browser from a real spool.

The spool is written by the real sentinels, run once on transcripts written with the demo's
transcript builders (token ledger), on Claude Code 2.1.328's recorded hook and statusline
payloads (claude-sessions), next to a real Alertmanager holding firing, inhibited and silenced
alerts and a real controller reading it. Debian's chromium renders `/` headless: the DOM must
carry the figures the spool holds, and the screenshot (kept, its path printed) must show the
page and its charts. Prometheus is left down on purpose: the page must say so and not wait.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from agentwatch.demo.transcripts import assistant, encode_lines, user_prompt
from agentwatch.exporter.collector import SpoolCollector
from agentwatch.exporter.overview_html import money
from agentwatch.exporter.remote import HOURS, Endpoints
from agentwatch.exporter.server import serve
from tests import png
from tests.conftest import CLI, free_port, local_config, midday_zone, run_cli, samples

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
CODEX_HOME = Path(__file__).parent / "fixtures" / "agents" / "codex" / "codex-home"
ROOT = Path(__file__).resolve().parents[1]
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
ALERTMANAGER = shutil.which("prometheus-alertmanager") or "/usr/bin/prometheus-alertmanager"
CHROMIUM = shutil.which("chromium")
ARTIFACTS = Path(os.environ.get("AGENTWATCH_ARTIFACTS", "/tmp/agentwatch-artifacts"))
HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"
SESSIONS = {  # the recorded payloads' sessions and projects
    "771f2fee-076f-454f-a028-c8cc72859343": "cap-project",
    "b701710e-dbf8-4518-aa15-de49a64e860a": "tui-project",
}
PROMPT = "please refactor the billing module"  # never on the page
ANSWER = "Refactored the billing module as asked"  # never on the page
OPUS = "claude-opus-4-1-20250805"
SONNET = "claude-sonnet-4-5-20250929"

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (scripts/setup --test)")


def wait_for(condition: Callable[[], Any], timeout: float = 60, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what or condition}")


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_transcript(
    claude: Path, session: str, cwd: str, turns: list[tuple[float, str, int]]
) -> None:
    """One transcript: a prompt, then one API response per turn (time, model, output)."""
    folder = claude / "projects" / ("-" + cwd.strip("/").replace("/", "-"))
    folder.mkdir(parents=True, exist_ok=True)
    lines: list[Any] = [
        user_prompt(PROMPT, session=session, cwd=cwd, timestamp=iso(turns[0][0] - 5))
    ]
    for index, (at, model, output) in enumerate(turns):
        lines.append(
            assistant(
                f"msg_{session[:8]}_{index}",
                f"req_{session[:8]}_{index}",
                model=model,
                input_tokens=1200 + 10 * index,
                output_tokens=output,
                cache_creation=4000,
                cache_read=20000 * (index + 1),
                timestamp=iso(at),
                session=session,
                cwd=cwd,
                text=ANSWER,
            )
        )
    path = folder / f"{session}.jsonl"
    with path.open("ab") as out:
        out.write(encode_lines(lines))


def hook(state: Path, name: str, changes: dict[str, Any] | None = None) -> None:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    data.update(changes or {})
    done = subprocess.run(
        [*CLI, "hook", "--state-dir", str(state)],
        input=json.dumps(data).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def statusline(state: Path, now: float) -> dict[str, Any]:
    """The recorded subscription statusline, its resets moved to the future (the recording's
    have passed): the page must show them as what they are, resets still to come."""
    data = json.loads((FIXTURES / "statusline-subscription.json").read_text())
    data["rate_limits"]["five_hour"]["resets_at"] = int(now + 2 * 3600 + 600)
    data["rate_limits"]["seven_day"]["resets_at"] = int(now + 3 * 86400)
    done = subprocess.run(
        [*CLI, "statusline", "--state-dir", str(state)],
        input=json.dumps(data).encode(),
        capture_output=True,
        env=dict(os.environ, XDG_CONFIG_HOME=str(state / "xdg")),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return data


class Stack:
    def __init__(self, root: Path, spool_text: str, exporter: str, alertmanager: str) -> None:
        self.root = root
        self.spool = samples(spool_text)
        self.exporter = exporter
        self.alertmanager = alertmanager


def start(argv: list[str], processes: list[subprocess.Popen], log: Path) -> None:
    processes.append(subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT))


def answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).ok
    except requests.RequestException:
        return False


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("front")
    processes: list[subprocess.Popen] = []
    try:
        with midday_zone():  # "three hours ago" is today even just after midnight
            yield build_stack(root, processes)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def build_stack(root: Path, processes: list[subprocess.Popen]) -> Stack:
    claude, spool, state = root / "claude", root / "spool", root / "state"
    for folder in (claude, spool, state):
        folder.mkdir()
    now = time.time()
    sessions = list(SESSIONS)
    write_transcript(
        claude,
        sessions[0],
        "/home/user/work/cap-project",
        [(now - 3 * 3600 + 60 * i, SONNET, 900 + 40 * i) for i in range(6)],
    )
    write_transcript(
        claude,
        sessions[1],
        "/home/user/work/tui-project",
        [(now - 5400 + 300 * i, OPUS, 500 + 10 * i) for i in range(4)],
    )
    write_transcript(  # a project whose name is markup: it must reach the page inert
        claude,
        "0c9d7e55-1f0e-4a55-9b1e-2f4d3c2b1a00",
        f"/home/user/{HOSTILE}",
        [(now - 600, SONNET, 50)],
    )
    cfg_path = local_config(
        root,
        {
            "spool_dir": str(spool),
            "state_dir": str(state),
            "claude": {"config_dirs": [str(claude)]},
        },
    )
    cfg = yaml.safe_load(cfg_path.read_text())
    env = {"CLAUDE_CONFIG_DIR": str(claude)}
    base = ["--config", str(cfg_path)]
    assert run_cli(*base, "run-budget", "start", env=env).returncode == 0
    write_transcript(  # after the run started: this response is the run's spend
        claude, sessions[0], "/home/user/work/cap-project", [(time.time(), OPUS, 2000)]
    )
    done = run_cli(*base, "sentinel", "token-ledger", "--once", env=env)
    assert done.returncode == 0, done.stderr
    # Codex CLI's real rollouts (captured 2026-12-01): a second agent in the spend tables.
    codex = root / "codex-home"
    shutil.copytree(CODEX_HOME, codex)
    agents = {"CODEX_HOME": str(codex), "HOME": str(root / "home")}
    done = run_cli(*base, "sentinel", "agent-ledger", "--once", env=agents)
    assert done.returncode == 0, done.stderr
    for name in ("SessionStart", "UserPromptSubmit", "PermissionRequest"):
        hook(state, name)  # cap-project's session works, tui-project's waits for permission
    statusline(state, now)
    done = run_cli(*base, "sentinel", "claude-sessions", "--once", env=env)
    assert done.returncode == 0, done.stderr

    alertmanager = cfg["stack"]["alertmanager_listen"]
    am_config = yaml.safe_load((ROOT / "rules" / "alertmanager-local.yml").read_text())
    am_config["receivers"][0]["webhook_configs"][0]["url"] = f"http://127.0.0.1:{free_port()}/"
    am_config.pop("templates", None)
    (root / "alertmanager.yml").write_text(yaml.safe_dump(am_config))
    start(
        [
            ALERTMANAGER,
            f"--config.file={root / 'alertmanager.yml'}",
            f"--storage.path={root / 'am-data'}",
            f"--web.listen-address={alertmanager}",
            "--cluster.listen-address=",
            "--log.level=warn",
        ],
        processes,
        root / "alertmanager.log",
    )
    wait_for(lambda: answers(f"http://{alertmanager}/-/ready"), what="Alertmanager")
    post_alerts(f"http://{alertmanager}/api/v2")

    controller_config = root / "controller.yaml"
    cfg["controller"]["alertmanagers"] = [f"http://{alertmanager}"]
    controller_config.write_text(yaml.safe_dump(cfg))
    cfg_path.write_text(yaml.safe_dump(cfg))
    start([*CLI, *base, "controller"], processes, root / "controller.log")
    start([*CLI, *base, "exporter"], processes, root / "exporter.log")
    exporter = cfg["exporter"]["listen"]
    throttle = f"http://{cfg['controller']['listen']}/throttle"
    wait_for(lambda: answers(throttle), what="the controller's /throttle")
    wait_for(lambda: answers(f"http://{exporter}/healthz"), what="the exporter")
    # The controller's cycle has read the alerts; the page's background reader catches up.
    wait_for(
        lambda: (
            "pause" in requests.get(f"http://{exporter}/", timeout=5).text
            and "AgentwatchFrontPageTest" in requests.get(f"http://{exporter}/", timeout=5).text
        ),
        what="the front page to show the controller's decision and the alerts",
    )
    prometheus = start_prometheus(root, cfg, processes)
    # Spend per hour comes from Prometheus: it scrapes the ledger's counters before and after
    # one more response, so the last hour's bar is that response's cost.
    query = f"http://{prometheus}/api/v1/query"

    def seen() -> float | None:
        answer = requests.get(query, params={"query": "sum(agentwatch_cost_usd_total)"}, timeout=5)
        result = answer.json()["data"]["result"]
        return float(result[0]["value"][1]) if result else None

    before = wait_for(seen, what="Prometheus to scrape the exporter")
    write_transcript(
        claude, sessions[1], "/home/user/work/tui-project", [(time.time(), OPUS, 3000)]
    )
    done = run_cli(*base, "sentinel", "token-ledger", "--once", env=env)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: (seen() or 0) > before, what="Prometheus to see the new response")
    wait_for(
        lambda: 'id="spend-chart"' in requests.get(f"http://{exporter}/", timeout=5).text,
        what="the front page to draw spend per hour",
    )
    metrics = requests.get(f"http://{exporter}/metrics", timeout=10).text
    return Stack(root, metrics, exporter, alertmanager)


def start_prometheus(root: Path, cfg: dict[str, Any], processes: list[subprocess.Popen]) -> str:
    listen = cfg["stack"]["prometheus_listen"]
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [
            {"job_name": "agentwatch", "static_configs": [{"targets": [cfg["exporter"]["listen"]]}]}
        ],
    }
    (root / "prometheus.yml").write_text(yaml.safe_dump(config))
    start(
        [
            PROMETHEUS,
            f"--config.file={root / 'prometheus.yml'}",
            f"--storage.tsdb.path={root / 'prometheus-data'}",
            f"--web.listen-address={listen}",
            "--log.level=warn",
        ],
        processes,
        root / "prometheus.log",
    )
    wait_for(lambda: answers(f"http://{listen}/-/ready"), what="Prometheus")
    return listen


def post_alerts(api: str) -> None:
    # Without startsAt, Alertmanager takes endsAt for it: the alert would start in 2 h.
    begins = (datetime.now(UTC) - timedelta(minutes=4)).isoformat()
    ends = (datetime.now(UTC) + timedelta(hours=2)).isoformat()
    base = {"job": "agentwatch", "instance": "here"}
    alerts = [
        {
            "labels": {
                **base,
                "alertname": "AgentwatchFrontPageTest",
                "severity": "critical",
                "project": "cap-project",
                "agentwatch_action": "pause",
            },
            "annotations": {"summary": "the run budget is spent"},
            "startsAt": begins,
            "endsAt": ends,
        },
        {  # inhibited by the critical one (same alertname, instance)
            "labels": {**base, "alertname": "AgentwatchFrontPageTest", "severity": "warning"},
            "annotations": {"summary": "inhibited: must not show"},
            "startsAt": begins,
            "endsAt": ends,
        },
        {
            "labels": {
                **base,
                "alertname": "AgentwatchHostile",
                "severity": "warning",
                "project": HOSTILE,
            },
            "annotations": {"summary": HOSTILE},
            "startsAt": begins,
            "endsAt": ends,
        },
        {
            "labels": {**base, "alertname": "AgentwatchSilencedOne", "severity": "warning"},
            "annotations": {"summary": "silenced: must not show"},
            "startsAt": begins,
            "endsAt": ends,
        },
    ]
    requests.post(f"{api}/alerts", json=alerts, timeout=10).raise_for_status()
    silence = {
        "matchers": [{"name": "alertname", "value": "AgentwatchSilencedOne", "isRegex": False}],
        "startsAt": datetime.now(UTC).isoformat(),
        "endsAt": ends,
        "createdBy": "test",
        "comment": "acknowledged",
    }
    requests.post(f"{api}/silences", json=silence, timeout=10).raise_for_status()

    def settled() -> bool:
        got = requests.get(f"{api}/alerts", timeout=5).json()
        states = {
            (a["labels"]["alertname"], a["labels"]["severity"]): a["status"]["state"] for a in got
        }
        return len(got) == 4 and list(states.values()).count("suppressed") == 2

    wait_for(settled, what="Alertmanager to inhibit and silence")


def chromium(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-extensions",
            "--user-data-dir="
            + str(Path(os.environ.get("TMPDIR", "/tmp")) / f"chromium-{os.getpid()}"),
            *args,
        ],
        capture_output=True,
        timeout=timeout,
        check=False,
    )


class Dom(HTMLParser):
    """The dumped DOM as text per element id, and every element and link seen."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str | None] = []
        self.text: dict[str, list[str]] = {}
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append((tag, found))
        self._in_title = tag == "title"
        if tag in ("meta", "link", "br", "img", "input", "rect", "line"):
            return
        self.stack.append(found.get("id"))

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False
        if tag in ("meta", "link", "br", "img", "input", "rect", "line"):
            return
        if self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        for ident in self.stack:
            if ident:
                self.text.setdefault(ident, []).append(data)

    def section(self, ident: str) -> str:
        return " ".join(" ".join(self.text.get(ident, [])).split())


@pytest.fixture(scope="module")
def dom(stack: Stack) -> Dom:
    done = chromium("--dump-dom", f"http://{stack.exporter}/")
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    parser = Dom()
    parser.feed(done.stdout.decode())
    return parser


def value(stack: Stack, name: str, **labels: str) -> float:
    return sum(
        v
        for (n, found), v in stack.spool.items()
        if n == name and all(dict(found).get(k) == want for k, want in labels.items())
    )


@pytest.mark.slow
def test_spend_today_this_week_and_this_run_by_agent(stack: Stack, dom: Dom) -> None:
    day = value(stack, "agentwatch_spend_usd", period="day", agent="claude-code")
    week = value(stack, "agentwatch_spend_usd", period="week", agent="claude-code")
    run = value(stack, "agentwatch_spend_usd", period="run", agent="claude-code")
    assert day > 0 and run > 0 and run < day  # the run is the last response only
    spend = dom.section("spend")
    for figure in (day, week, run):
        assert money(figure) in spend, (money(figure), spend)
    codex = value(stack, "agentwatch_cost_usd_total", agent="codex")
    assert codex > 0 and "codex" in spend
    # Codex's responses are of 2026-12-01: this month's spend, on the day's row a zero.
    month = value(stack, "agentwatch_spend_usd", agent="codex", period="month")
    assert money(month) in spend
    summary = dom.section("summary")
    every = {p: value(stack, "agentwatch_spend_usd", period=p) for p in ("day", "week", "run")}
    assert all(money(v) in summary for v in every.values()), (every, summary)  # all agents
    models = dom.section("models")
    for model in (OPUS, SONNET):
        cost = value(stack, "agentwatch_cost_usd_total", model=model)
        assert model in models and money(cost) in models


@pytest.mark.slow
def test_quota_windows_official_and_estimated_with_resets(stack: Stack, dom: Dom) -> None:
    quota = dom.section("quota")
    used = value(stack, "agentwatch_quota_used_ratio", window="five_hour")
    assert used == pytest.approx(0.42)
    assert "5-hour" in quota and "42%" in quota and "7-day" in quota
    titles = {attrs.get("title") for tag, attrs in dom.tags if tag == "span"}
    assert {"five_hour", "seven_day"} <= titles  # Claude Code's names of the windows
    assert "official" in quota and "estimated" in quota  # statusline vs the ledger's block
    assert "in 2 h 1" in quota or "in 2 h 0" in quota  # five_hour resets in 2 h 10 min
    assert "5-hour block" in quota


def test_sessions_with_their_states(stack: Stack, dom: Dom) -> None:
    sessions = dom.section("sessions")
    assert "working" in sessions or "waiting for permission" in sessions
    for session, project in SESSIONS.items():
        assert session[:8] in sessions and project in sessions
        cost = value(stack, "agentwatch_session_cost_usd_total", session=session)
        assert money(cost) in sessions
    titles = {attrs.get("title") for tag, attrs in dom.tags if tag == "span"}
    assert set(SESSIONS) <= titles  # the whole id is there on hover


def test_firing_alerts_without_the_suppressed_ones(stack: Stack, dom: Dom) -> None:
    alerts = dom.section("alerts")
    assert "AgentwatchFrontPageTest" in alerts and "the run budget is spent" in alerts
    assert re.search(r"\(\d+ min ago\)", alerts)  # started 4 min before it was posted
    assert "must not show" not in alerts
    assert "1 silenced, 1 inhibited" in alerts
    assert "2" in dom.section("summary")  # two firing: the critical one and the hostile one


def test_the_controllers_decision_and_why(stack: Stack, dom: Dom) -> None:
    controller = dom.section("controller")
    assert "paused" in controller and "AgentwatchFrontPageTest" in controller
    assert "0 agents may run now" in controller


def test_links_to_the_stack(stack: Stack, dom: Dom) -> None:
    links = {attrs.get("href") for tag, attrs in dom.tags if tag == "a"}
    cfg = yaml.safe_load((stack.root / "config.yaml").read_text())
    assert f"http://{cfg['stack']['prometheus_listen']}" in links
    assert f"http://{stack.alertmanager}" in links
    assert f"http://{cfg['controller']['listen']}/throttle" in links
    assert {"/metrics", "/healthz"} <= links
    refresh = [a for tag, a in dom.tags if tag == "meta" and a.get("http-equiv") == "refresh"]
    assert [a.get("content") for a in refresh] == ["15"]  # the page reloads itself
    sheets = [a.get("href") for tag, a in dom.tags if tag == "link"]
    assert sheets == ["/overview.css"]  # the one thing it loads: no script, no other origin


def test_spend_per_hour_from_prometheus(stack: Stack, dom: Dom) -> None:
    bars = [attrs for tag, attrs in dom.tags if tag == "rect" and attrs.get("class") == "spend"]
    assert len(bars) == HOURS
    heights = [float(bar["height"] or 0) for bar in bars]
    # Spent in this clock hour only (or the one before, when the test ran across the hour).
    assert any(heights[-2:]) and not any(heights[:-2])


@pytest.mark.slow
def test_a_silent_stack_never_slows_the_page(stack: Stack) -> None:
    """Every part of the stack accepts connections and never answers: the page is served
    at once from the spool, and says so after the background reads time out."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    collector = SpoolCollector(stack.root / "spool")
    server = serve(collector, f"127.0.0.1:{free_port()}", None, Endpoints(url, url, url))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    page = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        slowest = 0.0
        for _ in range(5):
            started = time.monotonic()
            assert requests.get(page, timeout=10).ok
            slowest = max(slowest, time.monotonic() - started)
        assert slowest < 1.0, slowest  # each read waits up to 2 s; the page never does
        text = wait_for(
            lambda: (
                (got := requests.get(page, timeout=10).text).count("no answer in time") >= 3 and got
            ),
            what="the page to say the stack does not answer",
        )
        assert "Alertmanager: no answer in time" in text
        assert "Controller /throttle: no answer in time" in text
        assert "Prometheus: no answer in time" in text
    finally:
        server.shutdown()
        server.server_close()
        silent.close()


def test_hostile_labels_render_inert(stack: Stack, dom: Dom) -> None:
    assert dom.title.startswith("agentwatch")  # no script ran
    assert not [tag for tag, _ in dom.tags if tag in ("script", "img", "iframe", "object")]
    assert HOSTILE in dom.section("alerts")  # shown as text, whole
    page = requests.get(f"http://{stack.exporter}/", timeout=10)
    assert "<script>" not in page.text and "&lt;script&gt;" in page.text
    csp = page.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "style-src 'self'" in csp and "script-src" not in csp


def test_the_page_has_no_prompt_or_pane_text(stack: Stack) -> None:
    page = requests.get(f"http://{stack.exporter}/", timeout=10).text
    assert "touch made-by-claude" not in page  # the recorded PermissionRequest's tool input
    assert PROMPT not in page and ANSWER not in page and "billing" not in page


@pytest.mark.slow
def test_the_screenshot_shows_the_page_and_its_charts(stack: Stack, tmp_path: Path) -> None:
    shot = tmp_path / "front-page.png"
    width, height = 1400, 1900
    done = chromium(
        f"--screenshot={shot}", f"--window-size={width},{height}", f"http://{stack.exporter}/"
    )
    assert done.returncode == 0 and shot.exists(), done.stderr.decode(errors="replace")[-2000:]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    kept = ARTIFACTS / "front-page.png"
    shutil.copyfile(shot, kept)
    print(f"\nfront page screenshot: {kept} (and {shot})", file=sys.stderr)
    image = png.read(shot.read_bytes())
    assert (image.width, image.height) == (width, height)
    colours = image.distinct_colours(step=3)
    assert len(colours) > 50, "a blank page"
    # The session chart's bars: the ledger's token types in their colours.
    for name, rgb in (
        ("input", (0x4E, 0x79, 0xA7)),
        ("output", (0xF2, 0x8E, 0x2B)),
        ("cache read", (0x59, 0xA1, 0x4F)),
    ):
        assert image.count(rgb) > 50, f"no {name} bar in the tokens chart"
