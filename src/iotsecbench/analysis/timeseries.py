"""Temporal diagnostics of a 1 Hz (or per-message) series.

ACF and PACF with 95 % bands, the effective correlation length ``k_c``, Ljung–Box Q at
several lags, ADF and KPSS reported together (opposite null hypotheses), and the
cross-correlation of emitter vs receiver on first differences — the `stability` study's
temporal diagnostics. All computations delegate to statsmodels.

References
----------
.. [1] Box, G. E. P., Jenkins, G. M., Reinsel, G. C., Ljung, G. M. (2015). *Time Series
   Analysis: Forecasting and Control*, 5th ed. Wiley (Bartlett bands, §2.1.6).
.. [2] Ljung, G. M., Box, G. E. P. (1978). On a measure of lack of fit in time series models.
   *Biometrika* 65(2), 297–303.
.. [3] Said, S. E., Dickey, D. A. (1984). Testing for unit roots in autoregressive-moving
   average models of unknown order. *Biometrika* 71(3), 599–607.
.. [4] Kwiatkowski, D., Phillips, P. C. B., Schmidt, P., Shin, Y. (1992). Testing the null
   hypothesis of stationarity against the alternative of a unit root. *J. Econometrics*
   54, 159–178.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats
from statsmodels.stats.diagnostic import acorr_ljungbox
from statsmodels.tools.sm_exceptions import InterpolationWarning
from statsmodels.tsa.stattools import acf, adfuller, ccf, kpss, pacf

from iotsecbench.analysis.results import Record, TestResult

DEFAULT_LJUNG_BOX_LAGS = (5, 10, 20, 40, 60)


@dataclass(frozen=True)
class Correlogram(Record):
    """ACF and PACF of one series with their 95 % bands."""

    lags: tuple[int, ...]  # 0..nlags
    acf: tuple[float, ...]  # autocorrelation at each lag (lag 0 = 1)
    acf_confint: tuple[tuple[float, float], ...]  # Bartlett interval around each ACF value
    pacf: tuple[float, ...]  # partial autocorrelation at each lag (lag 0 = 1)
    pacf_confint: tuple[tuple[float, float], ...]  # ±z/√n interval around each PACF value
    white_noise_band: float  # z_{1−α/2}/√n: |ACF| below it is compatible with white noise
    k_c: int  # effective correlation length: first lag ≥ 1 with |ACF| inside the band
    k_c_censored: bool  # True when no lag up to nlags was inside the band (k_c = nlags + 1)

    def summary(self) -> str:
        bound = ">" if self.k_c_censored else ""
        return (
            f"k_c={bound}{self.k_c} (band ±{self.white_noise_band:.3f}), ACF(1)={self.acf[1]:.3f}"
        )


def white_noise_band(n: int, alpha: float = 0.05) -> float:
    """Half-width ``z_{1−α/2}/√n`` of the white-noise band of a sample ACF."""
    return float(stats.norm.ppf(1.0 - alpha / 2.0) / np.sqrt(n))


def correlation_length(acf_values: np.ndarray | Sequence[float], band: float) -> tuple[int, bool]:
    """Effective correlation length ``k_c``: first lag ≥ 1 whose |ACF| is inside the band.

    Parameters
    ----------
    acf_values : array_like
        ACF from lag 0.
    band : float
        Half-width of the white-noise band.

    Returns
    -------
    (int, bool)
        ``k_c`` and whether it is censored (no lag inside the band: ``k_c = nlags + 1``).
    """
    values = np.asarray(acf_values, dtype=float)
    inside = np.nonzero(np.abs(values[1:]) < band)[0]
    if inside.size == 0:
        return int(values.size), True
    return int(inside[0] + 1), False


def correlogram(
    x: np.ndarray | Sequence[float], nlags: int = 60, alpha: float = 0.05
) -> Correlogram:
    """ACF (Bartlett bands) and PACF (Yule–Walker, ±z/√n bands) to ``nlags`` and ``k_c``.

    Parameters
    ----------
    x : array_like
        The series, in time order. ``nlags`` is reduced to ``len(x) // 2 - 1`` for short series
        (the PACF needs fewer lags than half the sample).
    nlags : int, default 60
        The study's maximum lag.
    alpha : float, default 0.05

    Returns
    -------
    Correlogram
    """
    series = np.asarray(x, dtype=float)
    n = series.size
    nlags = int(min(nlags, n // 2 - 1))
    if nlags < 1:
        raise ValueError(f"a correlogram needs at least 4 values, got {n}")
    band = white_noise_band(n, alpha)
    if _constant(series):
        # Nothing varies, so nothing is correlated: the ACF is 0/0 (undefined, stored as
        # NaN) and the Yule-Walker system singular; no lag carries memory, k_c = 1.
        undefined = (float("nan"),) * nlags
        interval = ((float("nan"), float("nan")),) * nlags
        return Correlogram(
            lags=tuple(range(nlags + 1)),
            acf=(1.0, *undefined),
            acf_confint=((1.0, 1.0), *interval),
            pacf=(1.0, *undefined),
            pacf_confint=((1.0, 1.0), *interval),
            white_noise_band=band,
            k_c=1,
            k_c_censored=False,
        )
    acf_result = acf(series, nlags=nlags, alpha=alpha, fft=True, result_object=True)
    pacf_result = pacf(series, nlags=nlags, alpha=alpha, result_object=True)
    k_c, censored = correlation_length(acf_result.acf, band)
    return Correlogram(
        lags=tuple(range(nlags + 1)),
        acf=tuple(float(v) for v in acf_result.acf),
        acf_confint=tuple((float(lo), float(hi)) for lo, hi in acf_result.confint),
        pacf=tuple(float(v) for v in pacf_result.pacf),
        pacf_confint=tuple((float(lo), float(hi)) for lo, hi in pacf_result.confint),
        white_noise_band=band,
        k_c=k_c,
        k_c_censored=censored,
    )


def ljung_box(
    x: np.ndarray | Sequence[float], lags: Sequence[int] = DEFAULT_LJUNG_BOX_LAGS
) -> list[TestResult]:
    """Ljung–Box Q at each lag in ``lags`` (lags ≥ n are dropped).

    H0: the autocorrelations up to the lag are all zero (white noise).
    """
    series = np.asarray(x, dtype=float)
    usable = [int(lag) for lag in lags if 0 < lag < series.size]
    if not usable or _constant(series):  # a constant series: no autocorrelation to test
        return []
    frame = acorr_ljungbox(series, lags=usable, return_df=True)
    return [
        TestResult(
            name="Ljung-Box",
            statistic=float(row.lb_stat),
            pvalue=float(row.lb_pvalue),
            null_hypothesis=f"no autocorrelation up to lag {lag}",
            alternative="autocorrelated",
            conclusion=(
                "autocorrelated: samples are not independent"
                if row.lb_pvalue < 0.05
                else "compatible with white noise"
            ),
            params={"lags": lag, "n": int(series.size)},
        )
        for lag, row in zip(usable, frame.itertuples(), strict=True)
    ]


def adf_test(
    x: np.ndarray | Sequence[float],
    regression: str = "c",
    maxlag: int | None = None,
    autolag: str | None = "AIC",
) -> TestResult:
    """Augmented Dickey–Fuller test. H0: unit root (non-stationary).

    The lag order is chosen by AIC up to ``maxlag`` (Schwert's ``12·(n/100)^¼`` when None);
    ``autolag=None`` uses ``maxlag`` lags directly (one regression instead of one per lag —
    the pipeline does that on long per-message series, where the search costs seconds).
    """
    series = np.asarray(x, dtype=float)
    # A near-constant series (e.g. a modelled current that only changes in the handshake)
    # makes the lag regressions rank-deficient: record that instead of printing warnings.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = adfuller(
            series, regression=regression, autolag=autolag, maxlag=maxlag, result_object=True
        )
    degenerate = any("rank-deficient" in str(w.message) for w in caught)
    rejected = result.pvalue < 0.05
    return TestResult(
        name="ADF",
        statistic=float(result.statistic),
        pvalue=float(result.pvalue),
        null_hypothesis="unit root (non-stationary)",
        alternative="stationary",
        conclusion="stationary (unit root rejected)" if rejected else "unit root not rejected",
        params={
            "regression": regression,
            "autolag": autolag,
            "lags": int(result.lags),
            "nobs": int(result.nobs),
            "critical_values": {k: float(v) for k, v in result.critical_values.items()},
            "rank_deficient": degenerate,
        },
    )


def kpss_test(x: np.ndarray | Sequence[float], regression: str = "c") -> TestResult:
    """KPSS test with Hobijn et al. automatic lags. H0: (level-)stationary.

    statsmodels interpolates the p-value in a table covering [0.01, 0.10]; outside it the
    reported value is the bound and ``params["pvalue_bound"]`` says which side.
    """
    series = np.asarray(x, dtype=float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InterpolationWarning)
        result = kpss(series, regression=regression, nlags="auto", result_object=True)
    bound = None
    if any(issubclass(w.category, InterpolationWarning) for w in caught):
        bound = "greater" if result.pvalue >= 0.1 else "smaller"
    rejected = result.pvalue < 0.05
    return TestResult(
        name="KPSS",
        statistic=float(result.statistic),
        pvalue=float(result.pvalue),
        null_hypothesis="level stationary" if regression == "c" else "trend stationary",
        alternative="unit root / non-stationary",
        conclusion="non-stationary (stationarity rejected)"
        if rejected
        else "stationarity not rejected",
        params={
            "regression": regression,
            "lags": int(result.lags),
            "pvalue_bound": bound,
            "critical_values": {k: float(v) for k, v in result.critical_values.items()},
        },
    )


def _constant(series: np.ndarray) -> bool:
    """No variation at all (a current that never changes): the tests and the ACF divide by
    the variance, so they are undefined on it."""
    return series.size > 0 and bool(np.ptp(series) == 0)


def _untested(name: str, null_hypothesis: str, alternative: str) -> TestResult:
    return TestResult(
        name=name,
        statistic=float("nan"),
        pvalue=float("nan"),
        null_hypothesis=null_hypothesis,
        alternative=alternative,
        conclusion="not tested: the series is constant",
        params={"constant": True},
    )


@dataclass(frozen=True)
class Stationarity(Record):
    """ADF and KPSS read together (their null hypotheses are opposite)."""

    adf: TestResult
    kpss: TestResult
    verdict: str  # "stationary" | "non-stationary" | "inconclusive"

    def summary(self) -> str:
        return f"{self.verdict} (ADF p={self.adf.pvalue:.3g}, KPSS p={self.kpss.pvalue:.3g})"


def stationarity(
    x: np.ndarray | Sequence[float],
    alpha: float = 0.05,
    adf_maxlag: int | None = None,
    adf_autolag: str | None = "AIC",
) -> Stationarity:
    """Run ADF and KPSS and combine them.

    ``stationary`` when ADF rejects its unit root and KPSS does not reject stationarity;
    ``non-stationary`` when KPSS rejects stationarity and ADF does not reject the unit root;
    ``inconclusive`` otherwise (e.g. both reject: typically a level shift or a trend around a
    stationary process, or fractional integration).
    """
    if _constant(np.asarray(x, dtype=float)):
        # A constant series (a current that never changes) is stationary by definition;
        # both tests are undefined on it (statsmodels raises "x is constant").
        return Stationarity(
            adf=_untested("ADF", "unit root (non-stationary)", "stationary"),
            kpss=_untested("KPSS", "level stationary", "unit root / non-stationary"),
            verdict="stationary",
        )
    adf = adf_test(x, maxlag=adf_maxlag, autolag=adf_autolag)
    kp = kpss_test(x)
    if adf.rejects(alpha) and not kp.rejects(alpha):
        verdict = "stationary"
    elif kp.rejects(alpha) and not adf.rejects(alpha):
        verdict = "non-stationary"
    else:
        verdict = "inconclusive"
    return Stationarity(adf=adf, kpss=kp, verdict=verdict)


@dataclass(frozen=True)
class CrossCorrelation(Record):
    """CCF of two series' first differences, lags 0..nlags (x leads y at positive lags)."""

    lags: tuple[int, ...]
    ccf: tuple[float, ...]
    band: float  # white-noise band z/√n of the differenced series
    peak_lag: int  # lag with the largest |CCF|
    peak_value: float

    def summary(self) -> str:
        return f"CCF(0)={self.ccf[0]:.3f}, peak {self.peak_value:.3f} at lag {self.peak_lag}"


def cross_correlation_of_differences(
    x: np.ndarray | Sequence[float],
    y: np.ndarray | Sequence[float],
    nlags: int = 60,
    alpha: float = 0.05,
) -> CrossCorrelation:
    """Cross-correlation of ``Δx_t = x_t − x_{t−1}`` with ``Δy_t`` (statsmodels ``ccf``).

    Differencing removes shared trends and level shifts that would make any two series look
    correlated (the study's emitter-vs-receiver analysis). ``x`` and ``y`` must be aligned in
    time and of equal length.
    """
    dx = np.diff(np.asarray(x, dtype=float))
    dy = np.diff(np.asarray(y, dtype=float))
    if dx.size != dy.size:
        raise ValueError("cross-correlation needs two series of equal length")
    nlags = int(min(nlags, dx.size - 1))
    values = ccf(dx, dy, adjusted=False, nlags=nlags + 1, result_object=True).ccf
    values = np.asarray(values, dtype=float)[: nlags + 1]
    peak = int(np.argmax(np.abs(values)))
    return CrossCorrelation(
        lags=tuple(range(values.size)),
        ccf=tuple(float(v) for v in values),
        band=white_noise_band(dx.size, alpha),
        peak_lag=peak,
        peak_value=float(values[peak]),
    )
