"""Free and total bytes of the filesystems agentwatch writes to (state and spool folders).

A full disk stops the ledger's commits and the sentinels' spool files without any other alert
saying why, so the exporter measures both filesystems on every scrape (os.statvfs is cheap). A
folder whose statvfs fails has no series that scrape (absent, never 0: a 0 would page as a full
disk); the failure is logged once per folder until it works again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

log = logging.getLogger("agentwatch.exporter")

StatVfs = Callable[[Path], os.statvfs_result]


class FilesystemGauges:
    """agentwatch_filesystem_avail_bytes and _size_bytes for each named folder."""

    def __init__(self, folders: Mapping[str, Path], statvfs: StatVfs = os.statvfs) -> None:
        self.folders = dict(folders)
        self._statvfs = statvfs
        self._failing: set[str] = set()

    def families(self) -> list[Metric]:
        avail = GaugeMetricFamily(
            "agentwatch_filesystem_avail_bytes",
            "Bytes still usable by agentwatch on the filesystem of its state or spool folder.",
            labels=["dir"],
        )
        size = GaugeMetricFamily(
            "agentwatch_filesystem_size_bytes",
            "Total size of the filesystem of agentwatch's state or spool folder.",
            labels=["dir"],
        )
        for name, folder in sorted(self.folders.items()):
            try:
                stat = self._statvfs(folder)
            except OSError as err:
                if name not in self._failing:
                    self._failing.add(name)
                    log.warning(
                        "cannot measure the %s filesystem (%s): %s; its series are left out",
                        name,
                        folder,
                        err.strerror or type(err).__name__,
                    )
                continue
            if name in self._failing:
                self._failing.discard(name)
                log.info("the %s filesystem is measured again", name)
            avail.add_metric([name], float(stat.f_bavail * stat.f_frsize))
            size.add_metric([name], float(stat.f_blocks * stat.f_frsize))
        return [avail, size]
