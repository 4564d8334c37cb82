"""Descriptive statistics: summaries, coefficients of variation, per-minute means, energy.

The `stability` study (Del-Valle-Soto et al., 2026) reports mean, SD (n−1), median, mode and
quartiles per configuration × device × metric; the CV across the repetitions and across five
contiguous segments of each run; per-minute mean current; and cumulative charge
``E(t) = Σ I·Δt / 3600`` in mAh. The 10 Hz → 1 Hz aggregation (mean of the samples within
each whole second) also lives here.

scipy and pandas are imported inside the functions that use them: the runner imports this
module (for ``percentile`` and ``cumulative_mah``) in every ``run`` process, and ``scipy.stats``
would add about a second of CPU to each, pandas 0.3 s, runs whose statistics come later or
never (``--no-report``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from iotsecbench.analysis.results import Record

if TYPE_CHECKING:
    import pandas as pd

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class Descriptive(Record):
    """Summary of one sample (units of the metric)."""

    n: int  # number of values
    mean: float
    sd: float  # sample standard deviation (ddof = 1); NaN when n < 2
    median: float
    mode: float  # most frequent value after rounding to ``mode_resolution``
    mode_resolution: float  # rounding step used for the mode, in the metric's unit
    p25: float
    p50: float
    p75: float
    min: float
    max: float
    cv: float  # sd / |mean|; NaN when the mean is 0

    def summary(self) -> str:
        return (
            f"n={self.n} mean={self.mean:.4g} sd={self.sd:.3g} median={self.median:.4g} "
            f"P25–P75=[{self.p25:.4g}, {self.p75:.4g}] cv={self.cv:.2%}"
        )


def coefficient_of_variation(values: np.ndarray | Sequence[float]) -> float:
    """SD (ddof = 1) divided by the absolute mean; NaN for fewer than 2 values or a zero mean."""
    array = np.asarray(values, dtype=float)
    if array.size < 2:
        return float("nan")
    mean = float(np.mean(array))
    if mean == 0.0:
        return float("nan")
    return float(np.std(array, ddof=1) / abs(mean))


def mode_of(values: np.ndarray | Sequence[float], resolution: float) -> float:
    """Mode of continuous data after rounding to a multiple of ``resolution``.

    Parameters
    ----------
    values : array_like
        The sample.
    resolution : float
        Rounding step (> 0). The mode of raw continuous data is nearly always a tie of ones;
        rounding to the instrument's resolution makes it meaningful. Ties go to the smallest.

    Returns
    -------
    float
        The most frequent rounded value (NaN for an empty sample).
    """
    if resolution <= 0:
        raise ValueError(f"resolution must be positive, got {resolution}")
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return float("nan")
    from scipy import stats  # here, not at the top: see the module's note on imports

    rounded = np.round(array / resolution)
    result = stats.mode(rounded, keepdims=False)
    return float(result.mode * resolution)


def describe(values: np.ndarray | Sequence[float], mode_resolution: float = 0.1) -> Descriptive:
    """Mean, SD (n−1), median, mode, quartiles, extremes and CV of a sample.

    Parameters
    ----------
    values : array_like
        One-dimensional sample; must be non-empty and finite.
    mode_resolution : float, default 0.1
        Rounding step for the mode (0.1 mA / 0.1 ms suits the study's instruments).

    Returns
    -------
    Descriptive
    """
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise ValueError("describe needs a non-empty one-dimensional sample")
    if not np.all(np.isfinite(array)):
        raise ValueError("describe needs finite values")
    p25, p50, p75 = np.percentile(array, [25, 50, 75])
    return Descriptive(
        n=int(array.size),
        mean=float(np.mean(array)),
        sd=float(np.std(array, ddof=1)) if array.size > 1 else float("nan"),
        median=float(p50),
        mode=mode_of(array, mode_resolution),
        mode_resolution=float(mode_resolution),
        p25=float(p25),
        p50=float(p50),
        p75=float(p75),
        min=float(np.min(array)),
        max=float(np.max(array)),
        cv=coefficient_of_variation(array),
    )


def segment_means(values: np.ndarray | Sequence[float], segments: int = 5) -> np.ndarray:
    """Means of ``segments`` contiguous, near-equal parts of a series (``np.array_split``)."""
    array = np.asarray(values, dtype=float)
    if segments < 1 or array.size < segments:
        raise ValueError(f"cannot split {array.size} values into {segments} segments")
    return np.array([part.mean() for part in np.array_split(array, segments)])


def segment_cv(values: np.ndarray | Sequence[float], segments: int = 5) -> float:
    """CV of the means of ``segments`` contiguous segments of one run (the study uses 5 × 120 s)."""
    return coefficient_of_variation(segment_means(values, segments))


def to_one_hertz(frame: pd.DataFrame, value: str = "current_ma") -> pd.DataFrame:
    """Aggregate samples to 1 Hz: the arithmetic mean of the samples in each whole second.

    Second ``s`` holds the samples with ``s <= time_s < s + 1`` (the study averages the ten
    100 ms samples of each second). Data already at 1 Hz with integer times pass unchanged.

    Parameters
    ----------
    frame : DataFrame
        Columns ``configuration, device, run, time_s`` and ``value``.
    value : str, default "current_ma"

    Returns
    -------
    DataFrame
        Same columns, ``time_s`` an integer second, one row per configuration × device × run ×
        second, sorted.
    """
    keys = ["configuration", "device", "run"]
    seconds = np.floor(frame["time_s"].to_numpy(dtype=float)).astype(np.int64)
    grouped = (
        frame.assign(time_s=seconds)
        .groupby([*keys, "time_s"], sort=True, observed=True)[value]
        .mean()
        .reset_index()
    )
    return grouped


def cumulative_mah(current_ma: ArrayLike, dt_s: ArrayLike = 1.0) -> np.ndarray:
    """Running charge ``E(t) = Σ I_k[mA]·Δt_k[s] / 3600`` in mAh (docs/device-facts.md §0): the one
    place it is computed. ``dt_s`` is one window length for all samples (1 at 1 Hz, 0.1 at
    10 Hz) or one per sample (``energy.model.ModelledCurrent.window_s``)."""
    current = np.asarray(current_ma, dtype=float)
    durations = np.broadcast_to(np.asarray(dt_s, dtype=float), current.shape)
    if np.any(durations <= 0):
        raise ValueError(f"dt_s must be positive, got {dt_s}")
    return np.cumsum(current * durations) / SECONDS_PER_HOUR


def run_energy_mah(current_ma: np.ndarray | Sequence[float], dt_s: float = 1.0) -> float:
    """Total charge of one run in mAh: ``Σ I_k·Δt / 3600``."""
    return float(np.sum(np.asarray(current_ma, dtype=float)) * dt_s / SECONDS_PER_HOUR)


def per_minute_mean(time_s: np.ndarray, values: np.ndarray) -> pd.Series:
    """Mean of ``values`` within each whole minute of ``time_s`` (index: minute number)."""
    import pandas as pd  # here, not at the top: see the module's note on imports

    minutes = np.floor(np.asarray(time_s, dtype=float) / 60.0).astype(np.int64)
    return pd.Series(np.asarray(values, dtype=float)).groupby(minutes).mean()


def percentile(values: ArrayLike, q: float) -> float:
    """The ``q``-th percentile (numpy's linear interpolation) of ``values``; NaN when there
    are none. The one percentile of a run's latencies, set-up times and round trips
    (``analysis.per_run`` and the runner's ``collect``)."""
    array = np.asarray(values, dtype=float)
    return float(np.percentile(array, q)) if array.size else float("nan")


def t_half_width(sd: ArrayLike, n: ArrayLike, level: float = 0.95) -> np.ndarray:
    """Half-width of the Student-t interval of a mean of ``n`` values with standard deviation
    ``sd`` (n − 1 degrees of freedom): the one Student-t of the project (the report's bands,
    ``bench``'s per-configuration statistics). The quantile is ``scipy.special.stdtrit``,
    what ``scipy.stats.t.ppf`` computes, without loading ``scipy.stats`` (0.75 s of CPU a
    ``bench handshake`` process otherwise spends on it)."""
    from scipy.special import stdtrit  # here, not at the top: see the module's note on imports

    n = np.asarray(n)
    return stdtrit(n - 1, 0.5 + level / 2) * sd / np.sqrt(n)


def mean_t_interval(
    values: np.ndarray, axis: int = 0, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and Student-t interval of the mean along ``axis``, ignoring NaN: ``(mean, low,
    high)``, the interval collapsed onto the mean where fewer than two values exist. A display
    band across runs (the report's figures), not an inference."""
    mean = np.nanmean(values, axis=axis)
    n = np.sum(~np.isnan(values), axis=axis)
    sd = np.nanstd(values, axis=axis, ddof=1) if values.shape[axis] > 1 else np.zeros_like(mean)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = t_half_width(sd, n, level)  # NaN below two values: collapsed next
    half = np.where(n > 1, half, 0.0)
    return mean, mean - half, mean + half
