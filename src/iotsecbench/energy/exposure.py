"""A run's activity summed over the run, and its modelled mean current as a function of the
profile's numbers — what the model's range is drawn with (``analysis.model_range``).

Over a whole run the energy model (``energy.model``) is nearly linear in its prices: the CPU
queue conserves busy time (work only moves between windows), so the run's mean CPU share is
its total busy time over its length; the radio's airtime is bytes over goodput plus
segments times the per-packet overhead. The run's mean current is then

    I = I_idle + I_core·min(B/T, 1)
          + (I_tx − I_idle)·min(A_tx/T, 1) + (I_rx − I_idle)·min(A_rx/T, 1)

with B the summed busy time of the logged operations, A the airtime and T the run's length.
It leaves out what the per-window model clips (a window's airtime above its length, work still
queued after the last sample): the range is drawn as this mean on each draw less this mean at
the profile's values, added to the run's stored mean, so the clipped part shifts nothing and
the stored figure stays the centre. ``Exposure.from_samples`` sums what ``model_current``
would see, with its rules for the first window and for counters that restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
from numpy.typing import ArrayLike, NDArray

from iotsecbench.energy.model import _deltas, _window_lengths_ns
from iotsecbench.energy.profile import DeviceProfile

__all__ = ["Exposure"]

Number = float | NDArray[np.float64]


@dataclass(frozen=True)
class Exposure:
    """One agent's activity over one run, summed."""

    duration_s: float  # the sample windows' total length
    tx_bytes: float
    rx_bytes: float
    tx_segments: float
    rx_segments: float
    # primitive → (calls, amount: bytes or operations), as logged
    operations: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # A device emitter's (``run --target``): the CPU time its counted instructions took at
    # the profile's CPI (instructions × CPI / clock), in place of the priced operations
    counted_busy_s: float | None = None

    @classmethod
    def from_samples(
        cls,
        t_ns: ArrayLike,
        tx_bytes: ArrayLike,
        rx_bytes: ArrayLike,
        tx_segments: ArrayLike,
        rx_segments: ArrayLike,
        operations: Mapping[str, tuple[int, int]],
        counted_cpu_fraction: ArrayLike | None = None,
    ) -> Exposure:
        """From one agent's samples (cumulative counters, as ``model_current`` takes them)
        and its operations summed per primitive; for a counted emitter, the CPU share of
        each window the counted model gave (``energy.model.counted_current``), whose time
        is the counted busy time (what a window clipped, still queued at the end, left out
        as for every run)."""
        times = np.asarray(t_ns, dtype=np.int64)
        size = times.size
        windows_s = _window_lengths_ns(times, None) * 1e-9
        counted = None
        if counted_cpu_fraction is not None:
            counted = float((np.asarray(counted_cpu_fraction, dtype=float) * windows_s).sum())
        return cls(
            duration_s=float(windows_s.sum()),
            tx_bytes=float(_deltas("tx_bytes", tx_bytes, size).sum()),
            rx_bytes=float(_deltas("rx_bytes", rx_bytes, size).sum()),
            tx_segments=float(_deltas("tx_segments", tx_segments, size).sum()),
            rx_segments=float(_deltas("rx_segments", rx_segments, size).sum()),
            operations=MappingProxyType(dict(operations)),
            counted_busy_s=counted,
        )

    def busy_seconds(self, profile: DeviceProfile, values: Mapping[str, Number]) -> Number:
        """The logged operations' summed device busy time (unpriced primitives cost nothing);
        a counted run's is its counted time, moved by the CPI alone (one count, one CPI)."""
        if self.counted_busy_s is not None:
            if "cpi" not in values:  # a profile without a CPI: the count's is held
                return self.counted_busy_s
            return self.counted_busy_s * values["cpi"] / profile.value("cpi")
        total: Number = 0.0
        for name, (calls, amount) in self.operations.items():
            cost = profile.primitives.get(name)
            if cost is None:
                continue
            if cost.kind == "bulk":
                total = total + (
                    amount * values[f"{name}.cycles_per_byte"] / profile.cpu_clock_hz
                    + calls * values[f"{name}.per_call"] * 1e-6
                )
            else:
                total = total + amount * values[f"{name}.per_operation"] * 1e-3
        return total

    def mean_current_ma(self, profile: DeviceProfile, values: Mapping[str, Number]) -> Number:
        """The run's mean modelled current (mA) with the profile's numbers ``values`` (by
        dotted name: the point values, or arrays of draws for the same arrays back)."""
        if self.duration_s <= 0:
            return values["idle_associated_current"] * 1.0
        cpu = np.minimum(self.busy_seconds(profile, values) / self.duration_s, 1.0)
        overhead_s = values["packet_overhead"] * 1e-3
        tx_air = self.tx_bytes * 8 / (values["tx_goodput"] * 1e6) + self.tx_segments * overhead_s
        rx_air = self.rx_bytes * 8 / (values["rx_goodput"] * 1e6) + self.rx_segments * overhead_s
        tx = np.minimum(tx_air / self.duration_s, 1.0)
        rx = np.minimum(rx_air / self.duration_s, 1.0)
        radio = tx + rx
        scale = np.where(radio > 1.0, 1.0 / np.maximum(radio, 1.0), 1.0)
        idle = values["idle_associated_current"]
        return (
            idle
            + values["core_extra_current"] * cpu
            + (values["tx_current"] - idle) * tx * scale
            + (values["rx_current"] - idle) * rx * scale
        )
