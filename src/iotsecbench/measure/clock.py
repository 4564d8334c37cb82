"""The one clock every iotsecbench timestamp is read from.

``now_ns`` is ``time.monotonic_ns``, i.e. Linux ``CLOCK_MONOTONIC``. That clock is
system-wide: every process on the host reads the same counter, and network namespaces do not
virtualise it (only time namespaces could, and iotsecbench never creates one). So a timestamp
taken by the emitter and one taken by the receiver in another process, or in another network
namespace, are directly comparable, and one-way latency needs no clock synchronisation.
It is not wall-clock time: it does not jump with NTP steps and has an arbitrary origin (boot).
"""

from __future__ import annotations

import time

__all__ = ["now_ns"]


# The function itself, not a wrapper: a saturating sender reads it four times per block, and a
# Python call around it cost ~0.25 µs each (benchmarks/README.md, tcp transport).
now_ns = time.monotonic_ns
"""Current ``CLOCK_MONOTONIC`` time in integer nanoseconds (shared by all host processes)."""
