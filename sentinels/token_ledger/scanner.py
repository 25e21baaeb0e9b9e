"""Whether the ledger's C scanner (`_fastline.c`) is loaded, said out loud.

The scanner is an optional extension: built with the package where a compiler is found, and
each of its callers (records, reader, store, tailer) falls back to its reference in Python
when the import fails, with the same counts at about twice the CPU. That fallback is
silent by design, so this is where it is made visible: the sentinel serves
`agentwatch_ledger_fast_scanner_available` (1 loaded, 0 not), logs the reason once at the
start, and `AgentwatchLedgerFastScannerMissing` fires on the 0.
"""

from __future__ import annotations

import logging

from prometheus_client.metrics_core import GaugeMetricFamily

NAME = "agentwatch_ledger_fast_scanner_available"

try:  # the same import every caller makes: it fails for all of them or for none
    from agentwatch.sentinels.token_ledger import _fastline  # noqa: F401
except ImportError as error:
    AVAILABLE, WHY = False, str(error)
else:
    AVAILABLE, WHY = True, ""


def warn_if_missing(log: logging.Logger) -> None:
    """One line at the start when the ledger reads with the Python references."""
    if not AVAILABLE:
        log.warning(
            "the ledger's C scanner (_fastline) is not loaded (%s); reading transcripts with "
            "the Python references: the same counts, slower (reinstall with a C compiler)",
            WHY,
        )


def family() -> GaugeMetricFamily:
    return GaugeMetricFamily(
        NAME,
        "1 when the ledger's C scanner (_fastline) is loaded, 0 when it runs on the Python "
        "references.",
        value=1 if AVAILABLE else 0,
    )
