"""Two runs per configuration (the default experiment) must still give an interval."""

import numpy as np

from iotsecbench.analysis.bootstrap import iid_bootstrap_difference


def test_two_runs_give_the_widest_resolvable_interval_and_say_so() -> None:
    result = iid_bootstrap_difference([1.0, 1.2], [0.5, 0.6], reps=2000, seed=1)
    assert result.interval.level == 0.95
    assert "clamped" in result.interval.method
    replicates = result.replicates
    assert np.quantile(replicates, 0.0005) <= result.interval.low <= result.interval.high
    assert result.interval.high <= np.max(replicates)
    assert result.interval.low <= result.estimate <= result.interval.high


def test_jitter_of_a_near_constant_series_is_not_an_outlier() -> None:
    from iotsecbench.analysis.checks import outlier_mask

    flat = np.full(100, 34.986)
    flat[::10] += np.array([0.001, -0.002, 0.2, -0.18, 0.001, 0, 0, 0.002, 0, -0.001])
    assert not outlier_mask(flat).any()  # 0.2 mA on 35 mA: below the 1 % floor
    # Iglewicz & Hoaglin alone (MAD = 0 here, so the MeanAD stands in) flag that jitter:
    assert outlier_mask(flat, min_relative_deviation=0).sum() == 2
    flat[50] = 45.0  # a real glitch
    assert outlier_mask(flat)[50] and outlier_mask(flat).sum() == 1
