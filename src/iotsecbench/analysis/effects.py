"""Effect sizes: Cohen's d with a pooled standard deviation and Cohen's labels.

References
----------
.. [1] Cohen, J. (1988). *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed.
   Lawrence Erlbaum (d, §2.2; thresholds 0.2 / 0.5 / 0.8, §2.2.3).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from iotsecbench.analysis.results import Record

SMALL, MEDIUM, LARGE = 0.2, 0.5, 0.8  # Cohen (1988) thresholds for |d|


@dataclass(frozen=True)
class EffectSize(Record):
    """Standardised mean difference of a vs b."""

    d: float  # (mean_a − mean_b) / pooled SD; NaN when the pooled SD is 0
    label: str  # "negligible" (< 0.2) | "small" | "medium" | "large" (≥ 0.8), on |d|
    pooled_sd: float

    def summary(self) -> str:
        return f"d={self.d:.3f} ({self.label})"


def effect_label(d: float) -> str:
    """Cohen's label for |d|: negligible < 0.2 ≤ small < 0.5 ≤ medium < 0.8 ≤ large."""
    if not math.isfinite(d):
        return "undefined"
    size = abs(d)
    if size < SMALL:
        return "negligible"
    if size < MEDIUM:
        return "small"
    if size < LARGE:
        return "medium"
    return "large"


def cohens_d(a: np.ndarray | Sequence[float], b: np.ndarray | Sequence[float]) -> EffectSize:
    """Cohen's d with the pooled SD ``√(((n_a−1)s_a² + (n_b−1)s_b²)/(n_a+n_b−2))``.

    Parameters
    ----------
    a, b : array_like
        The two samples (at least 2 values each).

    Returns
    -------
    EffectSize
    """
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        raise ValueError("Cohen's d needs at least 2 values per sample")
    pooled_variance = ((x.size - 1) * x.var(ddof=1) + (y.size - 1) * y.var(ddof=1)) / (
        x.size + y.size - 2
    )
    pooled_sd = math.sqrt(pooled_variance)
    d = float((x.mean() - y.mean()) / pooled_sd) if pooled_sd > 0 else float("nan")
    return EffectSize(d=d, label=effect_label(d), pooled_sd=pooled_sd)
