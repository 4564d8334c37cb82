"""A handshake's device time: its operations priced on a device profile at a CPU clock and a
number of active cores (``predict handshake``, the ``iotst`` preset's device model, and the
calibration from measured handshake times all use this one function).

For each operation the profile's price at its own clock (``cpu_clock``) splits by the
primitive's ``clock_scaled_share`` into a part that scales with the CPU clock and a part
that does not (an accelerator on a bus clock that stays put when the CPU slows):

    t(f, n) = (Σ_op price_op · (s_op · f_ref/f + 1 − s_op) + overhead · f_ref/f)
              · (1 + slowdown · (n − 1))

``overhead`` is the profile's ``handshake_overhead`` (the per-handshake work no priced
operation covers: parsing, the transcript hash and key schedule beyond what is priced, the
record layer; it runs on the CPU, so it scales), ``slowdown`` its ``extra_core_slowdown``
(a handshake runs in one task, so another active core cannot shorten it, but contention for
the bus, caches and flash — and the network task running there — can lengthen it). A
primitive without a share scales entirely, a profile without the two parameters has none of
either; both are listed as assumptions. The function takes any mapping of the profile's
numbers by dotted name — the point values or the arrays of ``energy.uncertainty`` — so the
same code gives the figure and its draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from iotsecbench.energy.profile import DeviceProfile
from iotsecbench.energy.uncertainty import (
    DEFAULT_DRAWS,
    MODEL_LEVEL,
    central_range,
    draw_profile,
    point_values,
)

__all__ = [
    "HandshakeTime",
    "assumptions",
    "handshake_table",
    "handshake_time",
    "operation_parts",
    "operation_seconds",
    "unpriced",
]

Number = float | NDArray[np.float64]


@dataclass(frozen=True)
class HandshakeTime:
    """Device seconds of one handshake at one clock and core count (floats, or arrays of
    draws)."""

    seconds: Number
    clock_scaled_s: Number  # before the core factor
    fixed_s: Number


def operation_seconds(
    profile: DeviceProfile, values: Mapping[str, Number], name: str, amount: int
) -> Number:
    """Device seconds of one logged operation at the profile's clock (``values``: the
    numbers by dotted name)."""
    cost = profile.primitives[name]
    if cost.kind == "bulk":
        return (
            amount * values[f"{name}.cycles_per_byte"] / profile.cpu_clock_hz
            + values[f"{name}.per_call"] * 1e-6
        )
    return amount * values[f"{name}.per_operation"] * 1e-3


def operation_parts(
    profile: DeviceProfile,
    values: Mapping[str, Number],
    name: str,
    amount: int,
    clock_mhz: float,
) -> tuple[Number, Number]:
    """One operation's device seconds at ``clock_mhz``: (the part that scales with the CPU
    clock, the part on a fixed clock), split by the primitive's clock-scaled share."""
    cost = operation_seconds(profile, values, name, amount)
    share = values.get(f"{name}.clock_scaled_share", 1.0)
    ratio = profile.cpu_clock_hz / (clock_mhz * 1e6)
    return cost * share * ratio, cost * (1 - share)


def handshake_time(
    profile: DeviceProfile,
    values: Mapping[str, Number],
    operations: Sequence[tuple[str, int]],
    clock_mhz: float,
    cores: int,
) -> HandshakeTime:
    """Device time of ``operations`` (primitive, amount) at ``clock_mhz`` with ``cores``
    active; operations the profile does not price cost nothing (``unpriced`` lists them)."""
    ratio = profile.cpu_clock_hz / (clock_mhz * 1e6)
    scaled: Number = 0.0
    fixed: Number = 0.0
    for name, amount in operations:
        if name not in profile.primitives:
            continue
        part_scaled, part_fixed = operation_parts(profile, values, name, amount, clock_mhz)
        scaled = scaled + part_scaled
        fixed = fixed + part_fixed
    scaled = scaled + values.get("handshake_overhead", 0.0) * 1e-3 * ratio
    factor = 1 + values.get("extra_core_slowdown", 0.0) * (cores - 1)
    return HandshakeTime((scaled + fixed) * factor, scaled, fixed)


def unpriced(profile: DeviceProfile, operations: Sequence[tuple[str, int]]) -> list[str]:
    """The operations' primitives the profile has no price for (they cost nothing)."""
    return sorted({name for name, _ in operations if name not in profile.primitives})


def assumptions(profile: DeviceProfile, operations: Sequence[tuple[str, int]]) -> list[str]:
    """What the figure assumes because the profile does not say it."""
    found = [
        f"{name}: clock_scaled_share not given, all of it assumed to scale with the clock"
        for name in sorted({n for n, _ in operations if n in profile.primitives})
        if profile.primitives[name].clock_scaled_share is None
    ]
    if "extra_core_slowdown" not in profile.parameters:
        found.append("no extra_core_slowdown: a second active core changes nothing")
    if "handshake_overhead" not in profile.parameters:
        found.append("no handshake_overhead: only the priced operations cost time")
    return found


def as_array(value: Number, draws: int) -> NDArray[np.float64]:
    """A figure as an array of ``draws`` (a float repeated)."""
    return np.broadcast_to(np.asarray(value, dtype=float), (draws,))


def handshake_table(
    profile: DeviceProfile,
    operations: Sequence[tuple[str, int]],
    clocks_mhz: Sequence[float],
    cores: Sequence[int],
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
) -> dict[str, dict[str, object]]:
    """The handshake's modelled device seconds at every clock × core count, keyed
    ``"{mhz}MHz x{cores}"``: the figure at the profile's values and its model range (the
    central 90 % over ``draws`` draws of the profile, the same draws for every entry so two
    entries' difference keeps its correlation)."""
    point = point_values(profile)
    drawn = draw_profile(profile, draws, seed)
    table: dict[str, dict[str, object]] = {}
    for mhz in clocks_mhz:
        for count in cores:
            at_point = handshake_time(profile, point, operations, mhz, count)
            on_draws = handshake_time(profile, drawn.values, operations, mhz, count)
            low, high = central_range(as_array(on_draws.seconds, draws))
            table[f"{mhz:g}MHz x{count}"] = {
                "seconds": float(at_point.seconds),
                "clock_scaled_s": float(at_point.clock_scaled_s),
                "fixed_s": float(at_point.fixed_s),
                "clock_mhz": mhz,
                "cores": count,
                "model_range": {
                    "low": low,
                    "high": high,
                    "level": MODEL_LEVEL,
                    "method": drawn.method,
                },
            }
    return table
