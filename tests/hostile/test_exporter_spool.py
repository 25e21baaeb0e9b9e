"""The spool reader's bounds and caches, on real files: a refused file is not opened again until
it changes, the file count and byte budget per scrape hold whatever sits in the folder, a file
name that is not UTF-8 is a safe label, and the /metrics body is rendered once per change."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest
from prometheus_client.metrics_core import GaugeMetricFamily

from agentwatch.core import bounded, spool
from agentwatch.exporter import collector as collector_module
from agentwatch.exporter.collector import BODY_BUCKET, SpoolCollector
from tests.conftest import samples
from tests.hostile.test_exporter import promtool_problems


def _gauge(name: str, value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, f"help of {name}")
    family.add_metric([], value)
    return family


def _opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    opened: list[str] = []
    original = bounded.read_bytes

    def counting(path: Path | str, limit: int) -> bytes:
        opened.append(Path(path).name)
        return original(path, limit)

    monkeypatch.setattr(bounded, "read_bytes", counting)
    return opened


def test_a_refused_file_is_not_opened_again_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkfifo(tmp_path / "fifo.prom")
    with (tmp_path / "huge.prom").open("wb") as handle:
        handle.truncate(100 * 1024 * 1024)
    opened = _opens(monkeypatch)
    reader = spool.SpoolReader(tmp_path)
    for _ in range(5):
        files = {f.sentinel: f for f in reader.read().files}
    assert sorted(opened) == ["fifo.prom", "huge.prom"]
    assert (files["fifo.prom"[:-5]].reason, files["huge"].reason) == ("not_regular", "too_large")
    assert reader.rejections == {"not_regular": 1, "too_large": 1}
    later = time.time() + 5
    os.utime(tmp_path / "huge.prom", (later, later))  # a new version: looked at once more
    reader.read()
    reader.read()
    assert sorted(opened) == ["fifo.prom", "huge.prom", "huge.prom"]
    assert reader.rejections["too_large"] == 2


def test_a_file_rewritten_with_the_same_bytes_is_not_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sentinel at rest writes the same text each cycle: the reader keeps the parse (and a
    bad file's error) and takes the new mtime, so staleness still moves; other bytes are
    parsed."""
    good, bad = tmp_path / "ledger.prom", tmp_path / "broken.prom"
    good.write_text(spool.render([_gauge("agentwatch_a", 1)]))
    bad.write_text("agentwatch_b{ 1\n")
    parsed: list[int] = []
    original = spool.parse_text

    def counting(text: str) -> list:
        parsed.append(len(text))
        return original(text)

    monkeypatch.setattr(spool, "parse_text", counting)
    reader = spool.SpoolReader(tmp_path)
    first = {f.sentinel: f for f in reader.read().files}
    assert len(parsed) == 2
    for path in (good, bad):  # rewritten alike, a second later
        path.write_bytes(path.read_bytes())
        later = time.time() + 1
        os.utime(path, (later, later))
    again = {f.sentinel: f for f in reader.read().files}
    assert len(parsed) == 2  # neither parsed again
    assert again["ledger"].families is first["ledger"].families
    assert again["ledger"].mtime > first["ledger"].mtime
    assert again["ledger"].signature != first["ledger"].signature
    assert first["broken"].reason == "malformed" and first["broken"].error
    assert (again["broken"].reason, again["broken"].error) == (
        first["broken"].reason,
        first["broken"].error,
    )
    assert reader.rejections["malformed"] == 2  # once per version, as before
    good.write_text(spool.render([_gauge("agentwatch_a", 2)]))
    changed = {f.sentinel: f for f in reader.read().files}
    assert len(parsed) == 3
    assert samples(spool.render(changed["ledger"].families))[("agentwatch_a", ())] == 2


def test_the_file_count_per_scrape_is_bounded_expected_ones_first(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for index in range(10):
        (tmp_path / f"f{index}.prom").write_text(f"agentwatch_f{index} 1\n")
    spool.write(tmp_path, "zeta", 15, lambda: [_gauge("agentwatch_zeta", 1)])
    collector = SpoolCollector(tmp_path, expected=["zeta"])
    collector.reader.max_files = 3
    for second in range(3):
        found = samples(collector.body(now=1000.0 + second).decode())
    assert found[("agentwatch_zeta", ())] == 1  # the expected sentinel is always read
    assert found[("agentwatch_f0", ())] == 1 and found[("agentwatch_f1", ())] == 1
    assert ("agentwatch_f2", ()) not in found
    assert found[("agentwatch_exporter_spool_files_skipped", ())] == 8
    assert len([r for r in caplog.records if "8 spool files left unread" in r.message]) == 1


def test_the_bytes_read_per_scrape_are_bounded(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.prom").write_text(f"agentwatch_{name} 1\n" + "# pad\n" * 100)
    size = (tmp_path / "a.prom").stat().st_size
    reader = spool.SpoolReader(tmp_path, total_bytes=2 * size)
    listing = reader.read()
    assert [f.sentinel for f in listing.files] == ["a", "b"]
    assert listing.skipped == 1
    # A file that could never fit is that file's error, not a skip.
    (tmp_path / "0big.prom").write_text("agentwatch_big 1\n" + "# pad\n" * 400)
    listing = reader.read()
    [big] = [f for f in listing.files if f.sentinel == "0big"]
    assert (big.reason, big.error) == ("too_large", f"larger than the cap of {2 * size} bytes")
    assert [f.sentinel for f in listing.files if f.error is None] == ["a", "b"]


def test_a_file_name_that_is_not_utf8_is_a_safe_label(tmp_path: Path) -> None:
    weird = os.fsdecode(b"we\xffird\r")
    (tmp_path / f"{weird}.prom").write_text("agentwatch_w 1\n")
    body = SpoolCollector(tmp_path).body().decode()
    assert samples(body)[("agentwatch_sentinel_up", (("sentinel", "we\\udcffird\\x0d"),))] == 1
    assert promtool_problems(body) == ""


def test_the_body_is_rendered_once_per_spool_change_and_time_bucket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool.write(tmp_path, "alpha", 15, lambda: [_gauge("agentwatch_alpha", 1)])
    renders: list[int] = []
    original = collector_module._encode
    monkeypatch.setattr(collector_module, "_encode", lambda *a: renders.append(1) or original(*a))
    collector = SpoolCollector(tmp_path)
    now = 5000.0
    first = collector.body(now=now)
    assert all(collector.body(now=now + BODY_BUCKET / 2) is first for _ in range(50))
    assert len(renders) == 1
    spool.write(tmp_path, "alpha", 15, lambda: [_gauge("agentwatch_alpha", 2)])
    assert samples(collector.body(now=now).decode())[("agentwatch_alpha", ())] == 2
    assert len(renders) == 2
    collector.body(now=now + BODY_BUCKET)  # the staleness and self-metrics move on
    assert len(renders) == 3
    openmetrics = collector.body(openmetrics=True, now=now + BODY_BUCKET)
    assert openmetrics.endswith(b"# EOF\n") and len(renders) == 4


def test_a_spool_file_error_is_logged_once_per_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    path = tmp_path / "x.prom"
    collector = SpoolCollector(tmp_path)
    for version in range(4):  # rewritten broken, four times: one line
        path.write_text(f"broken{{ {version}\n")
        os.utime(path, (1000 + version, 1000 + version))
        collector.snapshot()
    path.write_bytes(b'agentwatch_x{k="\xff"} 1\n')  # another reason: one more line
    collector.snapshot()
    spool.write(tmp_path, "x", 15, lambda: [_gauge("agentwatch_x", 1)])
    collector.snapshot()
    lines = [r.message for r in caplog.records if "x.prom" in r.message]
    assert lines == [
        "spool file x.prom left out of the scrape: line 1: not valid exposition text",
        "spool file x.prom left out of the scrape: line 1: not valid UTF-8",
        "spool file x.prom is readable again",
    ]
    assert collector.reader.rejections == {"malformed": 4, "bad_utf8": 1}
