"""Battery and duty-cycle arithmetic, and the battery-life projection of an analysis.

The one home of these formulas (docs/device-facts.md §0, AESTECHNO battery-life estimator):

* effective capacity  ``C_eff = C_rated · η_usable``
* self-discharge as a current  ``I_sd = C_eff · (sd % / 100) / 730.485 h`` (mean month)
* life  ``t[h] = C_eff / (I_avg + I_sd)``
* duty cycle  ``I_avg = D · I_active + (1 − D) · I_sleep`` (the `stability` study)
* regulator  ``I_batt = I_load · V_load / (V_batt · η_reg)``
* energy  ``E = Σ V · I_k · Δt_k``

References
----------
.. [1] AESTECHNO, Battery life estimator FAQ, https://www.aestechno.com/en/tools/battery-life/
.. [2] Regulated loads: https://codingace.net/electrical/digikey_battery_life.html
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from iotsecbench.analysis.model_range import DrawnValues
from iotsecbench.analysis.results import Interval, Record

HOURS_PER_MONTH = 730.485  # 365.2425 days · 24 h / 12, as in the AESTECHNO estimator
# Default self-discharge: lithium cells lose 1–3 %/month (AESTECHNO FAQ); 2 % is the midpoint.
DEFAULT_SELF_DISCHARGE_PCT_PER_MONTH = 2.0
# Default usable fraction of rated capacity: AESTECHNO suggests 80–90 % is realistic.
DEFAULT_USABLE_FRACTION = 0.85


@dataclass(frozen=True)
class BatteryParameters(Record):
    """Battery and duty-cycle assumptions."""

    capacity_mah: float = 2000.0  # rated capacity C_rated
    usable_fraction: float = DEFAULT_USABLE_FRACTION  # η_usable
    self_discharge_percent_per_month: float = DEFAULT_SELF_DISCHARGE_PCT_PER_MONTH  # sd%
    sleep_current_ma: float = 0.01  # I_sleep: ESP32 deep sleep with RTC timer, 10 µA (datasheet)
    duty_cycles: tuple[float, ...] = (1.0, 0.1, 0.01)  # D values projected

    def __post_init__(self) -> None:
        if self.capacity_mah <= 0:
            raise ValueError("capacity_mah must be positive")
        if not 0 < self.usable_fraction <= 1:
            raise ValueError("usable_fraction must lie in (0, 1]")
        if self.self_discharge_percent_per_month < 0 or self.sleep_current_ma < 0:
            raise ValueError("self-discharge and sleep current must be ≥ 0")
        if any(not 0 < d <= 1 for d in self.duty_cycles):
            raise ValueError("duty cycles must lie in (0, 1]")


def battery_life_hours(
    capacity_mah: float,
    average_current_ma: ArrayLike,
    usable_fraction: float = DEFAULT_USABLE_FRACTION,
    self_discharge_pct_per_month: float = DEFAULT_SELF_DISCHARGE_PCT_PER_MONTH,
) -> ArrayLike:
    """Hours a battery lasts at a constant average current, self-discharge included (one
    current, or an array of them — a model range's draws — for an array back)."""
    if capacity_mah <= 0:
        raise ValueError(f"capacity_mah must be > 0, got {capacity_mah}")
    if not 0 < usable_fraction <= 1:
        raise ValueError(f"usable_fraction must be in (0, 1], got {usable_fraction}")
    current = np.asarray(average_current_ma, dtype=np.float64)
    if np.any(current < 0) or self_discharge_pct_per_month < 0:
        raise ValueError("average_current_ma and self_discharge_pct_per_month must be >= 0")
    effective_mah = capacity_mah * usable_fraction
    self_discharge_ma = effective_mah * (self_discharge_pct_per_month / 100.0) / HOURS_PER_MONTH
    total_ma = current + self_discharge_ma
    with np.errstate(divide="ignore"):  # no current at all: the battery lasts for ever
        hours = np.where(total_ma == 0, np.inf, effective_mah / total_ma)
    return float(hours) if hours.ndim == 0 else hours


def duty_cycle_current(d: ArrayLike, i_active: ArrayLike, i_sleep: ArrayLike) -> ArrayLike:
    """Average current when active a fraction ``d`` (0..1) of the time (unit of the inputs)."""
    duty = np.asarray(d, dtype=np.float64)
    if np.any((duty < 0) | (duty > 1)):
        raise ValueError(f"duty cycle d must be within [0, 1], got {d}")
    result = duty * np.asarray(i_active, dtype=np.float64) + (1.0 - duty) * np.asarray(
        i_sleep, dtype=np.float64
    )
    return float(result) if result.ndim == 0 else result


def battery_current_ma(
    load_current_ma: float,
    load_voltage_v: float,
    battery_voltage_v: float,
    regulator_efficiency: float = 1.0,
) -> float:
    """Current drawn from the battery by a regulated load: I_load·V_load / (V_batt·η_reg)."""
    if battery_voltage_v <= 0 or not 0 < regulator_efficiency <= 1:
        raise ValueError("battery_voltage_v must be > 0 and regulator_efficiency in (0, 1]")
    return load_current_ma * load_voltage_v / (battery_voltage_v * regulator_efficiency)


def cumulative_energy_j(current_ma: ArrayLike, dt_s: ArrayLike, voltage_v: float) -> np.ndarray:
    """Running energy in joules: Σ V·I_k·Δt_k, I in mA (``dt_s``: one or one per sample)."""
    current = np.asarray(current_ma, dtype=np.float64)
    durations = np.broadcast_to(np.asarray(dt_s, dtype=np.float64), current.shape)
    return np.cumsum(voltage_v * current * 1e-3 * durations)


@dataclass(frozen=True)
class BatteryProjection(Record):
    """Lifetime of one configuration on one device at one duty cycle."""

    configuration: str
    device: str
    duty_cycle: float  # D
    active_current_ma: float  # mean current while active = run charge / run duration
    average_current_ma: float  # I_avg of the duty-cycle model
    lifetime_hours: float
    lifetime_days: float
    relative_to_baseline: float  # lifetime / baseline lifetime (same device and D)
    # The model's range (analysis.model_range) of the lifetime in days and of the ratio to
    # the baseline's, both from the same draws of the profile (common random numbers: the
    # ratio's range keeps what the two configurations share); None: a measured current, or
    # no draws.
    lifetime_days_model_range: Interval | None = None
    relative_model_range: Interval | None = None

    def summary(self) -> str:
        model = self.lifetime_days_model_range
        ranged = f", model {model.low:.1f}–{model.high:.1f} d" if model is not None else ""
        return (
            f"{self.configuration}/{self.device} D={self.duty_cycle:g}: "
            f"{self.lifetime_days:.1f} d{ranged} (×{self.relative_to_baseline:.3f} vs baseline)"
        )


def project_battery(
    active_current_ma: Mapping[tuple[str, str], float],
    baseline: str,
    parameters: BatteryParameters | None = None,
    drawn: DrawnValues | None = None,
) -> list[BatteryProjection]:
    """Project battery life for every configuration × device × duty cycle.

    Parameters
    ----------
    active_current_ma : mapping
        (configuration, device) → average current while active, in mA. From cumulative
        energy: ``I = E_mAh / (T_s / 3600)``.
    baseline : str
        Configuration the relative lifetimes refer to.
    parameters : BatteryParameters, optional
    drawn : DrawnValues, optional
        The same active currents on every draw of the device profile
        (``model_range.ModelStage.active_current``): each projection of a key it holds gets
        the model's range of its lifetime, and of its ratio to the baseline draw by draw.
        The battery's own numbers (capacity, sleep current, self-discharge) are the user's
        and held.

    Returns
    -------
    list of BatteryProjection
    """
    parameters = parameters or BatteryParameters()

    def life(current: ArrayLike, duty: float) -> ArrayLike:
        return battery_life_hours(
            parameters.capacity_mah,
            duty_cycle_current(duty, current, parameters.sleep_current_ma),
            parameters.usable_fraction,
            parameters.self_discharge_percent_per_month,
        )

    draws = drawn.values if drawn is not None else {}
    projections = []
    for (configuration, device), current in sorted(active_current_ma.items()):
        base_current = active_current_ma.get((baseline, device))
        own_draws, base_draws = draws.get((configuration, device)), draws.get((baseline, device))
        for duty in parameters.duty_cycles:
            hours = life(current, duty)
            relative = hours / life(base_current, duty) if base_current is not None else np.nan
            days_range = relative_range = None
            if drawn is not None and own_draws is not None:
                # a draw's current is a mean of currents ≥ 0: below 0 only by rounding
                drawn_hours = life(np.maximum(own_draws, 0.0), duty)
                days_range = drawn.interval(drawn_hours / 24.0)
                if base_draws is not None:
                    base_hours = life(np.maximum(base_draws, 0.0), duty)
                    relative_range = drawn.interval(drawn_hours / base_hours)
            projections.append(
                BatteryProjection(
                    configuration=configuration,
                    device=device,
                    duty_cycle=duty,
                    active_current_ma=float(current),
                    average_current_ma=duty_cycle_current(
                        duty, current, parameters.sleep_current_ma
                    ),
                    lifetime_hours=float(hours),
                    lifetime_days=float(hours) / 24.0,
                    relative_to_baseline=float(relative),
                    lifetime_days_model_range=days_range,
                    relative_model_range=relative_range,
                )
            )
    return projections
