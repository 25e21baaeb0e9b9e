"""The front page on input it must survive: a spool file with impossible values and markup
in every label, and answers from the stack that are not what they should be. Each renders a
whole page (never an error), with the markup inert; no browser needed."""

from __future__ import annotations

import threading
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import requests

from agentwatch.exporter.collector import SpoolCollector
from agentwatch.exporter.overview import build
from agentwatch.exporter.overview_html import CSP, render
from agentwatch.exporter.remote import Endpoints, HttpError, Reading, Remote, parse_alerts
from agentwatch.exporter.server import serve
from tests.conftest import free_port

MARKUP = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
# Label values as the exposition format escapes them: quote and backslash.
LABEL = MARKUP.replace("\\", "\\\\").replace('"', '\\"')

SPOOL = f"""# TYPE agentwatch_spend_usd gauge
agentwatch_spend_usd{{agent="{LABEL}",period="day"}} NaN
agentwatch_spend_usd{{agent="{LABEL}",period="week"}} +Inf
agentwatch_spend_usd{{agent="x",period="{LABEL}"}} 1
# TYPE agentwatch_session_tokens_total counter
agentwatch_session_tokens_total{{agent="{LABEL}",project="{LABEL}",session="{LABEL}",\
type="input"}} +Inf
agentwatch_session_tokens_total{{agent="a",project="p",session="s",type="{LABEL}"}} 5
# TYPE agentwatch_session_last_activity_timestamp_seconds gauge
agentwatch_session_last_activity_timestamp_seconds{{agent="a",project="p",session="s"}} 1e300
# TYPE agentwatch_claude_session_state gauge
agentwatch_claude_session_state{{session="s",project="p",state="{LABEL}"}} 1
# TYPE agentwatch_claude_session_state_since_timestamp_seconds gauge
agentwatch_claude_session_state_since_timestamp_seconds{{session="s",project="p"}} NaN
# TYPE agentwatch_quota_used_ratio gauge
agentwatch_quota_used_ratio{{window="{LABEL}"}} NaN
# TYPE agentwatch_quota_resets_timestamp_seconds gauge
agentwatch_quota_resets_timestamp_seconds{{window="{LABEL}"}} -1e308
# TYPE agentwatch_block_tokens gauge
agentwatch_block_tokens 5
# TYPE agentwatch_block_end_timestamp_seconds gauge
agentwatch_block_end_timestamp_seconds Inf
# TYPE agentwatch_block_limit_tokens gauge
agentwatch_block_limit_tokens{{source="{LABEL}"}} 0
# TYPE agentwatch_controller_effective_max_agents gauge
agentwatch_controller_effective_max_agents NaN
# TYPE agentwatch_cost_usd_total counter
agentwatch_cost_usd_total{{agent="a",project="p",model="{LABEL}"}} 1e308
"""

THROTTLES: list[Any] = [
    {"effective_max_agents": MARKUP, "actions": {MARKUP: [MARKUP, 3]}, "mode": MARKUP},
    {"actions": [1, 2], "deferred_tiers": MARKUP, "breaker": None, "budget_limit_usd": "x"},
    {"budget_limit_usd": float("nan"), "actions": {"pause": "not a list"}},
]


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


def elements(page: bytes) -> list[str]:
    parser = Elements()
    parser.feed(page.decode())
    return parser.tags


def inert(page: bytes) -> None:
    tags = elements(page)
    assert "script" not in tags and "img" not in tags, tags
    assert b"&lt;script&gt;" in page


@pytest.fixture
def collector(tmp_path: Path) -> SpoolCollector:
    (tmp_path / "garbage.prom").write_text(SPOOL)
    found = SpoolCollector(tmp_path)
    families, health = found.snapshot()
    assert [h.error for h in health] == [None]  # the file is valid exposition text
    assert families
    return found


@pytest.mark.parametrize("throttle", THROTTLES)
def test_impossible_values_and_markup_render_inert(
    collector: SpoolCollector, throttle: Any
) -> None:
    families, health = collector.snapshot(1_800_000_000)
    remote = Remote(
        endpoints=Endpoints(f"http://x/{MARKUP}", "http://y", "http://z"),
        throttle=throttle,
        controller=Reading(None, 0),
        alertmanager=Reading(MARKUP, 0),
        prometheus=Reading(None, 0),
        spend_per_hour=[(1_800_000_000.0 - 3600 * i, v) for i, v in enumerate((0, 1e308, 5))],
    )
    page = render(build(families, health, remote, 1_800_000_000))
    inert(page)
    assert b"</html>" in page


def test_an_alert_list_with_junk_elements_keeps_the_alerts() -> None:
    answer = [
        "junk",
        {"labels": "junk", "status": "junk"},
        {
            "labels": {"alertname": MARKUP, "severity": "critical", "project": 5},
            "annotations": {"summary": MARKUP},
            "status": {"state": "active", "silencedBy": [], "inhibitedBy": []},
            "startsAt": "not a time",
        },
        {"labels": {"alertname": "B"}, "status": {"state": "suppressed", "silencedBy": ["1"]}},
        {"labels": {"alertname": "C"}, "status": {"state": "suppressed", "inhibitedBy": ["2"]}},
    ]
    firing, silenced, inhibited = parse_alerts(answer)
    assert [(a.name, a.severity, a.where, a.starts_at) for a in firing] == [
        (MARKUP, "critical", "", None)
    ]
    assert (silenced, inhibited) == (1, 1)
    with pytest.raises(HttpError):
        parse_alerts({"not": "a list"})


def test_served_with_its_headers_and_stylesheet(collector: SpoolCollector) -> None:
    server = serve(collector, f"127.0.0.1:{free_port()}", None, Endpoints())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        page = requests.get(f"{base}/", timeout=10)
        assert page.status_code == 200
        assert page.headers["Content-Type"] == "text/html; charset=utf-8"
        assert page.headers["Content-Security-Policy"] == CSP
        assert page.headers["X-Content-Type-Options"] == "nosniff"
        inert(page.content)
        assert "not configured" in page.text  # no stack given: said, not read
        assert 'href="/overview.css"' in page.text
        css = requests.get(f"{base}/overview.css", timeout=10)
        assert css.status_code == 200 and css.headers["Content-Type"].startswith("text/css")
        assert b"section" in css.content
    finally:
        server.shutdown()
        server.server_close()


def test_a_fresh_machine_gets_a_page_that_says_what_is_missing(tmp_path: Path) -> None:
    """Nothing has run yet: an empty spool, the stack not read yet."""
    families, health = SpoolCollector(tmp_path, expected=["token-ledger"]).snapshot()
    page = render(build(families, health, Remote(), 1_800_000_000)).decode()
    assert "No spend counted yet" in page and "No quota known" in page
    assert "No recent session" in page and "Alertmanager: not read yet" in page
    assert "Controller /throttle: not read yet" in page
    assert ">missing<" in page  # the expected sentinel, never written


def test_an_alertmanager_behind_basic_auth_is_read_with_it_and_linked_without() -> None:
    """`controller.alertmanagers` may be `http://user:pass@host`: the background read sends
    the pair as basic auth, and the page's link never shows it."""
    import http.server

    from agentwatch.exporter.overview_html import without_credentials
    from agentwatch.exporter.remote import get

    seen: list[str | None] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"[]")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        assert get(f"http://aw:p%40ss@127.0.0.1:{port}/api/v2/alerts") == b"[]"
        assert get(f"http://127.0.0.1:{port}/api/v2/alerts") == b"[]"
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["Basic YXc6cEBzcw==", None]  # base64 of "aw:p@ss"
    assert without_credentials("http://aw:secret@127.0.0.1:9093/x") == "http://127.0.0.1:9093/x"
    remote = Remote(endpoints=Endpoints(alertmanager="http://aw:secret@127.0.0.1:9093"))
    page = render(build([], [], remote, 1_800_000_000)).decode()
    assert "secret" not in page and 'href="http://127.0.0.1:9093"' in page
