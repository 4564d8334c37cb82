"""``bench handshake --trace``: the ``iotst`` study's network-invariant handshake cost
(docs/iotst.md).

Each traced repetition is one connection of ``bench handshake`` with a scheduler trace
recorded around it (``measure.tracefs``): the client thread opens named groups through the
trace marker, the TLS library marks every handshake message, and ``analysis.iotst`` splits
the repetition's time into on-CPU time per group and off-CPU time waiting for the network,
runnable or other. This module adds what the method needs around the connections:

* the **markers' own cost** (``marker_cost_ns``): the thread CPU time of one marker write,
  measured with tracing on before the first repetition, subtracted per marker written;
* the **tracer's overhead**: every traced repetition has an untraced partner of the same
  configuration, in random order, and the difference of their mean connection CPU time is
  the overhead (reported, not subtracted: it lands in every task, not in one group);
* **retransmissions**: a repetition with a retransmission on its connection (trace or
  TCP_INFO) is flagged and, unless kept, discarded, as the study does;
* the **device model**: the handshake's operations priced with a device profile at each
  clock and core count (``energy.profile``), labelled *modelled*.
"""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from iotsecbench.analysis.iotst import TracedRepetition
from iotsecbench.energy.handshake import assumptions, handshake_table, unpriced
from iotsecbench.measure.cpu import thread_cpu_ns
from iotsecbench.measure.tracefs import SchedTracer

if TYPE_CHECKING:
    from iotsecbench.bench.native import NativeClient

MARKER_CALIBRATION_WRITES = 2000
DEVICE_CLOCKS_MHZ = (80, 160, 240)  # the ESP32's CPU clocks (the study's three)
DEVICE_CORES = (1, 2)


def marker_cost_ns(
    tracer: SchedTracer, native: NativeClient | None = None, writes: int = MARKER_CALIBRATION_WRITES
) -> int:
    """Thread CPU time of one trace-marker write while tracing is on (the median of five
    batches), which each repetition pays once per marker; written by this thread, or by the
    ``native`` agent's connecting thread (which then writes the markers)."""
    batches = []
    tracer.start()
    try:
        if native is not None:
            return native.marker_cost_ns(writes)
        for _ in range(5):
            start = thread_cpu_ns()
            for _ in range(writes // 5):
                tracer.mark("iotsb calibration")
            batches.append((thread_cpu_ns() - start) / (writes // 5))
    finally:
        tracer.stop()
    return round(statistics.median(batches))


# EEVDF's default base slice (kernel/sched/fair.c, sysctl_sched_base_slice = 0.75 ms),
# scaled at boot by 1 + ilog2(min(CPUs, 8)) under the default SCHED_TUNABLESCALING_LOG.
DEFAULT_BASE_SLICE_S = 0.75e-3


def scheduler_slice() -> tuple[float, str]:
    """The scheduler's base time slice and where it came from: the kernel's own value
    (``base_slice_ns`` in debugfs) when readable, else the kernel's documented default for
    this CPU count (debugfs is often locked down, even for root)."""
    for path in ("/sys/kernel/debug/sched/base_slice_ns", "/proc/sys/kernel/sched_base_slice_ns"):
        with contextlib.suppress(OSError, ValueError), open(path) as handle:
            return int(handle.read().strip()) / 1e9, f"read from {path}"
    cpus = min(os.cpu_count() or 1, 8)
    factor = 1 + cpus.bit_length() - 1  # 1 + ilog2(cpus)
    return (
        DEFAULT_BASE_SLICE_S * factor,
        f"kernel default 0.75 ms x (1 + log2 {cpus} CPUs); the kernel's value is not readable",
    )


@dataclass
class TraceTally:
    """A configuration's traced repetitions, their untraced partners and what was dropped."""

    traces: list[TracedRepetition] = field(default_factory=list)
    untraced_cpu_ns: list[int] = field(default_factory=list)  # connect CPU, untraced partner
    traced_cpu_ns: list[int] = field(default_factory=list)  # connect CPU, traced (kept)
    retransmission_runs_discarded: int = 0
    retransmission_runs_kept: int = 0

    def summary(
        self, marker_cost: int, slice_: tuple[float, str], level_statistic: Any
    ) -> dict[str, Any]:
        """The per-profile trace fields of ``--json`` (seconds)."""
        traces = self.traces

        def stat(values: Sequence[float]) -> dict[str, float]:
            s = level_statistic(values)
            return {"mean": s.mean, "ci_low": s.ci_low, "ci_high": s.ci_high, "n": s.n,
                    "level": s.level}  # fmt: skip

        names: list[str] = []
        for trace in traces:
            names.extend(n for n in trace.groups if n not in names)
        groups = {
            name: statistics.fmean(t.group_seconds().get(name, 0.0) for t in traces)
            for name in names
        }
        states = {
            name: {
                state: statistics.fmean(
                    getattr(t.groups[name], f"{state}_ns") / 1e9 if name in t.groups else 0.0
                    for t in traces
                )
                for state in ("on_cpu", "network_wait", "runnable", "other")
            }
            for name in names
        }
        quantum = {
            name: max(t.groups[name].longest_run_ns / 1e9 for t in traces if name in t.groups)
            for name in names
        }
        cpus = sorted({cpu for t in traces for cpu in t.idle_fraction_per_cpu})
        idle: dict[str, float | None] = {}
        for cpu in cpus:
            known = [v for t in traces if (v := t.idle_fraction_per_cpu.get(cpu)) is not None]
            idle[str(cpu)] = statistics.fmean(known) if known else None
        invariant = [t.network_invariant_ns / 1e9 for t in traces]
        overhead = (
            statistics.fmean(self.traced_cpu_ns) - statistics.fmean(self.untraced_cpu_ns)
            if self.traced_cpu_ns and self.untraced_cpu_ns
            else float("nan")
        )
        untraced_mean = (
            statistics.fmean(self.untraced_cpu_ns) if self.untraced_cpu_ns else float("nan")
        )
        return {
            "network_invariant_cpu_s": stat(invariant),
            "with_network_wait_s": stat([t.wall_ns / 1e9 for t in traces]),
            "off_cpu_s": {
                "network_wait": stat([t.network_wait_ns / 1e9 for t in traces]),
                "runnable": stat([t.runnable_ns / 1e9 for t in traces]),
                "other": stat([t.other_ns / 1e9 for t in traces]),
            },
            "groups": groups,
            "group_states_s": states,
            "quantum_max_s": max(quantum.values(), default=0.0),
            "quantum_per_group_s": quantum,
            "scheduler_slice_s": slice_[0],
            "scheduler_slice_source": slice_[1],
            "idle_fraction_per_cpu": idle,
            "tracing_overhead_s": overhead / 1e9,
            "tracing_overhead_share": overhead / untraced_mean if untraced_mean else float("nan"),
            "marker_cost_s": marker_cost / 1e9,
            "retransmission_runs_discarded": self.retransmission_runs_discarded,
            "retransmission_runs_kept": self.retransmission_runs_kept,
            "packets_received_median": statistics.median([t.packets_received for t in traces])
            if traces
            else None,
            "ci_half_width_by_repetitions": ci_widths(invariant, level_statistic),
        }


def ci_widths(values: Sequence[float], level_statistic: Any) -> list[list[float]]:
    """``[[n, relative CI half-width], …]`` of the first n values, for n = 2 … len: how fast
    the interval closes (the study's repetitions-needed view)."""
    widths = []
    for n in range(2, len(values) + 1):
        relative = level_statistic(values[:n]).relative_half_width
        widths.append([n, relative])
    return widths


def device_model(
    operations: Sequence[tuple[str, int]],
    device: Any,
    clocks_mhz: Sequence[int] = DEVICE_CLOCKS_MHZ,
    cores: Sequence[int] = DEVICE_CORES,
) -> dict[str, Any]:
    """Modelled device seconds of the handshake's ``operations`` at each clock × core count,
    with the model's 90 % range: ``energy.handshake.handshake_table``, the code
    ``predict handshake`` prices a TLS profile with (the clock-scaled and fixed shares of
    each price, the per-handshake overhead, the extra-core slowdown)."""
    return {
        "label": f"modelled ({device.name})",
        "device": device.name,
        "reference_clock_mhz": device.cpu_clock_hz / 1e6,
        "operations": [list(op) for op in operations],
        "unpriced_operations": unpriced(device, operations),
        "assumptions": [
            "one handshake runs in one task: a second core does not shorten it",
            *assumptions(device, operations),
        ],
        "by_clock_and_cores": handshake_table(device, operations, clocks_mhz, cores),
    }


@contextlib.contextmanager
def traced(tracer: SchedTracer) -> Iterator[None]:
    """Record around one repetition; the markers go to the tracer's instance."""
    from iotsecbench.security.tls import set_trace_marker

    set_trace_marker(tracer.marker_fd)
    tracer.start()
    try:
        yield
    finally:
        tracer.stop()
        set_trace_marker(-1)
