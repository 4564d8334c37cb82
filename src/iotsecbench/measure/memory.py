"""Memory probes: current and peak resident set size of this process."""

from __future__ import annotations

import os
import resource
import sys

__all__ = ["peak_rss_bytes", "rss_bytes"]

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int:
    """Current resident set size of this process, in bytes.

    Reads ``/proc/self/statm`` (second field = resident pages): one small read, cheap enough
    for the 10 Hz sampler. Falls back to psutil where ``/proc`` is not available.
    """
    try:
        with open("/proc/self/statm", "rb") as statm:
            resident_pages = int(statm.read().split()[1])
        return resident_pages * _PAGE_BYTES
    except (OSError, IndexError, ValueError):
        import psutil  # imported lazily: only needed off Linux

        return int(psutil.Process().memory_info().rss)


def peak_rss_bytes() -> int:
    """Peak resident set size of this process since it started, in bytes.

    ``getrusage().ru_maxrss`` is in KiB on Linux (bytes on macOS), converted here.
    """
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if sys.platform == "darwin":
        return int(max_rss)
    return int(max_rss) * 1024
