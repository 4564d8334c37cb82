"""A current that never changes (a device held in one state) is analysed without a word of
numerical noise: stationary by definition, no autocorrelation (k_c = 1, not "outside the
band at every lag"), no Ljung-Box test — where statsmodels would divide 0 by 0 (issue 40)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from iotsecbench.analysis.timeseries import correlogram, ljung_box, stationarity


def test_a_constant_series_is_stationary_and_uncorrelated_without_warnings() -> None:
    values = np.full(120, 5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # RuntimeWarning 0/0, SingularMatrixWarning: failures
        gram = correlogram(values, nlags=60)
        boxes = ljung_box(values)
        verdict = stationarity(values)
    assert (gram.k_c, gram.k_c_censored) == (1, False)
    assert gram.acf[0] == 1.0 and all(math.isnan(v) for v in gram.acf[1:])
    assert len(gram.acf) == len(gram.pacf) == len(gram.lags) == 60
    assert boxes == []
    assert verdict.verdict == "stationary"
    assert verdict.adf.conclusion == "not tested: the series is constant"


def test_a_series_that_varies_is_still_tested() -> None:
    values = np.random.default_rng(1).normal(5.0, 0.1, 120)
    gram = correlogram(values, nlags=20)
    assert not math.isnan(gram.acf[1]) and gram.k_c >= 1
    assert len(ljung_box(values)) > 0
    assert not math.isnan(stationarity(values).adf.pvalue)
