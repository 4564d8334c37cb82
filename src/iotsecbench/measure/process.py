"""CPU time of another process (the embedded broker) from ``/proc``, cheap enough for 10 Hz
(its resident memory: measure.memory.process_rss_bytes)."""

from __future__ import annotations

import os

_TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def process_cpu_ns(pid: int) -> int | None:
    """CPU time of every thread of ``pid`` so far (user + system), or None once it is gone.

    The sum of each thread's ``schedstat`` run time (nanoseconds, the scheduler's own
    accounting), where the kernel keeps it; else ``stat``'s utime + stime, in clock ticks
    (10 ms: a 100 ms window then reads 0, 10, 20 … % of a CPU)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
        total = 0
        for thread in threads:
            with open(f"/proc/{pid}/task/{thread}/schedstat", "rb") as schedstat:
                total += int(schedstat.read().split()[0])
        return total
    except FileNotFoundError:
        if not os.path.exists(f"/proc/{pid}"):
            return None
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # Fields after the command name (which may hold spaces): utime is the 12th.
            fields = stat.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * _TICK_NS
    except (OSError, ValueError, IndexError):
        return None
