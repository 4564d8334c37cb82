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
