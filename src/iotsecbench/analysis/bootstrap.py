"""Bootstrap inference on the difference of means between two configurations.

Block bootstraps (arch's ``MovingBlockBootstrap`` — the study's —, ``CircularBlockBootstrap``,
``StationaryBootstrap``) keep the short-range dependence of a 1 Hz current trace or a
per-message latency series inside each resampled block, so the interval reflects the
effective, not the nominal, sample size. An i.i.d. bootstrap over runs serves per-run
quantities (cumulative energy), where each run is one independent observation.

**Several runs per configuration.** Each run is resampled *separately* with blocks drawn
inside that run (a stratified block bootstrap): no block ever spans two runs, and every run
keeps its own number of observations in every replicate. A configuration's replicate mean is
the length-weighted mean of its runs' replicate means, i.e. the mean of the resampled pooled
series. Drawing blocks from the concatenated series instead would create blocks that join
the end of one run to the start of the next (a discontinuity that is not in the data, and a
transient glued into the middle of a block) and would let the share of each run vary between
replicates. The interval is therefore conditional on the observed runs: run-to-run variation
is reported by the CV across runs (and the energy comparison, an i.i.d. bootstrap over runs,
addresses it directly). The two configurations are resampled independently.

References
----------
.. [1] Künsch, H. R. (1989). The jackknife and the bootstrap for general stationary
   observations. *Annals of Statistics* 17(3), 1217–1241 (moving blocks).
.. [2] Politis, D. N., Romano, J. P. (1992). A circular block-resampling procedure for
   stationary data. In *Exploring the Limits of Bootstrap*, Wiley, 263–270.
.. [3] Politis, D. N., Romano, J. P. (1994). The stationary bootstrap. *JASA* 89(428),
   1303–1313.
.. [4] Politis, D. N., White, H. (2004). Automatic block-length selection for the dependent
   bootstrap. *Econometric Reviews* 23(1), 53–70; correction by Patton, Politis, White
   (2009), *Econometric Reviews* 28(4), 372–375.
.. [5] Hesterberg, T. C. (2015). What teachers should know about the bootstrap: resampling in
   the undergraduate statistics curriculum. *The American Statistician* 69(4), 371–386
   (the expanded percentile interval for small samples).
.. [6] Efron, B., Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*. Chapman & Hall
   (percentile interval, §13.3).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from arch.bootstrap import (
    CircularBlockBootstrap,
    IIDBootstrap,
    MovingBlockBootstrap,
    StationaryBootstrap,
    optimal_block_length,
)
from scipy import stats

from iotsecbench.analysis.results import Interval, Record

BootstrapMethod = Literal["moving", "circular", "stationary"]
BOOTSTRAP_CLASSES = {
    "moving": MovingBlockBootstrap,
    "circular": CircularBlockBootstrap,
    "stationary": StationaryBootstrap,
}
STUDY_BLOCK_LENGTH = 20  # the study: b = 20 > k_c with ~50 % margin
KC_MARGIN = 1.5  # block length rule "kc": ceil(1.5·k_c)
CHUNK_VALUES = 4_000_000  # replicates × samples per vectorised chunk (~32 MB of indices)

Seed = int | np.random.Generator


def as_generator(seed: Seed) -> np.random.Generator:
    """A ``Generator`` from an int seed, or the given ``Generator`` itself (shared stream)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return np.random.default_rng(int(seed))
    raise TypeError(f"seed must be an int or numpy Generator, got {type(seed).__name__}")


def percentile_interval(replicates: np.ndarray, level: float = 0.95, method: str = "") -> Interval:
    """Percentile interval: the (1−level)/2 and (1+level)/2 quantiles of the replicates."""
    tail = (1.0 - level) / 2.0
    low, high = np.percentile(np.asarray(replicates, dtype=float), [100 * tail, 100 * (1 - tail)])
    return Interval(float(low), float(high), level, method or "percentile")


@dataclass(frozen=True)
class BlockLengthChoice(Record):
    """The block length used and how it was chosen."""

    block_length: int  # samples per block (mean block length for the stationary bootstrap)
    rule: str  # "fixed" | "auto" (Politis–White) | "kc" (ceil(1.5·k_c))
    estimates: tuple[float, ...]  # per-run Politis–White estimates (rule "auto"), else empty

    def summary(self) -> str:
        return f"b={self.block_length} ({self.rule})"


def choose_block_length(
    runs: Sequence[np.ndarray],
    rule: int | str = STUDY_BLOCK_LENGTH,
    method: BootstrapMethod = "moving",
    k_c: int | None = None,
) -> BlockLengthChoice:
    """Pick the block length for a set of runs.

    Parameters
    ----------
    runs : sequence of arrays
        The runs of one or more configurations (all are considered).
    rule : int or {"auto", "kc"}, default 20
        An integer is used as is (the study's 20). ``"auto"`` takes the median over runs of
        the Politis–White estimate (arch ``optimal_block_length``: column ``stationary`` for
        the stationary bootstrap, ``circular`` otherwise — the moving-block optimum equals the
        circular one asymptotically), rounded up. ``"kc"`` is ``ceil(1.5·k_c)``.
    method : {"moving", "circular", "stationary"}
    k_c : int, optional
        Effective correlation length; required for rule ``"kc"``.

    Returns
    -------
    BlockLengthChoice
    """
    if isinstance(rule, (int, np.integer)) and not isinstance(rule, bool):
        if rule < 1:
            raise ValueError(f"block length must be ≥ 1, got {rule}")
        return BlockLengthChoice(int(rule), "fixed", ())
    if rule == "kc":
        if k_c is None:
            raise ValueError("block-length rule 'kc' needs k_c")
        return BlockLengthChoice(max(1, math.ceil(KC_MARGIN * k_c)), "kc", ())
    if rule == "auto":
        column = "stationary" if method == "stationary" else "circular"
        estimates = tuple(
            float(optimal_block_length(np.asarray(run, dtype=float))[column].iloc[0])
            for run in runs
            if len(run) >= 8
        )
        if not estimates:
            return BlockLengthChoice(1, "auto", ())
        return BlockLengthChoice(max(1, math.ceil(float(np.median(estimates)))), "auto", estimates)
    raise ValueError(f"unknown block-length rule {rule!r}: use an integer, 'auto' or 'kc'")


def block_bootstrap_means(
    runs: Sequence[np.ndarray],
    block_length: int,
    method: BootstrapMethod = "moving",
    reps: int = 2000,
    seed: Seed = 0,
) -> np.ndarray:
    """Replicates of the pooled mean of several runs, each run block-resampled on its own.

    Parameters
    ----------
    runs : sequence of 1-D arrays
        The runs of one configuration, each in time order.
    block_length : int
        Block length (mean block length for the stationary bootstrap); capped at each run's
        length.
    method : {"moving", "circular", "stationary"}
    reps : int, default 2000
    seed : int or numpy Generator
        An int starts a fresh stream; a Generator is consumed (pass the same one to draw
        independent resamples for several configurations).

    Returns
    -------
    ndarray, shape (reps,)
        ``Σ_r n_r·mean*_r / Σ_r n_r`` for each replicate. Indices come from arch's samplers
        (``update_indices``), so a single run gives exactly ``arch``'s ``apply(np.mean)``.
    """
    if method not in BOOTSTRAP_CLASSES:
        raise ValueError(f"unknown bootstrap method {method!r}")
    generator = as_generator(seed)
    sampler_class = BOOTSTRAP_CLASSES[method]
    arrays = [np.asarray(run, dtype=float) for run in runs if len(run) > 0]
    if not arrays:
        raise ValueError("no data to bootstrap")
    total = np.zeros(reps)
    count = 0
    for values in arrays:
        size = values.size
        sampler = sampler_class(min(block_length, size), values, seed=generator)
        chunk = max(1, CHUNK_VALUES // size)
        means = np.empty(reps)
        for start in range(0, reps, chunk):
            stop = min(reps, start + chunk)
            indices = np.stack([sampler.update_indices() for _ in range(stop - start)])
            means[start:stop] = values[indices].mean(axis=1)
        total += size * means
        count += size
    return total / count


@dataclass(frozen=True)
class BootstrapDifference(Record):
    """Bootstrap distribution and interval of mean(a) − mean(b)."""

    estimate: float  # observed mean(a) − mean(b)
    interval: Interval
    replicates: np.ndarray  # bootstrap replicates of the difference, shape (reps,)
    method: str  # "moving" | "circular" | "stationary" | "iid-runs"
    block_length: int | None  # None for the i.i.d. bootstrap
    reps: int

    def to_dict(self) -> dict:
        data = super().to_dict()
        data.pop("replicates")
        return data

    @property
    def significant(self) -> bool:
        """The study's rule: the interval excludes 0."""
        return self.interval.excludes_zero()

    def summary(self) -> str:
        return f"Δ={self.estimate:.5g} {self.interval.summary()}"


def pooled_mean(runs: Sequence[np.ndarray]) -> float:
    """Mean of all values of all runs."""
    return float(np.concatenate([np.asarray(r, dtype=float) for r in runs]).mean())


class BlockBootstrap:
    """Block-bootstrap comparisons of configurations, the one path every interval takes.

    Each configuration's replicate means are drawn once per block length and reused in
    every comparison it enters. With an int ``seed`` each configuration draws from its own
    stream, derived from the seed and the configuration's ``key``, so a result does not
    depend on which other comparisons were computed or in what order; with a ``Generator``
    the draws consume that one stream in call order.
    """

    def __init__(self, method: BootstrapMethod = "moving", reps: int = 2000, seed: Seed = 0):
        if method not in BOOTSTRAP_CLASSES:
            raise ValueError(f"unknown bootstrap method {method!r}")
        self.method, self.reps, self.seed = method, int(reps), seed
        self._means: dict[tuple, np.ndarray] = {}

    def means(self, key: tuple, runs: Sequence[np.ndarray], block_length: int) -> np.ndarray:
        """Replicates of the pooled mean of ``runs`` (the configuration named by ``key``)."""
        cache_key = (*key, int(block_length))
        if cache_key not in self._means:
            if isinstance(self.seed, np.random.Generator):
                generator = self.seed
            else:
                generator = keyed_generator(self.seed, *cache_key, self.method)
            self._means[cache_key] = block_bootstrap_means(
                runs, block_length, self.method, self.reps, generator
            )
        return self._means[cache_key]

    def difference(
        self,
        a: tuple[tuple, Sequence[np.ndarray]],
        b: tuple[tuple, Sequence[np.ndarray]],
        block_length: int,
        level: float = 0.95,
        label: str = "",
    ) -> BootstrapDifference:
        """Percentile interval of ``mean(a) − mean(b)``; ``a`` and ``b`` are ``(key, runs)``.

        The percentile interval is used rather than BCa because arch's BCa acceleration
        comes from an i.i.d. jackknife, which ignores the dependence.
        """
        (key_a, runs_a), (key_b, runs_b) = a, b
        replicates = self.means(key_a, runs_a, block_length) - self.means(
            key_b, runs_b, block_length
        )
        label = (
            label
            or f"{self.method}-block bootstrap percentile (b={block_length}, {self.reps} reps)"
        )
        return BootstrapDifference(
            estimate=pooled_mean(runs_a) - pooled_mean(runs_b),
            interval=percentile_interval(replicates, level, label),
            replicates=replicates,
            method=self.method,
            block_length=int(block_length),
            reps=self.reps,
        )


def block_bootstrap_difference(
    runs_a: Sequence[np.ndarray],
    runs_b: Sequence[np.ndarray],
    block_length: int = STUDY_BLOCK_LENGTH,
    method: BootstrapMethod = "moving",
    reps: int = 2000,
    level: float = 0.95,
    seed: Seed = 0,
) -> BootstrapDifference:
    """Block-bootstrap percentile interval of ``mean(a) − mean(b)`` for one pair.

    Each configuration is resampled independently, each of its runs on its own (see the
    module notes), through ``BlockBootstrap`` — the code the analysis uses — with one
    stream (``seed``) consumed for ``a`` then ``b``.

    Parameters
    ----------
    runs_a, runs_b : sequence of 1-D arrays
        Runs of configuration a and b, each in time order.
    block_length : int, default 20
    method : {"moving", "circular", "stationary"}, default "moving"
    reps : int, default 2000
    level : float, default 0.95
    seed : int or numpy Generator

    Returns
    -------
    BootstrapDifference
    """
    bootstrap = BlockBootstrap(method, reps, as_generator(seed))
    return bootstrap.difference((("a",), runs_a), (("b",), runs_b), block_length, level)


def keyed_generator(seed: int, *key: object) -> np.random.Generator:
    """An independent stream for one resampled quantity, from the seed and a stable key
    (CRC-32 of the key's text), so results do not depend on the order of computation."""
    digest = zlib.crc32("/".join(map(str, key)).encode())
    return np.random.default_rng([int(seed), digest])


def iid_bootstrap_means(values: np.ndarray, reps: int, seed: Seed) -> np.ndarray:
    """Replicates of the mean of i.i.d. values (arch ``IIDBootstrap`` indices)."""
    array = np.asarray(values, dtype=float)
    sampler = IIDBootstrap(array, seed=as_generator(seed))
    indices = np.stack([sampler.update_indices() for _ in range(reps)])
    return array[indices].mean(axis=1)


def iid_bootstrap_difference(
    values_a: np.ndarray | Sequence[float],
    values_b: np.ndarray | Sequence[float],
    reps: int = 2000,
    level: float = 0.95,
    seed: Seed = 0,
    expanded: bool = True,
) -> BootstrapDifference:
    """i.i.d. bootstrap of ``mean(a) − mean(b)`` over independent units (runs): the
    two-group case of ``iid_bootstrap_contrast`` (weights +1, −1).

    Returns
    -------
    BootstrapDifference
        ``method = "iid-runs"``, ``block_length = None``.
    """
    return iid_bootstrap_contrast((values_a, values_b), (1.0, -1.0), reps, level, seed, expanded)


def iid_bootstrap_contrast(
    groups: Sequence[np.ndarray | Sequence[float]],
    weights: Sequence[float],
    reps: int = 2000,
    level: float = 0.95,
    seed: Seed = 0,
    expanded: bool = True,
) -> BootstrapDifference:
    """i.i.d. bootstrap of ``Σ wᵢ·mean(groupᵢ)`` over independent units (runs), each group
    resampled on its own. With weights (+1, −1) it is a difference of means; with
    (+1, −1, −1, +1) over (c in B, baseline in B, c in A, baseline in A) it is how much a
    configuration's cost over the baseline changes from experiment A to B (an interaction).

    With a handful of runs (the study has 5 per configuration) the plain percentile interval
    is too narrow: it uses the 1/n variance and normal rather than t quantiles. ``expanded``
    applies Hesterberg's (2015) expanded percentile interval: the percentiles are taken at
    ``Φ(±√(n/(n−1))·t_{(1−level)/2, n−1})`` with ``n`` the smallest group's size.

    Returns
    -------
    BootstrapDifference
        ``method = "iid-runs"``, ``block_length = None``.
    """
    arrays = [np.asarray(values, dtype=float) for values in groups]
    if len(arrays) != len(weights) or not arrays:
        raise ValueError("a contrast needs one weight per group")
    if min(a.size for a in arrays) < 2:
        raise ValueError("the i.i.d. bootstrap over runs needs at least 2 runs per configuration")
    generator = as_generator(seed)
    replicates = np.zeros(reps)
    for array, weight in zip(arrays, weights, strict=True):
        replicates += weight * iid_bootstrap_means(array, reps, generator)
    n = min(a.size for a in arrays)
    used_level = level
    label = f"i.i.d. bootstrap over runs, percentile ({reps} reps)"
    if expanded:
        t_quantile = stats.t.ppf((1.0 + level) / 2.0, n - 1)
        tail = float(stats.norm.cdf(-math.sqrt(n / (n - 1)) * t_quantile))
        used_level = 1.0 - 2.0 * tail
        label = f"i.i.d. bootstrap over runs, expanded percentile (Hesterberg 2015, {reps} reps)"
        # With 2 runs the expanded level rounds to 1 (t quantile with 1 df is 12.7): take the
        # widest interval the replicates can resolve, and say so.
        resolvable = 1.0 - 2.0 / reps
        if used_level > resolvable:
            used_level = resolvable
            label += "; expansion clamped to the replicates' range (too few runs)"
    interval = percentile_interval(replicates, used_level, label)
    estimate = sum(w * float(a.mean()) for a, w in zip(arrays, weights, strict=True))
    return BootstrapDifference(
        estimate=float(estimate),
        interval=Interval(interval.low, interval.high, level, label),
        replicates=replicates,
        method="iid-runs",
        block_length=None,
        reps=int(reps),
    )


def naive_iid_difference(
    a: np.ndarray | Sequence[float],
    b: np.ndarray | Sequence[float],
    level: float = 0.95,
) -> Interval:
    """Normal-theory interval that treats every sample as independent (for comparison only).

    It under-covers on autocorrelated data; the validation tests show by how much.
    """
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    se = math.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
    z = stats.norm.ppf((1.0 + level) / 2.0)
    d = float(x.mean() - y.mean())
    return Interval(d - z * se, d + z * se, level, "naive i.i.d. normal")
