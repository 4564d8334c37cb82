"""Activity → current: one agent's 10 Hz activity mapped onto a device profile (esp32-activity-v1).

Inputs are the agent's samples (window end times and *cumulative* TCP counters) and its
operation log. For each window i, ending at ``t_ns[i]`` and lasting ``Δt_i``:

* CPU: each operation costs device busy time from the profile (bulk: bytes·cycles_per_byte /
  f_cpu + per_call; count: operations·per_operation). Work enters a single-server queue at the
  operation's timestamp and is served continuously while the queue is non-empty, so at most
  Δt_i per window: a 266 ms ECDH keygen spreads over three or four windows. Work still queued
  after the last sample is reported in ``cpu_backlog_s``, not dropped.
* Radio: airtime = Δbytes·8 / goodput + Δsegments·packet_overhead per direction, as a
  fraction of Δt_i, each capped at 1 and scaled down together so tx + rx ≤ 1; the airtime cut
  by the caps is reported in ``clipped_airtime_s``.
* Current: I = I_idle_associated + I_core_extra·cpu + (I_tx − I_idle)·tx + (I_rx − I_idle)·rx
  (datasheet TX/RX currents are whole-chip figures that already include the idle chip).

The full derivation, every parameter's source and the model's limits are in
docs/energy-model.md. Results are always labelled "modelled" and never mixed with measured
(power-meter) currents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from iotsecbench.energy.profile import DeviceProfile
from iotsecbench.errors import DataError

__all__ = [
    "ACCELERATORS",
    "MODEL_VERSION",
    "Accelerator",
    "Activity",
    "ModelledCurrent",
    "Operation",
    "accelerated_busy_s",
    "accelerators_for",
    "counted_current",
    "counted_kind",
    "device_paced_energy_j",
    "model_current",
]

MODEL_VERSION = "esp32-activity-v1"
MODELLED = "modelled"
# First-window length when it cannot be inferred from the spacing of the samples (one sample).
DEFAULT_WINDOW_NS = 100_000_000


@dataclass(frozen=True)
class Operation:
    """One cryptographic or protocol operation an agent performed (vocabulary: internals.md)."""

    t_ns: int  # measure.clock.now_ns() when the operation started
    primitive: str  # e.g. "aes-gcm", "ecdh-p256-keygen", "mqtt-packet"
    amount: int  # bytes for bulk primitives, number of operations for count primitives

    def __post_init__(self) -> None:
        if not isinstance(self.primitive, str) or not self.primitive:
            raise ValueError(
                f"Operation.primitive must be a non-empty string, got {self.primitive!r}"
            )
        if not isinstance(self.amount, int) or self.amount < 0:
            raise ValueError(f"Operation.amount must be a non-negative int, got {self.amount!r}")
        if not isinstance(self.t_ns, int):
            raise ValueError(f"Operation.t_ns must be an int, got {self.t_ns!r}")


@dataclass(frozen=True)
class Activity:
    """One agent's activity as the model takes it: the sample windows' end times, the
    cumulative TCP counters at each, and the operation log."""

    t_ns: NDArray[np.int64]
    tx_bytes: NDArray[np.int64]
    rx_bytes: NDArray[np.int64]
    tx_segments: NDArray[np.int64]
    rx_segments: NDArray[np.int64]
    operations: tuple[Operation, ...]

    @classmethod
    def from_samples(
        cls, samples: Mapping[str, ArrayLike], operations: Iterable[Operation]
    ) -> Activity:
        """From the ``samples`` table's columns (a frame, or a mapping of column → values;
        sorted by time): ``t_ns`` and the counters of ``SAMPLE_COLUMNS``, a missing value as
        0 (a counter the agent could not read)."""

        def column(name: str) -> NDArray[np.int64]:
            return np.nan_to_num(np.asarray(samples[name], dtype=float)).astype(np.int64)

        return cls(
            t_ns=np.asarray(samples["t_ns"], dtype=np.int64),
            **{field_name: column(name) for field_name, name in SAMPLE_COLUMNS.items()},
            operations=tuple(operations),
        )

    def current(self, profile: DeviceProfile) -> ModelledCurrent:
        return model_current(
            profile,
            self.t_ns,
            self.tx_bytes,
            self.rx_bytes,
            self.tx_segments,
            self.rx_segments,
            self.operations,
        )


# The samples table's column for each counter of ``Activity``.
SAMPLE_COLUMNS = {
    "tx_bytes": "tcp_bytes_sent",
    "rx_bytes": "tcp_bytes_received",
    "tx_segments": "tcp_segs_out",
    "rx_segments": "tcp_segs_in",
}


@dataclass(frozen=True)
class ModelledCurrent:
    """Modelled device current of one agent, one value per sample window."""

    t_ns: NDArray[np.int64]  # window end times (the samples' t_ns)
    current_ma: NDArray[np.float64]  # mean modelled current over each window
    cpu_fraction: NDArray[np.float64]  # share of the window one device core is busy, 0..1
    tx_fraction: NDArray[np.float64]  # share of the window the radio transmits, 0..1
    rx_fraction: NDArray[np.float64]  # share of the window the radio receives, tx + rx ≤ 1
    unmodelled_primitives: tuple[str, ...]  # logged primitives the profile does not price
    model_version: str
    window_s: NDArray[np.float64]  # length of each window
    idle_component_ma: NDArray[np.float64]  # I_idle_associated (constant)
    cpu_component_ma: NDArray[np.float64]  # I_core_extra · cpu_fraction
    tx_component_ma: NDArray[np.float64]  # (I_tx − I_idle) · tx_fraction
    rx_component_ma: NDArray[np.float64]  # (I_rx − I_idle) · rx_fraction
    cpu_backlog_s: float  # device CPU work still queued after the last window
    clipped_airtime_s: float  # airtime removed by the fraction caps
    profile_name: str
    label: str = field(default=MODELLED)

    def __post_init__(self) -> None:
        if self.label != MODELLED:
            raise ValueError(f"ModelledCurrent.label must be {MODELLED!r}, got {self.label!r}")

    def columns(self) -> dict[str, NDArray[np.generic]]:
        """The per-window arrays by name (for a DataFrame or store rows)."""
        return {
            "t_ns": self.t_ns,
            "window_s": self.window_s,
            "current_ma": self.current_ma,
            "cpu_fraction": self.cpu_fraction,
            "tx_fraction": self.tx_fraction,
            "rx_fraction": self.rx_fraction,
            "idle_component_ma": self.idle_component_ma,
            "cpu_component_ma": self.cpu_component_ma,
            "tx_component_ma": self.tx_component_ma,
            "rx_component_ma": self.rx_component_ma,
        }


def _window_lengths_ns(t_ns: NDArray[np.int64], first_window_ns: int | None) -> NDArray[np.int64]:
    if t_ns.size == 0:
        return np.zeros(0, dtype=np.int64)
    gaps = np.diff(t_ns)
    if np.any(gaps <= 0):
        index = int(np.argmax(gaps <= 0)) + 1
        raise DataError(f"sample times must increase strictly; t_ns[{index}] does not")
    if first_window_ns is None:
        # The first window has no previous sample; assume the series' typical spacing.
        first_window_ns = int(np.median(gaps)) if gaps.size else DEFAULT_WINDOW_NS
    if first_window_ns <= 0:
        raise DataError(f"first_window_ns must be positive, got {first_window_ns}")
    return np.concatenate(([first_window_ns], gaps)).astype(np.int64)


def _deltas(name: str, cumulative: ArrayLike, size: int) -> NDArray[np.float64]:
    values = np.asarray(cumulative, dtype=np.float64)
    if values.shape != (size,):
        raise DataError(f"{name} has shape {values.shape}, expected ({size},) like t_ns")
    if np.any(values < 0) or not np.all(np.isfinite(values)):
        raise DataError(f"{name} must be finite and non-negative")
    # First window: the counters as they are (they count from connect). A drop means the
    # counter restarted (new connection): that window's activity is the new value itself.
    deltas = np.diff(values, prepend=0.0)
    return np.where(deltas < 0, values, deltas)


def _cpu_busy_s(
    profile: DeviceProfile,
    t_ns: NDArray[np.int64],
    window_ns: NDArray[np.int64],
    operations: Iterable[Operation],
) -> tuple[NDArray[np.float64], float, tuple[str, ...]]:
    """Serve the operations' device busy time through a single-server fluid queue."""
    priced: list[tuple[int, float]] = []
    unmodelled: set[str] = set()
    for operation in operations:
        cost = profile.primitives.get(operation.primitive)
        if cost is None:
            unmodelled.add(operation.primitive)
            continue
        priced.append((operation.t_ns, cost.busy_seconds(operation.amount, profile.cpu_clock_hz)))
    priced.sort(key=lambda item: item[0])

    busy_s = np.zeros(t_ns.size, dtype=np.float64)
    backlog_s = 0.0
    next_op = 0
    if t_ns.size:
        cursor_ns = int(t_ns[0] - window_ns[0])
        for i, end_ns in enumerate(t_ns.tolist()):
            # Arrivals in this window (anything before the first window joins at its start).
            while next_op < len(priced) and priced[next_op][0] <= end_ns:
                arrival_ns = max(priced[next_op][0], cursor_ns)
                served_s = min(backlog_s, (arrival_ns - cursor_ns) * 1e-9)
                busy_s[i] += served_s
                backlog_s -= served_s
                cursor_ns = arrival_ns
                backlog_s += priced[next_op][1]
                next_op += 1
            served_s = min(backlog_s, (end_ns - cursor_ns) * 1e-9)
            busy_s[i] += served_s
            backlog_s -= served_s
            cursor_ns = end_ns
    # Operations after the last sample could not be served in any window: report them.
    backlog_s += sum(cost_s for _, cost_s in priced[next_op:])
    return busy_s, backlog_s, tuple(sorted(unmodelled))


def _airtime_s(
    profile: DeviceProfile,
    size: int,
    tx_bytes: ArrayLike,
    rx_bytes: ArrayLike,
    tx_segments: ArrayLike,
    rx_segments: ArrayLike,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The radio's airtime per window, sending and receiving: the bytes at the PHY's goodput
    plus a fixed cost per packet (the cumulative TCP counters' growth in each window)."""
    tx_air_s = (
        _deltas("tx_bytes", tx_bytes, size) * 8.0 / profile.tx_goodput_bits_per_s
        + _deltas("tx_segments", tx_segments, size) * profile.packet_overhead_s
    )
    rx_air_s = (
        _deltas("rx_bytes", rx_bytes, size) * 8.0 / profile.rx_goodput_bits_per_s
        + _deltas("rx_segments", rx_segments, size) * profile.packet_overhead_s
    )
    return tx_air_s, rx_air_s


def model_current(
    profile: DeviceProfile,
    t_ns: ArrayLike,
    tx_bytes: ArrayLike,
    rx_bytes: ArrayLike,
    tx_segments: ArrayLike,
    rx_segments: ArrayLike,
    operations: Iterable[Operation],
    *,
    first_window_ns: int | None = None,
    cpu_busy_s: ArrayLike | None = None,
) -> ModelledCurrent:
    """Model the device current of one agent, one value per sample window.

    Parameters
    ----------
    profile
        Device profile (``load_profile``).
    t_ns
        Sample times (``Sample.t_ns``), strictly increasing; window i ends at ``t_ns[i]``.
    tx_bytes, rx_bytes, tx_segments, rx_segments
        Cumulative TCP counters at each sample (``tcp_bytes_sent``, ``tcp_bytes_received``,
        ``tcp_segs_out``, ``tcp_segs_in``).
    operations
        The agent's operation log; unknown primitives cost nothing and are listed in
        ``unmodelled_primitives``.
    first_window_ns
        Length of the first window (it has no previous sample); default: the median spacing.
    cpu_busy_s
        The device's CPU time per window, when it was counted (``counted_current``): used
        instead of the operations' prices.

    Returns
    -------
    ModelledCurrent
        Per-window current, fractions and components, labelled "modelled".
    """
    times_ns = np.asarray(t_ns, dtype=np.int64)
    if times_ns.ndim != 1:
        raise DataError(f"t_ns must be one-dimensional, got shape {times_ns.shape}")
    window_ns = _window_lengths_ns(times_ns, first_window_ns)
    window_s = window_ns * 1e-9
    size = times_ns.size

    if cpu_busy_s is None:
        busy_s, backlog_s, unmodelled = _cpu_busy_s(profile, times_ns, window_ns, operations)
    else:
        busy_s, backlog_s, unmodelled = np.asarray(cpu_busy_s, dtype=np.float64), 0.0, ()
    # Float rounding in the queue can leave busy a hair above the window: clamp.
    cpu_fraction = np.clip(busy_s / window_s, 0.0, 1.0) if size else np.zeros(0)

    tx_air_s, rx_air_s = _airtime_s(profile, size, tx_bytes, rx_bytes, tx_segments, rx_segments)
    tx_fraction = np.minimum(tx_air_s / window_s, 1.0) if size else np.zeros(0)
    rx_fraction = np.minimum(rx_air_s / window_s, 1.0) if size else np.zeros(0)
    radio_fraction = tx_fraction + rx_fraction
    # One radio: it cannot send and receive at once, so share the window proportionally.
    scale = np.where(radio_fraction > 1.0, 1.0 / np.maximum(radio_fraction, 1.0), 1.0)
    tx_fraction = tx_fraction * scale
    rx_fraction = rx_fraction * scale
    clipped_airtime_s = float(np.sum(tx_air_s + rx_air_s - (tx_fraction + rx_fraction) * window_s))

    idle_ma = profile.idle_associated_current_ma
    idle_component = np.full(size, idle_ma, dtype=np.float64)
    cpu_component = profile.core_extra_current_ma * cpu_fraction
    tx_component = (profile.tx_current_ma - idle_ma) * tx_fraction
    rx_component = (profile.rx_current_ma - idle_ma) * rx_fraction
    return ModelledCurrent(
        t_ns=times_ns,
        current_ma=idle_component + cpu_component + tx_component + rx_component,
        cpu_fraction=cpu_fraction.astype(np.float64),
        tx_fraction=tx_fraction.astype(np.float64),
        rx_fraction=rx_fraction.astype(np.float64),
        unmodelled_primitives=unmodelled,
        model_version=MODEL_VERSION,
        window_s=window_s.astype(np.float64),
        idle_component_ma=idle_component,
        cpu_component_ma=cpu_component.astype(np.float64),
        tx_component_ma=tx_component.astype(np.float64),
        rx_component_ma=rx_component.astype(np.float64),
        cpu_backlog_s=float(backlog_s),
        clipped_airtime_s=max(clipped_airtime_s, 0.0),
        profile_name=profile.name,
    )


@dataclass(frozen=True)
class Accelerator:
    """A crypto accelerator a device profile prices: the counted instructions of one primitive
    family (the firmware's ledger: docs/device-client.md) run ``speedup`` times faster on it."""

    family: str  # the ledger's family ("aes")
    speedup: float  # software time / accelerated time of that family's work
    label: str  # what the figure says: "AES on the accelerator"


# family -> (the profile parameter of its speed-up, the same for AES-GCM, what it is called).
# AES-GCM has a speed-up of its own: the accelerator computes its AES blocks, its GHASH stays in
# software (the ESP32-C3 has no GCM engine), and both are inside the ledger's aes family.
ACCELERATORS = {"aes": ("aes_accelerator_speedup", "aes_gcm_accelerator_speedup", "AES")}


def accelerators_for(profile: DeviceProfile, gcm: bool) -> tuple[Accelerator, ...]:
    """The accelerators ``profile`` prices, for a run whose AES is AES-GCM (``gcm``) or not."""
    found = []
    for family, (blocks, with_gcm, name) in ACCELERATORS.items():
        parameter = with_gcm if gcm else blocks
        if parameter in profile.parameters:
            what = f"{name}-GCM's blocks" if gcm else name
            found.append(
                Accelerator(family, profile.value(parameter), f"{what} on the accelerator")
            )
    return tuple(found)


def counted_kind(target: str, accelerators: Iterable[Accelerator] = ()) -> str:
    """The label of a figure counted on ``target``: "counted on rv32imc" (software only) or
    "counted on rv32imc, AES on the accelerator" — one never stands for the other."""
    return ", ".join([f"counted on {target}", *(a.label for a in accelerators)])


def accelerated_busy_s(
    instructions: ArrayLike,
    family_instructions: Mapping[str, ArrayLike],
    accelerators: Iterable[Accelerator],
    cpi: float,
    clock_hz: float,
) -> NDArray[np.float64]:
    """CPU seconds per window from cumulative counts, with each accelerated family's
    instructions taking 1/speedup of their software time: busy = (ΔI − Σ ΔI_f + Σ ΔI_f /
    s_f) × CPI / clock. The accelerator's time is booked as the core's (it waits on the
    engine, at the core's extra current); without accelerators, ΔI × CPI / clock."""
    size = np.asarray(instructions).size
    cycles = _deltas("instructions", instructions, size)
    for accelerator in accelerators:
        if accelerator.speedup <= 0:
            raise DataError(f"{accelerator.label}: speed-up must be > 0")
        family = _deltas(accelerator.family, family_instructions[accelerator.family], size)
        cycles = cycles - family + family / accelerator.speedup
    return cycles * cpi / clock_hz


def counted_current(
    profile: DeviceProfile,
    t_ns: ArrayLike,
    instructions: ArrayLike,
    tx_bytes: ArrayLike,
    rx_bytes: ArrayLike,
    tx_segments: ArrayLike,
    rx_segments: ArrayLike,
    *,
    cpi: float,
    family_instructions: Mapping[str, ArrayLike] | None = None,
    accelerators: Iterable[Accelerator] = (),
) -> ModelledCurrent:
    """The model with the device's own instructions as its CPU input (a run whose emitter is
    the device client on a virtual MCU, docs/device-client.md): window i's CPU time is the
    client instructions counted in it x ``cpi`` / the profile's clock — no operation is
    priced. ``instructions`` are cumulative at each sample, like the TCP counters. The radio
    and the currents are the model's as for every agent; the figure is labelled *counted on
    <target>* by whoever shows it (a count, turned into time by a CPI and a clock).

    Software only unless ``accelerators`` are given (with the cumulative ``family_instructions``
    they price): then ``accelerated_busy_s``, and the figure says so (its label names them:
    "counted on rv32imc, AES on the accelerator"), never passing for the software one."""
    times_ns = np.asarray(t_ns, dtype=np.int64)
    accelerators = tuple(accelerators)
    busy_s = accelerated_busy_s(
        instructions, family_instructions or {}, accelerators, cpi, profile.cpu_clock_hz
    )
    return model_current(
        profile, times_ns, tx_bytes, rx_bytes, tx_segments, rx_segments, (), cpu_busy_s=busy_s
    )


def device_paced_energy_j(
    profile: DeviceProfile,
    instructions: ArrayLike,
    tx_bytes: ArrayLike,
    rx_bytes: ArrayLike,
    tx_segments: ArrayLike,
    rx_segments: ArrayLike,
    *,
    cpi: float,
) -> float:
    """The energy of a counted run replayed at the device's own pace (J): for a run whose
    windows are not the device's — a saturating device emitter sends as fast as QEMU emulates,
    several times a device's clock in its compute — each window lasts what its work takes on
    the device, the longer of its CPU time (the client instructions counted in it x ``cpi`` /
    the profile's clock) and its radio's airtime (the model's, from the TCP counters: CPU and
    radio work at once), and draws the model's currents for that long: the idle current with
    the radio associated, the core's extra while computing, the radio's while sending and
    receiving. Waiting for the network is left out (a saturating sender does not wait; an
    echoing one's wait is QEMU's UART and this host's loopback, not a radio link's): a busy
    device's energy, the figure per byte the block-sizes study divides. The arguments are
    cumulative, one value per sample, like ``counted_current``'s."""
    size = np.asarray(instructions).size
    busy_s = accelerated_busy_s(instructions, {}, (), cpi, profile.cpu_clock_hz)
    tx_air_s, rx_air_s = _airtime_s(profile, size, tx_bytes, rx_bytes, tx_segments, rx_segments)
    window_s = np.maximum(busy_s, tx_air_s + rx_air_s)  # one radio: its two directions add
    idle_ma = profile.idle_associated_current_ma
    charge_mas = (
        idle_ma * window_s
        + profile.core_extra_current_ma * busy_s
        + (profile.tx_current_ma - idle_ma) * tx_air_s
        + (profile.rx_current_ma - idle_ma) * rx_air_s
    )
    return float(np.sum(charge_mas)) * 1e-3 * profile.supply_voltage_v
