"""Holding SIGINT and SIGTERM back while results are being stored.

A signal's Python handler runs between any two bytecodes, and DuckDB turns a pending
KeyboardInterrupt into "Query interrupted" in the middle of a transaction — so a Ctrl-C just
after a run's ``record.json`` was written could leave that run out of the database, and one
just after ``results.duckdb`` was created could leave a database without tables.
``SignalGuard`` replaces both handlers with one that only notes the signal; the measurement
itself stays interruptible inside ``interruptible()``. A noted signal is raised as
``KeyboardInterrupt`` at the next safe point: entering ``interruptible()``, or leaving the guard.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType, TracebackType
from typing import Any

from iotsecbench import signals


class SignalGuard:
    """Defers SIGINT/SIGTERM to safe points; a no-op outside the main thread."""

    def __init__(self) -> None:
        self.pending: int | None = None
        self._interruptible = False
        self._previous: dict[int, Any] = {}

    def _note(self, signum: int, frame: FrameType | None) -> None:
        if self._interruptible:
            signals.note()  # see iotsecbench.signals: raised where C code may swallow it
            raise KeyboardInterrupt
        self.pending = signum  # deferred, not lost: raised at the next safe point

    def __enter__(self) -> SignalGuard:
        try:
            for signum in signals.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._note)
        except ValueError:
            pass  # not the main thread: Python delivers no signals here anyway
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
        if self.pending is not None and exc_type is None:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """A signal now interrupts at once, as it would without the guard."""
        if self.pending is not None:
            raise KeyboardInterrupt
        self._interruptible = True
        try:
            yield
        finally:
            self._interruptible = False
