"""One Student-t interval (analysis.describe.t_half_width): the benchmark's per-configuration
statistic and the report's display bands agree with scipy's own t.interval."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from scipy import stats

from iotsecbench.analysis.describe import mean_t_interval
from iotsecbench.bench.handshake import Statistic

VALUES = [1.0, 2.5, 3.7, 4.1, 9.0]


def test_the_benchmarks_interval_is_scipys() -> None:
    mean, sd = statistics.fmean(VALUES), statistics.stdev(VALUES)
    low, high = stats.t.interval(0.95, len(VALUES) - 1, loc=mean, scale=sd / math.sqrt(5))
    found = Statistic.of(VALUES)
    assert (found.ci_low, found.ci_high) == pytest.approx((low, high), rel=1e-12)
    assert math.isinf(Statistic.of([1.0]).ci_high)  # one value: no interval


def test_the_reports_band_is_the_same_interval() -> None:
    column = np.array([[v] for v in VALUES])
    mean, low, high = mean_t_interval(column)
    found = Statistic.of(VALUES)
    assert (mean[0], low[0], high[0]) == pytest.approx((found.mean, found.ci_low, found.ci_high))
