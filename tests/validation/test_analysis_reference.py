"""Numbers agree with statsmodels and arch on fixed data (the analysis delegates to them)."""

import sys
from pathlib import Path

import numpy as np
import pytest
from arch.bootstrap import MovingBlockBootstrap, StationaryBootstrap, optimal_block_length
from statsmodels.stats.diagnostic import acorr_ljungbox
from statsmodels.tsa.stattools import acf, adfuller, kpss

from iotsecbench.analysis.bootstrap import block_bootstrap_means, choose_block_length
from iotsecbench.analysis.timeseries import correlogram, kpss_test, ljung_box, stationarity

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data" / "analysis"))
from generate import ar1

FIXED = ar1(600, 0.7, 2.0, np.random.default_rng(20260101)) + 100.0


def test_acf_and_kc_match_statsmodels():
    gram = correlogram(FIXED, 60)
    expected = acf(FIXED, nlags=60, fft=True, result_object=True).acf
    np.testing.assert_allclose(gram.acf, expected, rtol=0, atol=1e-12)
    band = 1.959963984540054 / np.sqrt(600)
    first_inside = int(np.nonzero(np.abs(expected[1:]) < band)[0][0] + 1)
    assert gram.k_c == first_inside and gram.white_noise_band == pytest.approx(band)


def test_ljung_box_adf_kpss_match_statsmodels():
    ours = ljung_box(FIXED, (10, 20))
    theirs = acorr_ljungbox(FIXED, lags=[10, 20], return_df=True)
    np.testing.assert_allclose([t.statistic for t in ours], theirs["lb_stat"], rtol=1e-12)
    result = stationarity(FIXED)
    adf = adfuller(FIXED, autolag="AIC", result_object=True)
    assert result.adf.statistic == pytest.approx(adf.statistic)
    assert result.adf.pvalue == pytest.approx(adf.pvalue)
    with _nothing():
        kp = kpss(FIXED, regression="c", nlags="auto", result_object=True)
    assert kpss_test(FIXED).statistic == pytest.approx(kp.statistic)
    assert result.verdict in ("stationary", "non-stationary", "inconclusive")


class _nothing:
    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


def test_unit_root_is_not_called_stationary():
    walk = np.cumsum(np.random.default_rng(0).normal(size=600))
    assert stationarity(walk).verdict == "non-stationary"


@pytest.mark.parametrize("sampler", [MovingBlockBootstrap, StationaryBootstrap])
def test_single_run_replicates_equal_arch_apply(sampler):
    method = "moving" if sampler is MovingBlockBootstrap else "stationary"
    ours = block_bootstrap_means([FIXED], 20, method, 300, seed=99)
    theirs = sampler(20, FIXED, seed=99).apply(np.mean, 300).ravel()
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


def test_percentile_interval_equals_arch_conf_int():
    from iotsecbench.analysis.bootstrap import percentile_interval

    ours = percentile_interval(block_bootstrap_means([FIXED], 20, "moving", 500, seed=7))
    theirs = MovingBlockBootstrap(20, FIXED, seed=7).conf_int(np.mean, 500, method="percentile")
    assert ours.low == pytest.approx(theirs[0, 0]) and ours.high == pytest.approx(theirs[1, 0])


def test_auto_block_length_is_politis_white_from_arch():
    choice = choose_block_length([FIXED], "auto", "moving")
    assert choice.estimates[0] == pytest.approx(optimal_block_length(FIXED)["circular"].iloc[0])
    assert choice.block_length == int(np.ceil(choice.estimates[0]))
