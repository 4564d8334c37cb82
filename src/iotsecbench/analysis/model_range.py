"""The device model's range beside the runs' interval: how far a modelled figure could move
if the profile's numbers are elsewhere in their ranges, and whether a ranking survives.

A modelled figure has two uncertainties. The runs' interval (a bootstrap over what was
measured) says how the figure would vary if the experiment were repeated with the same
model. The model's range says how it would vary with the same runs if the device profile's
numbers — datasheet values, measurements, guesses — were elsewhere in their stated ranges:
the profile is drawn many times (``energy.uncertainty``) and the figure recomputed on each
draw. Both are reported, never merged.

Inputs are arrays of draws (numpy in, records out): per run, how its modelled mean current
moves on each draw of the profile (``ModelDraws``), every run on the same draws (common
random numbers), so a difference between configurations is taken draw by draw and keeps the
correlation that the difference of two separate ranges would throw away.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from iotsecbench.analysis.results import Interval, Record

__all__ = [
    "DrawnValues",
    "ModelDraws",
    "ModelValue",
    "model_interval",
    "pooled_shift",
    "share_above",
]


@dataclass(frozen=True)
class ModelDraws:
    """How each run's modelled mean current moves over the draws of its device profile."""

    # (configuration, device, run) → mean current on each draw − mean current at the
    # profile's values (mA); every array has the same draws in the same order
    shifts: Mapping[tuple[str, str, Any], NDArray[np.float64]]
    # (configuration, device, run) → the run's energy per draw / its energy at the profile's
    # values (supply voltage and mean current together), for the energy per byte
    energy_factors: Mapping[tuple[str, str, Any], NDArray[np.float64]]
    draws: int
    method: str  # e.g. "profile Monte Carlo (1000 draws of esp32-wroom-32's ranges, PERT, seed 0)"
    level: float  # a range is the central `level` of a figure's draws (energy.uncertainty's)
    notes: tuple[str, ...] = ()  # what the draws leave out (docs/energy-model.md)
    # (configuration, device, run) → the run's stored energy per payload byte (µJ/B), whose
    # range the energy factors give
    energy_per_byte: Mapping[tuple[str, str, Any], float] = field(default_factory=dict)

    def shift(self, configuration: str, device: str, run: Any) -> NDArray[np.float64] | None:
        return self.shifts.get((configuration, device, run))


@dataclass(frozen=True)
class ModelSection(Record):
    """``analysis.json``'s ``model``: how the draws were made and every modelled value's
    range (the comparisons carry their own)."""

    method: str
    draws: int
    level: float
    notes: tuple[str, ...]
    values: tuple[ModelValue, ...]

    def value(self, configuration: str, device: str, metric: str) -> ModelValue | None:
        """The model's range of one configuration's modelled value, if there is one."""
        for value in self.values:
            if (value.configuration, value.device, value.metric) == (configuration, device, metric):
                return value
        return None


@dataclass(frozen=True)
class ModelValue(Record):
    """A modelled figure of one configuration with the model's range around it."""

    configuration: str
    device: str  # emitter | receiver
    metric: str  # a key of analysis.metrics
    value: float  # at the profile's values
    model_range: Interval  # the central ModelDraws.level of the draws


@dataclass(frozen=True)
class DrawnValues:
    """Figures recomputed on every draw of the profile (the same draws for every key), and
    how those draws were made, for a derived figure's range (the battery projection's)."""

    values: Mapping[tuple[str, str], NDArray[np.float64]]  # (configuration, device) → draws
    method: str
    level: float

    def interval(self, draws: NDArray[np.float64]) -> Interval:
        return model_interval(draws, self.method, self.level)


def model_interval(values: NDArray[np.float64], method: str, level: float) -> Interval:
    """The central ``level`` of a figure's draws (percentile ends)."""
    low, high = np.percentile(np.asarray(values, dtype=float), [50 * (1 - level), 50 * (1 + level)])
    return Interval(float(low), float(high), level, method)


def share_above(differences: NDArray[np.float64]) -> float:
    """The share of draws in which a difference is above zero (a ranks above b), a tie
    counting half (two configurations the model cannot tell apart rank neither way)."""
    values = np.asarray(differences, dtype=float)
    if not values.size:
        return float("nan")
    return float(np.mean(values > 0) + 0.5 * np.mean(values == 0))


def pooled_shift(
    shifts: Sequence[NDArray[np.float64]], weights: Sequence[float]
) -> NDArray[np.float64]:
    """How a pooled mean over several runs moves per draw: the runs' shifts weighted by the
    values each run contributes (a run twice as long moves the pooled mean twice as much)."""
    stacked = np.vstack([np.asarray(s, dtype=float) for s in shifts])
    w = np.asarray(weights, dtype=float)
    return (w[:, None] * stacked).sum(axis=0) / w.sum()


# --- the pipeline's stage: every modelled comparison and value with its model range ------

RunValues = Mapping[tuple[str, str], Mapping[Any, Any]]  # (configuration, device) → run → …


@dataclass(frozen=True)
class ModelStage:
    """What the analysis adds from the profile's draws."""

    comparisons: tuple[Any, ...]  # the comparisons, modelled ones with model_range
    values: tuple[ModelValue, ...]
    # each configuration's mean current over all its runs (total charge / total time, what
    # the battery projection reads) on every draw
    active_current: DrawnValues


def model_stage(
    comparisons: Sequence[Any],
    current: RunValues,
    charges: RunValues,
    durations: RunValues,
    model: ModelDraws,
    current_metric: str,
    charge_metric: str,
    run_blocks: Mapping[tuple[str, Any], Any] | None = None,
    energy_per_byte_metric: str = "",
) -> ModelStage:
    """The model's range of every comparison of ``current_metric`` (the pooled mean of the
    1 Hz series) and ``charge_metric`` (the mean per-run charge, or the mean of the block
    differences when ``run_blocks`` pairs them), and of every configuration's value of both,
    from ``model``'s shifts: the comparison's difference moves by a's shift less b's on each
    draw. A configuration with a run the draws do not cover gets no range."""

    def current_shift(key: tuple[str, str]) -> NDArray[np.float64] | None:
        runs = current.get(key, {})
        shifts = [model.shift(key[0], key[1], run) for run in runs]
        if not runs or any(s is None for s in shifts):
            return None
        return pooled_shift(shifts, [len(values) for values in runs.values()])  # type: ignore[arg-type]

    def charge_shifts(key: tuple[str, str]) -> dict[Any, NDArray[np.float64]] | None:
        runs = charges.get(key, {})
        found = {}
        for run in runs:
            shift = model.shift(key[0], key[1], run)
            if shift is None:
                return None
            found[run] = shift * durations[key][run] / 3600.0
        return found or None

    updated = []
    for c in comparisons:
        draws = None
        a, b = (c.a, c.device), (c.b, c.device)
        if c.metric == current_metric:
            sa, sb = current_shift(a), current_shift(b)
            if sa is not None and sb is not None:
                draws = c.difference + sa - sb
        elif c.metric == charge_metric:
            sa, sb = charge_shifts(a), charge_shifts(b)
            if sa is not None and sb is not None:
                draws = c.difference + _charge_difference(sa, sb, c.a, c.b, run_blocks)
        if draws is not None:
            c = dataclasses.replace(
                c,
                model_range=model_interval(draws, model.method, model.level),
                model_share=share_above(draws),
            )
        updated.append(c)
    values: list[ModelValue] = []
    active: dict[tuple[str, str], NDArray[np.float64]] = {}
    for key, runs in charges.items():
        shifts = charge_shifts(key)
        if shifts is not None:  # total charge / total time moves by the runs' shifts × hours
            hours = sum(durations[key].values()) / 3600.0
            active[key] = (sum(runs.values()) + sum(shifts.values())) / hours
    for key, runs in current.items():
        shift = current_shift(key)
        if shift is None:
            continue
        value = float(np.concatenate([np.asarray(v, dtype=float) for v in runs.values()]).mean())
        values.append(
            ModelValue(
                *key,
                current_metric,
                value,
                model_interval(value + shift, model.method, model.level),
            )
        )
    for key, runs in charges.items():
        shifts = charge_shifts(key)
        if shifts is None:
            continue
        value = float(np.mean(list(runs.values())))
        moved = value + np.mean(np.vstack(list(shifts.values())), axis=0)
        values.append(
            ModelValue(*key, charge_metric, value, model_interval(moved, model.method, model.level))
        )
    per_byte: dict[tuple[str, str], list[tuple[float, NDArray[np.float64]]]] = {}
    for (configuration, device, run), value in model.energy_per_byte.items():
        factor = model.energy_factors.get((configuration, device, run))
        if factor is not None and np.isfinite(value):
            per_byte.setdefault((configuration, device), []).append((value, factor))
    for key, pairs in per_byte.items():
        value = float(np.mean([v for v, _ in pairs]))
        moved = np.mean(np.vstack([v * f for v, f in pairs]), axis=0)
        values.append(
            ModelValue(
                *key,
                energy_per_byte_metric,
                value,
                model_interval(moved, model.method, model.level),
            )
        )
    return ModelStage(tuple(updated), tuple(values), DrawnValues(active, model.method, model.level))


def _charge_difference(
    shifts_a: Mapping[Any, NDArray[np.float64]],
    shifts_b: Mapping[Any, NDArray[np.float64]],
    a: str,
    b: str,
    run_blocks: Mapping[tuple[str, Any], Any] | None,
) -> NDArray[np.float64]:
    """How the charge comparison's estimate moves per draw: mean(a) − mean(b) of the runs'
    charge shifts, or, paired by block, the mean over shared blocks of the within-block
    difference of the means (as ``comparisons.energy_comparisons`` estimates it)."""
    if not run_blocks:
        return np.mean(np.vstack(list(shifts_a.values())), axis=0) - np.mean(
            np.vstack(list(shifts_b.values())), axis=0
        )
    by_block: dict[Any, tuple[list, list]] = {}
    for shifts, name, side in ((shifts_a, a, 0), (shifts_b, b, 1)):
        for run, shift in shifts.items():
            block = run_blocks.get((name, run))
            if block is not None:
                by_block.setdefault(block, ([], []))[side].append(shift)
    differences = [
        np.mean(np.vstack(sa), axis=0) - np.mean(np.vstack(sb), axis=0)
        for sa, sb in by_block.values()
        if sa and sb
    ]
    return np.mean(np.vstack(differences), axis=0)
