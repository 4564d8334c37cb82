"""Inference with runs as the units: one value per run (``analysis.per_run``), compared with
an i.i.d. bootstrap over runs, and how many runs a wanted precision would take.

What the findings compare over runs (latency percentiles, set-up time, CPU and bytes per
message) and what ``report A B`` contrasts between experiments: the report renders these
records, it computes none of them.

References
----------
.. [1] Hesterberg, T. C. (2015). What teachers should know about the bootstrap. *The American
   Statistician* 69(4), 371–386 (the expanded percentile interval for few units, §4.2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from iotsecbench.analysis.bootstrap import (
    iid_bootstrap_contrast,
    iid_bootstrap_difference,
    keyed_generator,
)
from iotsecbench.analysis.comparisons import comparison_row
from iotsecbench.analysis.results import Comparison, Interval

LEVEL = 0.95
REPS = 2000  # bootstrap replicates of every comparison over runs
MAX_RUNS_NEEDED = 10_000


def runs_needed(
    values_a: np.ndarray,
    values_b: np.ndarray,
    baseline_value: float,
    precision: float,
    level: float = LEVEL,
) -> int | None:
    """Runs per configuration for a ``level`` interval of ``mean(a) − mean(b)`` no wider than
    ±``precision``·|baseline|: the smallest n with t((1+level)/2, 2n−2)·√((s_a² + s_b²)/n)
    below it, s the observed between-run standard deviations. None when the spread cannot be
    estimated (fewer than 2 runs, or none at all) or the baseline is 0."""
    a, b = np.asarray(values_a, dtype=float), np.asarray(values_b, dtype=float)
    if a.size < 2 or b.size < 2 or baseline_value == 0 or not math.isfinite(baseline_value):
        return None
    spread = float(a.var(ddof=1) + b.var(ddof=1))
    if not math.isfinite(spread):
        return None
    target = precision * abs(baseline_value)
    for n in range(2, MAX_RUNS_NEEDED + 1):
        if stats.t.ppf(0.5 + level / 2, 2 * n - 2) * math.sqrt(spread / n) <= target:
            return n
    return MAX_RUNS_NEEDED


def compare_over_runs(
    metric: str,
    device: str,
    a: str,
    b: str,
    values_a: np.ndarray,
    values_b: np.ndarray,
    seed: int,
    reps: int = REPS,
    level: float = LEVEL,
) -> Comparison | None:
    """``mean(a) − mean(b)`` of one value per run, with Hesterberg's expanded percentile
    interval of an i.i.d. bootstrap over runs and Cohen's d over the runs' pooled SD; None
    when a side has fewer than 2 runs (no spread to go on). The draws come from ``seed`` and
    the comparison's names, so they do not depend on what else was compared."""
    values_a, values_b = np.asarray(values_a, dtype=float), np.asarray(values_b, dtype=float)
    if values_a.size < 2 or values_b.size < 2:
        return None
    result = iid_bootstrap_difference(
        values_a, values_b, reps=reps, level=level,
        seed=keyed_generator(seed, "finding", metric, device, a, b),
    )  # fmt: skip
    return comparison_row(metric, device, a, b, values_a, values_b, result)


@dataclass(frozen=True)
class RunContrast:
    """``Σ wᵢ·mean(groupᵢ)`` over runs of several groups, with its interval: a value in one
    experiment against another (weights +1, −1), or how a configuration's cost over the
    baseline changes between them (+1, −1, −1, +1)."""

    value: float  # the weighted sum of the experiment's groups
    reference_value: float  # … of the reference experiment's
    estimate: float  # value − reference_value
    interval: Interval
    runs: int  # the fewest runs of any group


def contrast_over_runs(
    mine: Sequence[np.ndarray],
    theirs: Sequence[np.ndarray],
    weights: Sequence[float],
    seed_key: Sequence[object],
    seed: int,
    reps: int = REPS,
    level: float = LEVEL,
) -> RunContrast | None:
    """``Σ w·mean(mine) − Σ w·mean(theirs)``, each group resampled on its own (runs of
    different experiments are independent units); None when a group has fewer than 2 runs."""
    own = [np.asarray(g, dtype=float) for g in mine]
    reference = [np.asarray(g, dtype=float) for g in theirs]
    groups = own + reference
    if min(g.size for g in groups) < 2:
        return None
    result = iid_bootstrap_contrast(
        groups,
        (*weights, *(-w for w in weights)),
        reps=reps,
        level=level,
        seed=keyed_generator(seed, *seed_key),
    )
    return RunContrast(
        value=sum(w * float(g.mean()) for g, w in zip(own, weights, strict=True)),
        reference_value=sum(w * float(g.mean()) for g, w in zip(reference, weights, strict=True)),
        estimate=result.estimate,
        interval=result.interval,
        runs=min(g.size for g in groups),
    )
