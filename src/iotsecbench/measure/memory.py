"""Memory probes: current and peak resident set size of this process, and the resident
memory of another (the embedded broker, runner/broker_watch.py)."""

from __future__ import annotations

import os
import resource
import sys

__all__ = ["peak_rss_bytes", "process_rss_bytes", "rss_bytes"]

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def process_rss_bytes(pid: int | str) -> int | None:
    """Resident set size of process ``pid`` ("self": this one), in bytes, or None once it
    is gone (or without ``/proc``).

    Reads ``/proc/PID/statm`` (second field = resident pages): one small read, cheap enough
    for 10 Hz sampling.
    """
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_BYTES
    except (OSError, IndexError, ValueError):
        return None


def rss_bytes() -> int:
    """Current resident set size of this process, in bytes (the agents' 10 Hz sampler).
    Falls back to psutil where ``/proc`` is not available."""
    resident = process_rss_bytes("self")
    if resident is not None:
        return resident
    import psutil  # imported lazily: only needed off Linux

    return int(psutil.Process().memory_info().rss)


def peak_rss_bytes() -> int:
    """Peak resident set size of this process's own address space, in bytes.

    Linux: ``VmHWM`` from ``/proc/self/status``. Not ``getrusage().ru_maxrss``: the kernel
    carries ``maxrss`` across fork and exec, so a small agent started by a large runner would
    report the runner's peak (observed: ~190 MiB for a ~40 MiB agent). Elsewhere
    ``ru_maxrss`` is the best there is (KiB on Linux, bytes on macOS).
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if sys.platform == "darwin":
        return int(max_rss)
    return int(max_rss) * 1024
