"""Battery-life and duty-cycle arithmetic (DEVICE-FACTS §0), pure functions on floats or arrays.

Formulas (AESTECHNO battery-life estimator FAQ, https://www.aestechno.com/en/tools/battery-life/;
regulator: https://codingace.net/electrical/digikey_battery_life.html):

* effective capacity  C_eff = C_rated · η_usable
* self-discharge as a current  I_sd = C_eff · (sd % / 100) / 730.485 h  (730.485 h = mean month)
* life  t[h] = C_eff / (I_avg + I_sd)
* duty cycle  I_avg = d · I_active + (1 − d) · I_sleep
* regulator  I_batt = I_load · V_load / (V_batt · η_reg)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "HOURS_PER_MONTH",
    "battery_current_ma",
    "battery_life_hours",
    "cumulative_energy_j",
    "duty_cycle_current",
]

HOURS_PER_MONTH = 730.485  # 365.2425 days · 24 h / 12, as in the AESTECHNO estimator
# Default self-discharge: lithium cells lose 1–3 %/month (AESTECHNO FAQ); 2 % is the midpoint.
DEFAULT_SELF_DISCHARGE_PCT_PER_MONTH = 2.0
# Default usable fraction of rated capacity: AESTECHNO suggests 80–90 % is realistic.
DEFAULT_USABLE_FRACTION = 0.85


def battery_life_hours(
    capacity_mah: float,
    average_current_ma: float,
    usable_fraction: float = DEFAULT_USABLE_FRACTION,
    self_discharge_pct_per_month: float = DEFAULT_SELF_DISCHARGE_PCT_PER_MONTH,
) -> float:
    """Hours a battery lasts at a constant average current, self-discharge included."""
    if capacity_mah <= 0:
        raise ValueError(f"capacity_mah must be > 0, got {capacity_mah}")
    if not 0 < usable_fraction <= 1:
        raise ValueError(f"usable_fraction must be in (0, 1], got {usable_fraction}")
    if average_current_ma < 0 or self_discharge_pct_per_month < 0:
        raise ValueError("average_current_ma and self_discharge_pct_per_month must be >= 0")
    effective_mah = capacity_mah * usable_fraction
    self_discharge_ma = effective_mah * (self_discharge_pct_per_month / 100.0) / HOURS_PER_MONTH
    total_ma = average_current_ma + self_discharge_ma
    if total_ma == 0:
        return float("inf")
    return effective_mah / total_ma


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
    """Running energy in joules: Σ V·I_k·Δt_k (DEVICE-FACTS §0), I in mA."""
    current = np.asarray(current_ma, dtype=np.float64)
    durations = np.broadcast_to(np.asarray(dt_s, dtype=np.float64), current.shape)
    return np.cumsum(voltage_v * current * 1e-3 * durations)
