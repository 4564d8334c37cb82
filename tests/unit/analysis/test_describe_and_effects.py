import math

import numpy as np
import pandas as pd
import pytest

from iotsecbench.analysis.battery import (
    HOURS_PER_MONTH,
    BatteryParameters,
    battery_life_hours,
    duty_cycle_current,
    project_battery,
)
from iotsecbench.analysis.describe import (
    coefficient_of_variation,
    cumulative_mah,
    describe,
    mode_of,
    per_minute_mean,
    run_energy_mah,
    segment_cv,
    to_one_hertz,
)
from iotsecbench.analysis.effects import cohens_d, effect_label
from iotsecbench.analysis.model_range import DrawnValues


def test_describe_known_values():
    d = describe([1.0, 2.0, 2.0, 3.0, 4.0], mode_resolution=1.0)
    assert d.n == 5 and d.mean == pytest.approx(2.4)
    assert d.sd == pytest.approx(np.std([1, 2, 2, 3, 4], ddof=1))
    assert (d.median, d.mode, d.p25, d.p75, d.min, d.max) == (2.0, 2.0, 2.0, 3.0, 1.0, 4.0)
    assert d.cv == pytest.approx(d.sd / 2.4)


def test_mode_rounds_to_resolution():
    assert mode_of([10.01, 10.04, 10.52, 9.98], 0.1) == pytest.approx(10.0)


def test_one_hertz_is_mean_of_samples_in_each_second():
    frame = pd.DataFrame(
        {
            "configuration": "plain",
            "device": "emitter",
            "run": 1,
            "time_s": np.arange(20) / 10.0,
            "current_ma": np.arange(20, dtype=float),
        }
    )
    out = to_one_hertz(frame)
    assert out["time_s"].tolist() == [0, 1]
    assert out["current_ma"].tolist() == [4.5, 14.5]


def test_energy_formula_matches_device_facts():
    # docs/device-facts.md §0: one 10 Hz sample adds I·0.1/3600 mAh
    assert run_energy_mah([100.0] * 10, dt_s=0.1) == pytest.approx(100 * 1.0 / 3600)
    assert cumulative_mah([36.0, 36.0])[-1] == pytest.approx(0.02)


def test_cv_and_segments():
    assert math.isnan(coefficient_of_variation([1.0]))
    x = np.concatenate([np.full(10, 1.0), np.full(10, 3.0)])
    assert segment_cv(x, 2) == pytest.approx(np.std([1, 3], ddof=1) / 2)
    minutes = per_minute_mean(np.arange(120), np.r_[np.zeros(60), np.ones(60)])
    assert minutes.tolist() == [0.0, 1.0]


def test_cohens_d_pooled_sd_and_labels():
    a, b = np.array([2.0, 4.0, 6.0]), np.array([1.0, 3.0, 5.0])
    result = cohens_d(a, b)
    assert result.pooled_sd == pytest.approx(2.0)
    assert result.d == pytest.approx(0.5) and result.label == "medium"
    assert [effect_label(v) for v in (0.1, -0.3, 0.6, -1.0)] == [
        "negligible",
        "small",
        "medium",
        "large",
    ]


def test_battery_formulas():
    assert duty_cycle_current(0.1, 100.0, 0.01) == pytest.approx(10.009)
    hours = battery_life_hours(2000.0, 10.0, 0.85, 2.0)
    effective = 1700.0
    assert hours == pytest.approx(effective / (10.0 + effective * 0.02 / HOURS_PER_MONTH))
    projections = project_battery(
        {("plain", "emitter"): 100.0, ("tls1.2", "emitter"): 125.0},
        "plain",
        BatteryParameters(duty_cycles=(1.0,), self_discharge_percent_per_month=0.0),
    )
    by_config = {p.configuration: p for p in projections}
    assert by_config["tls1.2"].relative_to_baseline == pytest.approx(0.8)
    assert by_config["plain"].lifetime_hours == pytest.approx(17.0)
    with pytest.raises(ValueError):
        BatteryParameters(usable_fraction=1.5)


def test_battery_model_range_is_the_formula_on_every_draw_and_the_ratio_keeps_common_draws():
    """Life C_eff / I (no self-discharge, D = 1) on 1001 draws, so the 5th and 95th
    percentiles are single draws: the lifetime's range is the lifetime of the currents'
    range reversed. a draws 1.25 × b's current on every draw (a common price): the ratio of
    lifetimes is 0.8 on every draw — a point, where the ratio of the two separate ranges
    would be wide."""
    rng = np.random.default_rng(7)
    base = rng.uniform(80.0, 120.0, 1001)
    drawn = DrawnValues({("plain", "emitter"): base, ("tls1.2", "emitter"): 1.25 * base},
                        "test draws", 0.9)  # fmt: skip
    parameters = BatteryParameters(duty_cycles=(1.0,), self_discharge_percent_per_month=0.0)
    projections = project_battery(
        {("plain", "emitter"): 100.0, ("tls1.2", "emitter"): 125.0}, "plain", parameters, drawn
    )
    by_config = {p.configuration: p for p in projections}
    tls = by_config["tls1.2"]
    low_ma, high_ma = np.percentile(1.25 * base, [5, 95])
    assert tls.lifetime_days_model_range.low == pytest.approx(1700.0 / high_ma / 24)
    assert tls.lifetime_days_model_range.high == pytest.approx(1700.0 / low_ma / 24)
    assert tls.lifetime_days_model_range.method == "test draws"
    ratio = tls.relative_model_range
    assert (ratio.low, ratio.high) == pytest.approx((0.8, 0.8))
    own, plain = tls.lifetime_days_model_range, by_config["plain"].lifetime_days_model_range
    assert own.high / plain.low - own.low / plain.high > 0.4  # the separate ranges' ratio
    # without draws (a measured current) no range
    assert project_battery({("plain", "emitter"): 1.0}, "plain")[0].relative_model_range is None
