"""Battery-life projection from measured (or modelled) average current.

Formulas from ``DEVICE-FACTS.md`` §0 (AESTECHNO battery-life estimator):
``t[h] = C_eff / (I_avg + I_sd)``, ``C_eff = C_rated·η_usable``,
``I_sd = C_eff·(sd%/100)/730.485 h`` (730.485 h = mean month); the duty-cycle model
``I_avg = D·I_active + (1−D)·I_sleep`` (the `stability` study).

References
----------
.. [1] AESTECHNO, Battery life estimator FAQ, https://www.aestechno.com/en/tools/battery-life/
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from iotsecbench.analysis.results import Record

HOURS_PER_MONTH = 730.485  # mean month (365.2425 d / 12 × 24 h)


@dataclass(frozen=True)
class BatteryParameters(Record):
    """Battery and duty-cycle assumptions."""

    capacity_mah: float = 2000.0  # rated capacity C_rated
    usable_fraction: float = 0.85  # η_usable (AESTECHNO suggests 0.80–0.90)
    self_discharge_percent_per_month: float = 2.0  # sd% (Li-ion ~2–3 %/month at 25 °C)
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


def duty_cycle_current(duty: float, active_ma: float, sleep_ma: float) -> float:
    """``I_avg = D·I_active + (1−D)·I_sleep`` in mA."""
    if not 0 <= duty <= 1:
        raise ValueError(f"duty cycle must lie in [0, 1], got {duty}")
    return duty * active_ma + (1.0 - duty) * sleep_ma


def battery_life_hours(
    average_current_ma: float,
    capacity_mah: float,
    usable_fraction: float = 0.85,
    self_discharge_percent_per_month: float = 0.0,
) -> float:
    """``C_eff / (I_avg + I_sd)`` in hours (DEVICE-FACTS §0)."""
    effective = capacity_mah * usable_fraction
    self_discharge_ma = effective * (self_discharge_percent_per_month / 100.0) / HOURS_PER_MONTH
    drain = average_current_ma + self_discharge_ma
    return float("inf") if drain <= 0 else effective / drain


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

    def summary(self) -> str:
        return (
            f"{self.configuration}/{self.device} D={self.duty_cycle:g}: "
            f"{self.lifetime_days:.1f} d (×{self.relative_to_baseline:.3f} vs baseline)"
        )


def project_battery(
    active_current_ma: Mapping[tuple[str, str], float],
    baseline: str,
    parameters: BatteryParameters | None = None,
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

    Returns
    -------
    list of BatteryProjection
    """
    parameters = parameters or BatteryParameters()
    projections = []
    for (configuration, device), current in sorted(active_current_ma.items()):
        for duty in parameters.duty_cycles:
            average = duty_cycle_current(duty, current, parameters.sleep_current_ma)
            hours = battery_life_hours(
                average,
                parameters.capacity_mah,
                parameters.usable_fraction,
                parameters.self_discharge_percent_per_month,
            )
            base_current = active_current_ma.get((baseline, device))
            relative = float("nan")
            if base_current is not None:
                base_hours = battery_life_hours(
                    duty_cycle_current(duty, base_current, parameters.sleep_current_ma),
                    parameters.capacity_mah,
                    parameters.usable_fraction,
                    parameters.self_discharge_percent_per_month,
                )
                relative = hours / base_hours
            projections.append(
                BatteryProjection(
                    configuration=configuration,
                    device=device,
                    duty_cycle=duty,
                    active_current_ma=float(current),
                    average_current_ma=average,
                    lifetime_hours=hours,
                    lifetime_days=hours / 24.0,
                    relative_to_baseline=relative,
                )
            )
    return projections


def active_current_from_energy(energy_mah: Sequence[float], duration_s: Sequence[float]) -> float:
    """Mean active current (mA) from per-run charge and durations: ``Σ E / (Σ T / 3600)``."""
    total_hours = sum(duration_s) / 3600.0
    return float(sum(energy_mah) / total_hours) if total_hours > 0 else float("nan")
