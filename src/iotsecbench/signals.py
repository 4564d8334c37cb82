"""The signals that stop iotsecbench (SIGINT, SIGTERM), and a count of those received.

Their Python handlers raise ``KeyboardInterrupt`` (``cli.app``), or note the signal until a
safe point (``runner.interrupts.SignalGuard``). A handler runs where C code calls back into
Python, and DuckDB does while a query runs: there the ``KeyboardInterrupt`` may become an
error of DuckDB's own ("Query interrupted", even "std::bad_cast") or, rarely, vanish (DuckDB
2.0.1, in a loop of queries each interrupted by a timer: about 1 of 300 signals was lost, so
that a Ctrl-C during a report could let it run to the end and exit 0). Every handler counts
the signal here first; ``kept`` turns a signal that arrived during a call into the
``KeyboardInterrupt`` it was meant to be, whatever the call made of it.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)

_received = [0]  # signals counted by the handlers, ever (a handler may run at any moment)


def note() -> None:
    """Count one signal (every handler of ``SIGNALS`` calls this first)."""
    _received[0] += 1


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """A signal counted while the body ran ends it as ``KeyboardInterrupt``, even when the
    body (C code calling back into Python) swallowed the exception or raised another."""
    before = _received[0]
    try:
        yield
    except KeyboardInterrupt:
        raise
    except BaseException:
        if _received[0] != before:
            raise KeyboardInterrupt from None
        raise
    if _received[0] != before:
        raise KeyboardInterrupt
