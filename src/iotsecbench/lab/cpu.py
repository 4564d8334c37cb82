"""The CPU a measured thread gets: how many cores (affinity) and what share of a CPU
(a cgroup v1 CPU bandwidth quota), so ``bench handshake`` can emulate a device with fewer
cores or a slower clock.

A quota is not a slower clock (docs/iotst.md): the thread runs at full speed for
``share × period`` of every ``period`` and waits the rest, runnable. Its CPU time stays what
it was while its wall time grows by about 1/share — which is what a lower clock does to
CPU-bound code, without the real clock's effect on memory latency or accelerators. The quota
is the kernel's minimum (1 ms) and the period 1 ms / share (3 ms for 1/3), the shortest that
gives the share, so a millisecond handshake is throttled many times instead of fitting in
one period's budget.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

CPU_CGROUP = Path("/sys/fs/cgroup/cpu")
QUOTA_US = 1000  # the smallest quota the kernel accepts


@dataclass(frozen=True)
class CpuPlacement:
    """``cores`` CPUs (None: as the process has) and ``share`` of each (1: no quota)."""

    cores: int | None = None
    share: Fraction = Fraction(1)

    @property
    def label(self) -> str:
        parts = []
        if self.cores is not None:
            parts.append(f"{self.cores} core{'s' if self.cores > 1 else ''}")
        if self.share != 1:
            parts.append(f"{self.share} CPU")
        return ", ".join(parts) or "unrestricted"


def cores_problem(cores: int) -> str | None:
    available = len(os.sched_getaffinity(0))
    if cores < 1 or cores > available:
        return f"--cores {cores}: this process may use {available} CPU(s)"
    return None


def quota_problem() -> str | None:
    """Why a CPU quota cannot be set here (one line), or None."""
    if os.geteuid() != 0:
        return "a CPU quota (--clock) needs root to create a cgroup"
    if not (CPU_CGROUP / "cpu.cfs_quota_us").exists():
        return f"no cgroup v1 CPU controller at {CPU_CGROUP} (cpu.cfs_quota_us)"
    return None


class CpuQuotas:
    """One cgroup per share under ``/sys/fs/cgroup/cpu/iotsb-<pid>``; a context manager that
    removes them. ``placed(placement)`` runs the calling thread — or every thread of another
    process, ``pid`` (the native agent) — under a placement."""

    def __init__(self) -> None:
        self.root = CPU_CGROUP / f"iotsb-{os.getpid()}"
        self._groups: dict[Fraction, Path] = {}

    def __enter__(self) -> CpuQuotas:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for path in self._groups.values():
            with contextlib.suppress(OSError):
                path.rmdir()
        with contextlib.suppress(OSError):
            self.root.rmdir()

    def _group(self, share: Fraction) -> Path:
        if share not in self._groups:
            problem = quota_problem()
            if problem is not None:
                raise RuntimeError(problem)
            self.root.mkdir(exist_ok=True)
            path = self.root / f"share-{share.numerator}-{share.denominator}"
            path.mkdir(exist_ok=True)
            (path / "cpu.cfs_period_us").write_text(str(round(QUOTA_US / share)))
            (path / "cpu.cfs_quota_us").write_text(str(QUOTA_US))
            self._groups[share] = path
        return self._groups[share]

    def throttled_ns(self, share: Fraction) -> int:
        """How long the kernel has held back the ``share`` group's tasks for lack of quota
        (cgroup v1 ``cpu.stat`` ``throttled_time``, ns); 0 without a group."""
        group = self._groups.get(share)
        if group is None:
            return 0
        for line in (group / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "throttled_time":
                return int(value)
        return 0

    @contextlib.contextmanager
    def placed(self, placement: CpuPlacement, pid: int | None = None) -> Iterator[None]:
        tids = (
            [threading.get_native_id()]
            if pid is None
            else [int(task) for task in os.listdir(f"/proc/{pid}/task")]
        )
        previous = os.sched_getaffinity(tids[0])
        if placement.cores is not None:
            for tid in tids:
                os.sched_setaffinity(tid, sorted(previous)[-placement.cores :])
        group = self._group(placement.share) if placement.share != 1 else None
        for tid in tids if group is not None else ():
            assert group is not None
            (group / "tasks").write_text(str(tid))  # one thread id per write (cgroup v1)
        try:
            yield
        finally:
            for tid in tids:
                if group is not None:
                    (CPU_CGROUP / "tasks").write_text(str(tid))
                os.sched_setaffinity(tid, previous)


@contextlib.contextmanager
def cpus_kept_awake() -> Iterator[str | None]:
    """Hold a PM QoS request of zero wake-up latency (``/dev/cpu_dma_latency``) so idle
    CPUs poll instead of halting; yields None, or why it could not (then nothing changes).

    Why: measured on the lab VM, the same certificate-chain check took ~1.8x the CPU time
    after the client slept a few milliseconds for a shaped network than after a sub-
    millisecond loopback wait — a halted vCPU comes back slower (caches, the hypervisor's
    scheduling). Polling idle keeps the cost of waiting out of the cost of computing, which
    is what the iotst method compares (docs/iotst.md). It costs idle CPU, only while held.
    """
    try:
        fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY | os.O_CLOEXEC)
    except OSError as error:
        yield f"cannot hold /dev/cpu_dma_latency ({error.strerror})"
        return
    try:
        os.write(fd, (0).to_bytes(4, "little", signed=True))
        yield None
    finally:
        os.close(fd)  # closing the file ends the request
