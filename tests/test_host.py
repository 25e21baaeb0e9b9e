"""Host saturation figures from a fake /proc, and from the real one."""

from __future__ import annotations

from pathlib import Path

from agentwatch.sentinels.resources import host

MEMINFO = "MemTotal:       16384000 kB\nMemFree:  100 kB\nMemAvailable:    4096000 kB\n"


def _fake_proc(tmp_path: Path, loadavg: str, meminfo: str = MEMINFO) -> Path:
    (tmp_path / "loadavg").write_text(loadavg)
    (tmp_path / "meminfo").write_text(meminfo)
    return tmp_path


def test_reads_load_and_memory_in_bytes(tmp_path: Path) -> None:
    found = host.read(_fake_proc(tmp_path, "2.50 1.25 0.75 3/412 9999\n"))
    assert found is not None
    assert found.load == (2.5, 1.25, 0.75)
    assert found.memory_total == 16384000 * 1024
    assert found.memory_available == 4096000 * 1024


def test_unreadable_or_malformed_proc_exports_nothing(tmp_path: Path) -> None:
    assert host.read(tmp_path / "missing") is None
    assert host.read(_fake_proc(tmp_path, "garbage\n")) is None
    assert host.read(_fake_proc(tmp_path, "1 1 1 1/1 1\n", "MemTotal: 5 kB\n")) is None
    assert list(host.families(None)) == []


def test_real_proc_is_sane() -> None:
    found = host.read()
    assert found is not None and found.cpus >= 1
    assert 0 < found.memory_available <= found.memory_total
    names = {family.name for family in host.families(found)}
    assert names == {
        "agentwatch_host_load_average",
        "agentwatch_host_cpus",
        "agentwatch_host_memory_total_bytes",
        "agentwatch_host_memory_available_bytes",
    }
