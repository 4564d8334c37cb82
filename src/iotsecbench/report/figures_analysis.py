"""The statistics' figures: what ``analysis.json`` says of the experiment — autocorrelation,
the bootstrap distributions of the differences, effect sizes, the Pareto front and the
ranking's sensitivity — drawn after the measured and modelled series (report/figures.py)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import MaxNLocator

from iotsecbench.analysis.metrics import CHARGE, CURRENT
from iotsecbench.analysis.results import Comparison
from iotsecbench.report.data import ReportData
from iotsecbench.report.figures import (
    MANY_ROW_INCHES,
    SMALL_MULTIPLES_AT_MOST,
    ReportFigure,
    _finish,
    legend_below,
    too_many,
)
from iotsecbench.report.style import Palette, plt, styled


@styled
def autocorrelation(data: ReportData, palette: Palette) -> ReportFigure | None:
    series = [
        s
        for s in (data.analysis.series if data.analysis is not None else [])
        if s.metric == CURRENT and s.acf_mean
    ]
    if not series:
        return None
    devices = list(dict.fromkeys(s.device for s in series))
    figure, axes = plt.subplots(2, len(devices), figsize=(7.2, 4.6), sharex=True, squeeze=False)
    for column, device in enumerate(devices):
        for s in (s for s in series if s.device == device):
            name = s.configuration
            lags = np.arange(len(s.acf_mean))
            for row, key in enumerate(("acf_mean", "pacf_mean")):
                axes[row][column].plot(
                    lags[1:],
                    np.asarray(getattr(s, key), dtype=float)[1:],
                    color=palette.color(name),
                    ls=palette.line_style(name),
                    lw=1.0,
                    label=name,
                )

        # One band per panel (the widest, i.e. the shortest series), not one per series.
        bands = [s.white_noise_band for s in series if s.device == device and s.white_noise_band]
        if bands:
            for row in (0, 1):
                axes[row][column].axhspan(-max(bands), max(bands), color="grey", alpha=0.15, lw=0)
        axes[0][column].set_title(f"ACF · {device}")
        axes[1][column].set_title(f"PACF · {device}")
        axes[1][column].set_xlabel("lag (s)")
    axes[0][0].set_ylabel("autocorrelation")
    axes[1][0].set_ylabel("partial autocorrelation")
    names = list(dict.fromkeys(s.configuration for s in series))
    if too_many(len(names)):
        legend_below(figure, axes[0][0], len(names))
    else:
        axes[0][-1].legend(loc="upper right")
    return _finish(
        "acf-pacf",
        "Autocorrelation of the 1 Hz current",
        "ACF and PACF averaged over runs; grey band: 95 % white-noise band ±1.96/√n. "
        "The first lag inside the band is the effective correlation length k_c.",
        data.current_words,
        figure,
    )


def _comparisons(data: ReportData, key: str) -> list[Comparison]:
    return data.analysis.comparisons_of(key) if data.analysis is not None else []


@styled
def bootstrap_distributions(data: ReportData, palette: Palette) -> ReportFigure | None:
    comparisons = [c for c in _comparisons(data, CURRENT) if c.replicate_histogram and c.a and c.b]
    baseline = data.baseline
    # Differences against the baseline keep the figure readable; the table has every pair.
    shown = [c for c in comparisons if c.b == baseline or c.a == baseline] or comparisons
    if not shown:
        return None
    total = len(shown)
    if too_many(total):  # the closest calls: a distribution far from zero says nothing more
        closest = sorted(range(total), key=lambda i: _distance_from_zero(shown[i]))
        shown = [shown[i] for i in sorted(closest[:SMALL_MULTIPLES_AT_MOST])]
    columns = min(3, len(shown))
    rows = math.ceil(len(shown) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(7.2, 2.2 * rows + 0.4), squeeze=False)
    for axis, comparison in zip(axes.flat, shown, strict=False):
        histogram = comparison.replicate_histogram or {}
        edges = np.asarray(histogram["edges"], dtype=float)
        counts = np.asarray(histogram["counts"], dtype=float)
        axis.stairs(counts, edges, fill=True, color=palette.color(comparison.a), alpha=0.5)
        axis.axvline(comparison.interval.low, color="black", ls="--", lw=0.9)
        axis.axvline(comparison.interval.high, color="black", ls="--", lw=0.9)
        axis.axvline(0, color="#D55E00", lw=1.2)
        axis.set_title(f"{comparison.a}\n− {comparison.b} · {comparison.device}", fontsize=7.5)
        axis.set_xlabel("difference of means (mA)")
        axis.set_ylabel("replicates")
    for axis in list(axes.flat)[len(shown) :]:
        axis.set_visible(False)
    method = shown[0].method
    block = shown[0].block_length
    return _finish(
        "bootstrap",
        "Bootstrap distributions of mean differences",
        f"{method} bootstrap (block length {block}) of the difference of mean "
        "current; dashed: 95 % percentile CI; red: zero. Significant when the CI "
        "excludes zero."
        + (
            f" The {len(shown)} of {total} comparisons whose interval lies nearest zero for "
            "its width (the closest calls); the inference table has every one."
            if len(shown) < total
            else ""
        ),
        data.current_words,
        figure,
    )


@styled
def cohens_d_heatmap(data: ReportData, palette: Palette) -> ReportFigure | None:
    comparisons = [
        c
        for c in (data.analysis.comparisons if data.analysis is not None else [])
        if math.isfinite(c.cohens_d) and c.a and c.b
    ]
    if not comparisons:
        return None

    def row(c: Comparison) -> str:
        return data.metric_of(c.metric, c.device).role_heading()

    metrics = list(dict.fromkeys(row(c) for c in comparisons))
    pairs = list(dict.fromkeys(f"{c.a} − {c.b}" for c in comparisons))
    many = too_many(len(pairs)) and data.baseline is not None
    if many:  # every pair of 51 configurations made 1,275 columns: each against the baseline
        cells = _against_baseline(comparisons, data.baseline)
        pairs = list(dict.fromkeys(name for name, _, _ in cells))
    else:
        cells = [(f"{c.a} − {c.b}", c, c.cohens_d) for c in comparisons]
    matrix = np.full((len(metrics), len(pairs)), np.nan)
    for pair, c, d in cells:
        matrix[metrics.index(row(c)), pairs.index(pair)] = d
    if many:  # a row per configuration, a column per metric
        matrix, (rows, columns) = matrix.T, (pairs, metrics)
        figure, axis = plt.subplots(figsize=(7.2, MANY_ROW_INCHES * len(rows) + 2.4))
    else:
        rows, columns = metrics, pairs
        figure, axis = plt.subplots(figsize=(7.2, 0.45 * len(rows) + 2.2))
    # Saturate at |d| = 2 (well past "large"): with few runs energy d can reach the hundreds
    # and would wash out every other cell; the numbers are printed in each cell anyway.
    limit = 2.0
    image = axis.imshow(matrix, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    size = 5.5 if many else 7
    axis.set_xticks(range(len(columns)), columns, rotation=35, ha="right", fontsize=size)
    axis.set_yticks(range(len(rows)), rows, fontsize=6 if many else 7)
    axis.grid(False)
    for (i, j), value in np.ndenumerate(matrix):
        if not np.isnan(value):
            axis.text(
                j,
                i,
                f"{value:+.2f}",
                ha="center",
                va="center",
                fontsize=5 if many else 6,
                color="white" if abs(value) > 0.6 * limit else "black",
            )
    figure.colorbar(
        image, ax=axis, label="Cohen's d (pooled SD)\ncolour saturates at ±2", extend="both"
    )
    return _finish(
        "cohens-d",
        "Effect sizes (Cohen's d)",
        "d = (mean_a − mean_b) / pooled SD; |d| 0.2 small, 0.5 medium, 0.8 large "
        f"(Cohen 1988). Current and energy rows are {data.current_words}; latency rows measured "
        "on this host."
        + (
            f" {len(rows)} configurations, a row each, against {data.baseline} (a = the "
            "configuration, b = the baseline); the inference table has every pair."
            if many
            else ""
        ),
        data.current_words,
        figure,
    )


def _against_baseline(
    comparisons: list[Comparison], baseline: str
) -> list[tuple[str, Comparison, float]]:
    """(configuration, comparison, d of configuration − baseline) for every comparison with
    the baseline: d changes sign with the order of the pair."""
    return [
        (c.a, c, c.cohens_d) if c.b == baseline else (c.b, c, -c.cohens_d)
        for c in comparisons
        if baseline in (c.a, c.b)
    ]


def _distance_from_zero(comparison: Comparison) -> float:
    """How far the interval's centre lies from zero, in half-widths (below 1: it holds 0)."""
    low, high = comparison.interval.low, comparison.interval.high
    half = (high - low) / 2
    return abs(low + half) / half if half > 0 else math.inf


@styled
def pareto_front(data: ReportData, palette: Palette) -> ReportFigure | None:
    pareto = data.analysis.pareto if data.analysis is not None else None
    if pareto is None or len(pareto.objectives) < 2:
        return None
    x_key, y_key = list(pareto.objectives)[:2]  # {name: "min"|"max"}, in order
    values = pareto.values
    front = set(pareto.front)
    many = too_many(len(values))  # 51 names written over each other
    figure, axis = plt.subplots(figsize=(6.0, 3.8))
    points = []
    for name, value in values.items():
        x, y = value.get(x_key), value.get(y_key)
        if x is None or y is None:
            continue
        on_front = name in front
        axis.scatter(
            x,
            y,
            s=60 if on_front else 35,
            color=palette.color(name),
            marker="o" if on_front else "x",
            zorder=3,
        )
        if on_front or not many:
            axis.annotate(
                name + ("" if on_front else " (dominated)"),
                (x, y),
                fontsize=7,
                xytext=(5, 4),
                textcoords="offset points",
            )
        if on_front:
            points.append((x, y))
    if len(points) > 1:
        points.sort()
        axis.plot(*zip(*points, strict=True), color="black", lw=0.8, ls="--", zorder=2)
    axis.set_xlabel(_objective_label(x_key, data))
    axis.set_ylabel(_objective_label(y_key, data))
    # Objectives that differ in their fourth digit gave eight five-digit ticks that ran into
    # each other: at most five
    axis.xaxis.set_major_locator(MaxNLocator(5))
    excluded = pareto.excluded
    note = f" Excluded by constraints: {', '.join(map(str, excluded))}." if excluded else ""
    return _finish(
        "pareto",
        "Pareto front",
        f"Both objectives minimised; circles and dashed line: non-dominated "
        f"configurations, crosses: dominated. Energy is {data.current_words}, latency measured "
        "on this host."
        + (f" {len(values)} configurations: only the non-dominated are named." if many else "")
        + note,
        data.current_words,
        figure,
    )


def _objective_label(key: str, data: ReportData) -> str:
    """An axis of the Pareto front: charge is summed over both devices (analysis.pipeline)."""
    about = data.metric_of(key)
    if key == CHARGE:
        return f"{about.described} per run, both devices ({about.unit})"
    return about.heading()


@styled
def sensitivity(data: ReportData, palette: Palette) -> ReportFigure | None:
    entries = data.analysis.sensitivity if data.analysis is not None else []
    baseline = data.baseline
    if not entries or baseline is None:
        return None
    figure, axes = plt.subplots(1, 2, figsize=(7.2, 3.2), sharey=True)
    others = [name for name in data.configurations if name != baseline]
    many = too_many(len(others))
    for index, (entry, marker) in enumerate(zip(entries, ("o", "s"), strict=False)):
        # Uniform scenarios scale every configuration alike. Show the two axes of the
        # study's grid: transient duration (α = 1) and steady-state level (transient × 1).
        uniform = [s for s in entry.scenarios if s.get("perturbed") is None]
        for axis, (vary, fixed) in zip(
            axes, (("transient_factor", "alpha"), ("alpha", "transient_factor")), strict=True
        ):
            line = sorted((s for s in uniform if s[fixed] == 1.0), key=lambda s: s[vary])
            for name in data.configurations:
                if name == baseline:
                    continue
                xs, ys = [], []
                for scenario in line:
                    energy = scenario.get(CHARGE, {})
                    if energy.get(name) is not None and energy.get(baseline):
                        xs.append(scenario[vary])
                        ys.append(100 * (energy[name] - energy[baseline]) / energy[baseline])
                axis.plot(
                    xs,
                    ys,
                    marker=marker,
                    ms=3,
                    lw=0.9,
                    color=palette.color(name),
                    ls=palette.line_style(name),
                    # Past a dozen, a legend entry per configuration (the devices' markers
                    # are in the caption), under the figure.
                    label=name if many else f"{name} · {entry.device}",
                )
                if many and index > 0:
                    axis.lines[-1].set_label(f"_{name}")  # named once, by the first device
    axes[0].set_xlabel("transient (handshake) duration factor, α = 1")
    axes[1].set_xlabel("steady-state level α, transient × 1")
    axes[0].set_ylabel(f"cumulative energy\nvs {baseline} (%)")
    for axis in axes:
        axis.axhline(0, color="black", lw=0.8)
    if many:
        legend_below(figure, axes[0], len(others))
    else:
        axes[1].legend(fontsize=6)
    verdicts = "; ".join(
        f"{e.device}: ranking "
        f"{'invariant' if e.invariant_uniform else 'changes'} under uniform scaling, "
        f"{'invariant' if e.invariant_one_at_a_time else 'changes'} when one "
        "configuration is scaled alone"
        for e in entries
    )
    return _finish(
        "sensitivity",
        "Sensitivity of the energy ranking",
        "Cumulative energy recomputed with the transient (handshake) duration scaled by "
        f"±10/20 % and the steady-state level by α ∈ {{0.8 … 1.2}}. {verdicts}."
        + (" Circles: " + ", squares: ".join(e.device for e in entries[:2]) + "." if many else ""),
        data.current_words,
        figure,
    )


BUILDERS = (autocorrelation, bootstrap_distributions, cohens_d_heatmap, pareto_front, sensitivity)
