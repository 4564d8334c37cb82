"""CPU-time probes: process CPU time, thread CPU time, and a timer for one block of code.

Thread CPU time (``CLOCK_THREAD_CPUTIME_ID``) is what seal/open timings use: it excludes the
time other threads (the paho network loop, the sampler) spend on the CPU while the block runs.
Process CPU time (user + system, all threads) is what the 10 Hz sampler records.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TypeVar

from iotsecbench.measure.clock import now_ns

__all__ = ["BlockTimer", "BlockTiming", "process_cpu_ns", "thread_cpu_ns", "time_call"]

T = TypeVar("T")


def process_cpu_ns() -> int:
    """User + system CPU time of this process (all threads), in nanoseconds."""
    return time.process_time_ns()


# User + system CPU time of the calling thread, in nanoseconds: the function itself, not a
# wrapper (read twice per block by a saturating sender; see measure/clock.now_ns).
thread_cpu_ns = time.thread_time_ns


@dataclass(frozen=True)
class BlockTiming:
    """Cost of one timed block."""

    cpu_ns: int  # CPU time of the calling thread spent inside the block
    wall_ns: int  # monotonic wall-clock time from entry to exit
    start_ns: int  # monotonic timestamp at entry (measure.clock.now_ns)

    def __post_init__(self) -> None:
        if self.cpu_ns < 0 or self.wall_ns < 0:
            raise ValueError(
                f"BlockTiming: negative duration (cpu_ns={self.cpu_ns}, wall_ns={self.wall_ns})"
            )


class BlockTimer:
    """Context manager timing a block in thread CPU ns and wall ns.

    ``with BlockTimer() as timer: ...`` then ``timer.timing`` is a :class:`BlockTiming`.
    The timing is also set when the block raises, so a failed operation still has a cost.
    """

    def __init__(self) -> None:
        self._start_wall_ns = 0
        self._start_cpu_ns = 0
        self._timing: BlockTiming | None = None

    def __enter__(self) -> BlockTimer:
        # Wall clock read first and CPU clock last, so the CPU window sits inside the wall one.
        self._start_wall_ns = now_ns()
        self._start_cpu_ns = thread_cpu_ns()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        end_cpu_ns = thread_cpu_ns()
        end_wall_ns = now_ns()
        self._timing = BlockTiming(
            cpu_ns=end_cpu_ns - self._start_cpu_ns,
            wall_ns=end_wall_ns - self._start_wall_ns,
            start_ns=self._start_wall_ns,
        )

    @property
    def timing(self) -> BlockTiming:
        """The block's timing; only available once the block has exited."""
        if self._timing is None:
            raise RuntimeError("BlockTimer.timing read before the timed block exited")
        return self._timing


def time_call(
    function: Callable[..., T], /, *args: object, **kwargs: object
) -> tuple[T, BlockTiming]:
    """Call ``function(*args, **kwargs)`` and return its result with its :class:`BlockTiming`."""
    with BlockTimer() as timer:
        result = function(*args, **kwargs)
    return result, timer.timing
