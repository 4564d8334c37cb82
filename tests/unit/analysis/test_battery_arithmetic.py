"""Battery-life and duty-cycle formulas (docs/device-facts.md §0) against hand computations."""

from __future__ import annotations

import numpy as np
import pytest

from iotsecbench.analysis.battery import (
    battery_current_ma,
    battery_life_hours,
    cumulative_energy_j,
    duty_cycle_current,
)


def test_battery_life_without_self_discharge() -> None:
    # 2000 mAh · 0.85 = 1700 mAh at 10 mA → 170 h.
    assert battery_life_hours(2000, 10, 0.85, 0.0) == pytest.approx(170.0)


def test_battery_life_with_self_discharge() -> None:
    # C_eff = 1000 · 0.85 = 850 mAh; I_sd = 850 · 0.02 / 730.485 = 0.0232722 mA;
    # t = 850 / (10 + 0.0232722) = 84.8026 h.
    assert battery_life_hours(1000, 10, 0.85, 2.0) == pytest.approx(84.8026, rel=1e-6)
    # Default usable fraction 0.85 and self-discharge 2 %/month give the same.
    assert battery_life_hours(1000, 10) == pytest.approx(84.8026, rel=1e-6)


def test_battery_life_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        battery_life_hours(0, 10)
    with pytest.raises(ValueError):
        battery_life_hours(1000, 10, usable_fraction=1.5)
    assert battery_life_hours(1000, 0, self_discharge_pct_per_month=0) == float("inf")


def test_duty_cycle_current() -> None:
    # 1 % at 100 mA, 99 % at 10 µA: 1.0 + 0.0099 = 1.0099 mA.
    assert duty_cycle_current(0.01, 100.0, 0.01) == pytest.approx(1.0099)
    assert duty_cycle_current(np.array([0.0, 1.0]), 100.0, 0.01) == pytest.approx([0.01, 100.0])
    with pytest.raises(ValueError):
        duty_cycle_current(1.2, 100.0, 0.01)


def test_regulator_and_energy() -> None:
    # 60 mA at 3.3 V from a 3.7 V cell through a 90 % regulator: 198 / 3.33 = 59.459 mA.
    assert battery_current_ma(60, 3.3, 3.7, 0.9) == pytest.approx(59.4594595)
    # 100 mA at 3.3 V for ten 0.1 s windows: 0.33 W · 1 s = 0.33 J.
    assert cumulative_energy_j(np.full(10, 100.0), 0.1, 3.3)[-1] == pytest.approx(0.33)


def test_battery_life_of_an_array_of_currents_is_the_formula_per_current() -> None:
    currents = np.array([0.0, 10.0, 20.0])
    hours = battery_life_hours(1000, currents, 0.85, 0.0)
    assert hours == pytest.approx([np.inf, 85.0, 42.5])
    with pytest.raises(ValueError):
        battery_life_hours(1000, np.array([1.0, -0.1]))
